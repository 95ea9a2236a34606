"""Stochastic depth: `torch.bernoulli(torch.full(..., p, device=))` in a residual block (f32 under a bf16 model,
bf16 under the switch). The tool gives the inner `torch.full` `dtype=out.dtype` (right) and `torch.bernoulli`
`dtype=out.dtype` too: torch.bernoulli has no dtype argument (TypeError at the first training forward)."""
import torch
import torch.nn as nn
import torch_xla
from _ir import ir_dtype


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, h):
        out = self.lin(h)
        keep = torch.bernoulli(torch.full((h.shape[0], 1), 0.8, device=h.device))
        return h + out * keep / 0.8


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = Block().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(4, 8).to(device)).square().mean()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print("loss IR", ir_dtype(loss), "weight IR", ir_dtype(model.lin.weight))


if __name__ == "__main__":
    main()
