"""serve_handler's /embed: a model built by a loader function that moves it in its own statement, its parts called one by one on a float32 tensor."""
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

dev = torch_xla.device()
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(8)
        self.body = nn.Linear(8, 4)

    def forward(self, x):
        return self.body(self.norm(x))


def load_model():
    m = Net()
    m = m.to(dev)
    m.eval()
    return m


net = load_model()


def embed(rows):
    x = torch.as_tensor(rows, dtype=torch.float32).to(dev)
    with torch.no_grad():
        h = net.body(net.norm(x))
    return h.cpu().numpy()


out = embed(torch.randn(2, 8).tolist())
torch_xla.sync()
print(float(out.sum()))
print("dtype", net.body.weight.dtype, out.dtype)
