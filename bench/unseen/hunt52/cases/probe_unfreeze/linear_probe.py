"""Linear probe on cached frozen features, then unfreeze the backbone with a lower LR and fine-tune end to end."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from backbone import load_pretrained

STEPS = int(os.environ.get("STEPS", 24))
UNFREEZE_AT = int(os.environ.get("UNFREEZE_AT", STEPS // 2))
BS = 16


def main():
    dev = xm.xla_device()
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.standard_normal((64, 3, 12, 12)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 5, 64))

    backbone = load_pretrained().to(dev)
    backbone.requires_grad_(False)
    backbone.eval()

    # features computed once, kept on the device, reused every epoch
    cached = []
    with torch.no_grad():
        for i in range(0, len(images), BS):
            cached.append(backbone(images[i:i + BS].to(dev)))
    xm.mark_step()
    cached_y = [labels[i:i + BS].to(dev) for i in range(0, len(labels), BS)]

    head = nn.Linear(backbone.out_dim, 5).to(dev)
    opt = torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)

    for step in range(STEPS):
        b = step % len(cached)
        if step < UNFREEZE_AT:
            feats = cached[b]
        else:
            if step == UNFREEZE_AT:
                backbone.requires_grad_(True)
                backbone.train()
                opt.add_param_group({"params": backbone.parameters(), "lr": 0.01})
                print("unfroze backbone at", step)
            feats = backbone(images[b * BS:(b + 1) * BS].to(dev))
        loss = F.cross_entropy(head(feats), cached_y[b])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")

    with torch.no_grad():
        probs = torch.cat([head(f).softmax(-1) for f in cached]).cpu().numpy()
    print("DTYPES", cached[0].dtype, head.weight.dtype, next(backbone.parameters()).dtype, probs.dtype)
    print("mean max prob", float(probs.max(1).mean()))


if __name__ == "__main__":
    main()
