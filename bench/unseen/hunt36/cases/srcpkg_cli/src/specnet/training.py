import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class SpecNet(nn.Module):
    """Classifies 1-D signals from windowed frame energies."""

    def __init__(self, n=64, n_classes=4):
        super().__init__()
        self.window = nn.Parameter(torch.ones(n))
        self.mlp = nn.Sequential(nn.Linear(n // 8 * 2, 64), nn.GELU(), nn.Linear(64, n_classes))

    def forward(self, x):
        frames = (x * self.window).unfold(-1, 8, 8)
        feats = torch.cat([frames.pow(2).mean(-1), frames.diff(dim=-1).abs().mean(-1)], dim=-1)
        return self.mlp(torch.log1p(feats))


def signals(bs, n=64, n_classes=4, g=None):
    y = torch.randint(0, n_classes, (bs,), generator=g)
    t = torch.arange(n) / n
    x = torch.sin(2 * torch.pi * (3 + 5 * y[:, None]) * t) + 0.5 * torch.randn(bs, n, generator=g)
    return x, y


def run(steps=8, lr=2e-3, out="specnet_preds.npy"):
    torch.manual_seed(0)
    device = torch_xla.device()
    model = SpecNet().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(0)
    for step in range(steps):
        x, y = signals(32, g=g)
        logits = model(x.to(device))
        loss = F.cross_entropy(logits, y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES weight", model.mlp[0].weight.dtype, "logits", logits.dtype, "loss", loss.dtype)
    np.save(out, torch.softmax(logits, -1).detach().cpu().numpy())
