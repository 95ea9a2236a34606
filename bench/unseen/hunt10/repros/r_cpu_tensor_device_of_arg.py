"""hunt10 G: `torch.rand(x.shape, device=x.device)` in a helper called with a host tensor (`x.cpu()`) gets
dtype=torch.bfloat16: the host RNG draws bf16 where the legacy run (the switch touches no CPU tensor) drew f32,
so the corruption mask itself changes."""
import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

def corrupt(x, gen):
    r = torch.rand(x.shape, generator=gen, device=x.device)
    mask = r < 0.15
    return torch.where(mask, torch.zeros_like(x), x), mask, r

device = torch_xla.device()
torch.manual_seed(0)
model = nn.Linear(64, 64).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(0)
x = torch.randn(32, 64).to(device)
for step in range(3):
    xc, mask, r = corrupt(x.cpu(), gen)
    print(step, "host mask", int(mask.sum()), "of", mask.numel(), "rand", r.dtype, r.device, "first", r.flatten()[:3].tolist())
    loss = ((model(xc.to(device)) - x) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step(); torch_xla.sync()
    print(step, round(loss.item(), 4))
