"""Minimal: a teacher unpickled whole by torch.load, run under no_grad; student trained on its logits."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return self.net(x)



def main():
    device = torch_xla.device()
    if not os.path.exists("teacher.pt"):
        torch.save(Teacher(), "teacher.pt")
    teacher = torch.load("teacher.pt", weights_only=False).to(device).eval()
    student = nn.Linear(8, 4).to(device)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(16, 8).to(device)
        with torch.no_grad():
            t = teacher(x)
        loss = ((student(x) - t) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        torch_xla.sync()
    print(loss.item())


if __name__ == "__main__":
    main()
