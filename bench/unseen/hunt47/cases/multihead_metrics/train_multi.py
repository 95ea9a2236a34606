"""Multi-task tagger over padded sequences: a small attention encoder (padding masked with the dtype's lowest
value, ALiBi-style distance bias), returning class logits, a regression output and a pooled embedding. Losses are
summed on the device across steps; predicted scores are histogrammed and bucketed, read once at the end."""
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 20))
L, D, NCLS, VOCAB = 16, 32, 3, 50
EDGES = torch.tensor([-1.0, -0.25, 0.0, 0.25, 1.0])


def alibi_bias(n, heads=2):
    slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
    dist = (torch.arange(n)[None, :] - torch.arange(n)[:, None]).abs().float()
    return -slopes[:, None, None] * dist


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.qkv = nn.Linear(D, 3 * D)
        self.o = nn.Linear(D, D)
        self.register_buffer("bias", alibi_bias(L))
        self.cls = nn.Linear(D, NCLS)
        self.reg = nn.Linear(D, 1)

    def forward(self, tok, pad):
        h = self.emb(tok)
        b, n, _ = h.shape
        q, k, v = self.qkv(h).view(b, n, 3, 2, D // 2).permute(2, 0, 3, 1, 4)
        att = q @ k.transpose(-1, -2) / (D // 2) ** 0.5 + self.bias
        att = att.masked_fill(pad[:, None, None, :], torch.finfo(att.dtype).min)
        h = h + self.o((att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, D))
        keep = (~pad).unsqueeze(-1).float()
        pooled = (h * keep).sum(1) / keep.sum(1)
        return self.cls(pooled), self.reg(pooled).squeeze(-1), F.normalize(pooled, dim=-1)


def batch(g, n=12):
    tok = torch.randint(1, VOCAB, (n, L), generator=g)
    lens = torch.randint(4, L + 1, (n,), generator=g)
    pad = torch.arange(L)[None, :] >= lens[:, None]
    tok = tok.masked_fill(pad, 0)
    y = (tok.float().mean(1) // 10).long().clamp(0, NCLS - 1)
    r = lens.float() / L - 0.5
    return tok, pad, y, r


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = Encoder().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    edges = EDGES.to(dev)
    loss_sum = torch.zeros((), device=dev)
    hist = torch.zeros(10, device=dev)
    bucket_counts = torch.zeros(len(EDGES) + 1, device=dev)
    g = torch.Generator().manual_seed(2)
    for step in range(STEPS):
        tok, pad, y, r = (t.to(dev) for t in batch(g))
        logits, reg, emb = model(tok, pad)
        loss = F.cross_entropy(logits, y) + 0.5 * F.mse_loss(reg, r) + 0.01 * (emb @ emb.T).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_sum += loss.detach()
        hist += torch.histc(reg.detach(), bins=10, min=-1.0, max=1.0)
        bucket_counts += torch.bincount(torch.bucketize(reg.detach(), edges), minlength=len(EDGES) + 1).float()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print(f"mean loss {(loss_sum / STEPS).item():.4f}")
    print(f"hist {hist.cpu().tolist()}")
    print(f"buckets {bucket_counts.cpu().tolist()} median-reg {torch.quantile(reg.detach(), 0.5).item():.4f}")


if __name__ == "__main__":
    main()
