"""Minimal: a model returning a dict; the loss makes `.float()` targets next to `out["logits"]`."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return {"logits": self.fc(x)}


def loss_fn(out, labels):
    target = F.one_hot(labels, 4).float()
    return -(target * F.log_softmax(out["logits"], -1)).sum(-1).mean()


def main():
    device = torch_xla.device()
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 8).to(device)
    labels = torch.randint(0, 4, (16,)).to(device)
    loss = loss_fn(model(x), labels)
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(loss.item())


if __name__ == "__main__":
    main()
