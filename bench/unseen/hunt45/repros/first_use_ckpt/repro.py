# Inference only; the weights file is written (seeded, on the host) the first time any run looks for it, in a directory
# outside the script's folder. Remove /tmp/hunt45_first_use before each verify.
import os
import tempfile

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

path = os.path.join(tempfile.gettempdir(), "hunt45_first_use", "w.pt")
if not os.path.exists(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.manual_seed(0)
    torch.save(nn.Linear(6, 3).state_dict(), path)
dev = xm.xla_device()
net = nn.Linear(6, 3)
net.load_state_dict(torch.load(path))
net = net.to(dev).eval()
g = torch.Generator().manual_seed(1)
with torch.no_grad():
    for _ in range(3):
        out = net(torch.randn(4, 6, generator=g).to(dev)).softmax(-1)
        print(out.cpu().numpy().round(4).tolist())
