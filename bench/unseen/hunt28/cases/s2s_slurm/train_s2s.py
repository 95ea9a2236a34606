"""Sequence reversal with a small nn.Transformer: teacher forcing, label smoothing, greedy decoding."""
import argparse
import math
import os
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

PAD, BOS, EOS, VOCAB, MAXLEN = 0, 1, 2, 20, 10


class Seq2Seq(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d, padding_idx=PAD)
        pos = torch.arange(MAXLEN + 2)[:, None] * torch.exp(torch.arange(0, d, 2) * (-math.log(1e4) / d))
        pe = torch.zeros(MAXLEN + 2, d)
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos), torch.cos(pos)
        self.register_buffer("pe", pe)
        self.tf = nn.Transformer(d, nhead=4, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=64,
                                 dropout=0.0, batch_first=True)
        self.out = nn.Linear(d, VOCAB)

    def embed(self, ids):
        return self.emb(ids) * math.sqrt(self.emb.embedding_dim) + self.pe[: ids.shape[1]]

    def forward(self, src, tgt_in):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1], device=src.device)
        h = self.tf(self.embed(src), self.embed(tgt_in), tgt_mask=mask,
                    src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt_in == PAD)
        return self.out(h)


def make_batch(gen, n=16):
    lens = torch.randint(3, MAXLEN - 1, (n,), generator=gen)
    src = torch.full((n, MAXLEN), PAD)
    tgt = torch.full((n, MAXLEN + 1), PAD)
    for i, L in enumerate(lens.tolist()):
        seq = torch.randint(3, VOCAB, (L,), generator=gen)
        src[i, :L] = seq
        tgt[i, : L + 1] = torch.cat([seq.flip(0), torch.tensor([EOS])])
    tgt_in = torch.cat([torch.full((n, 1), BOS), tgt[:, :-1]], 1)
    return src, tgt_in, tgt


@torch.no_grad()
def greedy(model, src, steps=MAXLEN + 1):
    ys = torch.full((src.shape[0], 1), BOS, dtype=torch.long, device=src.device)
    for _ in range(steps):
        logits = model(src, ys)[:, -1]
        ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], dim=1)
    return ys[:, 1:]


def overlap_score(hyp, ref, n=2):
    grams = lambda s: Counter(tuple(s[i:i + n]) for i in range(len(s) - n + 1))  # noqa: E731
    h, r = grams(hyp), grams(ref)
    return sum((h & r).values()) / max(1, sum(h.values()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--ckpt-dir", default="ckpt")
    args = ap.parse_args()
    device = torch_xla.device()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    model = Seq2Seq().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    warm = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))
    for step in range(args.steps):
        src, tgt_in, tgt = (t.to(device) for t in make_batch(gen))
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt.reshape(-1), ignore_index=PAD, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        warm.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    model.eval()
    src, _, tgt = make_batch(gen, 8)
    hyp = greedy(model, src.to(device)).cpu().tolist()
    refs = tgt.tolist()
    scores = [overlap_score([t for t in h if t > EOS], [t for t in r if t > EOS]) for h, r in zip(hyp, refs)]
    print("bigram overlap", sum(scores) / len(scores))
    os.makedirs(args.ckpt_dir, exist_ok=True)
    xm.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": warm.state_dict()},
            os.path.join(args.ckpt_dir, "s2s.pt"))


if __name__ == "__main__":
    main()
