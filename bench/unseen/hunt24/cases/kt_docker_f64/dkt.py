"""Deep knowledge tracing: an LSTM over (skill, correct, elapsed-time) interactions of students.

Sequences have different lengths; they are padded and packed, lengths stay on the CPU as
pack_padded_sequence requires. Per-interaction features come from NumPy (float64)."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

import torch_xla
import torch_xla.core.xla_model as xm

N_SKILLS = 40
PRIOR_WEIGHT = 0.25


def simulate_students(n_students, rng):
    """Each student: skill ids, correctness, log response time (float64), difficulty prior."""
    mastery = rng.uniform(-1.5, 1.5, size=(n_students, N_SKILLS))
    difficulty = rng.normal(0.0, 1.0, size=N_SKILLS)
    seqs = []
    for s in range(n_students):
        T = int(rng.integers(8, 50))
        skills = rng.integers(0, N_SKILLS, size=T)
        p = 1.0 / (1.0 + np.exp(-(mastery[s, skills] - difficulty[skills])))
        correct = (rng.random(T) < p).astype(np.int64)
        log_rt = np.log1p(rng.gamma(2.0, 8.0, size=T))
        seqs.append((skills, correct, (log_rt - 2.5) / 0.8, difficulty[skills]))
    return seqs, difficulty


def collate(batch):
    batch = sorted(batch, key=lambda s: len(s[0]), reverse=True)
    lengths = torch.tensor([len(s[0]) for s in batch])
    T = int(lengths[0])
    skills = np.zeros((len(batch), T), dtype=np.int64)
    correct = np.zeros((len(batch), T), dtype=np.int64)
    feats = np.zeros((len(batch), T, 2))
    for i, (sk, c, rt, dif) in enumerate(batch):
        n = len(sk)
        skills[i, :n], correct[i, :n] = sk, c
        feats[i, :n, 0], feats[i, :n, 1] = rt, dif
    return torch.from_numpy(skills), torch.from_numpy(correct), torch.from_numpy(feats), lengths


class DKT(nn.Module):
    def __init__(self, n_skills, emb=64, hidden=128):
        super().__init__()
        self.inter = nn.Embedding(2 * n_skills, emb)
        self.feat_proj = nn.Linear(2, emb)
        self.lstm = nn.LSTM(emb, hidden, batch_first=True)
        self.out = nn.Linear(hidden, n_skills)

    def forward(self, skills, correct, feats, lengths):
        x = self.inter(skills + N_SKILLS * correct) + self.feat_proj(feats.float())
        packed = pack_padded_sequence(x, lengths, batch_first=True)
        h, _ = self.lstm(packed)
        h, _ = pad_packed_sequence(h, batch_first=True, total_length=skills.shape[1])
        return self.out(h)


def next_step_loss(logits, skills, correct, lengths, prior=None):
    # prediction at t is for the interaction at t+1; optional per-skill logit offset from the IRT prior
    pred = logits[:, :-1].gather(2, skills[:, 1:].unsqueeze(-1)).squeeze(-1)
    if prior is not None:
        pred = pred + PRIOR_WEIGHT * prior[skills[:, 1:]]
    tgt = correct[:, 1:].to(pred.dtype)
    steps = torch.arange(pred.shape[1], device=pred.device)
    mask = steps.unsqueeze(0) < (lengths.to(pred.device) - 1).unsqueeze(1)
    loss = F.binary_cross_entropy_with_logits(pred, tgt, reduction="none")
    return (loss * mask).sum() / mask.sum(), pred, tgt, mask


def auc(scores, labels):
    order = np.argsort(scores)
    ranks = np.empty(len(scores), dtype=np.float64)
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    rng = np.random.default_rng(3)
    students, difficulty = simulate_students(640, rng)
    train, val = students[:512], students[512:]
    device = torch_xla.device()
    model = DKT(N_SKILLS).to(device)
    prior = torch.from_numpy(-difficulty).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)

    for epoch in range(args.epochs):
        perm = rng.permutation(len(train))
        total, count = 0.0, 0
        for i in range(0, len(perm) - args.batch + 1, args.batch):
            skills, correct, feats, lengths = collate([train[j] for j in perm[i:i + args.batch]])
            logits = model(skills.to(device), correct.to(device), feats.to(device), lengths)
            loss, *_ = next_step_loss(logits, skills.to(device), correct.to(device), lengths, prior)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            xm.optimizer_step(opt)
            torch_xla.sync()
            total += loss.item()
            count += 1

        model.eval()
        all_p, all_y = [], []
        with torch.no_grad():
            for i in range(0, len(val), 64):
                skills, correct, feats, lengths = collate(val[i:i + 64])
                skills, correct = skills.to(device), correct.to(device)
                logits = model(skills, correct, feats.to(device), lengths)
                _, pred, tgt, mask = next_step_loss(logits, skills, correct, lengths, prior)
                all_p.append(torch.sigmoid(pred)[mask].cpu().numpy())
                all_y.append(tgt[mask].cpu().numpy())
        model.train()
        p, y = np.concatenate(all_p), np.concatenate(all_y)
        print(f"epoch {epoch} train_bce {total / count:.4f} val_auc {auc(p, y):.4f} "
              f"val_acc {((p > 0.5) == (y == 1)).mean():.4f}")
    torch.save(model.state_dict(), "dkt.pt")


if __name__ == "__main__":
    main()
