import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl

STRIDE, SIZES = 8, (6.0, 12.0)


def make_anchors(device):
    ys, xs = torch.meshgrid(torch.arange(4, device=device), torch.arange(4, device=device), indexing="ij")
    ctr = torch.stack([(xs + 0.5) * 8, (ys + 0.5) * 8], -1).reshape(-1, 1, 2)
    half = torch.tensor(SIZES, device=device).view(1, -1, 1) / 2
    return torch.cat([ctr - half, ctr + half], -1).reshape(-1, 4)


device = xm.xla_device()
torch.manual_seed(0)
anchors = make_anchors(device)
model = nn.Linear(16, 32 * 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
data = torch.utils.data.TensorDataset(torch.randn(64, 16), torch.rand(64, 4) * 32)
loader = torch.utils.data.DataLoader(data, batch_size=16)
for x, box in pl.MpDeviceLoader(loader, device):
    pred = anchors[None] + model(x).view(-1, 32, 4)
    loss = (pred - box[:, None]).abs().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(anchors.dtype, box.dtype, loss.dtype)
    print(f"{loss.item():.4f}")
