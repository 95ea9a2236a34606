"""amp: an ensemble's members, loaded onto the device by a helper and kept in a list, are called in
a comprehension `torch.stack([m(x) for m in members])`. The amp migration puts no autocast around
that call (it wraps the host training in the helper instead): the evaluation runs in f32 where the
legacy run computed it in bf16. Prints the dtypes of the HLO dots of the ensemble's output."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from _ir import dot_dtypes


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def train_on_host(seed):
    torch.manual_seed(seed)
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    for _ in range(3):
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.state_dict()


def load_member(state, device):
    net = Net()
    net.load_state_dict(state)
    return net.to(device).eval()


device = xm.xla_device()
members = [load_member(train_on_host(s), device) for s in range(2)]
with torch.no_grad():
    x = torch.randn(4, 8).to(device)
    logits = torch.stack([m(x) for m in members]).mean(0)
print("ensemble dots", dot_dtypes(logits))
