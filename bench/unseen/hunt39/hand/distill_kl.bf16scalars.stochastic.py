"""Knowledge distillation: a frozen teacher (eval mode, no_grad) and a smaller
student trained on a mix of hard-label CE and temperature-scaled KL."""
import os

os.environ.setdefault("PJRT_DEVICE", "TPU")
os.environ.update({"NEURON_RT_STOCHASTIC_ROUNDING_EN": "1", "XLA_USE_32BIT_LONG": "1"})

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


def downcast_floating(batch):
    """Cast `batch` as the legacy bf16 downcast environment switch held it on the device: float64
    tensors to float32, other floating tensors to torch.bfloat16; integer tensors and everything else
    as they are.

    Added by bf16-migrate (replacing the legacy bf16 downcast environment switch, under which a float32
    tensor on the XLA device was bf16 and a float64 one float32) where the code does not tell the
    dtype: `batch` is a tensor, or a list, tuple, namedtuple or dict of them, nested; containers are
    rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        if batch.dtype == torch.float64:
            return batch.to(torch.float32)
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: downcast_floating(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(downcast_floating(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(downcast_floating(value) for value in batch)
    return batch


STEPS = int(os.environ.get("STEPS", "30"))
T = 4.0
ALPHA = 0.69921875  # bf16(0.7), as the legacy graph baked it
N_CLS = 8
dev = torch_xla.device()


def mlp(d_in, hidden, depth, d_out):
    layers, d = [], d_in
    for _ in range(depth):
        layers += [nn.Linear(d, hidden), nn.ReLU()]
        d = hidden
    layers.append(nn.Linear(d, d_out))
    return nn.Sequential(*layers)


def load_teacher():
    torch.manual_seed(11)
    teacher = mlp(32, 128, 3, N_CLS)
    # the teacher was trained elsewhere; here we pretend by a fixed init
    teacher = downcast_floating(teacher.to(dev))
    teacher.to(torch.bfloat16)
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad = False
    return teacher


teacher = load_teacher()
torch.manual_seed(12)
student = mlp(32, 48, 1, N_CLS).to(dev)
student.to(torch.bfloat16)
opt = torch.optim.AdamW(student.parameters(), lr=2e-3, weight_decay=0.01)
proj = torch.randn(32, N_CLS)


def distill_loss(s_logits, t_logits, labels):
    kl = F.kl_div(F.log_softmax(s_logits / T, dim=-1), F.softmax(t_logits / T, dim=-1),
                  reduction="batchmean") * (T * T)
    ce = F.cross_entropy(s_logits, labels)
    return ALPHA * kl + (1 - ALPHA) * ce, kl, ce


agree = torch.zeros((), device=dev, dtype=torch.bfloat16)
for step in range(STEPS):
    x = torch.randn(64, 32)
    labels = (x @ proj).argmax(dim=1)
    x, labels = x.to(dev, dtype=torch.bfloat16), labels.to(dev)
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = student(x)
    loss, kl, ce = distill_loss(s_logits, downcast_floating(t_logits), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    agree += (s_logits.argmax(-1) == t_logits.argmax(-1)).to(torch.bfloat16).mean()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.5f} kl {kl.item():.5f} ce {ce.item():.5f}")

print(f"teacher agreement {(agree / STEPS).item():.4f}")
print("DTYPES", next(teacher.parameters()).dtype, next(student.parameters()).dtype, t_logits.dtype,
      agree.dtype)
