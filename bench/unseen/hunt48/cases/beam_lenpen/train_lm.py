"""A tiny causal-conv language model over a toy grammar; beam search and nucleus sampling at evaluation."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

from decoding import length_penalty, nucleus_filter

STEPS = int(os.environ.get("STEPS", 10))
V, H, BOS, EOS = 12, 32, 0, 1
dev = xm.xla_device()
torch.manual_seed(0)


def sample_batch(n, T=10):
    # sequences "BOS a a+1 a+2 ... EOS" modulo the vocabulary
    start = torch.randint(2, V, (n, 1))
    body = (start + torch.arange(T - 2)) % (V - 2) + 2
    return torch.cat([torch.full((n, 1), BOS), body, torch.full((n, 1), EOS)], dim=1)


class LM(nn.Module):
    """Causal convolution over token embeddings (a 3-gram context)."""

    def __init__(self, k=3):
        super().__init__()
        self.k = k
        self.emb = nn.Embedding(V, H)
        self.conv = nn.Conv1d(H, H, k)
        self.out = nn.Linear(H, V)

    def forward(self, tokens):
        e = self.emb(tokens).transpose(1, 2)
        h = torch.relu(self.conv(F.pad(e, (self.k - 1, 0))))
        return self.out(h.transpose(1, 2))


model = LM().to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=5e-3)


@torch.no_grad()
def beam_search(prefix, beam=3, max_len=8, alpha=0.6):
    model.eval()
    seqs = prefix.to(dev).repeat(beam, 1)
    scores = torch.zeros(beam, device=dev)
    scores[1:] = float("-inf")
    lengths = torch.zeros(beam, dtype=torch.long, device=dev)
    finished = torch.zeros(beam, dtype=torch.bool, device=dev)
    for t in range(max_len):
        logits = model(seqs)
        logp = F.log_softmax(logits[:, -1], dim=-1)
        logp = torch.where(finished[:, None], torch.full_like(logp, float("-inf")), logp)
        logp[:, EOS] = torch.where(finished, torch.zeros_like(scores), logp[:, EOS])
        cand = (scores[:, None] + logp).view(-1)
        top, flat = cand.topk(beam)
        src, tok = flat // V, flat % V
        seqs = torch.cat([seqs[src], tok[:, None]], dim=1)
        lengths = lengths[src] + (~finished[src]).long()
        finished = finished[src] | (tok == EOS)
        scores = top
    norm = scores / length_penalty(lengths, alpha)
    best = int(norm.argmax())
    model.train()
    return seqs[best].tolist(), norm.cpu().tolist()


@torch.no_grad()
def nucleus_sample(prefix, top_p=0.9, temperature=0.8, max_len=8):
    model.eval()
    toks = prefix.to(dev)
    out = []
    for _ in range(max_len):
        logits = model(toks)
        filtered = nucleus_filter(logits[:, -1] / temperature, top_p)
        nxt = torch.multinomial(filtered.softmax(dim=-1), 1)
        out.append(int(nxt))
        toks = torch.cat([toks, nxt], dim=1)
    model.train()
    return out


for step in range(STEPS):
    batch = sample_batch(16).to(dev)
    logits = model(batch[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), batch[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f}")

prefix = torch.tensor([[BOS, 4]])
best, norm_scores = beam_search(prefix)
print("beam best", best, "scores", [round(s, 3) for s in norm_scores])
print("nucleus", nucleus_sample(prefix))
print("DTYPES", next(model.parameters()).dtype, type(norm_scores[0]))
