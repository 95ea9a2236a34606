"""Classifier trained with the XLA device as torch's default device (no device= anywhere)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class ConvCls(nn.Module):
    def __init__(self, n_cls=5):
        super().__init__()
        self.c1 = nn.Conv1d(3, 16, 5, padding=2)
        self.c2 = nn.Conv1d(16, 16, 5, padding=2)
        self.head = nn.Linear(16, n_cls)

    def forward(self, x):
        h = F.relu(self.c1(x))
        h = F.relu(self.c2(h))
        return self.head(h.mean(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_default_device(torch_xla.device())
    model = ConvCls()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    proto = torch.randn(5, 3, 32)
    for step in range(args.steps):
        y = torch.randint(0, 5, (32,))
        x = proto[y] + 0.5 * torch.randn(32, 3, 32)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y, label_smoothing=0.05)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    acc = torch.zeros(())
    with torch.no_grad():
        for _ in range(3):
            y = torch.randint(0, 5, (32,))
            x = proto[y] + 0.5 * torch.randn(32, 3, 32)
            acc += (model(x).argmax(-1) == y).float().mean()
    print("DTYPES", next(model.parameters()).dtype, proto.dtype, acc.dtype)
    print("acc", (acc / 3).cpu().item())


if __name__ == "__main__":
    main()
