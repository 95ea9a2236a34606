# hunt26 repro (beam_nb cell 6): beam scores rebuilt on the device from a Python list each step and
# read through a subscript (`scores[:, None] + logp`): left f32 after migration, legacy bf16.
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
        keep_scores = [s for s in top.tolist()]
        scores = torch.tensor(keep_scores, device=device)
    print("scores dtype", scores.dtype, "cand dtype", cand.dtype)
    return scores


search()
