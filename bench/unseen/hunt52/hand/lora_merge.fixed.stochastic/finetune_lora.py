"""Fine-tune a small attention classifier with LoRA adapters on q/v; export the merged weights."""
import os
os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"
os.environ["PJRT_DEVICE"] = os.environ.get("PJRT_DEVICE", "TPU")

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from lora import inject_lora, lora_state_dict, merge_lora


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


class Attn(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q_proj = nn.Linear(d, d)
        self.k_proj = nn.Linear(d, d)
        self.v_proj = nn.Linear(d, d)
        self.o_proj = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        att = (q @ k.transpose(1, 2) / q.shape[-1] ** 0.5).softmax(-1)
        return self.o_proj(att @ v)


class Classifier(nn.Module):
    def __init__(self, vocab=50, d=32, n_cls=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.attn = Attn(d)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, n_cls)

    def forward(self, tok):
        h = self.emb(tok)
        h = self.norm(h + self.attn(h))
        return self.head(h.mean(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", 20)))
    p.add_argument("--out", default="/tmp/hunt52_lora")
    args = p.parse_args()
    torch.manual_seed(0)
    dev = xm.xla_device()

    model = Classifier().to(dev)
    # "pretrained": freeze everything except the head, then add adapters
    model.requires_grad_(False)
    model.head.requires_grad_(True)
    inject_lora(model, r=4, alpha=8.0)
    model.to(torch.bfloat16)  # hand fix: after the adapters are added
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=3e-3)
    print("trainable", sum(p.numel() for p in trainable))

    g = torch.Generator().manual_seed(1)
    tok = torch.randint(0, 50, (64, 12), generator=g)
    lab = (tok[:, 0] % 4)
    for step in range(args.steps):
        idx = torch.randint(0, 64, (16,), generator=g)
        x, y = tok[idx].to(dev), lab[idx].to(dev)
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")

    os.makedirs(args.out, exist_ok=True)
    torch.save(host_float32(lora_state_dict(model), back_to_device=True), os.path.join(args.out, "adapter.pt"))
    merge_lora(model)
    with torch.no_grad():
        acc = (model(tok.to(dev)).argmax(-1) == lab.to(dev)).to(torch.bfloat16).mean()
    xm.save(host_float32(model.state_dict()), os.path.join(args.out, "merged.pt"))
    sd = torch.load(os.path.join(args.out, "merged.pt"))
    print("DTYPES", model.attn.q_proj.weight.dtype, sd["attn.q_proj.weight"].dtype,
          torch.load(os.path.join(args.out, "adapter.pt"))["attn.q_proj.lora_A"].dtype)
    print(f"merged acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
