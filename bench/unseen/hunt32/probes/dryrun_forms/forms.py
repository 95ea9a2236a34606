import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()

# (a) bare warm-up forward
m_a = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
m_a(torch.zeros(1, 4, device=device))
opt_a = torch.optim.SGD(m_a.parameters(), lr=0.1)

# (b) shape check under no_grad, result printed
m_b = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
with torch.no_grad():
    probe = m_b(torch.zeros(1, 4, device=device))
    print("out shape", tuple(probe.shape))
opt_b = torch.optim.SGD(m_b.parameters(), lr=0.1)

# (c) a helper that runs it
def n_outputs(model):
    with torch.no_grad():
        return model(torch.zeros(1, 4, device=device)).shape[-1]


m_c = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
print("outputs", n_outputs(m_c))
opt_c = torch.optim.SGD(m_c.parameters(), lr=0.1)

# (d) under inference_mode
m_d = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
with torch.inference_mode():
    m_d(torch.zeros(1, 4, device=device))
opt_d = torch.optim.SGD(m_d.parameters(), lr=0.1)

for m, opt in ((m_a, opt_a), (m_b, opt_b), (m_c, opt_c), (m_d, opt_d)):
    x = torch.randn(8, 4, device=device)
    loss = m(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("DTYPES", m_a[0].weight.dtype, m_b[0].weight.dtype, m_c[0].weight.dtype, m_d[0].weight.dtype, loss.dtype)
