"""A tabular classifier regularised toward a small Lipschitz constant: the spectral norm (largest singular
value) of every weight matrix is penalised in the loss."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla


class ResidualMLP(nn.Module):
    def __init__(self, d_in=20, width=64, n_classes=5, depth=3):
        super().__init__()
        self.inp = nn.Linear(d_in, width)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.out = nn.Linear(width, n_classes)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        for blk in self.blocks:
            h = h + 0.5 * torch.relu(blk(h))
        return self.out(h)


def spectral_penalty(model, target=1.0):
    total = 0.0
    for name, p in model.named_parameters():
        if p.ndim == 2:
            sigma = torch.linalg.matrix_norm(p, ord=2)
            total = total + torch.relu(sigma - target) ** 2
    return total


def batches(gen, n_steps, bs=64, d_in=20, n_classes=5):
    proto = torch.randn(n_classes, d_in, generator=gen)
    for _ in range(n_steps):
        y = torch.randint(0, n_classes, (bs,), generator=gen)
        x = proto[y] + 0.8 * torch.randn(bs, d_in, generator=gen)
        yield x, y


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(7)
    device = torch_xla.device()
    model = ResidualMLP().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    crit = nn.CrossEntropyLoss(label_smoothing=0.05)
    lam = 1e-2
    steps = int(os.environ.get("STEPS", "12"))
    for step, (x, y) in enumerate(batches(gen, steps)):
        x, y = x.to(device), y.to(device)
        logits = model(x)
        ce = crit(logits, y)
        pen = spectral_penalty(model)
        loss = ce + lam * pen
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        acc = (logits.argmax(-1) == y).float().mean()
        print(f"step {step} loss {loss.item():.4f} ce {ce.item():.4f} pen {pen.item():.3f} acc {acc.item():.3f}", flush=True)
    print("DTYPES", "weight", model.out.weight.dtype, "logits", logits.dtype, "loss", loss.dtype)


if __name__ == "__main__":
    main()
