"""Inference-time activation probe of a small CNN: forward hooks keep every layer's output,
per-layer statistics, prediction entropy and confidence buckets; a pickle of the activations
and a histogram figure for the report."""
import argparse
import math
import pickle
from dataclasses import asdict, dataclass
from pathlib import Path

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class SmallCNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.fc(self.pool(x).flatten(1))


@dataclass
class LayerStats:
    name: str
    mean: float
    std: float
    dead: float


def load_model(path, device):
    model = SmallCNN()
    if not path.exists():  # the training job's artefact; a seeded stand-in for the probe's smoke run
        torch.manual_seed(0)
        torch.save(SmallCNN().state_dict(), path)
    model.load_state_dict(torch.load(path, map_location="cpu"))
    return model.to(device).eval()


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default="cnn.pt")
    ap.add_argument("--out", default="out")
    ap.add_argument("--batches", type=int, default=3)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(exist_ok=True)

    device = torch_xla.device()
    model = load_model(Path(args.ckpt), device)
    acts = {}
    for name, mod in model.named_children():
        if isinstance(mod, (nn.Conv2d, nn.Linear)):
            mod.register_forward_hook(lambda m, i, o, name=name: acts.setdefault(name, []).append(o.detach()))

    gen = torch.Generator().manual_seed(0)
    boundaries = torch.tensor([0.2, 0.4, 0.6, 0.8], device=device)
    bucket_counts = torch.zeros(5, dtype=torch.long, device=device)
    entropies = []
    with torch.no_grad():
        for _ in range(args.batches):
            x = torch.rand(32, 1, 16, 16, generator=gen)
            probs = model(x.to(device)).softmax(-1)
            entropies.append(torch.special.entr(probs).sum(-1))
            conf = probs.max(-1).values
            bucket_counts += torch.bincount(torch.bucketize(conf, boundaries), minlength=5)
            xm.mark_step()

    entropy = torch.cat(entropies)
    ent_hist = torch.histc(entropy, bins=8, min=0.0, max=math.log(10))
    stats = []
    for name, outs in acts.items():
        a = torch.cat(outs)
        stats.append(LayerStats(name, float(a.mean()), float(a.std()), float((a <= 0).float().mean())))
    for s in stats:
        print(f"{s.name:6s} mean {s.mean:+.4f} std {s.std:.4f} dead {s.dead:.3f}")
    print(f"entropy mean {entropy.mean():.4f}  histogram {ent_hist.cpu().tolist()}")
    print(f"confidence buckets {bucket_counts.cpu().tolist()}")

    with open(out / "activations.pkl", "wb") as fh:
        pickle.dump({name: torch.cat(outs).cpu() for name, outs in acts.items()}, fh)
    with open(out / "layer_stats.pkl", "wb") as fh:
        pickle.dump([asdict(s) for s in stats], fh)
    fig, axes = plt.subplots(1, len(acts), figsize=(3 * len(acts), 2.5))
    for ax, (name, outs) in zip(axes, acts.items()):
        ax.hist(np.asarray(torch.cat(outs).cpu()).ravel(), bins=40)
        ax.set_title(name)
    fig.savefig(out / "activations.png", dpi=70)
    return 0
