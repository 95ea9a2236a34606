"""Settings and data shared by train_points.py and evaluate_avg.py."""
import os

import numpy as np
import torch

KINDS = ("sphere", "cube", "torus", "helix")


def setup_env():
    """Call before the first XLA tensor: the TPU runtime, bf16 on the device."""
    os.environ.setdefault("PJRT_DEVICE", "TPU")
    os.environ["XLA_USE_BF16"] = "1"
    os.environ.setdefault("XLA_IR_DEBUG", "0")


def make_cloud(kind, n, rng):
    u = rng.uniform(0.0, 1.0, size=(n, 2))
    if kind == "sphere":
        th, ph = 2 * np.pi * u[:, 0], np.arccos(2 * u[:, 1] - 1)
        pts = np.stack([np.sin(ph) * np.cos(th), np.sin(ph) * np.sin(th), np.cos(ph)], 1)
    elif kind == "cube":
        pts = rng.uniform(-1, 1, size=(n, 3))
        face = rng.integers(0, 3, size=n)
        pts[np.arange(n), face] = np.sign(pts[np.arange(n), face])
    elif kind == "torus":
        a, b = 2 * np.pi * u[:, 0], 2 * np.pi * u[:, 1]
        pts = np.stack([(1 + 0.35 * np.cos(b)) * np.cos(a), (1 + 0.35 * np.cos(b)) * np.sin(a), 0.35 * np.sin(b)], 1)
    else:
        t = 4 * np.pi * u[:, 0]
        pts = np.stack([np.cos(t), np.sin(t), t / (2 * np.pi) - 1], 1)
    rot, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    return pts @ rot.T * rng.uniform(0.7, 1.3) + 0.03 * rng.standard_normal((n, 3))


def make_split(count, n_points, seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, len(KINDS), size=count)
    x = np.stack([make_cloud(KINDS[k], n_points, rng) for k in y])
    return torch.from_numpy(x).float(), torch.from_numpy(y)


class PointNetLite(torch.nn.Module):
    def __init__(self, k=len(KINDS)):
        super().__init__()
        nn = torch.nn
        self.point_mlp = nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Linear(32, 64), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, k))

    def forward(self, pts):
        return self.head(self.point_mlp(pts).max(dim=1).values)
