"""MoCo-style contrastive pretraining of a tiny MLP encoder on synthetic 'views'.

Launched with xmp.spawn; each process turns on bf16 for itself inside _mp_fn.
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp

FEAT = 24
DIM = 16


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEAT, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.proj = nn.Linear(64, DIM)

    def forward(self, x):
        return F.normalize(self.proj(self.body(x)), dim=1)


class MoCo(nn.Module):
    def __init__(self, queue_size=128, m=0.99, t=0.2):
        super().__init__()
        self.q_enc = Encoder()
        self.k_enc = Encoder()
        for pq, pk in zip(self.q_enc.parameters(), self.k_enc.parameters()):
            pk.data.copy_(pq.data)
            pk.requires_grad = False
        self.m = m
        self.t = t
        self.register_buffer("queue", F.normalize(torch.randn(queue_size, DIM), dim=1))
        self.register_buffer("ptr", torch.zeros((), dtype=torch.long))

    @torch.no_grad()
    def momentum_update(self):
        for pq, pk in zip(self.q_enc.parameters(), self.k_enc.parameters()):
            pk.data.mul_(self.m).add_(pq.data, alpha=1 - self.m)

    @torch.no_grad()
    def enqueue(self, keys):
        n = keys.shape[0]
        idx = (self.ptr + torch.arange(n, device=keys.device)) % self.queue.shape[0]
        self.queue[idx] = keys
        self.ptr.copy_((self.ptr + n) % self.queue.shape[0])

    def forward(self, xq, xk):
        q = self.q_enc(xq)
        with torch.no_grad():
            self.momentum_update()
            k = self.k_enc(xk)
        pos = (q * k).sum(1, keepdim=True)
        neg = q @ self.queue.clone().t()
        logits = torch.cat([pos, neg], dim=1) / self.t
        labels = torch.zeros(q.shape[0], dtype=torch.long, device=q.device)
        self.enqueue(k)
        return logits, labels


def augment(x, g):
    noise = 0.1 * torch.randn(x.shape, generator=g)
    mask = (torch.rand(x.shape, generator=g) > 0.15).float()
    return (x + noise) * mask


def _mp_fn(index, flags):
    os.environ["XLA_USE_BF16"] = "1"
    torch.manual_seed(flags.seed)
    g = torch.Generator().manual_seed(flags.seed)
    device = torch_xla.device()
    protos = torch.randn(8, FEAT, generator=g)

    model = MoCo().to(device)
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05, momentum=0.9)

    history = []
    for step in range(flags.steps):
        base = protos[torch.randint(0, 8, (32,), generator=g)] + 0.3 * torch.randn(32, FEAT, generator=g)
        xq, xk = augment(base, g).to(device), augment(base, g).to(device)
        logits, labels = model(xq, xk)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        history.append(loss.item())
        if step % 5 == 0:
            xm.master_print(f"step {step} loss {history[-1]:.4f}")

    # alignment of the momentum encoder with the query encoder, and the queue's spread
    with torch.no_grad():
        probe = (protos + 0.3 * torch.randn(8, FEAT, generator=g)).to(device)
        zq = model.q_enc(probe)
        zk = model.k_enc(probe)
        align = (zq * zk).sum(1).mean()
        qcos = model.queue @ model.queue.t()
    os.makedirs(flags.out, exist_ok=True)
    np.save(os.path.join(flags.out, "queue.npy"), model.queue.cpu().numpy())
    np.save(os.path.join(flags.out, "queue_cos.npy"), qcos.cpu().numpy())
    report = {"loss": history, "align": align.item(), "ptr": int(model.ptr.item())}
    with open(os.path.join(flags.out, "moco.json"), "w") as f:
        json.dump(report, f)
    xm.master_print(f"align {report['align']:.4f} ptr {report['ptr']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out")
    flags = parser.parse_args()
    xmp.spawn(_mp_fn, args=(flags,), nprocs=None)
