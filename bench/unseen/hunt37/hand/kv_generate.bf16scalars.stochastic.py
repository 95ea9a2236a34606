"""Sample continuations from a small causal LM checkpoint with a preallocated KV cache
and nucleus (top-p) sampling; report the perplexity of a held-out sequence."""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


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


V, E, H, L, T_MAX = 96, 64, 4, 2, 48
STEPS = int(os.environ.get("STEPS", "24"))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(E), nn.LayerNorm(E)
        self.qkv = nn.Linear(E, 3 * E)
        self.proj = nn.Linear(E, E)
        self.ff = nn.Sequential(nn.Linear(E, 4 * E), nn.GELU(), nn.Linear(4 * E, E))

    def forward(self, x, k_cache, v_cache, pos):
        B, S, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(E, dim=-1)
        q, k, v = (t.view(B, S, H, E // H).transpose(1, 2) for t in (q, k, v))
        k_cache[:, :, pos:pos + S] = k
        v_cache[:, :, pos:pos + S] = v
        keys, vals = k_cache[:, :, :pos + S], v_cache[:, :, :pos + S]
        att = (q @ keys.transpose(-2, -1)) / (E // H) ** 0.5
        idx = torch.arange(pos + S, device=x.device)
        mask = idx[None, :] > (idx[-S:, None])
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        y = (att @ vals).transpose(1, 2).reshape(B, S, E)
        x = x + self.proj(y)
        return x + self.ff(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, E)
        self.pos = nn.Embedding(T_MAX, E)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.head = nn.Linear(E, V, bias=False)

    def forward(self, ids, caches, pos):
        x = self.tok(ids) + self.pos(torch.arange(pos, pos + ids.shape[1], device=ids.device))
        for blk, (kc, vc) in zip(self.blocks, caches):
            x = blk(x, kc, vc, pos)
        return self.head(x)


def new_caches(batch, dev):
    return [(torch.zeros(batch, H, T_MAX, E // H, device=dev, dtype=torch.bfloat16),
             torch.zeros(batch, H, T_MAX, E // H, device=dev, dtype=torch.bfloat16)) for _ in range(L)]


def top_p_sample(logits, p=0.8984375, temperature=0.80078125):  # the bf16 values the legacy graph baked in
    probs = torch.softmax(logits / temperature, dim=-1)
    sorted_p, order = probs.sort(dim=-1, descending=True)
    keep = sorted_p.cumsum(-1) - sorted_p < p
    sorted_p = sorted_p * keep
    choice = torch.multinomial(sorted_p / sorted_p.sum(-1, keepdim=True), 1)
    return order.gather(-1, choice)


def main():
    torch.manual_seed(0)
    dev = torch_xla.device()
    ckpt = sys.argv[1] if len(sys.argv) > 1 else "lm.pt"
    model = TinyLM()
    if not os.path.exists(ckpt):
        torch.save(host_float32(model.state_dict(), back_to_device=True), ckpt)
    model.load_state_dict(torch.load(ckpt, map_location="cpu"))
    model.to(dev).eval()
    model.to(torch.bfloat16)
    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)

    held_out = torch.randint(0, V, (4, 32)).to(dev)
    with torch.no_grad():
        logits = model(held_out[:, :-1], new_caches(4, dev), 0)
        nll = F.cross_entropy(logits.reshape(-1, V), held_out[:, 1:].reshape(-1))
    print(f"held-out perplexity {torch.exp(nll).item():.3f}")

    prompt = torch.randint(0, V, (4, 8)).to(dev)
    caches = new_caches(4, dev)
    out_ids, logps = [prompt], []
    with torch.no_grad():
        logits = model(prompt, caches, 0)[:, -1]
        pos = prompt.shape[1]
        for step in range(min(STEPS, T_MAX - pos)):
            nxt = top_p_sample(logits)
            logps.append(torch.log_softmax(logits, -1).gather(-1, nxt))
            out_ids.append(nxt)
            logits = model(nxt, caches, pos)[:, -1]
            pos += 1
            torch_xla.sync()
            print(f"step {step} loss {-logps[-1].mean().item():.5f}")
    ids = torch.cat(out_ids, dim=1).cpu().tolist()
    seq_logp = host_float32(torch.cat(logps, dim=1).sum(-1).cpu())
    with open("samples.jsonl", "w") as fh:
        for row, lp in zip(ids, seq_logp.tolist()):
            fh.write(json.dumps({"ids": row, "logp": lp}) + "\n")
    print("DTYPES weight", model.head.weight.dtype, "cache", caches[0][0].dtype, "logits", logits.dtype,
          "seq_logp", seq_logp.dtype, "nll", nll.dtype)


if __name__ == "__main__":
    main()
