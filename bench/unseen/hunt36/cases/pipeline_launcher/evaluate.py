import argparse

import numpy as np
import torch
import torch_xla

from common import TwoMoonsNet, two_moons


def expected_calibration_error(probs, labels, n_bins=10):
    conf, pred = probs.max(-1)
    bins = torch.linspace(0, 1, n_bins + 1, device=probs.device)
    idx = torch.bucketize(conf, bins[1:-1])
    ece = torch.zeros((), device=probs.device)
    for b in range(n_bins):
        sel = idx == b
        if sel.any():
            gap = (pred[sel] == labels[sel]).float().mean() - conf[sel].mean()
            ece = ece + sel.float().mean() * gap.abs()
    return ece


@torch.no_grad()
def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt", required=True)
    p.add_argument("--preds", required=True)
    a = p.parse_args()
    device = torch_xla.device()
    state = torch.load(a.ckpt)
    model = TwoMoonsNet()
    model.load_state_dict(state["ema"])
    model = model.to(device).eval()
    x, y = two_moons(512, seed=1)
    probs = torch.softmax(model(x.to(device)), -1)
    acc = (probs.argmax(-1).cpu() == y).float().mean().item()
    ece = expected_calibration_error(probs, y.to(device))
    np.save(a.preds, probs.cpu().numpy())
    print("EVAL acc", round(acc, 4), "ece", round(ece.item(), 4), "probs", probs.dtype, "ckpt", state["ema"]["net.0.weight"].dtype)


if __name__ == "__main__":
    main()
