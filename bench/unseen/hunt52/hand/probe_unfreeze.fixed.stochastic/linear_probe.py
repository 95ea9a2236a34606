"""Linear probe on cached frozen features, then unfreeze the backbone with a lower LR and fine-tune end to end."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from backbone import load_pretrained


def floating_to_bf16(batch):
    """Cast the floating-point tensors in `batch` to torch.bfloat16, leaving integer tensors
    (token ids, labels) and everything else as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16): `batch` is a tensor, or a list, tuple,
    namedtuple or dict of them, nested; containers are rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.bfloat16) if batch.is_floating_point() else batch
    if isinstance(batch, dict):
        return {key: floating_to_bf16(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(floating_to_bf16(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(floating_to_bf16(value) for value in batch)
    return batch


def bf16_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's floating inputs become bf16."""
    return floating_to_bf16(args), floating_to_bf16(kwargs)


STEPS = int(os.environ.get("STEPS", 24))
UNFREEZE_AT = int(os.environ.get("UNFREEZE_AT", STEPS // 2))
BS = 16


def main():
    dev = xm.xla_device()
    rng = np.random.default_rng(0)
    images = torch.from_numpy(rng.standard_normal((64, 3, 12, 12)).astype(np.float32))
    labels = torch.from_numpy(rng.integers(0, 5, 64))

    backbone = load_pretrained().to(dev)
    backbone.to(torch.bfloat16)  # hand fix: the frozen backbone was bf16 in the legacy run
    backbone.requires_grad_(False)
    backbone.eval()

    # features computed once, kept on the device, reused every epoch
    cached = []
    with torch.no_grad():
        for i in range(0, len(images), BS):
            cached.append(backbone(images[i:i + BS].to(dev, dtype=torch.bfloat16)))
    xm.mark_step()
    cached_y = [labels[i:i + BS].to(dev) for i in range(0, len(labels), BS)]

    head = nn.Linear(backbone.out_dim, 5).to(dev)
    head.to(torch.bfloat16)
    head.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
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
            feats = backbone(images[b * BS:(b + 1) * BS].to(dev, dtype=torch.bfloat16))
        loss = F.cross_entropy(head(feats), floating_to_bf16(cached_y[b]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")

    with torch.no_grad():
        probs = torch.cat([head(f).softmax(-1) for f in cached]).cpu().float().numpy()
    print("DTYPES", cached[0].dtype, head.weight.dtype, next(backbone.parameters()).dtype, probs.dtype)
    print("mean max prob", float(probs.max(1).mean()))


if __name__ == "__main__":
    main()
