"""Sentiment-ish classifier over bag-of-embeddings, trained by a small Trainer class.

Starts from a pretrained init (written on the CPU the first time), fits, evaluates with
hand-written NumPy metrics, saves the final weights.
"""
import argparse
import logging
import os
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

log = logging.getLogger("trainer")

VOCAB, CLASSES = 500, 3


class BagClassifier(nn.Module):
    def __init__(self, vocab=VOCAB, dim=48, classes=CLASSES):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.ff = nn.Sequential(nn.Linear(dim, 64), nn.Tanh(), nn.Dropout(0.1), nn.Linear(64, classes))

    def forward(self, ids, offsets):
        return self.ff(self.emb(ids, offsets))


class SyntheticReviews(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        g = torch.Generator().manual_seed(seed)
        self.items = []
        for _ in range(n):
            label = int(torch.randint(0, CLASSES, (1,), generator=g))
            length = int(torch.randint(5, 20, (1,), generator=g))
            ids = torch.randint(0, VOCAB, (length,), generator=g)
            ids[: length // 2] = (ids[: length // 2] % 100) + 100 * label
            self.items.append((ids, label))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate(batch):
    ids = [b[0] for b in batch]
    offsets = torch.tensor([0] + [len(t) for t in ids[:-1]]).cumsum(0)
    return torch.cat(ids), offsets, torch.tensor([b[1] for b in batch])


def macro_f1(y_true, y_pred, k):
    f1s = []
    for c in range(k):
        tp = np.sum((y_pred == c) & (y_true == c))
        fp = np.sum((y_pred == c) & (y_true != c))
        fn = np.sum((y_pred != c) & (y_true == c))
        f1s.append(2 * tp / max(2 * tp + fp + fn, 1))
    return float(np.mean(f1s))


def brier(y_true, probs):
    onehot = np.eye(probs.shape[1], dtype=probs.dtype)[y_true]
    return float(np.mean(np.sum((probs - onehot) ** 2, axis=1)))


class Trainer:
    def __init__(self, args):
        # the runtime reads this at the first device tensor
        os.environ["XLA_USE_BF16"] = "1"
        self.args = args
        self.device = torch_xla.device()
        self.model = BagClassifier().to(self.device)
        if args.init:
            self.load_pretrained(args.init)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=args.lr, weight_decay=0.01)
        self.sched = torch.optim.lr_scheduler.StepLR(self.opt, step_size=8, gamma=0.5)
        self.train_loader = torch.utils.data.DataLoader(
            SyntheticReviews(args.steps * args.batch, 0), batch_size=args.batch, shuffle=True, collate_fn=collate
        )
        self.val_loader = torch.utils.data.DataLoader(SyntheticReviews(96, 1), batch_size=32, collate_fn=collate)

    def load_pretrained(self, path):
        path = Path(path)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.manual_seed(1234)
            torch.save(BagClassifier().state_dict(), path)
        state = torch.load(path, map_location="cpu")
        self.model.load_state_dict(state)
        log.info("loaded %s", path)

    def train_step(self, ids, offsets, labels):
        self.model.train()
        logits = self.model(ids, offsets)
        loss = F.cross_entropy(logits, labels, label_smoothing=0.05)
        self.opt.zero_grad()
        loss.backward()
        xm.optimizer_step(self.opt)
        self.sched.step()
        return loss

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        preds, probs, gold = [], [], []
        for ids, offsets, labels in self.val_loader:
            logits = self.model(ids.to(self.device), offsets.to(self.device))
            p = F.softmax(logits, dim=-1)
            probs.append(p)
            preds.append(p.argmax(-1))
            gold.append(labels)
        probs = torch.cat(probs).cpu().numpy()
        preds = torch.cat(preds).cpu().numpy()
        gold = torch.cat(gold).numpy()
        return {
            "acc": float((preds == gold).mean()),
            "macro_f1": macro_f1(gold, preds, CLASSES),
            "brier": brier(gold, probs),
            "confidence": float(probs.max(1).mean()),
        }

    def fit(self):
        for step, (ids, offsets, labels) in enumerate(self.train_loader, 1):
            loss = self.train_step(ids.to(self.device), offsets.to(self.device), labels.to(self.device))
            xm.mark_step()
            log.info("step %d loss %.4f", step, loss.item())
        metrics = self.evaluate()
        log.info("eval %s", metrics)
        out = Path(self.args.out)
        out.mkdir(parents=True, exist_ok=True)
        torch.save(self.model.state_dict(), out / "final.pt")
        np.save(out / "val_metrics.npy", np.array(list(metrics.values()), dtype=np.float32))
        return metrics


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--init", default="/tmp/hunt7_trainer_class/init.pt")
    ap.add_argument("--out", default="/tmp/hunt7_trainer_class/out")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s", force=True)
    torch.manual_seed(0)
    Trainer(args).fit()


if __name__ == "__main__":
    main()
