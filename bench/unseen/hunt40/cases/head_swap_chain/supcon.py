"""Supervised contrastive fine-tuning: a small CNN backbone whose classifier is replaced by nn.Identity once on the
device, a projection head added beside it, optimizer over itertools.chain of both."""
import argparse
import itertools

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class SmallCNN(nn.Module):
    def __init__(self, n_cls=10):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.fc = nn.Linear(32, n_cls)

    def forward(self, x):
        return self.fc(self.features(x))


class ProjectionHead(nn.Module):
    def __init__(self, d_in=32, d_out=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, d_in), nn.ReLU(), nn.Linear(d_in, d_out))

    def forward(self, h):
        return F.normalize(self.net(h), dim=-1)


def supcon_loss(z, labels, temp):
    sim = z @ z.T / temp
    eye = torch.eye(z.shape[0], dtype=torch.bool, device=z.device)
    sim = sim.masked_fill(eye, -1e9)
    pos = (labels[:, None] == labels[None, :]) & ~eye
    log_prob = sim - torch.logsumexp(sim, dim=1, keepdim=True)
    pos_f = pos.type_as(log_prob)
    return -((log_prob * pos_f).sum(1) / pos_f.sum(1).clamp(min=1)).mean()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--temp", type=float, default=0.1)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = xm.xla_device()
    backbone = SmallCNN().to(dev)
    backbone.fc = nn.Identity()
    head = ProjectionHead().to(dev)
    opt = torch.optim.SGD(itertools.chain(backbone.parameters(), head.parameters()), lr=0.05, momentum=0.9)
    images = torch.randn(64, 3, 16, 16)
    labels = torch.randint(0, 4, (64,))
    for step in range(args.steps):
        sl = slice((step * 16) % 64, (step * 16) % 64 + 16)
        x, y = images[sl].to(dev), labels[sl].to(dev)
        x = torch.cat([x, x.flip(-1)])  # two views
        y = torch.cat([y, y])
        loss = supcon_loss(head(backbone(x)), y, args.temp)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    with torch.no_grad():
        emb = backbone(images[:8].to(dev)).cpu()
    print("DTYPES", backbone.features[0].weight.dtype, head.net[0].weight.dtype, emb.dtype)


if __name__ == "__main__":
    main()
