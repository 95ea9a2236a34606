"""Long-tailed intent classifier: class-balanced weights from the label counts, and
label-smoothed soft targets built on the device."""
import argparse
import json
import os


import torch
import torch.nn as nn
import torch.nn.functional as F
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


N_CLS, DIM = 5, 24


def class_weights(labels, n_cls, device):
    counts = bf16_on_xla(torch.bincount(labels, minlength=n_cls).float()).to(device, dtype=torch.bfloat16)
    inv = counts.sum() / (n_cls * counts.clamp(min=1.0))
    return inv / inv.mean()


def smooth_targets(y, n_cls, eps):
    target = torch.full((y.shape[0], n_cls), eps / (n_cls - 1), device=y.device, dtype=torch.bfloat16)
    return target.scatter_(1, y[:, None], 1.0 - eps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--smooth", type=float, default=0.1)
    ap.add_argument("--ckpt", default="ckpt/model.pt")
    args = ap.parse_args()
    torch.manual_seed(0)
    device = xm.xla_device()
    # long tail: class c has about 2**-c of the data
    probs = torch.tensor([2.0 ** -c for c in range(N_CLS)])
    y_all = torch.multinomial(probs / probs.sum(), 1024, replacement=True)
    x_all = torch.randn(1024, DIM) + bf16_on_xla(y_all[:, None].float()) * 0.3
    weights = class_weights(y_all, N_CLS, device)

    model = nn.Sequential(nn.Linear(DIM, 64), nn.SiLU(), nn.Linear(64, N_CLS)).to(device)
    model.to(torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(args.steps):
        idx = torch.randint(0, 1024, (128,))
        xb, yb = x_all[idx].to(device), y_all[idx].to(device)
        logp = F.log_softmax(model(xb.to(torch.bfloat16)), dim=1)
        soft = smooth_targets(yb, N_CLS, args.smooth)
        per_ex = -(soft * logp).sum(dim=1)
        loss = (weights[yb] * per_ex).sum() / weights[yb].sum()
        opt.zero_grad()
        loss.backward()
        xm.optimizer_step(opt)
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")
    print("weights", weights.dtype, "soft", soft.dtype, "logp", logp.dtype)

    with torch.no_grad():
        pred = model(x_all.to(device).to(torch.bfloat16)).argmax(dim=1).cpu()
    per_class = [float((pred[y_all == c] == c).float().mean()) for c in range(N_CLS)]
    os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
    torch.save({k: host_float32(v.cpu()) for k, v in model.state_dict().items()}, args.ckpt)
    with open(os.path.join(os.path.dirname(args.ckpt), "per_class.json"), "w") as f:
        json.dump({"acc": per_class, "weights": weights.cpu().tolist()}, f)
    print("per-class acc", [round(a, 3) for a in per_class])


if __name__ == "__main__":
    main()
