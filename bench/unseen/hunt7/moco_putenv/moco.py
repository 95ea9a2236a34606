"""MoCo-v2-style pretraining of a small MLP encoder on synthetic views.

Query encoder trained by SGD; key encoder is its momentum copy; negatives come from a
queue of past keys held in a buffer and overwritten in place.
"""
import argparse
import copy
import os

os.putenv("XLA_USE_BF16", "1")  # seen by the XLA runtime (C getenv), not by os.environ

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def mlp(d_in, d_hidden, d_out):
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.LayerNorm(d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))


class MoCo(nn.Module):
    def __init__(self, d_in=32, dim=16, queue_size=128, m=0.99, temperature=0.2):
        super().__init__()
        self.m, self.t, self.k = m, temperature, queue_size
        self.encoder_q = mlp(d_in, 64, dim)
        self.encoder_k = copy.deepcopy(self.encoder_q)
        for p in self.encoder_k.parameters():
            p.requires_grad = False
        self.register_buffer("queue", F.normalize(torch.randn(dim, queue_size), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def momentum_update(self):
        for p_q, p_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            p_k.data.mul_(self.m).add_(p_q.data, alpha=1 - self.m)

    @torch.no_grad()
    def enqueue(self, keys, ptr):
        b = keys.shape[0]
        self.queue[:, ptr:ptr + b] = keys.T
        self.queue_ptr[0] = (ptr + b) % self.k

    def forward(self, im_q, im_k, ptr):
        q = F.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            self.momentum_update()
            k = F.normalize(self.encoder_k(im_k), dim=1)
        l_pos = torch.einsum("nc,nc->n", q, k).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", q, self.queue.clone().detach())
        logits = torch.cat([l_pos, l_neg], dim=1) / self.t
        labels = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
        self.enqueue(k, ptr)
        return logits, labels


def two_views(x, gen):
    def aug(v):
        mask = (torch.rand(v.shape, generator=gen) > 0.15).float()
        return v * mask + 0.1 * torch.randn(v.shape, generator=gen)
    return aug(x), aug(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    device = torch_xla.device()
    centers = torch.randn(10, 32, generator=gen)
    model = MoCo().to(device)
    opt = torch.optim.SGD(model.encoder_q.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    ptr = 0
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, 10, (args.batch,), generator=gen)
        x = centers[idx] + 0.3 * torch.randn(args.batch, 32, generator=gen)
        v1, v2 = two_views(x, gen)
        logits, labels = model(v1.to(device), v2.to(device), ptr)
        ptr = (ptr + args.batch) % model.k
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        acc = (logits.argmax(1) == 0).float().mean()
        print(f"step {step} loss {loss.item():.4f} top1 {acc.item():.3f}")
    qnorm = model.queue.norm(dim=0).mean()
    print("queue mean norm", qnorm.item())


if __name__ == "__main__":
    main()
