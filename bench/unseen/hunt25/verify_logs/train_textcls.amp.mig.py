"""Bag-of-embeddings text classifier: a frozen "pretrained" embedding table loaded from a float64 numpy
array, mask-weighted mean pooling over padded token ids, a trainable projection + classifier, label-smoothed
cross-entropy. Evaluation writes per-class accuracy and the pooled sentence vectors to numpy."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm


def float64_to_float32(batch):
    """Cast the float64 tensors in `batch` to float32, leaving every other tensor (integer token
    ids and labels, float32, bf16) and everything else as it is.

    Added by bf16-migrate (replacing the legacy bf16 environment switch, under which a float64
    tensor on the XLA device was computed in low precision; autocast casts float32, not float64):
    `batch` is a tensor, or a list, tuple, namedtuple or dict of them, nested; containers are
    rebuilt, dicts as plain dicts.
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(torch.float32) if batch.dtype == torch.float64 else batch
    if isinstance(batch, dict):
        return {key: float64_to_float32(value) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):
        return type(batch)(*(float64_to_float32(value) for value in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(float64_to_float32(value) for value in batch)
    return batch


def float32_inputs_hook(module, args, kwargs):
    """Forward pre-hook added by bf16-migrate: the model's float64 inputs become float32."""
    return float64_to_float32(args), float64_to_float32(kwargs)


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


VOCAB, DIM, CLASSES, PAD = 200, 24, 4, 0
MAXLEN = 12
STEPS = 10


def pretrained_table(seed=3):
    r = np.random.default_rng(seed)
    table = r.standard_normal((VOCAB, DIM)) / np.sqrt(DIM)  # float64, as np.load would give it
    table[PAD] = 0.0
    return table


class BagClassifier(nn.Module):
    def __init__(self, table):
        super().__init__()
        self.emb = nn.Embedding.from_pretrained(torch.from_numpy(table), freeze=True, padding_idx=PAD)
        self.proj = nn.Linear(DIM, 32)
        self.cls = nn.Linear(32, CLASSES)

    def pool(self, ids):
        mask = (ids != PAD).unsqueeze(-1).float()
        e = self.emb(ids)
        summed = (e * mask).sum(1)
        return summed / mask.sum(1).clamp(min=1.0)

    def forward(self, ids):
        v = self.pool(ids)  # float64, as the table is
        return self.cls(F.gelu(self.proj(v.float()))), v


def make_batch(rng, n):
    ys = rng.integers(0, CLASSES, n)
    ids = np.zeros((n, MAXLEN), dtype=np.int64)
    for i, y in enumerate(ys):
        length = rng.integers(3, MAXLEN + 1)
        lo = 1 + y * (VOCAB // CLASSES - 1)
        toks = rng.integers(lo, lo + 60, length)
        ids[i, :length] = np.clip(toks, 1, VOCAB - 1)
    return torch.from_numpy(ids), torch.from_numpy(ys)


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    dev = xm.xla_device()
    model = BagClassifier(pretrained_table()).to(dev)
    params = [p for p in model.parameters() if p.requires_grad]
    model.to(torch.float32)
    model.register_forward_pre_hook(float32_inputs_hook, with_kwargs=True)
    opt = torch.optim.AdamW(params, lr=2e-2, weight_decay=0.01)
    for step in range(STEPS):
        ids, y = make_batch(rng, 32)
        ids, y = ids.to(dev), y.to(dev)
        with torch.autocast("xla", dtype=torch.bfloat16):
            logits, _ = model(ids)
            loss = F.cross_entropy(logits, y, label_smoothing=0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()

    model.eval()
    ids, y = make_batch(rng, 64)
    with torch.no_grad():
        with torch.autocast("xla", dtype=torch.bfloat16):
            logits, vecs = model(ids.to(dev))
        pred = logits.argmax(-1).cpu()
    correct = np.zeros(CLASSES)
    seen = np.zeros(CLASSES)
    for c in range(CLASSES):
        sel = y == c
        seen[c] = int(sel.sum())
        correct[c] = int((pred[sel] == c).sum())
    print("per-class acc", np.round(correct / np.maximum(seen, 1), 3))
    sent = host_float32(vecs.cpu()).numpy()
    print("sentence vec norm", float(np.linalg.norm(sent, axis=1).mean()), sent.dtype)


if __name__ == "__main__":
    main()
