"""Train with an EMA of the weights (swa_utils), re-estimate its BatchNorm statistics, evaluate both,
and dump the EMA's penultimate features (a forward hook) for the embedding report."""
import argparse
import json
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn, update_bn
import torch_xla
import torch_xla.core.xla_model as xm

from trainpkg import __version__
from trainpkg.data import loaders


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(16, 64), nn.BatchNorm1d(64), nn.ReLU(),
            nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU(),
        )
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.body(x))


def accuracy(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(1) == y).sum().item()
            total += y.numel()
    model.train()
    return correct / total


def knn_agreement(feats, labels, k=5):
    f = feats.astype(np.float64)
    f /= np.linalg.norm(f, axis=1, keepdims=True) + 1e-12
    sim = f @ f.T
    np.fill_diagonal(sim, -np.inf)
    nn_idx = np.argsort(-sim, axis=1)[:, :k]
    votes = labels[nn_idx]
    return float((votes == labels[:, None]).mean())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    print(f"trainpkg {__version__}")

    torch.manual_seed(0)
    device = torch_xla.device()
    train_loader, val_loader = loaders()

    model = Net().to(device)
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4)

    step = 0
    for epoch in range(args.epochs):
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            ema.update_parameters(model)
            xm.mark_step()
            if step % 8 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}")
            step += 1

    update_bn(train_loader, ema, device=device)

    feats = []
    handle = ema.module.body.register_forward_hook(lambda mod, inp, out: feats.append(out.detach().cpu()))
    ema_acc = accuracy(ema, val_loader, device)
    handle.remove()
    model_acc = accuracy(model, val_loader, device)

    feats = torch.cat(feats).numpy()
    labels = torch.cat([y for _, y in val_loader]).numpy()
    report = {"model_acc": model_acc, "ema_acc": ema_acc, "knn5": knn_agreement(feats, labels),
              "n_averaged": int(ema.n_averaged)}
    print(json.dumps(report))
    out = Path(args.out)
    out.mkdir(exist_ok=True)
    np.save(out / "ema_features.npy", feats)
    (out / "report.json").write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
