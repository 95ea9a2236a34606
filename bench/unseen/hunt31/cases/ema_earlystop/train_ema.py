"""Tabular regressor with an EMA of the weights, early stopping on the EMA model's validation loss."""
import json
import os

os.environ.update({"XLA_USE_BF16": "1"})

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

DECAY, PATIENCE = 0.9, 3


def make_model():
    return nn.Sequential(nn.Linear(10, 48), nn.BatchNorm1d(48), nn.SiLU(), nn.Dropout(0.1), nn.Linear(48, 1))


@torch.no_grad()
def ema_update(ema, model, d):
    for k, v in model.state_dict().items():
        if v.dtype.is_floating_point:
            ema[k].mul_(d).add_(v.detach(), alpha=1 - d)
        else:
            ema[k].copy_(v)


def main():
    device = xm.xla_device()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(512, 10)).astype(np.float32)
    Y = (X[:, :3].sum(1, keepdims=True) + 0.1 * rng.normal(size=(512, 1))).astype(np.float32)
    Xtr, Ytr = torch.from_numpy(X[:400]).to(device), torch.from_numpy(Y[:400]).to(device)
    Xva, Yva = torch.from_numpy(X[400:]).to(device), torch.from_numpy(Y[400:]).to(device)

    model = make_model().to(device)
    ema = {k: v.detach().clone() for k, v in model.state_dict().items()}
    evaluator = make_model().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)

    best = torch.tensor(float("inf"), device=device)
    best_state, bad, history = None, 0, []
    for epoch in range(12):
        model.train()
        for i in range(0, 400, 50):
            loss = nn.functional.mse_loss(model(Xtr[i:i + 50]), Ytr[i:i + 50])
            opt.zero_grad(); loss.backward(); opt.step()
            ema_update(ema, model, DECAY)
            xm.mark_step()
        evaluator.load_state_dict(ema)
        evaluator.eval()
        with torch.no_grad():
            val_loss = nn.functional.mse_loss(evaluator(Xva), Yva)
        history.append(val_loss.item())
        if val_loss < best:
            best, bad = val_loss, 0
            best_state = {k: v.cpu().clone() for k, v in ema.items()}
        else:
            bad += 1
            if bad >= PATIENCE:
                break
    print("DTYPES", ema["0.weight"].dtype, best.dtype, evaluator[0].weight.dtype, best_state["0.weight"].dtype)
    torch.save(best_state, "best_ema.pt")
    with open("history.json", "w") as f:
        json.dump({"val": history, "best": best.item(), "epochs": len(history)}, f)
    print("best", best.item())


if __name__ == "__main__":
    main()
