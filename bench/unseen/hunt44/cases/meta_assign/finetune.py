"""Fine-tune a pretrained encoder materialised from the meta device (device tensors, load_state_dict(assign=True)),
a new head made with skip_init on the device, and an adapter made with to_empty + reset_parameters."""
import os
import tempfile

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", "10"))
WORK = os.environ.get("WORK_DIR", tempfile.gettempdir())
CKPT = os.path.join(WORK, "hunt44_encoder_pretrained.pt")


class Encoder(nn.Module):
    def __init__(self, d=24, h=48):
        super().__init__()
        self.inp = nn.Linear(d, h)
        self.norm = nn.LayerNorm(h)
        self.out = nn.Linear(h, h)

    def forward(self, x):
        return self.out(torch.tanh(self.norm(self.inp(x))))


class Adapter(nn.Module):
    def __init__(self, h=48, r=8):
        super().__init__()
        self.down = nn.Linear(h, r)
        self.up = nn.Linear(r, h)

    def reset_parameters(self):
        self.down.reset_parameters()
        nn.init.zeros_(self.up.weight)
        nn.init.zeros_(self.up.bias)

    def forward(self, h):
        return h + self.up(torch.relu(self.down(h)))


class Tuned(nn.Module):
    def __init__(self, enc, adapter, head):
        super().__init__()
        self.enc, self.adapter, self.head = enc, adapter, head

    def forward(self, x):
        return self.head(self.adapter(self.enc(x)))


def main():
    if not os.path.exists(CKPT):
        torch.manual_seed(123)
        torch.save(Encoder().state_dict(), CKPT)
    torch.manual_seed(0)
    dev = xm.xla_device()
    with torch.device("meta"):
        enc = Encoder()
        adapter = Adapter()
    # torch.load cannot map storages onto the XLA device: load on the host, move each tensor, then assign
    sd = {k: v.to(dev) for k, v in torch.load(CKPT, map_location="cpu").items()}
    enc.load_state_dict(sd, assign=True)
    adapter = adapter.to_empty(device=dev)
    adapter.reset_parameters()
    head = torch.nn.utils.skip_init(nn.Linear, 48, 3, device=dev)
    with torch.no_grad():
        nn.init.xavier_uniform_(head.weight)
        head.bias.zero_()
    model = Tuned(enc, adapter, head)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    centers = torch.randn(3, 24)
    for step in range(STEPS):
        y = torch.randint(0, 3, (32,))
        x = (centers[y] + 0.3 * torch.randn(32, 24)).to(dev)
        y = y.to(dev)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES", enc.inp.weight.dtype, adapter.up.weight.dtype, head.weight.dtype)
    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, os.path.join(WORK, "hunt44_tuned.pt"))
    back = torch.load(os.path.join(WORK, "hunt44_tuned.pt"))
    print("saved", back["head.weight"].dtype)


if __name__ == "__main__":
    main()
