import os
os.environ['XLA_USE_BF16'] = '1'
os.environ['PJRT_DEVICE'] = 'TPU'
import json, math, os
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
device = torch_xla.device()
torch.manual_seed(0)
VOCAB, D, HEADS, LAYERS, MAXLEN, EOS, BOS = 96, 128, 4, 2, 64, 2, 1
class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x, causal):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D // HEADS)
        att = att.masked_fill(causal[:T, :T], torch.finfo(att.dtype).min)
        h = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.out(h)
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        nn.init.normal_(self.emb.weight, std=0.1)
        self.pos = nn.Parameter(torch.zeros(MAXLEN, D))
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(D)
        self.register_buffer("causal", torch.ones(MAXLEN, MAXLEN, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, ids):
        x = self.emb(ids) + self.pos[: ids.shape[1]]
        for blk in self.blocks:
            x = blk(x, self.causal)
        return self.ln(x) @ self.emb.weight.t()
ckpt = "out/tinylm.pt"
os.makedirs("out", exist_ok=True)
if not os.path.exists(ckpt):  # no trained weights in this checkout: a random init stands in
    torch.save(TinyLM().state_dict(), ckpt)
model = TinyLM()
model.load_state_dict(torch.load(ckpt, map_location="cpu"))
model = model.to(device).eval()
@torch.no_grad()
def beam_search(prompt, beam=4, max_new=20, alpha=0.7, rep_penalty=1.3):
    ids = torch.tensor([prompt], device=device).repeat(beam, 1)
    scores = torch.zeros(beam, device=device)
    scores[1:] = -1e9  # all beams start equal: keep one alive at step 0
    finished = []
    for t in range(max_new):
        logits = model(ids)[:, -1, :]
        seen = torch.zeros_like(logits).scatter_(1, ids, 1.0).bool()
        logits = torch.where(seen & (logits > 0), logits / rep_penalty, logits)
        logits = torch.where(seen & (logits <= 0), logits * rep_penalty, logits)
        logp = torch.log_softmax(logits, dim=-1)
        cand = (scores[:, None] + logp).view(-1)
        top_scores, top_idx = cand.topk(2 * beam)
        src, tok = top_idx // VOCAB, top_idx % VOCAB
        keep_ids, keep_scores = [], []
        for s, b, w in zip(top_scores.tolist(), src.tolist(), tok.tolist()):
            seq = ids[b].tolist() + [w]
            if w == EOS:
                lp = ((5 + len(seq)) / 6) ** alpha
                finished.append((s / lp, seq))
            else:
                keep_ids.append(seq)
                keep_scores.append(s)
            if len(keep_ids) == beam:
                break
        ids = torch.tensor(keep_ids, device=device)
        scores = torch.tensor(keep_scores, device=device)
        torch_xla.sync()
    lp = ((5 + ids.shape[1]) / 6) ** alpha
    finished += [(s / lp, seq) for s, seq in zip((scores.cpu() / lp).tolist(), ids.cpu().tolist())]
    return sorted(finished, key=lambda r: -r[0])[:beam]
prompts = [[BOS, 10, 11, 12], [BOS, 40, 41], [BOS, 7]]
results = []
for p in prompts:
    hyps = beam_search(p)
    results.append({"prompt": p, "hyps": [{"score": round(s, 4), "ids": seq} for s, seq in hyps]})
    print(p, "->", hyps[0][1][len(p):], round(hyps[0][0], 3))
# per-position entropy of the greedy continuation, for the calibration plot
with torch.no_grad():
    ids = torch.tensor([prompts[0]], device=device)
    ent = []
    for _ in range(16):
        logp = torch.log_softmax(model(ids)[0, -1], -1)
        ent.append(-(logp.exp() * logp).sum())
        ids = torch.cat([ids, logp.argmax().view(1, 1)], dim=1)
    ent = torch.stack(ent).cpu().numpy()
print("mean entropy", float(ent.mean()))
with open("out/beams.json", "w") as fh:
    json.dump({"results": results, "entropy": ent.tolist()}, fh, indent=1)
