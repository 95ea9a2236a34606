"""Sequence regressor mixing a recurrent-free causal average and a linear branch through a learned scalar gate
that lives outside the model (its own nn.Parameter on the device, in the optimizer). The forward makes its
causal weights and a position ramp as float tensors on the input's device. A running [loss, |err|] accumulator
stays on the device until the end. Legacy bf16 switch on."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

T, F_IN, H, B = 8, 4, 16, 16
STEPS = 10


class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(F_IN, H)
        self.lin = nn.Linear(F_IN, H)
        self.head = nn.Linear(H, 1)

    def forward(self, x, gate):
        t = x.shape[1]
        causal = torch.ones(t, t, device=x.device).tril()
        causal = causal / causal.sum(1, keepdim=True)
        ramp = torch.arange(t, device=x.device, dtype=torch.float32) / t
        h = torch.tanh(self.enc(x)) + ramp[None, :, None]
        avg = torch.einsum("ts,bsh->bth", causal, h)
        g = torch.sigmoid(gate)
        return self.head(g * avg + (1 - g) * self.lin(x)).squeeze(-1)


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Branches().to(device)
    gate = nn.Parameter(torch.zeros((), device=device))
    opt = torch.optim.Adam([*model.parameters(), gate], lr=1e-2)
    running = torch.zeros(2, device=device)
    gen = torch.Generator().manual_seed(4)
    for step in range(STEPS):
        x = torch.randn(B, T, F_IN, generator=gen)
        y = x.sum(-1).cumsum(1) / torch.arange(1, T + 1)
        x, y = x.to(device), y.to(device)
        pred = model(x, gate)
        loss = F.smooth_l1_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += torch.stack([loss.detach(), (pred - y).abs().mean().detach()])
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} gate {torch.sigmoid(gate).item():.4f}")
    mean_loss, mean_err = (running / STEPS).cpu().tolist()
    print(f"mean loss {mean_loss:.4f} mean err {mean_err:.4f} final gate {gate.item():.4f}")
    torch.save({"gate": gate.detach().cpu(), "model": {k: v.cpu() for k, v in model.state_dict().items()}}, "gate.pt")


if __name__ == "__main__":
    main()
