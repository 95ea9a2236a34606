"""serve_handler's /embed: the same with the model moved at module level (control: migrated right), its parts called one by one on a float32 tensor."""
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


net = Net().to(dev).eval()


def embed(rows):
    x = torch.as_tensor(rows, dtype=torch.float32).to(dev)
    with torch.no_grad():
        h = net.body(net.norm(x))
    return h.cpu().numpy()


out = embed(torch.randn(2, 8).tolist())
torch_xla.sync()
print(float(out.sum()))
print("dtype", net.body.weight.dtype, out.dtype)
