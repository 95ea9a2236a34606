"""Pseudo-labelling with a confidence threshold (FixMatch-like) on two zipped loaders."""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from data import device_batches, loaders


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threshold", type=float, default=0.6)
    ap.add_argument("--lambda-u", type=float, default=1.0)
    args = ap.parse_args()
    steps = int(os.environ.get("STEPS", "20"))

    dev = xm.xla_device()
    net = nn.Sequential(nn.Linear(16, 48), nn.ReLU(), nn.Linear(48, 48), nn.ReLU(), nn.Linear(48, 3)).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    lab, unl = loaders(8 * steps, 24 * steps)
    mask_rate = torch.zeros((), device=dev)
    for step, ((xl, yl), (xu, _)) in enumerate(zip(device_batches(lab, dev), device_batches(unl, dev))):
        weak = xu + 0.05 * torch.randn_like(xu)
        strong = xu * (torch.rand_like(xu) > 0.2).float() + 0.3 * torch.randn_like(xu)
        with torch.no_grad():
            probs = F.softmax(net(weak), dim=-1)
            conf, pseudo = probs.max(dim=-1)
            mask = (conf >= args.threshold).float()
        sup = F.cross_entropy(net(xl), yl)
        unsup = (F.cross_entropy(net(strong), pseudo, reduction="none") * mask).mean()
        loss = sup + args.lambda_u * unsup
        opt.zero_grad()
        loss.backward()
        opt.step()
        mask_rate = 0.9 * mask_rate + 0.1 * mask.mean()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f} sup {sup.item():.4f} mask {mask_rate.item():.3f}")
    print("DTYPES", net[0].weight.dtype, probs.dtype, mask.dtype, mask_rate.dtype)


if __name__ == "__main__":
    main()
