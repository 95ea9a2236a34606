"""Sharpness-aware minimisation (SAM, the optimizer-wrapper form) inside a small
Trainer class with gradient accumulation; evaluation correlates predictions on the host."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):
        super().__init__(params, dict(rho=rho, **kwargs))
        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups

    @torch.no_grad()
    def first_step(self):
        norms = [p.grad.norm(2) for g in self.param_groups for p in g["params"] if p.grad is not None]
        grad_norm = torch.stack(norms).norm(2)
        for g in self.param_groups:
            scale = g["rho"] / (grad_norm + 1e-12)
            for p in g["params"]:
                if p.grad is not None:
                    self.state[p]["e_w"] = p.grad * scale
                    p.add_(self.state[p]["e_w"])
        return grad_norm

    @torch.no_grad()
    def second_step(self):
        for g in self.param_groups:
            for p in g["params"]:
                if "e_w" in self.state[p]:
                    p.sub_(self.state[p]["e_w"])
        self.base_optimizer.step()


class Trainer:
    def __init__(self, model, accum=2):
        self.device = torch_xla.device()
        self.model = model.to(self.device)
        self.opt = SAM(self.model.parameters(), torch.optim.SGD, rho=0.05, lr=0.05, momentum=0.9)
        self.accum = accum

    def _loss(self, xb, yb):
        return nn.functional.mse_loss(self.model(xb.to(self.device)).squeeze(-1), yb.to(self.device))

    def fit(self, batches):
        for step, chunk in enumerate(batches):
            for xb, yb in chunk:
                (self._loss(xb, yb) / self.accum).backward()
            gnorm = self.opt.first_step()
            self.opt.zero_grad()
            for xb, yb in chunk:
                loss = self._loss(xb, yb) / self.accum
                loss.backward()
            self.opt.second_step()
            self.opt.zero_grad()
            xm.mark_step()
            print(f"step {step} loss {loss.item() * self.accum:.4f} grad norm {gnorm.item():.3f}")

    @torch.no_grad()
    def evaluate(self, xv, yv):
        pred = self.model(xv.to(self.device)).squeeze(-1).cpu()
        print("DTYPES pred", pred.dtype, "weight", self.model[0].weight.dtype)
        return float(np.corrcoef(pred, yv)[0, 1])


torch.manual_seed(0)
w = torch.randn(12)
def batch(n=32):
    x = torch.randn(n, 12)
    return x, torch.tanh(x @ w) + 0.05 * torch.randn(n)
trainer = Trainer(nn.Sequential(nn.Linear(12, 64), nn.GELU(), nn.Linear(64, 1)))
trainer.fit([[batch(), batch()] for _ in range(10)])
print(f"pearson r {trainer.evaluate(*batch(256)):.3f}")
