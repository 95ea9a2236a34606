"""amp: `F.huber_loss(model(x), y)` with an f32 target. Under torch.autocast("xla") the Linear output is bf16 and
huber_loss is not an autocast fp32 op on XLA: the forward passes, the backward raises "Found dtype Float but expected
BFloat16". The tool warns (BFM035 "cast it by hand") but migrates and removes the switch. The same with mse_loss
(no warning?) printed for comparison."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from _data import features


def main(kind):
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = features(16, 4).to(device)
    y = features(16, 1).squeeze(-1).to(device)
    if kind == "huber":
        loss = F.huber_loss(model(x).squeeze(-1), y, delta=0.5)
    else:
        loss = F.mse_loss(model(x).squeeze(-1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(kind, "step done, loss", loss.item())


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "huber")
