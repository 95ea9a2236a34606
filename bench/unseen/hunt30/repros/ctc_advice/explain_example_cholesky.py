import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Linear(8, 16).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
for step in range(5):
    f = model(torch.randn(16, 8).to(device))
    K = f @ f.T + 0.5 * torch.eye(16, device=device)
    L = torch.linalg.cholesky(K.float()).to(K.dtype)
    loss = L.diagonal().log().sum()
    opt.zero_grad(); loss.backward(); opt.step(); xm.mark_step()
    print(loss.item())
