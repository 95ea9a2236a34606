"""Inference only: a small seeded next-token model (token + position embeddings, a window of the last K tokens
flattened through an MLP) decodes greedily on the device; per-sequence scores go to a Python list and JSON, the
last step's probabilities to NumPy. No optimizer. Legacy bf16 switch on."""
import json
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

V, E, K, H = 48, 16, 4, 64
BATCH, NEW = 6, 10
BANNED = (0, 1)


class NextToken(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, E)
        self.pos = nn.Embedding(K, E)
        self.mlp = nn.Sequential(nn.Linear(K * E, H), nn.GELU(), nn.Linear(H, H), nn.GELU())
        self.out = nn.Linear(H, V)

    def forward(self, window):
        pos = torch.arange(K, device=window.device)
        h = self.tok(window) + self.pos(pos)
        return self.out(self.mlp(h.flatten(1)))


@torch.no_grad()
def greedy(model, prompt, steps, temperature):
    seq = prompt
    scores = torch.zeros(prompt.shape[0], device=prompt.device)
    banned = torch.zeros(V, dtype=torch.bool, device=prompt.device)
    banned[list(BANNED)] = True
    for _ in range(steps):
        logits = model(seq[:, -K:]) / temperature
        logits = logits.masked_fill(banned, torch.finfo(torch.float32).min)
        logp = F.log_softmax(logits, dim=-1)
        best = logp.max(-1)
        scores = scores + best.values
        seq = torch.cat([seq, best.indices[:, None]], dim=1)
        xm.mark_step()
    return seq, scores, logp.exp()


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    model = NextToken().to(device).eval()
    gen = torch.Generator().manual_seed(5)
    results = []
    for rnd in range(3):
        prompt = torch.randint(2, V, (BATCH, K), generator=gen).to(device)
        seq, scores, probs = greedy(model, prompt, NEW, temperature=0.8 + 0.1 * rnd)
        results.append({"tokens": seq.cpu().tolist(), "scores": [float(s) for s in scores.cpu()]})
        print(f"round {rnd} mean score {scores.mean().item():.4f}")
    last = probs.cpu().numpy()
    with open("decode.json", "w") as fh:
        json.dump({"results": results, "top_prob": float(last.max())}, fh)
    np.save("last_probs.npy", last)


if __name__ == "__main__":
    main()
