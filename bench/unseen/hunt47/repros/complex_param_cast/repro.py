"""A model with a complex parameter (a learnt complex gain). The legacy switch touches f32/f64 tensors only: the legacy
run kept it complex64. `model.to(torch.bfloat16)` casts complex parameters too, discarding the imaginary part."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 6))


class ComplexGain(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.gain = nn.Parameter(torch.polar(torch.ones(8), torch.linspace(0, 3, 8)))
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        h = self.lin(x) * self.gain
        return self.out(h.real - h.imag)


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = ComplexGain().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(STEPS):
        x = torch.randn(16, 8)
        y = x.sum(1, keepdim=True)
        x, y = x.to(dev), y.to(dev)
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} gain.imag {model.gain.imag.abs().sum().item():.3f}")


if __name__ == "__main__":
    main()
