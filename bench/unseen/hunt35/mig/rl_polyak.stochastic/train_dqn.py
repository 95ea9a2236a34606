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
    opt = torch.optim.Adam(q_net.parameters(), lr=3e-3)
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
