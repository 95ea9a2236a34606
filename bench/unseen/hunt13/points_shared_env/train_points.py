"""Train PointNet-lite on synthetic shapes; checkpoints every few steps for evaluate_avg.py, a CPU
re-evaluation of the final model (the number the paper table quotes), and a raw export of the head."""
from common import setup_env

setup_env()

import argparse
import copy
import json
import os
import struct
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

from common import PointNetLite, make_split


@dataclass
class EvalReport:
    logits: torch.Tensor
    labels: torch.Tensor
    probs: np.ndarray = field(init=False)
    accuracy: float = field(init=False)

    def __post_init__(self):
        self.probs = np.asarray(F.softmax(self.logits, dim=1).cpu())
        self.accuracy = float((self.probs.argmax(1) == np.asarray(self.labels.cpu())).mean())


def export_head(layer, path):
    """Little-endian float32 blob: rows, cols, weight (row-major), bias; read by the C++ scorer."""
    w = layer.weight.detach().cpu().contiguous()
    b = layer.bias.detach().cpu().contiguous()
    with open(path, "wb") as f:
        f.write(struct.pack("<II", *w.shape))
        f.write(bytes(w.untyped_storage()))
        f.write(bytes(b.untyped_storage()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--save-every", type=int, default=5)
    ap.add_argument("--ckpt-dir", default="ckpt")
    args = ap.parse_args()
    os.makedirs(args.ckpt_dir, exist_ok=True)

    torch.manual_seed(0)
    x_tr, y_tr = make_split(512, 48, seed=1)
    x_te, y_te = make_split(128, 48, seed=2)

    device = torch_xla.device()
    model = PointNetLite().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)

    for step in range(1, args.steps + 1):
        idx = torch.randint(0, len(x_tr), (32,))
        pts, y = x_tr[idx].to(device), y_tr[idx].to(device)
        loss = F.cross_entropy(model(pts), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        if step % args.save_every == 0:
            xm.save(model.state_dict(), os.path.join(args.ckpt_dir, f"step{step:04d}.pt"))
            print(f"step {step} loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        report = EvalReport(model(x_te.to(device)), y_te.to(device))
    print(f"device accuracy {report.accuracy:.4f}")

    # The paper's number: the same weights evaluated on the host, in float32.
    cpu_model = copy.deepcopy(model).cpu()
    with torch.no_grad():
        cpu_logits = cpu_model(x_te)
    cpu_acc = (cpu_logits.argmax(1) == y_te).float().mean().item()
    print(f"host accuracy {cpu_acc:.4f}")

    torch.save(model, os.path.join(args.ckpt_dir, "model_full.pt"))
    export_head(model.head[2], os.path.join(args.ckpt_dir, "head.bin"))
    np.save(os.path.join(args.ckpt_dir, "test_probs.npy"), report.probs)
    with open(os.path.join(args.ckpt_dir, "summary.json"), "w") as f:
        json.dump({"device_acc": report.accuracy, "host_acc": cpu_acc, "final_loss": loss.item(),
                   "host_logit_mean": cpu_logits.mean().item()}, f)


if __name__ == "__main__":
    main()
