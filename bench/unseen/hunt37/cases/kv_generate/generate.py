"""Sample continuations from a small causal LM checkpoint with a preallocated KV cache
and nucleus (top-p) sampling; report the perplexity of a held-out sequence."""
import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

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
    return [(torch.zeros(batch, H, T_MAX, E // H, device=dev),
             torch.zeros(batch, H, T_MAX, E // H, device=dev)) for _ in range(L)]


def top_p_sample(logits, p=0.9, temperature=0.8):
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
        torch.save(model.state_dict(), ckpt)
    model.load_state_dict(torch.load(ckpt, map_location="cpu"))
    model.to(dev).eval()

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
    seq_logp = torch.cat(logps, dim=1).sum(-1).cpu()
    with open("samples.jsonl", "w") as fh:
        for row, lp in zip(ids, seq_logp.tolist()):
            fh.write(json.dumps({"ids": row, "logp": lp}) + "\n")
    print("DTYPES weight", model.head.weight.dtype, "cache", caches[0][0].dtype, "logits", logits.dtype,
          "seq_logp", seq_logp.dtype, "nll", nll.dtype)


if __name__ == "__main__":
    main()
