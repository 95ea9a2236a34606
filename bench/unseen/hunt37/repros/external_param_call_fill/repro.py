# A learnable temperature held outside the model, its fill computed by a call: left f32.
import math
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


def main():
    torch.manual_seed(0)
    dev = torch_xla.device()
    enc = nn.Linear(8, 8).to(dev)
    log_tau = nn.Parameter(torch.full((), math.log(1 / 0.07), device=dev))
    opt = torch.optim.Adam([{"params": enc.parameters()}, {"params": [log_tau]}], lr=1e-3)
    for step in range(12):
        x = torch.randn(16, 8).to(dev)
        a = enc(x)
        logits = log_tau.exp() * a @ a.T
        loss = nn.functional.cross_entropy(logits, torch.arange(16, device=dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(loss.item())
    print("dtype weight", enc.weight.dtype, "log_tau", log_tau.dtype, "exp_avg", opt.state[log_tau]["exp_avg"].dtype)


main()
