"""Fit a small MLP to a smooth nonlinear target, y = sin(1.5 * <w, x>), on an XLA device.

Legacy setup kept from the original project: the optimizer is constructed
before the model is moved to the device, and bf16 is turned on through
XLA_DOWNCAST_BF16 at the top of main().
"""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


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


class Regressor(nn.Module):
    def __init__(self, in_features=4, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(in_features, hidden),
            nn.Tanh(),
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, x):
        return self.net(x)


def make_data(num_samples, in_features, seed):
    """Inputs uniform in [-1, 1]^d; the target is a sine of a fixed random projection."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(num_samples, in_features, generator=gen) * 2.0 - 1.0
    w = torch.randn(in_features, 1, generator=gen)
    y = torch.sin(1.5 * (x @ w)) + 0.02 * torch.randn(num_samples, 1, generator=gen)
    return x, y


def get_batch(x, y, batch_size, gen):
    idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen)
    return x[idx], y[idx]


def parse_args():
    parser = argparse.ArgumentParser(description="Sine-of-projection regression")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-samples", type=int, default=4096)
    parser.add_argument("--in-features", type=int, default=4)
    parser.add_argument("--lr-step", type=int, default=20, help="decay lr every N steps")
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(args.seed)
    # Module.to() normally gives a CPU->XLA move brand-new Parameter objects, which
    # would leave the optimizer below holding the stale CPU ones; swapping keeps the
    # Parameter identities, so the optimizer built first still sees the device weights.
    torch.__future__.set_swap_module_params_on_conversion(True)

    model = Regressor(in_features=args.in_features)
    model.to(torch.bfloat16)
    optimizer = with_fp32_master_weights(torch.optim.SGD)(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=args.lr_step, gamma=0.5)

    device = torch_xla.device()
    model.to(device)

    x_all, y_all = make_data(args.num_samples, args.in_features, args.seed)
    batch_gen = torch.Generator().manual_seed(args.seed + 1)

    model.train()
    for step in range(1, args.steps + 1):
        inputs, target = get_batch(x_all, y_all, args.batch_size, batch_gen)
        inputs = inputs.to(device)
        target = target.to(device)

        optimizer.zero_grad()
        pred = model(inputs.to(torch.bfloat16))
        loss = F.mse_loss(pred, target.to(torch.bfloat16))
        loss.backward()
        optimizer.step()
        scheduler.step()
        torch_xla.sync()

        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
