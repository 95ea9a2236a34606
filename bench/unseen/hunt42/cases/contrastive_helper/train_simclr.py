"""SimCLR-style pretraining of a small MLP encoder on synthetic clustered data, with a k-NN probe on the device
every EVAL_EVERY steps. The contrastive loss and the probe live in losses.py."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
from losses import knn_accuracy, nt_xent

STEPS = int(os.environ.get("STEPS", "20"))
EVAL_EVERY = int(os.environ.get("EVAL_EVERY", "4"))
C = 4


def make_data(n, g):
    y = torch.randint(0, C, (n,), generator=g)
    centers = torch.randn(C, 20, generator=g) * 0.6
    return centers[y] + torch.randn(n, 20, generator=g), y


def main():
    dev = torch_xla.device()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(7)
    x_all, y_all = make_data(512, g)
    bank_x, bank_y = x_all[:256].to(dev), y_all[:256].to(dev)
    q_x, q_y = x_all[256:320].to(dev), y_all[256:320].to(dev)

    encoder = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 32))
    projector = nn.Sequential(nn.ReLU(), nn.Linear(32, 16))
    model = nn.Sequential(encoder, projector).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)

    for step in range(STEPS):
        idx = torch.randint(0, 512, (48,), generator=g)
        xb = x_all[idx]
        v1 = (xb + 0.3 * torch.randn(xb.shape, generator=g)).to(dev)
        v2 = (xb * (torch.rand(xb.shape, generator=g) > 0.2)).to(dev)
        loss = nt_xent(model(v1), model(v2))
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f}")
        if (step + 1) % EVAL_EVERY == 0:
            with torch.no_grad():
                acc = knn_accuracy(encoder(bank_x), bank_y, encoder(q_x), q_y, C)
            print(f"  knn@{step + 1} {acc.item():.3f}")
    print("DTYPES", encoder[0].weight.dtype, loss.dtype)


if __name__ == "__main__":
    main()
