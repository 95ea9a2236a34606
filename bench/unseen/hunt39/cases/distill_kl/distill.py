"""Knowledge distillation: a frozen teacher (eval mode, no_grad) and a smaller
student trained on a mix of hard-label CE and temperature-scaled KL."""
import os

os.environ.setdefault("PJRT_DEVICE", "TPU")
os.environ.update({"XLA_DOWNCAST_BF16": "1", "XLA_USE_32BIT_LONG": "1"})

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

STEPS = int(os.environ.get("STEPS", "30"))
T = 4.0
ALPHA = 0.7
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
    teacher = teacher.to(dev)
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad = False
    return teacher


teacher = load_teacher()
torch.manual_seed(12)
student = mlp(32, 48, 1, N_CLS).to(dev)
opt = torch.optim.AdamW(student.parameters(), lr=2e-3, weight_decay=0.01)
proj = torch.randn(32, N_CLS)


def distill_loss(s_logits, t_logits, labels):
    kl = F.kl_div(F.log_softmax(s_logits / T, dim=-1), F.softmax(t_logits / T, dim=-1),
                  reduction="batchmean") * (T * T)
    ce = F.cross_entropy(s_logits, labels)
    return ALPHA * kl + (1 - ALPHA) * ce, kl, ce


agree = torch.zeros((), device=dev)
for step in range(STEPS):
    x = torch.randn(64, 32)
    labels = (x @ proj).argmax(dim=1)
    x, labels = x.to(dev), labels.to(dev)
    with torch.no_grad():
        t_logits = teacher(x)
    s_logits = student(x)
    loss, kl, ce = distill_loss(s_logits, t_logits, labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    agree += (s_logits.argmax(-1) == t_logits.argmax(-1)).float().mean()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.5f} kl {kl.item():.5f} ce {ce.item():.5f}")

print(f"teacher agreement {(agree / STEPS).item():.4f}")
print("DTYPES", next(teacher.parameters()).dtype, next(student.parameters()).dtype, t_logits.dtype,
      agree.dtype)
