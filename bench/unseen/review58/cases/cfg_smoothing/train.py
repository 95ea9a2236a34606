"""Config dataclass (label smoothing, lr, hidden) and the model and its buffers built inside `with torch.device(dev):`."""
import os
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


@dataclass
class Config:
    hidden: int = 32
    classes: int = 6
    lr: float = 5e-3
    label_smoothing: float = 0.1
    steps: int = int(os.environ.get("STEPS", 6))
    bf16: bool = True


class Classifier(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(50, cfg.hidden)
        self.mix = nn.Linear(cfg.hidden, cfg.hidden)
        self.out = nn.Linear(cfg.hidden, cfg.classes)
        self.register_buffer("prior", torch.full((cfg.classes,), 1.0 / cfg.classes))

    def forward(self, tok):
        h = self.emb(tok).mean(1)
        return self.out(F.gelu(self.mix(h))) + self.prior.log()


def main(cfg):
    if cfg.bf16:
        os.environ["XLA_USE_BF16"] = "1"
    torch.manual_seed(0)
    dev = xm.xla_device()
    with torch.device(dev):
        model = Classifier(cfg)
        class_w = torch.linspace(0.5, 1.5, cfg.classes)
        log_temp = torch.zeros((), requires_grad=True)
    opt = torch.optim.Adam([*model.parameters(), log_temp], lr=cfg.lr)
    for step in range(cfg.steps):
        tok = torch.randint(0, 50, (16, 7))
        y = tok[:, 0] % cfg.classes
        logits = model(tok.to(dev)) / log_temp.exp()
        loss = F.cross_entropy(logits, y.to(dev), weight=class_w, label_smoothing=cfg.label_smoothing)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    torch.save({"model": model.state_dict(), "log_temp": log_temp.detach().cpu()}, "/tmp/review58/cfg_ckpt.pt")
    print("DTYPES", model.prior.dtype, class_w.dtype, logits.dtype, log_temp.dtype, torch.load("/tmp/review58/cfg_ckpt.pt")["log_temp"].dtype)


if __name__ == "__main__":
    main(Config())
