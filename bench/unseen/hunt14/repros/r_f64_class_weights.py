"""Class weights from NumPy float64 put on the device with torch.as_tensor(..., device=): float64 on the
device (bf16 under the switch). The migration calls them "made f32" (BFM087): stochastic casts them at
the loss's weight= but leaves `class_w[yb].sum()` a float64 gather+sum on the device; amp leaves them
float64 and the loss under autocast fails at the sync (mixed precision).
No dtype probe in here: passing `class_w` to a probe function changes what the codemod does (it then casts at
creation, right); r_accum_class_w.sh adds the probe after the migration."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm



def main():
    device = xm.xla_device()
    counts = np.array([50, 20, 10, 5])
    class_w = torch.as_tensor(counts.sum() / (4 * counts), device=device)
    scale = torch.tensor(0.5, device=device)
    torch.manual_seed(0)
    model = nn.Linear(6, 4).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        xb, yb = torch.randn(32, 6).to(device), torch.randint(0, 4, (32,)).to(device)
        logits = model(xb)
        per = F.cross_entropy(logits, yb, weight=class_w, reduction="none")
        loss = per.sum() / class_w[yb].sum()
        opt.zero_grad()
        (loss * scale).backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")


main()
