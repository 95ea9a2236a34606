"""amp: a 0-dim tensor made on the host inside the forward (`torch.log(torch.tensor(float(W)))`, a log-mean-exp
pooling) subtracted from an XLA tensor under autocast. The legacy run trains; the amp migration, which leaves the
line as it is, fails in XLA's hlo verifier. (stochastic/gpu-compatible give it `dtype=h.dtype`, BFM080.)"""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 4))
W = 32


class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 16)
        self.b = nn.Linear(16, 3)

    def forward(self, x):
        h = torch.relu(self.a(x)).transpose(1, 2)
        pooled = torch.logsumexp(h, dim=-1) - torch.log(torch.tensor(float(W)))
        return self.b(pooled)


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = Pool().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(STEPS):
        x = torch.randn(8, W, 4)
        y = x.mean(1)[:, :3]
        x, y = x.to(dev), y.to(dev)
        loss = nn.functional.smooth_l1_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
