"""Two-tower contrastive matching (sequences of 'patches' vs bags of 'words') with a learned temperature
parameter used as logit_scale.exp(), a positional table made on the device outside any module, per-step
retrieval accuracy kept in a Python list and written to JSON. Legacy bf16 switch on."""
import json
import math
import os

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


B, T, PD, V, W, E = 16, 6, 10, 40, 5, 24
STEPS = 10


class PatchTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(PD, E)
        self.mix = nn.Linear(E, E)

    def forward(self, patches, pos):
        h = self.inp(patches) + pos
        h = torch.tanh(self.mix(h))
        return h.mean(1)


class WordTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(V, E, mode="mean")
        self.out = nn.Linear(E, E)

    def forward(self, words):
        return self.out(F.gelu(self.emb(words)))


class Matcher(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = PatchTower()
        self.word = WordTower()
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, patches, pos, words):
        a = F.normalize(self.patch(patches, pos), dim=-1)
        b = F.normalize(self.word(words), dim=-1)
        scale = self.logit_scale.exp().clamp(max=100.0)
        return scale * a @ b.t()


def make_pairs(gen):
    words = torch.randint(0, V, (B, W), generator=gen)
    proj = torch.linspace(-1.0, 1.0, V * PD).reshape(V, PD)
    patches = proj[words].repeat_interleave(2, dim=1)[:, :T] + 0.1 * torch.randn(B, T, PD, generator=gen)
    return patches, words


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    pos_table = 0.02 * torch.randn(T, E, device=device)
    model = Matcher().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    gen = torch.Generator().manual_seed(1)
    target = torch.arange(B, device=device)
    accs = []
    scales = []
    for step in range(STEPS):
        patches, words = make_pairs(gen)
        patches, words = patches.to(device), words.to(device)
        # bf16 autocast replaces XLA_USE_BF16
        with torch.autocast(device_type="xla", dtype=torch.bfloat16):
            logits = model(patches, pos_table, words)
            loss = 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.t(), target))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        acc = (logits.argmax(1) == target).float().mean()
        accs.append(acc.item())
        scales.append(model.logit_scale.detach().exp().item())
        print(f"step {step} loss {loss.item():.4f} acc {accs[-1]:.3f} scale {scales[-1]:.3f}")
    with torch.no_grad():
        patches, words = make_pairs(gen)
        with torch.autocast("xla", dtype=torch.bfloat16):
            sims = model(patches.to(device), pos_table, words.to(device))
        sims = sims.float().cpu()
    top = sims.topk(3, dim=1).values.numpy()
    with open("clip_metrics.json", "w") as fh:
        json.dump({"acc": accs, "scale": scales, "top3_mean": float(top.mean())}, fh)
    torch.save({k: host_float32(v.cpu()) for k, v in model.state_dict().items()}, "clip_ckpt.pt")


if __name__ == "__main__":
    main()
