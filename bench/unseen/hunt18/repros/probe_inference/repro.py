import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
net.load_state_dict({k: torch.randn_like(v) for k, v in net.state_dict().items()})
net = net.to(device).eval()
feats = np.random.rand(50, 6)  # float64
with torch.no_grad():
    x = torch.tensor(feats, dtype=torch.float32, device=device)
    scores = torch.softmax(net(x), dim=-1)
    conf, label = scores.max(-1)
torch_xla.sync()
np.savetxt("/tmp/h18_inf.txt", np.c_[label.cpu().numpy(), conf.cpu().numpy()], fmt="%.4f")
print("mean conf", conf.mean().item())
