"""Fine-tune a bag-of-words intent classifier on top of pretrained word vectors.

The vectors and the class prior come from NumPy (float64) files written by the
preprocessing step; the embedding table is trained with a smaller LR.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


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


VOCAB, DIM, CLASSES = 500, 48, 6
STEPS = int(os.environ.get("STEPS", "30"))


def ensure_assets(rng):
    if not os.path.exists("vectors.npy"):
        np.save("vectors.npy", rng.normal(0.0, 0.3, size=(VOCAB, DIM)))
        counts = rng.integers(20, 200, size=CLASSES).astype(np.float64)
        np.save("prior.npy", counts / counts.sum())


class IntentNet(nn.Module):
    def __init__(self, vectors, prior):
        super().__init__()
        self.emb = nn.EmbeddingBag.from_pretrained(vectors, freeze=False, mode="mean")
        self.register_buffer("log_prior", torch.log(prior))
        self.mlp = nn.Sequential(nn.Linear(DIM, 64), nn.ReLU(), nn.Linear(64, CLASSES))

    def forward(self, tokens, offsets):
        h = self.emb(tokens, offsets)
        return self.mlp(h.float()) + self.log_prior


def batch(rng, n=64):
    lengths = rng.integers(3, 12, size=n)
    labels = rng.integers(0, CLASSES, size=n)
    toks = [rng.integers(lab * 80, lab * 80 + 80, size=k) for lab, k in zip(labels, lengths)]
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    return (torch.from_numpy(np.concatenate(toks)), torch.from_numpy(offsets),
            torch.from_numpy(labels))


def main():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    ensure_assets(rng)
    vectors = torch.from_numpy(np.load("vectors.npy")).float()
    prior = torch.from_numpy(np.load("prior.npy")).float()
    dev = torch_xla.device()
    model = IntentNet(vectors, prior).to(dev)
    model.register_forward_pre_hook(float32_inputs_hook, with_kwargs=True)
    opt = torch.optim.AdamW([
        {"params": model.emb.parameters(), "lr": 1e-4},
        {"params": model.mlp.parameters(), "lr": 2e-3},
    ], weight_decay=0.01)

    for step in range(STEPS):
        tokens, offsets, labels = batch(rng)
        tokens, offsets, labels = tokens.to(dev), offsets.to(dev), labels.to(dev)
        with torch.autocast("xla", dtype=torch.bfloat16):
            logits = model(tokens, offsets)
            loss = F.cross_entropy(logits, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f}")

    model.eval()
    with torch.no_grad():
        tokens, offsets, labels = batch(rng, 256)
        with torch.autocast("xla", dtype=torch.bfloat16):
            logits = model(tokens.to(dev), offsets.to(dev))
        probs = torch.softmax(logits, -1).cpu().float().numpy()
    acc = float((probs.argmax(1) == labels.numpy()).mean())
    drift = (host_float32(model.emb.weight.detach().cpu()) - vectors).norm().item()
    np.save("finetuned_vectors.npy", host_float32(model.emb.weight.detach().cpu()).numpy())
    print(f"accuracy {acc:.3f} embedding drift {drift:.4f}")
    print("DTYPES emb", model.emb.weight.dtype, "mlp", model.mlp[0].weight.dtype, "loss", loss.dtype,
          "probs", probs.dtype, "prior", model.log_prior.dtype)


if __name__ == "__main__":
    main()
