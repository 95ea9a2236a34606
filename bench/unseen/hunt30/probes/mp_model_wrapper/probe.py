import os
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.distributed.xla_multiprocessing as xmp

os.environ["XLA_USE_BF16"] = "1"
WRAPPED_MODEL = xmp.MpModelWrapper(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)))


def _mp_fn(index):
    device = xm.xla_device()
    model = WRAPPED_MODEL.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(12):
        x, y = torch.randn(16, 8).to(device), torch.randn(16, 1).to(device)
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(next(model.parameters()).dtype, loss.dtype)
        print(f"{loss.item():.4f}")


if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=())
