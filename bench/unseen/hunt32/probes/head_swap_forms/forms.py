import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def fit(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


device = xm.xla_device()
x = torch.randn(8, 4).to(device)
y = torch.zeros(8, dtype=torch.long, device=device)

# (a) attribute assignment of a moved module, optimizer over model.parameters()
m_a = Net().to(device)
fit(m_a, torch.optim.SGD(m_a.parameters(), lr=0.1), x, y)
m_a.head = nn.Linear(8, 3).to(device)
la = fit(m_a, torch.optim.SGD(m_a.parameters(), lr=0.1), x, y)

# (b) the new head moved on its own line
m_b = Net().to(device)
fit(m_b, torch.optim.SGD(m_b.parameters(), lr=0.1), x, y)
head = nn.Linear(8, 3).to(device)
m_b.head = head
lb = fit(m_b, torch.optim.SGD(m_b.parameters(), lr=0.1), x, y)

# (c) the head set on the host, then the whole model moved again
m_c = Net().to(device)
fit(m_c, torch.optim.SGD(m_c.parameters(), lr=0.1), x, y)
m_c.head = nn.Linear(8, 3)
m_c.to(device)
lc = fit(m_c, torch.optim.SGD(m_c.parameters(), lr=0.1), x, y)

# (d) the stage-1 optimizer kept, the new head added as a param group
m_d = Net().to(device)
opt_d = torch.optim.SGD(m_d.parameters(), lr=0.1)
fit(m_d, opt_d, x, y)
m_d.head = nn.Linear(8, 3).to(device)
opt_d.add_param_group({"params": m_d.head.parameters()})
ld = fit(m_d, opt_d, x, y)
print("DTYPES", m_a.head.weight.dtype, m_b.head.weight.dtype, m_c.head.weight.dtype, m_d.head.weight.dtype, la.dtype, lb.dtype, lc.dtype, ld.dtype)
