"""Sequence tagger whose dtype comes from a config dataclass (a string turned into a torch dtype), with
explicit dtypes everywhere in the user code."""
import os
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


@dataclass
class Config:
    vocab: int = 50
    dim: int = 32
    n_tags: int = 4
    seq: int = 12
    batch: int = 16
    steps: int = int(os.environ.get("STEPS", "10"))
    lr: float = 3e-3
    dtype: str = "float32"


class Tagger(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.emb = nn.Embedding(cfg.vocab, cfg.dim)
        self.mix = nn.Linear(cfg.dim, cfg.dim)
        self.out = nn.Linear(cfg.dim, cfg.n_tags)

    def forward(self, tok, mask):
        h = self.emb(tok)
        # masked mean as context, in the hidden states' dtype
        ctx = (h * mask.unsqueeze(-1).to(h.dtype)).sum(1) / mask.sum(1, keepdim=True).to(h)
        h = torch.tanh(self.mix(h + ctx.unsqueeze(1)))
        return self.out(h)


def main():
    cfg = Config()
    dtype = getattr(torch, cfg.dtype)
    dev = torch_xla.device()
    torch.manual_seed(0)
    model = Tagger(cfg).to(device=dev, dtype=dtype)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, eps=torch.finfo(torch.float32).eps)
    class_w = torch.as_tensor([1.0, 2.0, 2.0, 4.0], device=dev)
    running = torch.zeros((), dtype=torch.float32, device=dev)
    for step in range(cfg.steps):
        tok = torch.randint(0, cfg.vocab, (cfg.batch, cfg.seq)).to(dev)
        mask = (torch.rand(cfg.batch, cfg.seq) > 0.2).type(torch.float32).to(dev)
        tags = tok % cfg.n_tags
        jitter = torch.randn(cfg.batch, cfg.seq, cfg.n_tags, dtype=torch.get_default_dtype(), device=dev)
        logits = model(tok, mask) + 0.01 * jitter
        smooth = torch.full_like(logits, 0.05 / cfg.n_tags)
        target = smooth.scatter(-1, tags.unsqueeze(-1), 0.95 + 0.05 / cfg.n_tags)
        logp = logits.log_softmax(-1)
        w = class_w[tags] * mask
        loss = -(target * logp).sum(-1).mul(w).sum() / w.sum().clamp_min(torch.finfo(torch.float32).eps)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running = 0.9 * running + 0.1 * loss.detach()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    bias = logits.new_tensor([0.0, 0.1, 0.1, 0.2])
    probs = (logits + bias).softmax(-1)
    print("DTYPES", next(model.parameters()).dtype, logits.dtype, running.dtype, torch.get_default_dtype())
    print("running", running.cpu().item(), "probs", probs.detach().cpu().dtype)


if __name__ == "__main__":
    main()
