import os
from dataclasses import dataclass

import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

import metrics
from data import make_loaders
from model import ConvClassifier


@dataclass
class TrainerConfig:
    epochs: int = 2
    batch_size: int = 32
    lr: float = 1e-3
    n_classes: int = 3
    out_dir: str = "artifacts"


class Trainer:
    def __init__(self, cfg: TrainerConfig):
        self.cfg = cfg
        torch.manual_seed(0)
        self.device = torch_xla.device()
        self.model = ConvClassifier(cfg.n_classes).to(self.device)
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=cfg.lr)
        self.train_loader, self.val_loader = make_loaders(cfg.batch_size, n_classes=cfg.n_classes)
        self.step = 0

    def train_step(self, x, y):
        logits = self.model(x)
        loss = F.cross_entropy(logits, y)
        self.opt.zero_grad()
        loss.backward()
        xm.optimizer_step(self.opt)
        torch_xla.sync()
        return loss, logits

    def fit(self):
        for epoch in range(self.cfg.epochs):
            for x, y in self.train_loader:
                x, y = x.to(self.device), y.to(self.device)
                loss, logits = self.train_step(x, y)
                self.step += 1
                if self.step % 4 == 0:
                    print(f"epoch {epoch} step {self.step} loss {loss.item():.4f}")
        print("DTYPES weight", self.model.conv1.weight.dtype, "logits", logits.dtype, "loss", loss.dtype)

    @torch.no_grad()
    def evaluate(self):
        self.model.eval()
        all_logits, all_y = [], []
        for x, y in self.val_loader:
            all_logits.append(self.model(x.to(self.device)))
            all_y.append(y.to(self.device))
        report = metrics.summarize(torch.cat(all_logits), torch.cat(all_y), self.cfg.n_classes)
        os.makedirs(self.cfg.out_dir, exist_ok=True)
        torch.save(self.model.state_dict(), os.path.join(self.cfg.out_dir, "model.pt"))
        return report
