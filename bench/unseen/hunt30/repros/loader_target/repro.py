import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl


def l1_loss(pred, target):
    return (pred - target).abs().mean()


device = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(16, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
data = torch.utils.data.TensorDataset(torch.randn(64, 16), torch.rand(64, 4) * 32)
loader = torch.utils.data.DataLoader(data, batch_size=16)
for x, box in pl.MpDeviceLoader(loader, device):
    loss = l1_loss(model(x), box)
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(box.dtype, loss.dtype)
    print(f"{loss.item():.4f}")
