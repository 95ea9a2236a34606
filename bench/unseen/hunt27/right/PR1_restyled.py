"""REINFORCE on a toy 1-D reaching task: a Gaussian policy (torch.distributions.Normal, learned log-std),
episodes simulated on the host in NumPy, discounted returns computed in NumPy float64 and sent to the device as
they are, a value baseline. Legacy bf16 switch on."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from torch.distributions import Normal


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


def host_float32(data, back_to_device=False):
    """Return `data` with every bf16 tensor in it copied to the host and made float32 there (and,
    with `back_to_device`, moved back to the device it was on); integer, float32 and float64
    tensors and everything else but modules are returned as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor that left the XLA device was float32): `data` is a tensor, or a list, tuple,
    namedtuple or dict of them (a state dict, a checkpoint), nested; containers are copied with
    their type, a state dict's metadata kept, so `load_state_dict` reads the result as before.
    `torch.save` writes an XLA tensor as one: `back_to_device=True` keeps it so, as the legacy
    checkpoint held it. A module is copied, its bf16 parameters and buffers made float32 where they
    are, without the input hooks bf16-migrate registered on it (functions of the migrated script,
    which a `torch.save`d module would need to be loaded anywhere else).
    """
    import copy

    if isinstance(data, torch.nn.Module):
        module = copy.deepcopy(data)
        for sub in module.modules():
            for key, hook in list(sub._forward_pre_hooks.items()):
                if getattr(hook, "__name__", None) in ("bf16_inputs_hook", "float32_inputs_hook"):
                    del sub._forward_pre_hooks[key]
                    sub._forward_pre_hooks_with_kwargs.pop(key, None)
        return module._apply(lambda t: t.float() if t.dtype == torch.bfloat16 else t)
    if isinstance(data, torch.Tensor):
        if data.dtype != torch.bfloat16:
            return data
        host = data.cpu().float()
        return host.to(data.device) if back_to_device else host
    if isinstance(data, dict):
        out = copy.copy(data)
        for key, value in data.items():
            out[key] = host_float32(value, back_to_device)
        return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(host_float32(value, back_to_device) for value in data))
    if isinstance(data, (list, tuple)):
        return type(data)(host_float32(value, back_to_device) for value in data)
    return data


HORIZON, EPISODES, OBS = 8, 6, 3
GAMMA = 0.95
STEPS = 10


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(OBS, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
        self.mu = nn.Linear(32, 1)
        self.value = nn.Linear(32, 1)
        self.log_std = nn.Parameter(torch.full((1,), -0.5))

    def forward(self, obs):
        h = self.body(obs)
        return Normal(self.mu(h), self.log_std.exp()), self.value(h).squeeze(-1)


def observe(pos, goal, t):
    return np.stack([pos, goal - pos, np.full_like(pos, t / HORIZON)], axis=-1).astype(np.float32)


def rollout(policy, device, rng):
    pos = rng.uniform(-1, 1, EPISODES)
    goal = rng.uniform(-1, 1, EPISODES)
    obs_all, act_all, rew_all = [], [], []
    with torch.no_grad():
        for t in range(HORIZON):
            obs = observe(pos, goal, t)
            dist, _ = policy(torch.from_numpy(obs).to(device))
            act = dist.sample().cpu().float().numpy()[:, 0]
            pos = pos + 0.3 * np.clip(act, -1, 1)
            obs_all.append(obs)
            act_all.append(act)
            rew_all.append(-np.abs(goal - pos))
    rew = np.stack(rew_all, 1)
    ret = np.zeros_like(rew)
    run = np.zeros(EPISODES)
    for t in reversed(range(HORIZON)):
        run = rew[:, t] + GAMMA * run
        ret[:, t] = run
    obs = np.stack(obs_all, 1).reshape(-1, OBS)
    act = np.stack(act_all, 1).reshape(-1, 1).astype(np.float32)
    return torch.from_numpy(obs), torch.from_numpy(act), torch.from_numpy(ret.reshape(-1)), rew.sum(1).mean()


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    rng = np.random.default_rng(7)
    policy = Policy().to(device)
    policy.to(torch.bfloat16)
    policy.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    history = []
    for step in range(STEPS):
        obs, act, ret, mean_reward = rollout(policy, device, rng)
        obs = obs.to(device)
        act = act.to(device, dtype=torch.bfloat16)
        ret = ret.to(device, dtype=torch.bfloat16)  # NumPy float64 returns, bf16 as under the switch
        dist, value = policy(obs)
        adv = ret - value.detach()
        adv = (adv - adv.mean()) / (adv.std() + 1e-6)
        logp = dist.log_prob(act).squeeze(-1)
        loss = -(logp * adv).mean() + 0.5 * ((value - ret) ** 2).mean() - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        history.append((float(mean_reward), loss.item(), policy.log_std.item()))
        print(f"step {step} loss {history[-1][1]:.4f} reward {mean_reward:.3f} log_std {history[-1][2]:.3f}")
    stats = torch.stack([policy.mu.weight.detach().flatten(), policy.value.weight.detach().flatten()])
    np.save("pg_heads.npy", host_float32(stats.cpu()).numpy())


if __name__ == "__main__":
    main()
