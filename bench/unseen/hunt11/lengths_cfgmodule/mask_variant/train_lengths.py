"""Variable-length sensor sequences -> remaining-useful-life regression.
LSTM over the padded batch (pack_padded_sequence does not run on XLA: "data is not
allocated yet"), last valid state gathered by length, masked mean pooling, Huber loss."""
import os

import settings

for key, value in settings.RUNTIME_ENV.items():
    os.environ.setdefault(key, value)

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def make_batch(rng, n):
    lengths = rng.integers(8, settings.MAX_LEN + 1, n)
    x = np.zeros((n, settings.MAX_LEN, settings.FEATURES), dtype=np.float32)
    y = np.zeros(n, dtype=np.float32)
    for i, L in enumerate(lengths):
        drift = rng.normal(0, 0.05, settings.FEATURES).cumsum()
        seq = rng.normal(0, 1, (L, settings.FEATURES)) * 0.3 + np.linspace(0, 1, L)[:, None] * drift
        x[i, :L] = seq
        y[i] = 0.5 * seq[-5:, 0].mean() + 0.02 * L
    return torch.from_numpy(x), torch.from_numpy(lengths), torch.from_numpy(y)


class RulModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(settings.FEATURES, settings.HIDDEN)
        self.rnn = nn.LSTM(settings.HIDDEN, settings.HIDDEN, batch_first=True)
        self.head = nn.Sequential(nn.Linear(2 * settings.HIDDEN, settings.HIDDEN), nn.ReLU(),
                                  nn.Linear(settings.HIDDEN, 1))

    def forward(self, x, lengths):
        h = torch.relu(self.inp(x))
        out, _ = self.rnn(h)
        lengths = lengths.to(x.device)
        steps = torch.arange(x.shape[1], device=x.device)
        mask = (steps[None, :] < lengths[:, None]).to(out.dtype)
        pooled = (out * mask.unsqueeze(-1)).sum(1) / lengths.unsqueeze(1)
        last_idx = (lengths - 1).view(-1, 1, 1).expand(-1, 1, out.shape[2])
        last = out.gather(1, last_idx).squeeze(1)
        return self.head(torch.cat([pooled, last], 1)).squeeze(-1)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    device = xm.xla_device()
    model = RulModel().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=settings.LR, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=12)
    for step in range(12):
        x, lengths, y = make_batch(rng, settings.BATCH)
        pred = model(x.to(device), lengths)
        loss = F.huber_loss(pred, y.to(device), delta=0.5)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        sched.step()
        torch_xla.sync()
        print(f"step {step} huber {loss.item():.4f}")

    model.eval()
    x, lengths, y = make_batch(np.random.default_rng(5), 128)
    with torch.no_grad():
        pred = model(x.to(device), lengths).cpu()
    err = (pred - y).numpy()
    by_len = {int(L): float(abs(e)) for L, e in zip(lengths[:5], err[:5])}
    np.savez("rul_eval.npz", pred=pred.numpy(), target=y.numpy(), lengths=lengths.numpy())
    print(f"eval MAE {np.abs(err).mean():.4f} pred {pred.dtype} first {by_len}")


if __name__ == "__main__":
    main()
