import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class Forecaster(nn.Module):
    """Predicts the next value from a window of `lags` past values plus a weekday embedding."""

    def __init__(self, lags=14, hidden=32):
        super().__init__()
        self.day = nn.Embedding(7, 4)
        self.body = nn.Sequential(nn.Linear(lags + 4, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, window, weekday):
        return self.body(torch.cat([window, self.day(weekday)], dim=-1)).squeeze(-1)


def make_series(n=400, seed=0):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    return (np.sin(2 * np.pi * t / 7) + 0.01 * t + 0.2 * rng.standard_normal(n)).astype(np.float32)


def windows(series, lags=14):
    x = np.stack([series[i : i + lags] for i in range(len(series) - lags)])
    y = series[lags:]
    wd = (np.arange(lags, len(series)) % 7).astype(np.int64)
    return torch.from_numpy(x), torch.from_numpy(wd), torch.from_numpy(y)


def train(model, device, steps=10, bs=32, lr=5e-3, seed=0):
    x, wd, y = windows(make_series(seed=seed))
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    g = torch.Generator().manual_seed(seed)
    losses = []
    for _ in range(steps):
        i = torch.randint(0, len(x), (bs,), generator=g)
        pred = model(x[i].to(device), wd[i].to(device))
        loss = torch.nn.functional.l1_loss(pred, y[i].to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def predict(model, device, series, lags=14):
    x, wd, _ = windows(series, lags)
    return model(x.to(device), wd.to(device)).cpu().numpy()
