"""A frozen feature extractor put on the device with an explicit float32 dtype, a trained head over its features."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

dev = xm.xla_device()
torch.manual_seed(0)
feat = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 32)).to(device=dev, dtype=torch.float32).eval()
head = nn.Linear(32, 3).to(dev)
opt = torch.optim.SGD(head.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", "3"))):
    x = torch.randn(16, 16, device=dev)
    y = torch.randint(0, 3, (16,), device=dev)
    with torch.no_grad():
        z = feat(x)
    loss = nn.functional.cross_entropy(head(z), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", next(feat.parameters()).dtype, z.dtype)
