import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

device = torch_xla.device()
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    loss = model(torch.randn(16, 4, device=device)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
host_sd = {k: v.cpu() for k, v in model.state_dict().items()}
torch.save(host_sd, "export_sd.pt")
print("1", {str(v.dtype) for v in torch.load("export_sd.pt").values()})
weights = {k: v.detach().to("cpu").numpy() for k, v in model.named_parameters()}
np.savez("w.npz", **weights)
print("2 npz ok")
xm.save(model.state_dict(), "xm_sd.pt")
print("3", {str(v.dtype) for v in torch.load("xm_sd.pt").values()})
flat = torch.cat([p.detach().flatten() for p in model.parameters()]).cpu()
print("4", flat.numpy().dtype)
