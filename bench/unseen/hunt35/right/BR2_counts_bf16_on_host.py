"""Long-tailed intent classifier: class-balanced weights from the label counts, and
label-smoothed soft targets built on the device."""
import argparse
import json
import os

os.environ.setdefault("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")  # same default as the container

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

N_CLS, DIM = 5, 24


def class_weights(labels, n_cls, device):
    counts = torch.bincount(labels, minlength=n_cls).bfloat16().to(device)
    inv = counts.sum() / (n_cls * counts.clamp(min=1.0))
    return inv / inv.mean()


def smooth_targets(y, n_cls, eps):
    target = torch.full((y.shape[0], n_cls), eps / (n_cls - 1), device=y.device, dtype=torch.bfloat16)
    return target.scatter_(1, y[:, None], 1.0 - eps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--smooth", type=float, default=0.1)
    ap.add_argument("--ckpt", default="ckpt/model.pt")
    args = ap.parse_args()
    torch.manual_seed(0)
    device = xm.xla_device()
    # long tail: class c has about 2**-c of the data
    probs = torch.tensor([2.0 ** -c for c in range(N_CLS)])
    y_all = torch.multinomial(probs / probs.sum(), 1024, replacement=True)
    x_all = torch.randn(1024, DIM) + y_all[:, None].float() * 0.3
    weights = class_weights(y_all, N_CLS, device)

    model = nn.Sequential(nn.Linear(DIM, 64), nn.SiLU(), nn.Linear(64, N_CLS)).bfloat16().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(args.steps):
        idx = torch.randint(0, 1024, (128,))
        xb, yb = x_all[idx].to(device, torch.bfloat16), y_all[idx].to(device)
        logp = F.log_softmax(model(xb), dim=1)
        soft = smooth_targets(yb, N_CLS, args.smooth)
        per_ex = -(soft * logp).sum(dim=1)
        loss = (weights[yb] * per_ex).sum() / weights[yb].sum()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")
    print("weights", weights.dtype, "soft", soft.dtype, "logp", logp.dtype)

    with torch.no_grad():
        pred = model(x_all.bfloat16().to(device)).argmax(dim=1).cpu()
    per_class = [float((pred[y_all == c] == c).float().mean()) for c in range(N_CLS)]
    os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
    torch.save({k: v.cpu().float() for k, v in model.state_dict().items()}, args.ckpt)
    with open(os.path.join(os.path.dirname(args.ckpt), "per_class.json"), "w") as f:
        json.dump({"acc": per_class, "weights": weights.cpu().tolist()}, f)
    print("per-class acc", [round(a, 3) for a in per_class])


if __name__ == "__main__":
    main()
