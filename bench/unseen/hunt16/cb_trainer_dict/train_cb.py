"""Callback-driven trainer: a tagger whose model returns a dict, hand-made label smoothing."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

NUM_CLASSES = 6
FEATS = 24


class Tagger(nn.Module):
    def __init__(self, feats=FEATS, hidden=64, classes=NUM_CLASSES):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(feats, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.cls = nn.Linear(hidden, classes)
        self.conf = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.body(x)
        return {"logits": self.cls(h), "confidence": torch.sigmoid(self.conf(h)).squeeze(-1)}


def smoothed_loss(out, labels, eps=0.1):
    target = F.one_hot(labels, NUM_CLASSES).float()
    target = target * (1.0 - eps) + eps / NUM_CLASSES
    logp = F.log_softmax(out["logits"], dim=-1)
    ce = -(target * logp).sum(-1)
    hit = (out["logits"].argmax(-1) == labels).float()
    conf_loss = F.binary_cross_entropy(out["confidence"], hit)
    return ce.mean() + 0.5 * conf_loss


class Callback:
    def on_batch_end(self, trainer, step, loss):
        pass

    def on_fit_end(self, trainer):
        pass


class LossLogger(Callback):
    def __init__(self, every=5):
        self.every = every
        self.history = []

    def on_batch_end(self, trainer, step, loss):
        if step % self.every == 0:
            value = loss.detach().cpu()
            self.history.append(value)
            print(f"step {step} loss {value.item():.4f}")

    def on_fit_end(self, trainer):
        torch.save(torch.stack(self.history), "loss_history.pt")


class Trainer:
    def __init__(self, model, optimizer, device, callbacks=()):
        self.model = model
        self.optimizer = optimizer
        self.device = device
        self.callbacks = list(callbacks)

    def training_step(self, batch):
        x, labels = batch
        out = self.model(x)
        return smoothed_loss(out, labels)

    def fit(self, batches):
        self.model.train()
        for step, (x, labels) in enumerate(batches):
            x = x.to(self.device)
            labels = labels.to(self.device)
            self.optimizer.zero_grad()
            loss = self.training_step((x, labels))
            loss.backward()
            xm.optimizer_step(self.optimizer)
            torch_xla.sync()
            for cb in self.callbacks:
                cb.on_batch_end(self, step, loss)
        for cb in self.callbacks:
            cb.on_fit_end(self)


def make_batches(n, bs=32):
    g = torch.Generator().manual_seed(0)
    for _ in range(n):
        x = torch.randn(bs, FEATS, generator=g)
        y = torch.randint(0, NUM_CLASSES, (bs,), generator=g)
        yield x, y


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    model = Tagger().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    trainer = Trainer(model, opt, device, callbacks=[LossLogger(every=5)])
    trainer.fit(make_batches(20))
    torch.save(model.state_dict(), "tagger.pt")


if __name__ == "__main__":
    main()
