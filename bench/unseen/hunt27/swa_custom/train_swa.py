"""Regression with an optimizer class written here (sign-of-momentum updates with decoupled decay), weight
averaging through torch.optim.swa_utils.AveragedModel, float64 per-sample loss weights from NumPy, and the averaged
model's predictions taken to NumPy at the end. Legacy switch: XLA_DOWNCAST_BF16 (f32 -> bf16, f64 -> f32)."""
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.optim.swa_utils import AveragedModel

N, D, H = 32, 8, 20
STEPS = 10


class SignMomentum(torch.optim.Optimizer):
    """m <- beta * m + (1 - beta) * g;  p <- p * (1 - lr * wd) - lr * sign(m)."""

    def __init__(self, params, lr=1e-2, beta=0.9, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, beta=beta, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if "m" not in state:
                    state["m"] = torch.zeros_like(p)
                m = state["m"]
                m.mul_(group["beta"]).add_(p.grad, alpha=1 - group["beta"])
                p.mul_(1 - group["lr"] * group["weight_decay"])
                p.add_(torch.sign(m), alpha=-group["lr"])
        return None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, H)
        self.fc2 = nn.Linear(H, H)
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        h = F.silu(self.fc1(x))
        h = h + F.silu(self.fc2(h))
        return self.head(h).squeeze(-1)


def data(rng):
    x = rng.standard_normal((N, D))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2]
    return torch.from_numpy(x).float(), torch.from_numpy(y).float()


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    rng = np.random.default_rng(3)
    wts = torch.from_numpy(np.linspace(0.5, 1.5, N)).to(device)
    model = Net().to(device)
    avg = AveragedModel(model)
    opt = SignMomentum(model.parameters(), lr=5e-3, weight_decay=1e-3)
    for step in range(STEPS):
        x, y = data(rng)
        x, y = x.to(device), y.to(device)
        pred = model(x)
        loss = (wts * (pred - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= 3:
            avg.update_parameters(model)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")
    x, y = data(rng)
    with torch.no_grad():
        out = avg(x.to(device))
        err = (wts * (out - y.to(device)).abs()).mean()
    preds = out.cpu().numpy()
    print("averaged model: mae", err.item(), "first", preds[:3], "n_averaged", int(avg.n_averaged.item()))
    np.save("swa_preds.npy", preds)


if __name__ == "__main__":
    main()
