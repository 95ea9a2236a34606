"""Beam-search decoding of the tiny LM on an XLA device (inference only).

python decode.py --ckpt tiny_lm.pt --beams 4 --out beams.json
"""
import argparse
import json
import os

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm
from lm import TinyLM, VOCAB, BOS, EOS


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ckpt", default="tiny_lm.pt")
    ap.add_argument("--beams", type=int, default=4)
    ap.add_argument("--alpha", type=float, default=0.6)
    ap.add_argument("--out", default="beams.json")
    args = ap.parse_args()
    device = torch_xla.device()
    state = torch.load(args.ckpt, map_location="cpu")
    model = TinyLM()
    model.load_state_dict(state["model"])
    model.to(device).eval()
    prompts = [[BOS, 5, 9, 14, 22, 7, 30], [BOS, 40, 3, 3, 17, 8, 11], [BOS, 12, 13, 14, 15, 16, 17]]
    results = []
    with torch.no_grad():  # torch.inference_mode() fails on XLA (version_counter)
        for p in prompts:
            seqs, norm = beam_search(model, torch.tensor(p, device=device), args.beams, 8, args.alpha, device)
            best = int(norm.argmax().item())
            results.append({"prompt": p, "best": seqs[best].tolist(), "scores": norm.cpu().tolist()})
            xm.master_print(f"prompt {p[1:]} -> {seqs[best, len(p):].tolist()} score {norm[best].item():.3f}")
        probe = torch.tensor([prompts[0]], device=device)
        dist = F.softmax(model(probe)[0, -1], dim=-1)
    torch_xla.sync()
    np.save("next_token_dist.npy", dist.cpu().numpy())
    json.dump(results, open(args.out, "w"))
    print("wrote", args.out, "entropy", round(float(-(dist * dist.log()).sum().item()), 3))


if __name__ == "__main__":
    main()
