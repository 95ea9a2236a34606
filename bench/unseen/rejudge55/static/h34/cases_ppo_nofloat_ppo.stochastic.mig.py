"""A PPO update loop on a contextual bandit simulated in NumPy (float64 states and
rewards), with CleanRL-style orthogonal initialisation applied after the move."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical
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


OBS, ACTS, ENVS = 6, 4, 64


def init_weights(m):
    if isinstance(m, nn.Linear):
        nn.init.orthogonal_(m.weight, gain=np.sqrt(2))
        nn.init.constant_(m.bias, 0.0)


class Agent(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(OBS, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
        self.pi = nn.Linear(32, ACTS)
        self.v = nn.Linear(32, 1)

    def forward(self, obs):
        h = self.trunk(obs)
        return self.pi(h), self.v(h).squeeze(-1)


rng = np.random.default_rng(0)
torch.manual_seed(0)
device = torch_xla.device()
agent = Agent().to(device)
agent.apply(init_weights)
agent.to(torch.bfloat16)
agent.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
opt = torch.optim.Adam(agent.parameters(), lr=2.5e-4 * 10, eps=1e-5)
w_true = rng.normal(size=(OBS, ACTS))

for it in range(10):
    obs_np = rng.normal(size=(ENVS, OBS))
    obs = torch.as_tensor(obs_np, device=device)
    with torch.no_grad():
        logits, value = agent(obs)
        dist = Categorical(logits=logits)
        action = dist.sample()
        old_logp = dist.log_prob(action)
    act_np = host_float32(action.cpu()).numpy()
    reward_np = (obs_np @ w_true)[np.arange(ENVS), act_np] + 0.1 * rng.normal(size=ENVS)
    rewards = floating_to_bf16(torch.as_tensor(reward_np, device=device))
    adv = rewards - value
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)

    logits, new_value = agent(obs)
    dist = Categorical(logits=logits)
    ratio = (dist.log_prob(action) - old_logp).exp()
    pg_loss = -torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv).mean()
    v_loss = 0.5 * (new_value - rewards).pow(2).mean()
    loss = pg_loss + 0.5 * v_loss - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
    opt.step()
    xm.mark_step()
    print(f"step {it} loss {loss.item():.4f} mean reward {reward_np.mean():.3f}")

print("DTYPES obs", obs.dtype, "rewards", rewards.dtype, "adv", adv.dtype, "w", agent.pi.weight.dtype)
values = host_float32(new_value.detach().cpu()).numpy()
ev = 1.0 - np.var(reward_np - values) / np.var(reward_np)
print(f"explained variance {ev:.3f}")
