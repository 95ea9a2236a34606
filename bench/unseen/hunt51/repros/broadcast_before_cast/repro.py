"""A model moved to the device, its parameters synchronised across replicas (xm.broadcast_master_param),
then trained: the shape of pytorch/xla's MNIST test, written for hunt51."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    torch.manual_seed(0)
    dev = torch_xla.device()
    net = Net().to(dev)
    xm.broadcast_master_param(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(1)
    for step in range(int(os.environ.get("STEPS", "4"))):
        x = torch.randn(8, 16, generator=g).to(dev)
        y = torch.randint(0, 4, (8,), generator=g).to(dev)
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")


if __name__ == "__main__":
    main()
