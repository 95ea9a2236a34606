"""Codemod gap: a model used on the HOST (f32, untouched by the switch) before it is moved to the
device. Stochastic mode casts the host forward's input to bf16 while the model is still f32 on the
CPU: the migrated script crashes at line 15 ("mat1 and mat2 must have the same dtype")."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"
import torch
import torch.nn as nn
import torch_xla


def host_float32(data, back_to_device=False):
    """Return `data` with every bf16 tensor in it copied to the host and made float32 there (and,
    with `back_to_device`, moved back to the device it was on); integer, float32 and float64
    tensors and everything else but modules are returned as they are.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which every
    floating tensor that left the XLA device was float32): `data` is a tensor, or a list, tuple,
    namedtuple or dict of them (a state dict, a checkpoint), nested; containers are copied with
    their type, a state dict's metadata kept, so `load_state_dict` reads the result as before.
    `torch.save` writes an XLA tensor as one: `back_to_device=True` keeps it so, as the legacy
    checkpoint held it. A module is copied, its bf16 parameters and buffers made float32 where they
    are, without the input hooks bf16-migrate registered on it (functions of the migrated script,
    which a `torch.save`d module would need to be loaded anywhere else).
    """
    import copy

    if isinstance(data, torch.nn.Module):
        module = copy.deepcopy(data)
        for sub in module.modules():
            for key, hook in list(sub._forward_pre_hooks.items()):
                if getattr(hook, "__name__", None) in ("bf16_inputs_hook", "float32_inputs_hook"):
                    del sub._forward_pre_hooks[key]
                    sub._forward_pre_hooks_with_kwargs.pop(key, None)
        return module._apply(lambda t: t.float() if t.dtype == torch.bfloat16 else t)
    if isinstance(data, torch.Tensor):
        if data.dtype != torch.bfloat16:
            return data
        host = data.cpu().float()
        return host.to(data.device) if back_to_device else host
    if isinstance(data, dict):
        out = copy.copy(data)
        for key, value in data.items():
            out[key] = host_float32(value, back_to_device)
        return out
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(host_float32(value, back_to_device) for value in data))
    if isinstance(data, (list, tuple)):
        return type(data)(host_float32(value, back_to_device) for value in data)
    return data


device = torch_xla.device()
net = nn.Linear(6, 3).eval()
x = torch.randn(16, 6)
with torch.no_grad():
    labels = net(x.to(torch.bfloat16)).argmax(dim=1)  # host forward: float32 under the switch as well
net.to(device)
net.to(torch.bfloat16)
with torch.no_grad():
    logits = net(x.to(device).to(torch.bfloat16))
torch_xla.sync()
print("labels", labels.tolist()[:5], "logits", logits.dtype, host_float32(logits.cpu()).numpy().dtype)
