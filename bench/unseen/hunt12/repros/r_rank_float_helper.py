"""G5: evolution strategies; the fitness ranks are made `.float()` in a helper (argsort of argsort of the
bf16 fitness, a list of a helper's results stacked); under the switch they were bf16. Left f32, `weights @ eps` promotes the search gradient to
f32 and `p.grad = ...` on a bf16 parameter raises. Switch from the launcher (LEGACY_ENV)."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector
import torch_xla
from _ir import ir_dtype


def fitness(model, x, y):
    with torch.no_grad():
        return -F.cross_entropy(model(x), y)


def centred_ranks(f):
    ranks = torch.argsort(torch.argsort(f)).float()
    return ranks / (f.numel() - 1) - 0.5


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = nn.Linear(3, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(16, 3).to(device)
    y = torch.randint(0, 2, (16,)).to(device)
    base = parameters_to_vector(model.parameters()).detach()
    eps = torch.randn(6, base.numel(), device=device)
    scores = []
    for e in eps:
        scores.append(fitness(model, x, y) + 0.01 * e[0])
    scores = torch.stack(scores)
    w = centred_ranks(scores)
    grad = -(w @ eps)
    print("ranks: IR", ir_dtype(w), "; search gradient: IR", ir_dtype(grad))
    offset = 0
    for p in model.parameters():
        p.grad = grad[offset:offset + p.numel()].view_as(p).clone()
        offset += p.numel()
    opt.step()
    print("step done, weight IR", ir_dtype(model.weight))


if __name__ == "__main__":
    main()
