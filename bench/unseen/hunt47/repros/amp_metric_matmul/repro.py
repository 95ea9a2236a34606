"""amp: a bf16 model output (made under the autocast region the migration adds) meets an f32 target in a metric's
matmul outside it. Legacy: both bf16, a bf16 matmul."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 6))


def cosine_matrix(a, b, eps=1e-8):
    an = a / (a.norm(dim=1, keepdim=True) + eps)
    bn = b / (b.norm(dim=1, keepdim=True) + eps)
    return an @ bn.T


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = torch.randn(8, 4)
    for step in range(STEPS):
        x = torch.randn(16, 8)
        x, y = x.to(dev), (x @ w).to(dev)
        pred = model(x)
        loss = ((pred - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sim = cosine_matrix(pred.detach(), y).diagonal().mean()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} cos {sim.item():.4f}")


if __name__ == "__main__":
    main()
