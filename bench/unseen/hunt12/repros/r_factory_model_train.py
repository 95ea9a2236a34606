"""G2, training twin (rewrite only): `return model.to(device)` in `build_model`, an AdamW built in main. The cast is
again inserted after the `return` (dead code), harmless here because a second cast goes before the optimizer."""
import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla


def build_model(device):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    return model.to(device)


def main():
    device = torch_xla.device()
    model = build_model(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(16, 4).to(device)
    y = torch.randint(0, 2, (16,)).to(device)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


if __name__ == "__main__":
    main()
