"""A denoising autoencoder with a held-out evaluation every 5 steps (no_grad forward passes and
their own syncs between two optimizer steps) and the training loss printed every 4 steps."""

import os

import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


def with_fp32_master_weights(optimizer_class):
    """Return a subclass of `optimizer_class` that keeps an FP32 master copy of bf16 weights.

    Added by bf16-migrate (gpu-compatible mode of Neuron's migration guide,
    replacing the legacy bf16 environment switch): the model's parameters stay bf16; each step
    runs the stock update in FP32 on the master weights (so its state, e.g. Adam's moments, is
    FP32 too) and copies the result into the bf16 parameters. `state_dict()` carries the master weights under
    "fp32_master_weights" (as torch-xla's ZeroRedundancyOptimizer does with save_master_weights)
    and `load_state_dict()` restores them, keeping the state FP32. A checkpoint without them, or
    weights changed outside the optimizer, start the master copy anew from the bf16 weights,
    with a warning.
    """
    import warnings

    class FP32MasterWeights(optimizer_class):
        def _swap_in_fp32(self, grads, loaded=None):
            # each bf16 parameter's data (and gradient) replaced by its FP32 master copy
            if not hasattr(self, "fp32_master_weights"):
                self.fp32_master_weights = {}  # parameter -> (master copy, parameter._version)
            swapped = []
            params = [p for group in self.param_groups for p in group["params"]]
            for index, param in enumerate(params):
                if param.dtype == torch.float32 or not param.is_floating_point() or (grads and param.grad is None):
                    continue
                if loaded is not None:
                    master = loaded.get(index)
                    if master is None:
                        warnings.warn("the checkpoint has no FP32 master weights (written before the migration?): they start anew from the bf16 weights")
                else:
                    master, version = self.fp32_master_weights.get(param, (None, None))
                    if master is not None and version != param._version:
                        warnings.warn("bf16 weights changed outside the optimizer: their FP32 master weights start anew from them")
                        master = None
                low_grad = param.grad
                swapped.append((param, param.data, low_grad))
                param.grad = None
                param.data = (param.detach() if master is None else master).to(device=param.device, dtype=torch.float32)
                if grads:
                    param.grad = low_grad.float()
            return swapped

        def _swap_back(self, swapped, copy_back):
            for param, low_data, low_grad in swapped:
                master = param.data
                if copy_back:
                    low_data.copy_(master)
                param.grad = None
                param.data = low_data
                param.grad = low_grad
                self.fp32_master_weights[param] = (master, param._version)

        def step(self, closure=None):
            loss = None
            if closure is not None:
                with torch.enable_grad():
                    loss = closure()
            with torch.no_grad():
                swapped = self._swap_in_fp32(grads=True)
                try:
                    super().step()
                finally:
                    self._swap_back(swapped, copy_back=True)
            return loss

        def state_dict(self):
            with torch.no_grad():
                self._swap_back(self._swap_in_fp32(grads=False), copy_back=False)
            state_dict = super().state_dict()
            params = [p for group in self.param_groups for p in group["params"]]
            masters = self.fp32_master_weights
            state_dict["fp32_master_weights"] = {i: masters[p][0] for i, p in enumerate(params) if p in masters}
            return state_dict

        def load_state_dict(self, state_dict):
            state_dict = dict(state_dict)
            loaded = state_dict.pop("fp32_master_weights", {})
            with torch.no_grad():
                swapped = self._swap_in_fp32(grads=False, loaded=loaded)
                try:
                    super().load_state_dict(state_dict)  # floating state takes each parameter's dtype: FP32 here
                finally:
                    self._swap_back(swapped, copy_back=False)

    FP32MasterWeights.__name__ = optimizer_class.__name__ + "WithFP32MasterWeights"
    return FP32MasterWeights


class DenoisingAE(nn.Module):
    def __init__(self, dim=32, code=8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, code))
        self.decoder = nn.Sequential(nn.Linear(code, 64), nn.ReLU(), nn.Linear(64, dim))

    def forward(self, x):
        return self.decoder(self.encoder(x))


def low_rank_data(n, gen):
    basis = torch.randn(6, 32, generator=gen)
    return torch.randn(n, 6, generator=gen) @ basis / 2


def evaluate(model, held_out, device):
    model.eval()
    total = torch.zeros((), device=device, dtype=torch.bfloat16)
    with torch.no_grad():
        for chunk in held_out.split(128):
            x = chunk.to(device)
            total += nn.functional.mse_loss(model(x.to(torch.bfloat16)), x.to(torch.bfloat16), reduction="sum")
    model.train()
    xm.mark_step()
    return total / held_out.numel()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--noise", type=float, default=0.3)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(7)
    train, held_out = low_rank_data(4096, gen), low_rank_data(512, gen)
    model = DenoisingAE().to(device)
    model.to(torch.bfloat16)
    optimizer = with_fp32_master_weights(torch.optim.Adam)(model.parameters(), lr=2e-3)
    for step in range(1, args.steps + 1):
        clean = train[torch.randint(0, 4096, (args.batch_size,), generator=gen)]
        noisy = clean + args.noise * torch.randn(clean.shape, generator=gen)
        x, target = noisy.to(device), clean.to(device)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x.to(torch.bfloat16)), target.to(torch.bfloat16))
        loss.backward()
        optimizer.step()
        xm.mark_step()
        if step % 4 == 0:
            print(f"step {step} loss {loss.item():.4f}")
        if step % 5 == 0:
            print(f"step {step} eval {evaluate(model, held_out, device).item():.4f}")


if __name__ == "__main__":
    main()
