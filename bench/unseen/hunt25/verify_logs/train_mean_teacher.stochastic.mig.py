"""Mean-teacher semi-supervised classifier on two-moons-like data: a student trained on a few labels plus a
consistency loss against an EMA teacher (deepcopy of the student, updated with torch._foreach ops; BatchNorm
buffers copied in a for-loop), a Python sigmoid ramp-up of the consistency weight, and an evaluation of the
teacher read back into numpy."""
import copy
import math
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
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


STEPS = 10
N_LAB, N_UNLAB = 16, 48
EMA_DECAY = 0.95
CONS_MAX = 4.0


def moons(rng, n):
    t = rng.uniform(0, math.pi, n)
    lab = rng.integers(0, 2, n)
    x = np.stack([np.cos(t) + lab, np.sin(t) * (1 - 2 * lab) + 0.4 * lab], 1)
    x += 0.1 * rng.standard_normal(x.shape)
    return torch.tensor(x, dtype=torch.float32), torch.tensor(lab)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Linear(32, 2)

    def forward(self, x):
        return self.head(self.body(x))


def ramp(step, length=6):
    p = min(step, length) / length
    return CONS_MAX * math.exp(-5.0 * (1.0 - p) ** 2)


@torch.no_grad()
def ema_update(teacher, student, decay):
    t_params = [p for p in teacher.parameters()]
    s_params = [p for p in student.parameters()]
    torch._foreach_mul_(t_params, decay)
    torch._foreach_add_(t_params, s_params, alpha=1.0 - decay)
    for tb, sb in zip(teacher.buffers(), student.buffers()):
        tb.copy_(sb)


def noisy(x, gen_std=0.08):
    return x + gen_std * torch.randn_like(x)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    dev = xm.xla_device()
    student = Net().to(dev)
    teacher = copy.deepcopy(student)
    teacher.to(torch.bfloat16)
    for p in teacher.parameters():
        p.requires_grad_(False)
    student.to(torch.bfloat16)
    opt = torch.optim.Adam(student.parameters(), lr=3e-3)

    xl, yl = moons(rng, N_LAB)
    xl, yl = xl.to(dev, dtype=torch.bfloat16), yl.to(dev)
    for step in range(STEPS):
        xu, _ = moons(rng, N_UNLAB)
        xu = xu.to(dev, dtype=torch.bfloat16)
        x_all = torch.cat([xl, xu])
        s_logits = student(noisy(x_all).to(torch.bfloat16))
        with torch.no_grad():
            t_logits = teacher(noisy(x_all).to(torch.bfloat16))
        sup = F.cross_entropy(s_logits[:N_LAB], floating_to_bf16(yl))
        cons = F.mse_loss(s_logits.softmax(-1), t_logits.softmax(-1))
        loss = sup + ramp(step) * cons
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema_update(teacher, student, EMA_DECAY)
        xm.mark_step()
        if step % 3 == 0:
            print(f"step {step} sup {sup.item():.4f} cons {cons.item():.5f}")

    xt, yt = moons(rng, 64)
    teacher.eval()
    with torch.no_grad():
        probs = teacher(xt.to(dev).to(torch.bfloat16)).softmax(-1)
    p = probs.cpu().float().numpy()
    acc = float((p.argmax(1) == yt.numpy()).mean())
    conf = p.max(1)
    print("teacher acc", acc, "mean conf", float(conf.mean()), p.dtype)


if __name__ == "__main__":
    main()
