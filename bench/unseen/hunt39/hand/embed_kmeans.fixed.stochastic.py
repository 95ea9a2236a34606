"""Self-labelling: encode a batch on the device, cluster the embeddings with a
hand-written NumPy k-means, then train the encoder to predict its clusters
(logits against the centroids, which come back to the device)."""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
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


ap = argparse.ArgumentParser()
ap.add_argument("--clusters", type=int, default=6)
ap.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "20")))
args = ap.parse_args()

dev = torch_xla.device()
torch.manual_seed(21)
rng = np.random.default_rng(21)


def kmeans(z, k, iters=10):
    cent = z[rng.choice(len(z), k, replace=False)]
    for _ in range(iters):
        d = ((z[:, None, :] - cent[None]) ** 2).sum(-1)
        assign = d.argmin(1)
        for j in range(k):
            if (assign == j).any():
                cent[j] = z[assign == j].mean(0)
    return cent, assign


def cosine_topk(q, base, k=3):
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    bn = base / np.linalg.norm(base, axis=1, keepdims=True)
    return np.argsort(-qn @ bn.T, axis=1)[:, :k]


encoder = nn.Sequential(nn.Linear(40, 64), nn.ReLU(), nn.Linear(64, 16)).to(dev)
encoder.to(torch.bfloat16)
opt = torch.optim.Adam(encoder.parameters(), lr=1e-3)
data = torch.randn(256, 40) + torch.repeat_interleave(torch.randn(8, 40) * 2, 32, dim=0)

for step in range(args.steps):
    xb = data[torch.randperm(256)[:128]].to(dev)
    with torch.no_grad():
        z = host_float32(F.normalize(encoder(xb.to(torch.bfloat16)), dim=1).cpu()).numpy()
    cent, assign = kmeans(z.astype(np.float64), args.clusters)
    cent_t = torch.from_numpy(cent).to(dev, dtype=torch.bfloat16)
    target = torch.from_numpy(assign).to(dev)
    emb = F.normalize(encoder(xb.to(torch.bfloat16)), dim=1)
    logits = emb @ F.normalize(cent_t, dim=1).T / 0.1
    loss = F.cross_entropy(logits, target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.5f} sizes {np.bincount(assign, minlength=args.clusters).tolist()}")

with torch.no_grad():
    base = host_float32(encoder(data.to(dev).to(torch.bfloat16)).cpu()).numpy()
nn_idx = cosine_topk(base[:5], base)
print("neighbours", nn_idx.tolist())
print("DTYPES", encoder[0].weight.dtype, z.dtype, cent_t.dtype, logits.dtype)
