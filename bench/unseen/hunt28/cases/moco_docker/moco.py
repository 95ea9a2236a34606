"""MoCo v2-style pretraining: query encoder trained, key encoder a momentum copy, negatives from a queue."""
import argparse
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def encoder(dim_in=32, dim_out=16):
    return nn.Sequential(nn.Linear(dim_in, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, dim_out))


class MoCo(nn.Module):
    def __init__(self, dim=16, queue_len=64, m=0.99, t=0.2):
        super().__init__()
        self.m, self.t, self.k = m, t, queue_len
        self.encoder_q = encoder(dim_out=dim)
        self.encoder_k = copy.deepcopy(self.encoder_q)
        for p in self.encoder_k.parameters():
            p.requires_grad = False
        self.register_buffer("queue", F.normalize(torch.randn(dim, queue_len), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def momentum_update(self):
        for pq, pk in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            pk.data.mul_(self.m).add_(pq.data, alpha=1.0 - self.m)

    @torch.no_grad()
    def enqueue(self, keys):
        n = keys.shape[0]
        ptr = int(self.queue_ptr)
        self.queue[:, ptr:ptr + n] = keys.T
        self.queue_ptr[0] = (ptr + n) % self.k

    def forward(self, xq, xk):
        q = F.normalize(self.encoder_q(xq), dim=1)
        with torch.no_grad():
            self.momentum_update()
            k = F.normalize(self.encoder_k(xk), dim=1)
        l_pos = torch.einsum("nc,nc->n", q, k).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", q, self.queue.clone().detach())
        logits = torch.cat([l_pos, l_neg], dim=1) / self.t
        labels = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
        self.enqueue(k)
        return logits, labels


def augment(x, gen):
    noise = 0.1 * torch.randn(x.shape, generator=gen)
    keep = (torch.rand(x.shape, generator=gen) > 0.1).float()
    return (x + noise) * keep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    device = torch_xla.device()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = MoCo().to(device)
    opt = torch.optim.SGD(model.encoder_q.parameters(), lr=0.03, momentum=0.9, weight_decay=1e-4)
    data = torch.randn(256, 32, generator=gen)
    losses, top1 = [], []
    for step in range(args.steps):
        idx = torch.randint(0, data.shape[0], (args.batch,), generator=gen)
        x = data[idx]
        xq, xk = augment(x, gen).to(device), augment(x, gen).to(device)
        logits, labels = model(xq, xk)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        torch_xla.sync()
        losses.append(loss.detach())
        top1.append((logits.argmax(1) == 0).float().mean())
    print("loss", [round(v, 4) for v in torch.stack(losses).cpu().tolist()])
    print("top1", torch.stack(top1).mean().item())
    with torch.no_grad():
        feats = F.normalize(model.encoder_q(data.to(device)), dim=1)
    np.save("features.npy", feats.cpu().numpy())
    torch.save({"encoder_q": model.encoder_q.state_dict(), "queue": model.queue.cpu()}, "moco.pt")
    print("queue ptr", int(model.queue_ptr), "feat norm", feats.norm(dim=1).mean().item())


if __name__ == "__main__":
    main()
