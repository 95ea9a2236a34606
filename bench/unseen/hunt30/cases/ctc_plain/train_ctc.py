"""Character CTC on synthetic "utterances" (frames of noisy one-hot chirps), data-parallel (gradients all-reduced by xm.optimizer_step)."""
import argparse
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.runtime as xr

VOCAB, N_MEL, FR = 6, 20, 4          # blank = 0, 5 symbols; FR frames per symbol


def utterance(rng, max_len=10):
    n = int(rng.integers(3, max_len + 1))
    text = rng.integers(1, VOCAB, n)
    frames = np.repeat(text, FR)
    mel = rng.normal(0, 0.3, (len(frames), N_MEL))
    mel[np.arange(len(frames)), frames * 3] += 2.0
    return np.log1p(np.exp(mel)), text                                    # float64 "log-mel"


def batch(rng, b):
    utts = [utterance(rng) for _ in range(b)]
    T = max(len(m) for m, _ in utts); L = max(len(t) for _, t in utts)
    x = np.zeros((b, T, N_MEL)); y = np.zeros((b, L), np.int64)
    for i, (m, t) in enumerate(utts):
        x[i, :len(m)], y[i, :len(t)] = m, t
    in_lens = torch.tensor([len(m) for m, _ in utts]); tgt_lens = torch.tensor([len(t) for _, t in utts])
    return x, torch.from_numpy(y), in_lens, tgt_lens


class Acoustic(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.proj = nn.Linear(3 * N_MEL, d)           # frame stacking (t-1, t, t+1)
        self.rnn = nn.GRU(d, d, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * d, VOCAB)

    def forward(self, x):
        ctx = torch.cat([F.pad(x, (0, 0, 1, 0))[:, :-1], x, F.pad(x, (0, 0, 0, 1))[:, 1:]], -1)
        h = F.gelu(self.proj(ctx))
        return self.head(self.rnn(h)[0])


def greedy(ids, lens):
    out = []
    for seq, n in zip(ids.tolist(), lens.tolist()):
        prev, s = 0, []
        for t in seq[:n]:
            if t != prev and t != 0:
                s.append(t)
            prev = t
        out.append(s)
    return out


def main(a):
    if os.environ.get("WORLD_SIZE"):
        from torch_xla.distributed import xla_backend  # noqa: F401
        dist.init_process_group("xla", init_method="xla://")
    device = torch_xla.device()
    rng = np.random.default_rng(xr.global_ordinal())
    stats = np.concatenate([utterance(rng)[0] for _ in range(64)])
    mean, std = stats.mean(0), stats.std(0)                               # float64 normalisation stats
    mean_t, std_t = torch.from_numpy(mean).to(device), torch.from_numpy(std).to(device)
    model = Acoustic().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    for step in range(a.steps):
        x, y, in_lens, tgt_lens = batch(rng, a.bs)
        x = ((torch.from_numpy(x).to(device) - mean_t) / std_t).float()
        log_probs = model(x).log_softmax(-1).transpose(0, 1)             # (T, B, V)
        loss = F.ctc_loss(log_probs, y.to(device), in_lens, tgt_lens, blank=0, zero_infinity=True)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        xm.optimizer_step(opt)
        xm.mark_step()
        if step % 10 == 0:
            xm.master_print(f"step {step} ctc {loss.item():.3f}")
    model.eval()
    x, y, in_lens, tgt_lens = batch(np.random.default_rng(123), 8)
    with torch.no_grad():
        lp = model(((torch.from_numpy(x).to(device) - mean_t) / std_t).float()).log_softmax(-1)
    hyp = greedy(lp.argmax(-1).cpu(), in_lens)
    ref = [t[:n].tolist() for t, n in zip(y, tgt_lens)]
    exact = np.mean([h == r for h, r in zip(hyp, ref)])
    conf = lp.exp().max(-1).values.mean(1).cpu()
    xm.master_print(f"exact {exact:.2f} mean conf {conf.numpy().round(3)}")
    torch.save({"posteriors": lp.cpu(), "ref": ref}, os.path.join(a.out, f"posteriors_{xr.global_ordinal()}.pt"))


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--bs", type=int, default=8)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--out", default="/tmp")
    main(p.parse_args())
