"""A module trained on the CPU in a helper (never moved to the device), and a module of the same
class loaded onto the device in another helper. Under the switch the CPU training is float32; the
migration casts the CPU module to bf16 and hooks it."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x)


def train_on_host():
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    for _ in range(5):
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"host training: weight {net.fc.weight.dtype} on {net.fc.weight.device}, loss {loss.item():.6f}")
    return net.state_dict()


def load_on_device(state, device):
    net = Net()
    net.load_state_dict(state)
    return net.to(device).eval()


device = xm.xla_device()
model = load_on_device(train_on_host(), device)
with torch.no_grad():
    out = model(torch.randn(4, 8).to(device))
print(f"device forward: {out.cpu().float().sum().item():.4f}")
