"""Average the last checkpoints of train_points.py on the host (uniform weight averaging) and evaluate
the averaged model on the device."""
from common import setup_env

setup_env()

import argparse
import glob
import json
import os

import numpy as np
import torch
import torch_xla

from common import PointNetLite, make_split


def average_state_dicts(paths):
    avg = None
    for p in paths:
        sd = torch.load(p, map_location="cpu")
        if avg is None:
            avg = {k: v.clone() for k, v in sd.items()}
        else:
            for k in avg:
                avg[k] += sd[k]
    return {k: v / len(paths) for k, v in avg.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt-dir", default="ckpt")
    ap.add_argument("--last", type=int, default=3)
    args = ap.parse_args()

    paths = sorted(glob.glob(os.path.join(args.ckpt_dir, "step*.pt")))[-args.last:]
    avg = average_state_dicts(paths)
    print("averaged", [os.path.basename(p) for p in paths], "dtypes", sorted({str(v.dtype) for v in avg.values()}))

    device = torch_xla.device()
    model = PointNetLite()
    model.load_state_dict(avg)
    model.to(device).eval()

    x_te, y_te = make_split(128, 48, seed=2)
    with torch.no_grad():
        logits = model(x_te.to(device))
        probs = torch.softmax(logits, dim=1)
        acc = (probs.argmax(1) == y_te.to(device)).float().mean()
    torch_xla.sync()
    print(f"averaged model accuracy {acc.item():.4f}")
    np.save(os.path.join(args.ckpt_dir, "avg_probs.npy"), probs.cpu().numpy())
    torch.save(avg, os.path.join(args.ckpt_dir, "averaged.pt"))
    with open(os.path.join(args.ckpt_dir, "avg_summary.json"), "w") as f:
        json.dump({"checkpoints": len(paths), "accuracy": acc.item()}, f)


if __name__ == "__main__":
    main()
