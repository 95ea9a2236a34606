import argparse
import os

ap = argparse.ArgumentParser()
ap.add_argument("--bf16", action="store_true")
args = ap.parse_args()

os.environ["XLA_USE_BF16"] = "1" if args.bf16 else "0"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


def main():
    device = torch_xla.device()
    model = nn.Linear(8, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(16, 8).to(device), torch.randint(0, 2, (16,)).to(device)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    xm.optimizer_step(opt)
    torch_xla.sync()
    print(loss.item())


if __name__ == "__main__":
    main()
