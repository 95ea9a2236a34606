"""Spectral-ish regression: a custom parametrization, a generator training loop, a device-side warmup."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.utils.parametrize as parametrize
import torch_xla
import torch_xla.core.xla_model as xm


class UnitRowNorm(nn.Module):
    """Every row of the weight has norm 1, times a learned gain kept separately."""

    def forward(self, w):
        return w / w.norm(dim=1, keepdim=True).clamp(min=1e-6)


class Regressor(nn.Module):
    def __init__(self, d_in=16, hidden=48):
        super().__init__()
        self.l1 = nn.Linear(d_in, hidden)
        self.l2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, 1)
        parametrize.register_parametrization(self.l1, "weight", UnitRowNorm())
        parametrize.register_parametrization(self.l2, "weight", UnitRowNorm())
        self.gain = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        h = torch.tanh(self.l1(x)) * self.gain
        h = torch.tanh(self.l2(h))
        return self.head(h).squeeze(-1)


def train_steps(model, opt, device, steps, warmup=8, base_lr=1e-2):
    g = torch.Generator().manual_seed(3)
    w_true = torch.randn(16, generator=g)
    step_t = torch.zeros((), device=device)
    for step in range(steps):
        x = torch.randn(128, 16, generator=g)
        y = torch.sin(x @ w_true) + 0.05 * torch.randn(128, generator=g)
        x, y = x.to(device), y.to(device)
        step_t += 1
        scale = torch.clamp(step_t / warmup, max=1.0)
        for group in opt.param_groups:
            group["lr"] = base_lr * scale
        opt.zero_grad()
        pred = model(x)
        loss = torch.nn.functional.smooth_l1_loss(pred, y, beta=0.5)
        loss.backward()
        opt.step()
        torch_xla.sync()
        yield step, loss


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    model = Regressor().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(1e-2, device=device), capturable=True)
    losses = []
    for step, loss in train_steps(model, opt, device, 20):
        losses.append(loss.detach())
        if step % 5 == 0:
            print(step, loss.item())
    curve = torch.stack(losses).cpu().numpy()
    print("final", curve[-1])
    with parametrize.cached():
        w = model.l1.weight.detach().cpu()
    print("row norms", w.norm(dim=1)[:4].numpy())


if __name__ == "__main__":
    main()
