"""Distil a pickled teacher (whole nn.Module saved with torch.save) into a student with a scripted block."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

IN, CLASSES, T = 32, 10, 2.0


class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(IN, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, CLASSES))

    def forward(self, x):
        return self.net(x)


class ScaledResidual(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.alpha = nn.Parameter(torch.full((d,), 0.1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.alpha * F.silu(self.fc(x))


class Student(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(IN, 64)
        self.block = torch.jit.script(ScaledResidual(64))
        self.out = nn.Linear(64, CLASSES)

    def forward(self, x):
        return self.out(self.block(torch.relu(self.inp(x))))


def ensure_teacher(path):
    if not os.path.exists(path):
        torch.manual_seed(123)
        torch.save(Teacher(), path)


def kd_loss(s_logits, t_logits, labels, alpha=0.7):
    soft = F.kl_div(F.log_softmax(s_logits / T, -1), F.softmax(t_logits / T, -1), reduction="batchmean") * T * T
    return alpha * soft + (1 - alpha) * F.cross_entropy(s_logits, labels)


def main():
    device = torch_xla.device()
    ensure_teacher("teacher_full.pt")
    teacher = torch.load("teacher_full.pt", weights_only=False).to(device).eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    torch.manual_seed(0)
    student = Student().to(device)
    opt = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(7)
    for step in range(20):
        x = torch.randn(64, IN, generator=g).to(device)
        labels = torch.randint(0, CLASSES, (64,), generator=g).to(device)
        with torch.no_grad():
            t_logits = teacher(x)
        opt.zero_grad()
        loss = kd_loss(student(x), t_logits, labels)
        loss.backward()
        xm.optimizer_step(opt)
        torch_xla.sync()
        if step % 5 == 0:
            print(step, round(loss.item(), 4))
    agreement = (student(x).argmax(-1) == t_logits.argmax(-1)).float().mean()
    print("agreement", agreement.item())
    torch.save({k: v.cpu() for k, v in student.state_dict().items()}, "student.pt")


if __name__ == "__main__":
    main()
