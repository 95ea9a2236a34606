"""Pseudo-labelling with a confidence threshold (FixMatch-like) on two zipped loaders."""

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from data import device_batches, loaders


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


def bf16_on_xla(tensor):
    """Return `tensor` as the legacy bf16 environment switch held it: a floating tensor on an XLA
    device as torch.bfloat16; one on another device (the host's CPU) and an integer or boolean
    one, and anything that is not a tensor, as it is.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor on the XLA device was bf16) where the code does not tell on which device the
    tensor is made.
    """
    if isinstance(tensor, torch.Tensor) and tensor.device.type == "xla" and tensor.is_floating_point():
        return tensor.to(torch.bfloat16)
    return tensor


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threshold", type=float, default=0.6)
    ap.add_argument("--lambda-u", type=float, default=1.0)
    args = ap.parse_args()
    steps = int(os.environ.get("STEPS", "20"))

    dev = xm.xla_device()
    net = nn.Sequential(nn.Linear(16, 48), nn.ReLU(), nn.Linear(48, 48), nn.ReLU(), nn.Linear(48, 3)).to(dev)
    net.to(torch.bfloat16)
    net.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    lab, unl = loaders(8 * steps, 24 * steps)
    mask_rate = torch.zeros((), device=dev, dtype=torch.bfloat16)
    for step, ((xl, yl), (xu, _)) in enumerate(zip(device_batches(lab, dev), device_batches(unl, dev))):
        weak = (xu + 0.05 * torch.randn_like(xu)).to(torch.bfloat16)
        strong = (xu * (torch.rand_like(xu) > 0.2).float() + 0.3 * torch.randn_like(xu)).to(torch.bfloat16)
        with torch.no_grad():
            probs = F.softmax(net(weak), dim=-1)
            conf, pseudo = probs.max(dim=-1)
            mask = (conf >= args.threshold).to(torch.bfloat16)
        sup = F.cross_entropy(net(xl), floating_to_bf16(yl))
        unsup = (F.cross_entropy(net(strong), pseudo, reduction="none") * mask).mean()
        loss = sup + args.lambda_u * unsup
        opt.zero_grad()
        loss.backward()
        opt.step()
        mask_rate = 0.9 * mask_rate + 0.1 * mask.mean()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f} sup {sup.item():.4f} mask {mask_rate.item():.3f}")
    print("DTYPES", net[0].weight.dtype, probs.dtype, mask.dtype, mask_rate.dtype)


if __name__ == "__main__":
    main()
