"""Offline DQN on logged transitions: observations are normalised with running
statistics kept on the device, the target network follows the online one by
Polyak averaging, and the TD loss is a Huber loss."""
import argparse
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


def floating_to_bf16(batch):
    """Cast the floating-point tensors in `batch` to torch.bfloat16, leaving integer tensors
    (token ids, labels) and everything else as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16): `batch` is a tensor, or a list, tuple,
    namedtuple or dict of them, nested; containers are rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: floating_to_bf16(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(floating_to_bf16(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(floating_to_bf16(value) for value in batch)
    return batch


def bf16_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's floating inputs become bf16."""
    return floating_to_bf16(args), floating_to_bf16(kwargs)


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


class RunningNorm:
    """Batched Welford update of per-feature mean and variance, on the device."""

    def __init__(self, dim, device):
        self.mean = torch.zeros(dim, device=device, dtype=torch.bfloat16)
        self.var = torch.ones(dim, device=device, dtype=torch.bfloat16)
        self.count = torch.tensor(1e-4, device=device, dtype=torch.bfloat16)

    def update(self, x):
        b_mean, b_var, b = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta = b_mean - self.mean
        total = self.count + b
        self.mean = self.mean + delta * b / total
        m2 = self.var * self.count + b_var * b + delta.pow(2) * self.count * b / total
        self.var = m2 / total
        self.count = total

    def __call__(self, x):
        return ((x - self.mean) / torch.sqrt(self.var + 1e-8)).clamp(-5.0, 5.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--tau", type=float, default=0.05)
    args = ap.parse_args()
    torch.manual_seed(0)
    device = xm.xla_device()
    obs_dim, n_act, gamma = 8, 4, 0.97
    q_net = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh(), nn.Linear(64, n_act)).to(device)
    target = copy.deepcopy(q_net)
    target.to(torch.bfloat16)
    target.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    target.requires_grad_(False)
    q_net.to(torch.bfloat16)
    q_net.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = with_fp32_master_weights(torch.optim.Adam)(q_net.parameters(), lr=3e-3)
    norm = RunningNorm(obs_dim, device)

    for step in range(args.steps):
        obs = torch.randn(64, obs_dim) * 4 + 2
        nxt = obs + 0.1 * torch.randn(64, obs_dim)
        act = torch.randint(0, n_act, (64,))
        rew = obs[:, :2].sum(1) * 0.1
        obs, nxt, act, rew = obs.to(device, dtype=torch.bfloat16), nxt.to(device), act.to(device), rew.to(device)
        norm.update(obs)
        with torch.no_grad():
            q_next = target(norm(nxt)).max(dim=1).values
            td_target = rew.to(torch.bfloat16) + gamma * q_next
        q = q_net(norm(obs)).gather(1, act[:, None]).squeeze(1)
        loss = F.smooth_l1_loss(q, td_target.to(torch.bfloat16))
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        with torch.no_grad():
            for tp, p in zip(target.parameters(), q_net.parameters()):
                tp.lerp_(p, args.tau)
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f} count {norm.count.item():.1f}")
    print("norm.mean", norm.mean.dtype, "target w", target[0].weight.dtype, "q", q.dtype)
    print("norm mean[:3]", norm.mean[:3].cpu().tolist(), "var[:3]", norm.var[:3].cpu().tolist())


if __name__ == "__main__":
    main()
