"""A float64 layer fed `.double()` under XLA_USE_BF16 (both bf16 on the device under the switch), one optimizer over
the ModuleDict: the tool casts the ModuleDict (the f64 layer too) and keeps `.double()` and the f64 target."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
from _ir import ir_dtype


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


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    parts = nn.ModuleDict({"enc": nn.Linear(4, 3), "probe": nn.Linear(3, 1, dtype=torch.float64)}).to(device)
    parts.to(torch.bfloat16)
    parts.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    opts = {"all": torch.optim.SGD(parts.parameters(), lr=0.1)}
    x = torch.randn(8, 4).to(device)
    y = (torch.rand(8) > 0.5).double().to(device, dtype=torch.bfloat16)
    z = parts["enc"](x.to(torch.bfloat16))  # hand fix of the first crash
    score = parts["probe"](z.detach().double()).squeeze(-1)
    loss = z.square().mean() + F.binary_cross_entropy_with_logits(score, y)
    loss.backward()
    for opt in opts.values():
        opt.step()
    torch_xla.sync()
    print("z IR", ir_dtype(z), "score IR", ir_dtype(score), "loss IR", ir_dtype(loss))


if __name__ == "__main__":
    main()
