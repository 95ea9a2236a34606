"""Prototype-free metric learning: an embedding net trained with a soft nearest-neighbour loss over
pairwise euclidean distances (torch.cdist), optimised by a Lion optimizer written here."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


class Lion(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                p.mul_(1 - group["lr"] * group["weight_decay"])
                update = (m * b1 + p.grad * (1 - b1)).sign_()
                p.add_(update, alpha=-group["lr"])
                m.mul_(b2).add_(p.grad, alpha=1 - b2)


class Embedder(nn.Module):
    def __init__(self, d_in=32, d_emb=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, 64), nn.GELU(), nn.Linear(64, d_emb))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def soft_nn_loss(emb, labels, temperature=0.1):
    d = torch.cdist(emb, emb).pow(2)
    n = emb.shape[0]
    eye = torch.eye(n, dtype=torch.bool, device=emb.device)
    logits = (-d / temperature).masked_fill(eye, float("-inf"))
    same = (labels[:, None] == labels[None, :]) & ~eye
    log_p = logits.log_softmax(-1)
    return -(torch.logsumexp(log_p.masked_fill(~same, float("-inf")), dim=-1)).mean()


def main():
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(9)
    device = torch_xla.device()
    centers = torch.randn(8, 32, generator=gen) * 2
    model = Embedder().to(device)
    opt = Lion(model.parameters(), lr=3e-4, weight_decay=0.1)
    for step in range(int(os.environ.get("STEPS", "12"))):
        y = torch.randint(0, 8, (48,), generator=gen)
        x = centers[y] + torch.randn(48, 32, generator=gen)
        x, y = x.to(device), y.to(device)
        emb = model(x)
        loss = soft_nn_loss(emb, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
    print("DTYPES", "weight", model.net[0].weight.dtype, "emb", emb.dtype, "loss", loss.dtype)


if __name__ == "__main__":
    main()
