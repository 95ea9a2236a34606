"""K-fold cross-validation: a fresh model and optimizer per fold, OOF predictions, a fold-averaged test ensemble."""
import argparse
import os
import statistics

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

parser = argparse.ArgumentParser()
parser.add_argument("--folds", type=int, default=3)
args = parser.parse_args()
STEPS = int(os.environ.get("STEPS", 6))      # steps per fold
dev = xm.xla_device()
rng = np.random.default_rng(0)

N, D = 300, 10
X = rng.standard_normal((N, D)).astype(np.float32)
y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).astype(np.int64)
X_test = torch.from_numpy(rng.standard_normal((64, D)).astype(np.float32)).to(dev)
folds = np.array_split(rng.permutation(N), args.folds)

oof = np.zeros((N, 2), dtype=np.float32)
test_pred = torch.zeros(64, 2, device=dev)


def build(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(D, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 2)).to(dev)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
    return model, optimizer


def run_fold(k, tr_idx, va_idx):
    model, optimizer = build(seed=k)
    xt, yt = torch.from_numpy(X[tr_idx]).to(dev), torch.from_numpy(y[tr_idx]).to(dev)
    for step in range(STEPS):
        b = torch.randint(0, len(tr_idx), (48,), device=dev)
        loss = nn.functional.cross_entropy(model(xt[b]), yt[b])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        xm.mark_step()
        print(f"fold {k} step {step} loss {loss.item():.4f}")
    model.eval()
    with torch.no_grad():
        probs = model(torch.from_numpy(X[va_idx]).to(dev)).softmax(-1)
        oof[va_idx] = probs.cpu().numpy()
        acc = (probs.argmax(-1).cpu() == torch.from_numpy(y[va_idx])).float().mean().item()
        test_pred.add_(model(X_test).softmax(-1) / len(folds))
    return acc


scores = []
for k, va_idx in enumerate(folds):
    tr_idx = np.concatenate([f for j, f in enumerate(folds) if j != k])
    scores.append(run_fold(k, tr_idx, va_idx))
    print(f"fold {k} acc {scores[-1]:.3f}")

print(f"CV acc {statistics.mean(scores):.3f} +- {statistics.pstdev(scores):.3f}")
oof_loss = -np.log(oof[np.arange(N), y] + 1e-7).mean()
print(f"OOF log-loss {oof_loss:.4f}")
ens = test_pred.cpu().numpy()
print("test ensemble head", np.round(ens[:3], 3).tolist())
print("DTYPES", oof.dtype, ens.dtype, test_pred.dtype)
