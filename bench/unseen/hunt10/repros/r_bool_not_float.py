"""hunt10 G: beam_notebook's beam_search (decode.py:18-36) with a toy model: `torch.zeros(beams, device=device)`
gets dtype=torch.bfloat16 (BFM154) but `lengths[src] + (~finished).float()` (decode.py:32) is left f32 with no
diagnostic (bf16 under the switch), so `lengths`, the length penalty and the normalised scores are f32.
Removing the line `finished = finished[src] | (tok == EOS)` makes BFM154 fire on the `.float()` (static bisection)."""
import os
os.environ["XLA_USE_BF16"] = "1"
import re
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

VOCAB, EOS = 48, 2


def ir_dtype(t):
    root = [l for l in torch_xla._XLAC._get_xla_tensors_text([t]).splitlines() if "ROOT" in l][-1]
    return re.search(r"= (\w+)\[", root).group(1)


def beam_search(model, prefix, beams, max_new, alpha, device):
    seqs = prefix.unsqueeze(0).repeat(beams, 1)                # (beams, t) int64
    scores = torch.zeros(beams, device=device)
    scores[1:] = torch.finfo(scores.dtype).min                  # only the first beam is live at the start
    finished = torch.zeros(beams, dtype=torch.bool, device=device)
    lengths = torch.zeros(beams, device=device)
    for _ in range(max_new):
        logp = F.log_softmax(model(seqs)[:, -1], dim=-1)       # (beams, V)
        logp = torch.where(finished.unsqueeze(1), torch.full_like(logp, -1e4), logp)
        logp[:, EOS] = torch.where(finished, torch.zeros_like(scores), logp[:, EOS])
        cand = (scores.unsqueeze(1) + logp).view(-1)
        top, idx = cand.topk(beams)
        src, tok = idx // VOCAB, idx % VOCAB
        seqs = torch.cat([seqs[src], tok.unsqueeze(1)], 1)
        finished = finished[src] | (tok == EOS)
        lengths = lengths[src] + (~finished).float()
        scores = top
        torch_xla.sync()
    penalty = ((5.0 + lengths) / 6.0) ** alpha
    return seqs, scores / penalty


device = torch_xla.device()
torch.manual_seed(0)
model = nn.Sequential(nn.Embedding(VOCAB, 16), nn.Linear(16, VOCAB)).to(device)
with torch.no_grad():
    seqs, norm = beam_search(model, torch.tensor([1, 5, 9], device=device), 4, 3, 0.6, device)
    print("normalised scores computed in", ir_dtype(norm))
torch_xla.sync()
print(norm.cpu().tolist())
