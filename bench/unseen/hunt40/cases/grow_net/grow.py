"""Progressive growing: a residual MLP starts shallow and gets a new block (initialised to identity) every
--grow-every steps; the new block's parameters join the optimizer as their own group."""
import argparse
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class ResBlock(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        nn.init.zeros_(self.fc2.weight)
        nn.init.zeros_(self.fc2.bias)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class GrowingNet(nn.Module):
    def __init__(self, d_in, d, n_out):
        super().__init__()
        self.stem = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList([ResBlock(d)])
        self.head = nn.Linear(d, n_out)

    def grow(self):
        blk = ResBlock(self.stem.out_features).to(self.stem.weight.device)
        self.blocks.append(blk)
        return blk

    def forward(self, x):
        h = self.stem(x)
        for b in self.blocks:
            h = b(h)
        return self.head(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "8")))
    ap.add_argument("--grow-every", type=int, default=3)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = xm.xla_device()
    x_all = torch.randn(512, 12)
    y_all = (x_all[:, :3].sum(1) > 0).long() + (x_all[:, 3] > 1).long()
    model = GrowingNet(12, 24, 3).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(args.steps):
        if step and step % args.grow_every == 0:
            blk = model.grow()
            opt.add_param_group({"params": blk.parameters(), "lr": 4e-3})
            print(f"grew to {len(model.blocks)} blocks")
        i = (step * 32) % 512
        x, y = x_all[i:i + 32].to(dev), y_all[i:i + 32].to(dev)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES", model.stem.weight.dtype, model.blocks[-1].fc1.weight.dtype, len(opt.param_groups))


if __name__ == "__main__":
    main()
