import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

from .data import batches, ring_batch
from .model import RingNet


def parse():
    p = argparse.ArgumentParser(prog="ringcls")
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--rings", type=int, default=4)
    p.add_argument("--out", default="runs/ring")
    return p.parse_args()


def main():
    args = parse()
    torch.manual_seed(0)
    device = torch_xla.device()
    model = RingNet(n_rings=args.rings).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    for step, (xy, label) in enumerate(batches(args.steps, args.batch, args.rings)):
        xy, label = xy.to(device), label.to(device)
        logits = model(xy)
        loss = F.cross_entropy(logits, label)
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES weight", model.fc1.weight.dtype, "logits", logits.dtype, "loss", loss.dtype)

    model.eval()
    with torch.no_grad():
        xy, label = ring_batch(256, args.rings, torch.Generator().manual_seed(1))
        probs = torch.softmax(model(xy.to(device)), dim=-1).cpu()
    acc = (probs.argmax(-1) == label).float().mean().item()
    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "probs.npy"), probs.numpy())
    torch.save(model.state_dict(), os.path.join(args.out, "ringnet.pt"))
    print("eval acc", round(acc, 3), "probs", probs.dtype)


if __name__ == "__main__":
    main()
