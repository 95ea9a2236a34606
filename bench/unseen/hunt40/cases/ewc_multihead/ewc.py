"""Task-incremental learning with a shared trunk, a new classification head per task (appended when the task
starts) and an EWC penalty anchoring the trunk to the previous tasks' weights."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


class MultiHeadNet(nn.Module):
    def __init__(self, d_in=20, d=32):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(d_in, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU())
        self.heads = nn.ModuleList()

    def forward(self, x, task):
        return self.heads[task](self.trunk(x))


def task_data(t, n=256, d_in=20):
    g = torch.Generator().manual_seed(100 + t)
    x = torch.randn(n, d_in, generator=g)
    w = torch.randn(d_in, 2, generator=g)
    return x, (x @ w).argmax(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=3)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--lam", type=float, default=50.0)
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = MultiHeadNet().to(dev)
    model.heads.append(nn.Linear(32, 2).to(dev))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    fisher, anchor = {}, {}
    for t in range(args.tasks):
        if t > 0:
            head = nn.Linear(32, 2).to(dev)
            model.heads.append(head)
            opt.add_param_group({"params": head.parameters()})
        x_all, y_all = task_data(t)
        for step in range(args.steps):
            i = (step * 32) % 256
            x, y = x_all[i:i + 32].to(dev), y_all[i:i + 32].to(dev)
            loss = F.cross_entropy(model(x, t), y)
            for n, p in model.trunk.named_parameters():
                if n in fisher:
                    loss = loss + args.lam / 2 * (fisher[n] * (p - anchor[n]) ** 2).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            xm.mark_step()
            print(f"task {t} step {step} loss {loss.item():.4f}")
        # diagonal Fisher of this task on a few batches
        est = {n: torch.zeros_like(p) for n, p in model.trunk.named_parameters()}
        for i in range(0, 128, 32):
            model.zero_grad()
            out = model(x_all[i:i + 32].to(dev), t)
            F.nll_loss(F.log_softmax(out, 1), out.argmax(1)).backward()
            for n, p in model.trunk.named_parameters():
                est[n] += p.grad.detach() ** 2 / 4
        for n, p in model.trunk.named_parameters():
            fisher[n] = fisher.get(n, 0) + est[n]
            anchor[n] = p.detach().clone()
        xm.mark_step()
    acc = []
    with torch.no_grad():
        for t in range(args.tasks):
            x, y = task_data(t)
            acc.append((model(x.to(dev), t).argmax(1).cpu() == y).float().mean().item())
    print("ACC", [round(a, 3) for a in acc], "DTYPES", model.heads[-1].weight.dtype, fisher["0.weight"].dtype)


if __name__ == "__main__":
    main()
