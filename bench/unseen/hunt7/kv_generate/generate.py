"""Sample continuations from a tiny decoder LM with a key/value cache kept by the caller.

Weights come from a fixed seed (a smoke model); tokens are written one sample per line.
"""
import argparse
import logging
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

logger = logging.getLogger(__name__)


class Layer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, cache_k, cache_v, pos, valid):
        b = x.shape[0]
        q, k, v = self.qkv(self.ln1(x)).view(b, 3, self.h, self.dh).unbind(1)
        cache_k[:, :, pos] = k
        cache_v[:, :, pos] = v
        scores = torch.einsum("bhd,bhtd->bht", q, cache_k) / math.sqrt(self.dh)
        scores = scores.masked_fill(~valid, float("-inf"))
        att = torch.einsum("bht,bhtd->bhd", scores.softmax(-1), cache_v)
        x = x + self.proj(att.reshape(b, -1))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=64, d=64, heads=4, layers=2, ctx=48):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(ctx, d)
        self.layers = nn.ModuleList([Layer(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.ctx, self.heads, self.dh = ctx, heads, d // heads

    def step(self, token, pos, caches, valid):
        x = self.tok(token) + self.pos.weight[pos]
        for layer, (ck, cv) in zip(self.layers, caches):
            x = layer(x, ck, cv, pos, valid)
        return self.head(self.ln(x))


@torch.no_grad()
def generate(model, prompt, max_new, temperature, device):
    b = prompt.shape[0]
    caches = [
        (torch.zeros(b, model.heads, model.ctx, model.dh, device=device),
         torch.zeros(b, model.heads, model.ctx, model.dh, device=device))
        for _ in model.layers
    ]
    positions = torch.arange(model.ctx, device=device)
    out = [prompt[:, i] for i in range(prompt.shape[1])]
    logprob = torch.zeros(b, device=device)
    token = prompt[:, 0]
    for pos in range(prompt.shape[1] + max_new - 1):
        valid = (positions <= pos).view(1, 1, -1)
        logits = model.step(token, pos, caches, valid)
        if pos + 1 < prompt.shape[1]:
            token = prompt[:, pos + 1]
            continue
        probs = F.softmax(logits / temperature, dim=-1)
        token = torch.multinomial(probs, 1).squeeze(1)
        logprob += torch.log(probs.gather(1, token[:, None]).squeeze(1))
        out.append(token)
        xm.mark_step()
    return torch.stack(out, 1), logprob


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--max-new", type=int, default=12)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--out", default="/tmp/hunt7_kv_generate/samples.txt")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, force=True)
    torch.manual_seed(0)
    device = torch_xla.device()
    model = TinyLM().to(device).eval()
    prompt = torch.randint(0, 64, (args.samples, 6)).to(device)
    tokens, logprob = generate(model, prompt, args.max_new, args.temperature, device)
    tokens, logprob = tokens.cpu(), logprob.cpu()
    import pathlib
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w") as f:
        for row, lp in zip(tokens.tolist(), logprob.tolist()):
            f.write(f"{lp:.4f}\t" + " ".join(map(str, row)) + "\n")
    logger.info("mean log-prob per token %.4f", (logprob / args.max_new).mean().item())
    logger.info("wrote %d samples to %s", len(tokens), args.out)


if __name__ == "__main__":
    main()
