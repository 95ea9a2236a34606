import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(4, 2).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def show(step, t):
    print("closure", t.cpu().numpy().dtype)


x = torch.randn(8, 4).to(device)
a = xm.send_cpu_data_to_device(torch.randn(8, 2), device)                 # (a) torch_xla move API (a list back)
w = xm.send_cpu_data_to_device({"w": torch.rand(8, 2)}, device)["w"]  # (a2) a dict of weights
b = torch.randn(8, 2).to("xla")                                            # (b) string device
c = torch.randn(8, 2, device=torch.device("xla"))                          # (c) torch.device("xla") factory
d = torch.ones(8, 2, device=torch_xla.device())                            # (d) torch_xla.device() inline
e = torch.randn(8, 2).to(xm.xla_device())                                  # (e) xm.xla_device() inline
out = model(x)
loss = (w * (out * b + c * d - e - a[0])).pow(2).mean()
opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
print("dtypes", *(t[0].dtype if isinstance(t, list) else t.dtype for t in (a, w, b, c, d, e)), loss.dtype)
xm.master_print(loss)                                                      # (f) master_print of a device tensor
print(loss.detach())                                                       # (g) print of a device tensor
xm.add_step_closure(show, args=(0, out.detach()))                          # (h) named closure .numpy()
g = xm.all_gather(out.detach())                                            # (i) all_gather then host
print("gathered", g.cpu().numpy().dtype)
m = xm.mesh_reduce("m", out.detach(), lambda xs: np.mean([x.numpy() for x in xs]))   # (j) custom reduce fn
print("mesh", type(m), np.asarray(m).dtype)
