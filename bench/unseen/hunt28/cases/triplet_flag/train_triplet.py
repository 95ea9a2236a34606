"""Batch-hard triplet training of an embedding net; retrieval recall@1 on held-out classes."""
import argparse
import os

p = argparse.ArgumentParser()
p.add_argument("--bf16", action="store_true", help="run the TPU in bfloat16")
p.add_argument("--steps", type=int, default=10)
p.add_argument("--margin", type=float, default=0.3)
args = p.parse_args()
if args.bf16:
    os.environ["XLA_USE_BF16"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

device = torch_xla.device()
torch.manual_seed(0)
N_CLASSES, PER_CLASS, DIM = 12, 4, 20
centers = torch.randn(N_CLASSES, DIM) * 2


def sample(classes, per_class):
    labels = torch.as_tensor(classes).repeat_interleave(per_class)
    feats = centers[labels] + torch.randn(len(labels), DIM)
    return feats, labels


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 16))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def batch_hard(emb, labels, margin):
    dist = torch.cdist(emb, emb)
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(labels), dtype=torch.bool, device=emb.device)
    pos_mask = same & ~eye
    hardest_pos = (dist * pos_mask.float()).max(dim=1).values
    big = dist.max().detach() + 1.0
    hardest_neg = torch.where(same, big, dist).min(dim=1).values
    loss = F.relu(hardest_pos - hardest_neg + margin)
    active = (loss > 0).float().mean()
    return loss.mean(), active


model = Embed().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
train_classes = np.arange(8)
for step in range(args.steps):
    picked = np.random.default_rng(step).choice(train_classes, 6, replace=False)
    x, y = sample(picked, PER_CLASS)
    x, y = x.to(device), y.to(device)
    loss, active = batch_hard(model(x), y, args.margin)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f} active {active.item():.2f}")

model.eval()
with torch.no_grad():
    gx, gy = sample(np.arange(8, 12), 5)
    qx, qy = sample(np.arange(8, 12), 2)
    g = model(gx.to(device))
    q = model(qx.to(device))
    sims = q @ g.T
    nearest = sims.argmax(dim=1).cpu()
recall1 = (gy[nearest] == qy).float().mean().item()
gap = (sims.max(1).values - sims.median(1).values).cpu().numpy()
print("recall@1", recall1, "mean gap", float(gap.mean()))
np.save("gallery.npy", g.cpu().numpy())
