"""Turn a training checkpoint into the .npz the NumPy inference service loads (no torch there)."""

import argparse
import os

import numpy as np
import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt", default="ckpt/last.pt")
    parser.add_argument("--out", default="export/forecaster.npz")
    args = parser.parse_args()
    ckpt = torch.load(args.ckpt, map_location="cpu", weights_only=False)
    arrays = {name.replace(".", "/"): t.numpy() for name, t in ckpt["model"].items()}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    np.savez(args.out, **arrays)
    print(f"exported {len(arrays)} arrays from step {ckpt['step']} to {args.out}")


if __name__ == "__main__":
    main()
