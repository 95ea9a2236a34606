"""Embed a document corpus and a query set on the XLA device, retrieve the top-k
documents for each query by cosine similarity and write ids/scores for the service."""
import argparse
import json
import os

import numpy as np
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


class Tower(nn.Module):
    def __init__(self, vocab=500, dim=32, out=24):
        super().__init__()
        self.emb = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.proj = nn.Sequential(nn.Linear(dim, 48), nn.GELU(), nn.Linear(48, out))

    def forward(self, tokens):
        return self.proj(self.emb(tokens))


def embed(tower, batches, device):
    chunks = []
    for tokens in batches:
        z = tower(tokens.to(device))
        chunks.append(F.normalize(z, dim=-1))
    return torch.cat(chunks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--out", default="out")
    args = ap.parse_args()
    torch.manual_seed(0)
    device = xm.xla_device()
    tower = Tower().to(device).eval()
    tower.to(torch.bfloat16)

    docs = torch.randint(0, 500, (256, 12))
    # queries are noisy copies of the first 64 documents: the right answer is known
    queries = docs[:64].clone()
    queries[:, ::4] = torch.randint(0, 500, (64, 3))
    with torch.no_grad():
        doc_vecs = embed(tower, docs.split(64), device)
        q_vecs = embed(tower, queries.split(32), device)
        sim = q_vecs @ doc_vecs.T
        scores, ids = sim.topk(args.k, dim=1)
        gold = torch.arange(64, device=device)
        hit = (ids == gold[:, None]).any(dim=1).float()
        recall = hit.mean()
        margin = scores[:, 0] - scores[:, 1]
    xm.mark_step()
    print("doc_vecs", doc_vecs.dtype, "sim", sim.dtype, "scores", scores.dtype, "ids", ids.dtype)
    print(f"recall@{args.k} {recall.item():.4f}  mean margin {margin.mean().item():.5f}")
    print("first query top scores", [round(s, 4) for s in scores[0].cpu().tolist()])

    os.makedirs(args.out, exist_ok=True)
    np.save(os.path.join(args.out, "doc_vecs.npy"), host_float32(doc_vecs.cpu()).numpy())
    np.save(os.path.join(args.out, "scores.npy"), host_float32(scores.cpu()).numpy())
    with open(os.path.join(args.out, "neighbours.json"), "w") as f:
        json.dump({"ids": ids.cpu().tolist(), "recall": recall.item()}, f)
    host_scores = host_float32(scores.cpu())
    print("host scores", host_scores.dtype, "first", host_scores[0, 0].item())


if __name__ == "__main__":
    main()
