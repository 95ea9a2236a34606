"""Convert a trained ranker checkpoint for serving: fold the input
standardisation into the first layer on the device, prune tiny weights,
save a plain state dict and a TorchScript trace."""
import os
import sys

import torch
import torch.nn as nn
import torch_xla

dev = torch_xla.device()
SRC = sys.argv[1] if len(sys.argv) > 1 else "ranker.pt"
OUT = sys.argv[2] if len(sys.argv) > 2 else "ranker_serving"
STEPS = int(os.environ.get("STEPS", "6"))


class Ranker(nn.Module):
    def __init__(self, d=24):
        super().__init__()
        self.register_buffer("mu", torch.zeros(d))
        self.register_buffer("sd", torch.ones(d))
        self.fc1 = nn.Linear(d, 64)
        self.fc2 = nn.Linear(64, 1)

    def forward(self, x):
        x = (x - self.mu) / self.sd
        return self.fc2(torch.tanh(self.fc1(x)))


def train_source_checkpoint(path):
    """Stands in for the training job: a few steps, then the checkpoint."""
    torch.manual_seed(5)
    m = Ranker()
    m.mu.copy_(torch.randn(24) * 0.3)
    m.sd.copy_(torch.rand(24) + 0.5)
    m = m.to(dev)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    for step in range(STEPS):
        x = torch.randn(128, 24).to(dev)
        y = (x[:, :4].sum(1, keepdim=True) > 0).float()
        loss = nn.functional.binary_cross_entropy_with_logits(m(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f}")
    torch.save({k: v.cpu() for k, v in m.state_dict().items()}, path)


if not os.path.exists(SRC):
    train_source_checkpoint(SRC)

sd = torch.load(SRC, map_location="cpu")
sd = {k: v.to(dev) for k, v in sd.items()}

# fold (x - mu) / sd into fc1: W' = W / sd, b' = b - W' @ mu
w, b = sd["fc1.weight"], sd["fc1.bias"]
w_folded = w / sd["sd"]
b_folded = b - w_folded @ sd["mu"]
w_folded = torch.where(w_folded.abs() < 1e-3, torch.zeros_like(w_folded), w_folded)
sd["fc1.weight"], sd["fc1.bias"] = w_folded, b_folded
sd["mu"] = torch.zeros_like(sd["mu"])
sd["sd"] = torch.ones_like(sd["sd"])
torch_xla.sync()

served = Ranker().to(dev)
served.load_state_dict(sd)
served.eval()

probe = torch.randn(8, 24)
with torch.no_grad():
    ref = served(probe.to(dev)).cpu()
print("probe scores", ref[:3, 0].tolist())

torch.save({k: v.cpu() for k, v in served.state_dict().items()}, OUT + ".pt")
cpu_model = served.cpu()
traced = torch.jit.trace(cpu_model, probe)
traced.save(OUT + ".ts")
print("max diff traced vs device", (traced(probe) - ref).abs().max().item())
print("DTYPES", sd["fc1.weight"].dtype, ref.dtype, torch.load(OUT + ".pt")["fc1.weight"].dtype)
