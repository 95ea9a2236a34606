"""Knowledge distillation: a teacher rebuilt from a state dict (serialised to bytes, loaded on the host, then
moved), a smaller student trained on KL(teacher || student) at temperature TAU plus cross-entropy; the best
student by validation loss is kept with copy.deepcopy and its predictions written to JSON. Legacy bf16 switch on."""
import copy
import io
import json
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


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


D, C, B = 12, 5, 32
STEPS = 10
TAU = 2.0


def mlp(width):
    return nn.Sequential(nn.Linear(D, width), nn.ReLU(), nn.Linear(width, C))


def teacher_bytes():
    torch.manual_seed(11)
    buf = io.BytesIO()
    torch.save(host_float32(mlp(48).state_dict(), back_to_device=True), buf)
    return buf.getvalue()


def batch(gen):
    x = torch.randn(B, D, generator=gen)
    y = (x[:, :C] * torch.arange(1, C + 1)).argmax(1)
    return x, y


def main():
    device = torch_xla.device()
    blob = teacher_bytes()
    teacher = mlp(48)
    teacher.load_state_dict(torch.load(io.BytesIO(blob)))
    teacher = teacher.to(device).eval()
    teacher.to(torch.bfloat16)
    torch.manual_seed(0)
    student = mlp(16).to(device)
    student.to(torch.bfloat16)
    opt = torch.optim.SGD(student.parameters(), lr=0.2, momentum=0.9)
    gen = torch.Generator().manual_seed(2)
    xv, yv = batch(gen)
    xv, yv = xv.to(device, dtype=torch.bfloat16), yv.to(device)
    best, best_val = None, float("inf")
    for step in range(STEPS):
        x, y = batch(gen)
        x, y = x.to(device, dtype=torch.bfloat16), y.to(device)
        with torch.no_grad():
            t_logits = teacher(x)
        s_logits = student(x)
        kd = F.kl_div(F.log_softmax(s_logits / TAU, -1), F.softmax(t_logits / TAU, -1).to(torch.bfloat16), reduction="batchmean")
        loss = kd * TAU * TAU + F.cross_entropy(s_logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        with torch.no_grad():
            val = F.cross_entropy(student(xv), yv).item()
        if val < best_val:
            best, best_val = copy.deepcopy(student), val
        print(f"step {step} loss {loss.item():.4f} val {val:.4f}")
    with torch.no_grad():
        best = best.float()
        probs = F.softmax(best(xv.float()), -1)
    with open("best_preds.json", "w") as fh:
        json.dump({"val": best_val, "probs": probs.cpu().tolist()}, fh)


if __name__ == "__main__":
    main()
