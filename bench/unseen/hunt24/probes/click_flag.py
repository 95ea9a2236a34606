import os

import click
import torch
import torch.nn as nn
import torch.nn.functional as F


@click.command()
@click.option("--bf16/--no-bf16", default=True)
@click.option("--steps", default=5)
def main(bf16, steps):
    os.environ["XLA_USE_BF16"] = "1" if bf16 else "0"
    import torch_xla

    device = torch_xla.device()
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(steps):
        x, y = torch.randn(16, 8).to(device), torch.randn(16, 2).to(device)
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
    print("loss dtype", loss.dtype, loss.item())
    print("out", model(x).detach().cpu().numpy().dtype)


if __name__ == "__main__":
    main()
