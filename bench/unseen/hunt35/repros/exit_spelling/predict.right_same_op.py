"""Legacy inference script: the host exit is spelled `.to("cpu")`."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4)).to(device, torch.bfloat16).eval()
with torch.no_grad():
    logp = F.log_softmax(net(torch.randn(64, 8).to(device, torch.bfloat16)), dim=1)
np.save("logp.npy", logp.float().to("cpu").numpy())
print(logp.float().to("cpu").numpy()[:2])
