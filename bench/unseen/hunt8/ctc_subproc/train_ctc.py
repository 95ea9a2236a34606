"""Tiny CTC acoustic model: conv front end over synthetic filterbanks, greedy decoding."""
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

VOCAB = 8  # 0 is the CTC blank
N_MELS = 20


class Acoustic(nn.Module):
    def __init__(self, n_mels=N_MELS, hidden=48, vocab=VOCAB):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, hidden, 5, padding=2)
        self.conv2 = nn.Conv1d(hidden, hidden, 3, padding=1)
        self.norm = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, feats):  # feats: (B, n_mels, T)
        h = F.gelu(self.conv1(feats))
        h = F.gelu(self.conv2(h)) + h
        h = self.norm(h.transpose(1, 2))  # (B, T, hidden)
        return self.out(h).log_softmax(-1)  # (B, T, vocab)


def synth_batch(batch, frames, gen):
    """Each utterance: a few tokens, each token a bump in a band of the filterbank."""
    feats = torch.randn(batch, N_MELS, frames, generator=gen) * 0.3
    targets = torch.randint(1, VOCAB, (batch, 4), generator=gen)
    tgt_len = torch.randint(2, 5, (batch,), generator=gen)
    seg = frames // 4
    for b in range(batch):
        for k in range(int(tgt_len[b])):
            band = int(targets[b, k]) * 2
            feats[b, band:band + 2, k * seg:(k + 1) * seg] += 1.5
    in_len = torch.full((batch,), frames, dtype=torch.long)
    return feats, targets, in_len, tgt_len


def greedy_decode(log_probs):
    best = log_probs.argmax(-1).cpu().tolist()
    out = []
    for seq in best:
        toks, prev = [], 0
        for s in seq:
            if s != prev and s != 0:
                toks.append(s)
            prev = s
        out.append(toks)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--frames", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    args = p.parse_args()

    device = xm.xla_device()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = Acoustic().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)

    for step in range(args.steps):
        feats, targets, in_len, tgt_len = synth_batch(args.batch, args.frames, gen)
        feats, targets = feats.to(device), targets.to(device)
        in_len, tgt_len = in_len.to(device), tgt_len.to(device)
        log_probs = model(feats)
        loss = F.ctc_loss(log_probs.transpose(0, 1), targets, in_len, tgt_len,
                          blank=0, zero_infinity=True)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)

    model.eval()
    feats, targets, in_len, tgt_len = synth_batch(4, args.frames, gen)
    with torch.no_grad():
        lp = model(feats.to(device))
    hyps = greedy_decode(lp)
    refs = [targets[b, : int(tgt_len[b])].tolist() for b in range(4)]
    print(json.dumps({"hyps": hyps, "refs": refs}))


if __name__ == "__main__":
    main()
