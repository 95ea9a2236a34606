# hunt26 repro: beam scores rebuilt on the device from a Python list every step (beam_nb cell 6, line 30).
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla

device = torch_xla.device()
model = nn.Linear(8, 16).to(device)
x = torch.randn(4, 8).to(device)


@torch.no_grad()
def search(steps=3):
    scores = torch.zeros(4, device=device)
    for _ in range(steps):
        logp = torch.log_softmax(model(x), dim=-1)
        cand = (scores[:, None] + logp).view(-1)
        top, idx = cand.topk(4)
        keep_ids, keep_scores = [], []
        for s in top.tolist():
            keep_scores.append(s)
        ids = torch.tensor(keep_ids, device=device)
        scores = torch.tensor(keep_scores, device=device)
    return scores, cand


scores, cand = search()
print("scores dtype", scores.dtype, "cand dtype", cand.dtype)
