"""MeZO: memory-efficient zeroth-order fine-tuning (two forward passes per step, no backward).

The perturbation z is regenerated from its seed instead of being stored: theta + eps z,
theta - eps z, back to theta, then theta -= lr * g * z with the projected gradient g.
"""
import argparse
import json
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class BagClassifier(nn.Module):
    def __init__(self, vocab=500, dim=32, classes=4):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.head(self.norm(self.emb(tokens)))


def make_data(n, gen, vocab=500, length=12, classes=4):
    y = torch.randint(0, classes, (n,), generator=gen)
    base = torch.randint(0, vocab, (n, length), generator=gen)
    signal = (y[:, None] * 100 + torch.randint(0, 20, (n, 4), generator=gen))
    base[:, :4] = signal
    return base, y


def perturb(params, seed, scale):
    g = torch.Generator().manual_seed(seed)
    for p in params:
        z = torch.randn(p.shape, generator=g).to(p.device)
        p.data.add_(z, alpha=scale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--eps", type=float, default=1e-2)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(0)
    xtr, ytr = make_data(512, gen)
    xva, yva = make_data(256, gen)
    model = BagClassifier().to(device).eval()
    params = [p for p in model.parameters() if p.requires_grad]
    xva, yva = xva.to(device), yva.to(device)

    log = []
    for step in range(args.steps):
        idx = torch.randint(0, 512, (64,), generator=gen)
        xb, yb = xtr[idx].to(device), ytr[idx].to(device)
        seed = 1000 + step
        with torch.no_grad():
            perturb(params, seed, args.eps)
            loss_plus = F.cross_entropy(model(xb), yb)
            perturb(params, seed, -2 * args.eps)
            loss_minus = F.cross_entropy(model(xb), yb)
            perturb(params, seed, args.eps)
            g = ((loss_plus - loss_minus) / (2 * args.eps)).item()
            perturb(params, seed, -args.lr * g)
        xm.mark_step()
        log.append({"step": step, "g": g, "loss": ((loss_plus + loss_minus) / 2).item()})
        if step % 6 == 0:
            print(f"step {step:2d} loss+ {loss_plus:.4f} loss- {loss_minus:.4f} g {g:+.3f}")

    with torch.no_grad():
        logits = model(xva)
        nll = F.cross_entropy(logits, yva, reduction="none")
        correct = (logits.argmax(-1) == yva).sum()
        acc = correct / yva.numel()
        per_class = torch.zeros(4, device=device).index_add(0, yva, nll) / torch.bincount(yva, minlength=4)
    print(f"val acc {acc:.3f} nll {nll.mean():.4f} per-class {per_class.cpu().tolist()}")
    out = Path(args.out)
    out.mkdir(exist_ok=True)
    (out / "mezo_log.json").write_text(json.dumps({"log": log, "val_acc": acc.item(), "per_class_nll": per_class.tolist()}, indent=1))
    torch.save(model.state_dict(), out / "mezo_finetuned.pt")


if __name__ == "__main__":
    main()
