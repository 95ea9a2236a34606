import torch
import torch.nn as nn
import torch.nn.functional as F


class LitRegressor(nn.Module):
    """Lightning-style module: owns its loss and its optimizer."""

    def __init__(self, d_in=6, hidden=32, lr=3e-3):
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.huber_loss(self(x), y, delta=0.5)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        pred = self(x)
        return {"mae": (pred - y).abs().mean(), "pred": pred}

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.lr, weight_decay=1e-4)
