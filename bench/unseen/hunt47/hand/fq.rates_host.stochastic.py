"""Quantisation-aware training of a small MLP classifier: activations fake-quantised to int8 with a learnt
per-layer scale (straight-through round), one-hot label smoothing done by hand, accuracy and per-class hit counts
kept as integer counters on the device and turned into rates once at the end."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

if os.environ.get("BF16", "1") == "1":
    os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

STEPS = int(os.environ.get("STEPS", 20))
NCLS = 5


class FakeQuant(nn.Module):
    def __init__(self, init_scale=0.05):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(init_scale))

    def forward(self, x):
        s = self.scale.abs() + 1e-6
        q = torch.round(x / s).clamp(-128, 127)
        q = (q - x / s).detach() + x / s
        return q * s


class QNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 48)
        self.q1 = FakeQuant()
        self.fc2 = nn.Linear(48, 48)
        self.q2 = FakeQuant()
        self.out = nn.Linear(48, NCLS)

    def forward(self, x):
        x = self.q1(F.relu(self.fc1(x)))
        x = self.q2(F.relu(self.fc2(x)))
        return self.out(x)


def smooth_targets(y, eps=0.1):
    onehot = F.one_hot(y, NCLS).to((torch.bfloat16 if os.environ.get("BF16", "1") == "1" else torch.float32))
    return onehot * (1 - eps) + eps / NCLS


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    centers = torch.randn(NCLS, 20) * 2
    model = QNet().to(dev)
    if os.environ.get("BF16", "1") == "1":
        model.to(torch.bfloat16)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    correct = torch.zeros((), dtype=torch.long, device=dev)
    seen = torch.zeros((), dtype=torch.long, device=dev)
    per_class = torch.zeros(NCLS, dtype=torch.long, device=dev)
    for step in range(STEPS):
        y = torch.randint(0, NCLS, (32,))
        x = centers[y] + torch.randn(32, 20)
        x, y = x.to(dev), y.to(dev)
        logits = model(x.to(torch.bfloat16) if os.environ.get("BF16", "1") == "1" else x)
        loss = torch.sum(-smooth_targets(y) * F.log_softmax(logits, -1), dim=-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        hit = logits.argmax(-1) == y
        correct += hit.sum()
        seen += y.numel()
        per_class += torch.bincount(y[hit], minlength=NCLS)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f} scales {model.q1.scale.item():.4f} {model.q2.scale.item():.4f}")
    n = seen.item()
    acc = correct.item() / n
    rates = [c / n * NCLS for c in per_class.cpu().tolist()]
    print(f"train acc {acc:.3f} per-class {rates}")


if __name__ == "__main__":
    main()
