"""A running mean divided by a Python-int count on the device (Welford's update), one row at a time. The legacy run
and its migration compute the same numbers; the migrated (explicit bf16) run compiles a new step graph each time the
count crosses a power of two (256, 512, ...), the legacy run does not."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met

STEPS = int(os.environ.get("STEPS", 10))


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = nn.Linear(4, 1).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    mean = torch.zeros(4, device=dev)
    count = 0
    for step in range(STEPS):
        x = torch.randn(64, 4).to(dev)
        for r in x:
            count += 1
            mean = mean + (r - mean) / count
        loss = model(x - mean).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} compiles {met.metric_data('CompileTime')[0]}")


if __name__ == "__main__":
    main()
