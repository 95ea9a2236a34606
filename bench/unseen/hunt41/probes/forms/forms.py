import os

os.environ["XLA_USE_BF16"] = "1"
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

dev = xm.xla_device()
model = nn.Linear(4, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
history = [0.5, 0.25]
a = torch.tensor(history, device=dev)
b = torch.stack([a, torch.tensor([h for h in history], device=dev)])
c = torch.tensor([h for h in history], device=dev) * 2
d = torch.tensor(0.5, device=dev) + 1
sd = {"w": torch.ones(2)}
e = {k: v.to(dev) for k, v in sd.items()}
f = {k: v.to(dev).clone() for k, v in sd.items()}
g = {k: v.clone().to(dev) for k, v in sd.items()}
ck = torch.load("x.pt", map_location=dev)
s1 = ck["step"]
s1 += 1
s2 = ck["scale"] * 2
