"""Score a held-out table with the regressor train.py wrote."""
import argparse
import json

import numpy as np
import torch
import torch_xla

from common import Regressor, make_table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default="ckpt/regressor.pt")
    ap.add_argument("--out", default="out/scores.npy")
    ap.add_argument("--batch", type=int, default=256)
    args = ap.parse_args()

    device = torch_xla.device()
    state = torch.load(args.ckpt, map_location="cpu")
    model = Regressor()
    model.load_state_dict(state["model"])
    model.to(device).eval()

    X, y = make_table(1000, seed=7)
    preds = []
    with torch.no_grad():
        for start in range(0, len(X), args.batch):
            xb = torch.from_numpy(X[start:start + args.batch]).float().to(device)
            z = model(xb).double()
            preds.append((z * state["y_std"] + state["y_mean"]).cpu().numpy())
    pred = np.concatenate(preds)
    np.save(args.out, pred)
    rmse = float(np.sqrt(np.mean((pred - y) ** 2)))
    with open(args.out.replace(".npy", ".json"), "w") as f:
        json.dump({"rmse": rmse, "dtype": str(pred.dtype), "ckpt_dtype": str(state["model"]["net.0.weight"].dtype)}, f)
    print(f"rmse {rmse:.4f} dtype {pred.dtype}")


if __name__ == "__main__":
    main()
