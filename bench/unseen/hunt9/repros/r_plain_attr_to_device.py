"""A fixed table made by a helper and kept as a plain tensor attribute (not a buffer), moved to the
input's device in forward."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def make_table(n, d):
    return torch.linspace(0, 1, n * d).view(n, d)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 8)
        self.table = make_table(6, 8)  # a plain attribute: model.to() leaves it
        self.norm = nn.LayerNorm(8)
        self.head = nn.Linear(8, 2)

    def forward(self, ids):
        x = self.emb(ids)
        x = x + self.table[: ids.shape[1]].to(x.device)
        h = self.norm(x)
        print("  residual", x.dtype, "after norm", h.dtype)
        return self.head(h.mean(1))


def main():
    torch.manual_seed(0)
    device = xm.xla_device()
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        ids = torch.randint(0, 10, (4, 6)).to(device)
        y = torch.randint(0, 2, (4,)).to(device)
        loss = nn.functional.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(step, loss.item(), loss.dtype)


main()
