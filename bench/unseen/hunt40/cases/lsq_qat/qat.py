"""Quantisation-aware fine-tuning with learned step sizes (LSQ): after a float warm-up, every Linear is swapped for
an LSQ wrapper by walking named_modules(); the step sizes are new Parameters added to the optimizer."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

os.environ.setdefault("XLA_USE_BF16", "1")


class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, g):
        return g


class GradScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(torch.tensor(scale))
        return x

    @staticmethod
    def backward(ctx, g):
        (scale,) = ctx.saved_tensors
        return g * scale.item(), None


class LSQLinear(nn.Module):
    def __init__(self, lin, bits=4):
        super().__init__()
        self.lin = lin
        self.qp = 2 ** (bits - 1) - 1
        w = lin.weight.detach()
        init = 2 * w.abs().mean().item() / math.sqrt(self.qp)
        self.step_size = nn.Parameter(torch.tensor(init, device=w.device))

    def forward(self, x):
        s = GradScale.apply(self.step_size, 1.0 / math.sqrt(self.lin.weight.numel() * self.qp))
        wq = RoundSTE.apply(torch.clamp(self.lin.weight / s, -self.qp - 1, self.qp)) * s
        return F.linear(x, wq, self.lin.bias)


def quantize_linears(model, bits=4):
    for name, mod in list(model.named_modules()):
        for child_name, child in list(mod.named_children()):
            if isinstance(child, nn.Linear):
                setattr(mod, child_name, LSQLinear(child, bits))
    return [p for n, p in model.named_parameters() if n.endswith("step_size")]


def main():
    torch.manual_seed(0)
    steps = int(os.environ.get("STEPS", "8"))
    warmup = max(1, steps // 2)
    dev = xm.xla_device()
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    x_all = torch.randn(256, 16)
    y_all = (x_all[:, :4] * torch.tensor([1.0, -1.0, 0.5, 2.0])).argmax(1)
    for step in range(steps):
        if step == warmup:
            steps_params = quantize_linears(model)
            opt.add_param_group({"params": steps_params, "lr": 1e-3, "weight_decay": 0.0})
            print("QAT on:", len(steps_params), "step sizes")
        i = (step * 32) % 256
        x, y = x_all[i:i + 32].to(dev), y_all[i:i + 32].to(dev)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES", model[0].lin.weight.dtype, model[0].step_size.dtype)


if __name__ == "__main__":
    main()
