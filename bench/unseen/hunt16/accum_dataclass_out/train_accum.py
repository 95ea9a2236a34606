"""Masked mean-pool encoder with a dataclass output, gradient accumulation under a skip-sync context."""
import os

os.environ["XLA_USE_BF16"] = "1"

import contextlib
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


@dataclass
class EncoderOutput:
    logits: torch.Tensor
    pooled: torch.Tensor


class RunningScale(nn.Module):
    """Normalises by a running RMS; the update weight comes from an integer batch counter."""

    def __init__(self, d):
        super().__init__()
        self.register_buffer("num_batches", torch.tensor(0))
        self.register_buffer("rms", torch.ones(d))

    def forward(self, x):
        if self.training:
            with torch.no_grad():
                self.num_batches += 1
                w = 1.0 / self.num_batches.float().clamp(max=100.0)
                self.rms.mul_(1 - w).add_(w * x.pow(2).mean(dim=(0, 1)).sqrt())
        return x / (self.rms + 1e-5)


class Encoder(nn.Module):
    def __init__(self, vocab=300, d=48, classes=5):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.scale = RunningScale(d)
        self.mix = nn.Linear(d, d)
        self.head = nn.Linear(d, classes)

    def forward(self, ids, lengths):
        t = ids.shape[1]
        valid = torch.arange(t, device=ids.device)[None, :] < lengths[:, None]
        h = self.scale(self.emb(ids))
        h = torch.relu(self.mix(h))
        scores = h.sum(-1).masked_fill(~valid, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        ramp = torch.cumsum(valid.float(), dim=1) / lengths[:, None]
        weights = torch.where(valid, weights * (0.5 + ramp), torch.zeros_like(weights))
        pooled = (weights.unsqueeze(-1) * h).sum(1)
        return EncoderOutput(logits=self.head(pooled), pooled=pooled)


@contextlib.contextmanager
def skip_grad_sync(enabled):
    """Stand-in for DDP's no_sync: nothing to do on one device, kept for the multi-host variant."""
    yield


def main(accum=4, steps=20):
    device = torch_xla.device()
    torch.manual_seed(0)
    model = Encoder().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(5)
    for step in range(steps):
        for micro in range(accum):
            lengths = torch.randint(3, 17, (8,), generator=g)
            ids = torch.randint(0, 300, (8, 16), generator=g)
            labels = (ids[:, 0] % 5)
            ids, lengths, labels = ids.to(device), lengths.to(device), labels.to(device)
            with skip_grad_sync(micro < accum - 1):
                out = model(ids, lengths)
                loss = F.cross_entropy(out.logits, labels, label_smoothing=0.1) / accum
                loss = loss + 1e-3 * out.pooled.pow(2).mean()
                loss.backward()
        xm.optimizer_step(opt)
        opt.zero_grad()
        torch_xla.sync()
        if step % 5 == 0:
            print(step, loss.item() * accum)
    print("rms", model.scale.rms[:4].cpu().tolist())


if __name__ == "__main__":
    main()
