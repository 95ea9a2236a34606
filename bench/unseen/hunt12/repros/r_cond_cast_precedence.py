"""G2: under a script's own condition (`if args.bf16:` sets the switch), the migration casts a loss
operand as `y.to(torch.bfloat16) if args.bf16 else y` put inside a binary expression without parentheses:
`out - y.to(...) if c else y` is `(out - y.to(...)) if c else y`. Run without --bf16 (the FP32 configuration)
the second term no longer depends on the model: silently dropped here (the first term keeps backward alive).
Run it with and without --bf16."""
import argparse
import os

ap = argparse.ArgumentParser()
ap.add_argument("--bf16", action="store_true")
args = ap.parse_args()
if args.bf16:
    os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 4).to(device)
y = torch.randn(16, 1).to(device)
out = model(x)
loss = F.l1_loss(out, y) + 0.5 * (out - y).pow(2).mean()
opt.zero_grad()
loss.backward()
print(f"--bf16 {args.bf16}: loss {loss.item():.4f} (l1 {F.l1_loss(out, y).item():.4f} + 0.5 * mse {(out - y).pow(2).mean().item():.4f}); grad norm {model.weight.grad.norm().item():.4f}")
