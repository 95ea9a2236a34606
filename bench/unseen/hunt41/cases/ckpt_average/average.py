"""Checkpoint averaging: load the last N state dicts, average them on the accelerator, evaluate, save.

Writes `<out>.pt` (float weights as averaged), `<out>.bf16.pt` (an explicit bfloat16 copy for the serving stack) and
`<out>.json` (validation metrics). If the run directory holds no checkpoints it makes N (seeded), so it runs anywhere.
"""
import argparse
import glob
import json
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

ap = argparse.ArgumentParser()
ap.add_argument("--ckpt-dir", default="/tmp/avg_ckpts")
ap.add_argument("--n", type=int, default=3)
ap.add_argument("--out", default="/tmp/avg_ckpts/averaged")
args = ap.parse_args()


def make_model():
    return nn.Sequential(nn.Linear(12, 48), nn.LayerNorm(48), nn.GELU(), nn.Linear(48, 3))


def ensure_checkpoints(d, n):
    os.makedirs(d, exist_ok=True)
    if len(glob.glob(os.path.join(d, "step_*.pt"))) >= n:
        return
    torch.manual_seed(0)
    base = make_model()
    for i in range(n):
        with torch.no_grad():
            for prm in base.parameters():
                prm.add_(0.01 * torch.randn_like(prm))
        torch.save(base.state_dict(), os.path.join(d, f"step_{1000 * (i + 1):06d}.pt"))


ensure_checkpoints(args.ckpt_dir, args.n)
paths = sorted(glob.glob(os.path.join(args.ckpt_dir, "step_*.pt")))[-args.n:]
dev = xm.xla_device()

avg = None
for path in paths:
    sd = torch.load(path, map_location="cpu")
    if avg is None:
        avg = {k: v.to(dev).clone() for k, v in sd.items()}
    else:
        for k, v in sd.items():
            avg[k] += v.to(dev)
for k in avg:
    avg[k] /= len(paths)
xm.mark_step()

model = make_model().to(dev)
model.load_state_dict(avg)
model.eval()

gen = torch.Generator().manual_seed(7)
xv = torch.randn(64, 12, generator=gen)
yv = (xv[:, :3].sum(dim=1) > 0).long() + (xv[:, 3] > 1).long()
with torch.no_grad():
    logits = model(xv.to(dev))
    nll = nn.functional.cross_entropy(logits, yv.to(dev))
    acc = (logits.argmax(dim=1).cpu() == yv).float().mean()
print("DTYPES", next(model.parameters()).dtype, avg["0.weight"].dtype, logits.dtype)

torch.save({k: v.cpu() for k, v in avg.items()}, args.out + ".pt")
torch.save({k: v.to(torch.bfloat16).cpu() for k, v in model.state_dict().items()}, args.out + ".bf16.pt")
with open(args.out + ".json", "w") as f:
    json.dump({"n_averaged": len(paths), "val_nll": nll.item(), "val_acc": acc.item()}, f)
f32 = torch.load(args.out + ".pt")
b16 = torch.load(args.out + ".bf16.pt")
print("SAVED", f32["0.weight"].dtype, b16["0.weight"].dtype, "nll", round(nll.item(), 4), "acc", acc.item())
