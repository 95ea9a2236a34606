"""Forward and loss in two helpers, backward in the loop."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 4))


def forward(model, batch):
    x, y = batch
    return {"logits": model(x), "y": y}


def compute_loss(out, smoothing=0.1):
    return F.cross_entropy(out["logits"], out["y"], label_smoothing=smoothing)


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        x = torch.randn(8, 8)
        batch = (x.to(dev), (x[:, 0] > 0).long().to(dev))
        out = forward(model, batch)
        loss = compute_loss(out)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(step, loss.item(), loss.dtype, out["logits"].dtype)


if __name__ == "__main__":
    main()
