"""The sibling helper (NOT part of the tree given to bf16-migrate): Adam whose state is float64 when
XLA_DOWNCAST_BF16 is set, i.e. f32 on the device under that switch."""
import os

import torch


class FP32StateAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))
        self.upcast = os.environ.get("XLA_DOWNCAST_BF16", "0") == "1"

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.double() if self.upcast else p.grad
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = torch.zeros_like(grad)
                    st["exp_avg_sq"] = torch.zeros_like(grad)
                st["step"] += 1
                st["exp_avg"].mul_(b1).add_(grad, alpha=1 - b1)
                st["exp_avg_sq"].mul_(b2).addcmul_(grad, grad, value=1 - b2)
                upd = st["exp_avg"] / (st["exp_avg_sq"].sqrt() + group["eps"])
                p.add_(upd.to(p.dtype), alpha=-group["lr"])
