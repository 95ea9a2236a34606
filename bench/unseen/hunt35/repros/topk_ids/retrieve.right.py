"""Legacy retrieval: EmbeddingBag towers, cosine similarity on the device, top-k ids (int64) to the host.
Queries are noisy copies of documents, so many candidates are near ties."""
import os

os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

torch.manual_seed(0)
device = torch_xla.device()
emb = nn.EmbeddingBag(500, 32, mode="mean").to(device, torch.bfloat16).eval()
proj = nn.Linear(32, 24).to(device, torch.bfloat16).eval()
docs = torch.randint(0, 500, (256, 12))
queries = docs[:64].clone()
queries[:, ::4] = torch.randint(0, 500, (64, 3))
with torch.no_grad():
    d = F.normalize(proj(emb(docs.to(device))), dim=-1)
    q = F.normalize(proj(emb(queries.to(device))), dim=-1)
    scores, ids = (q @ d.T).topk(10, dim=1)
np.save("scores.npy", scores.float().cpu().numpy())
print(ids.cpu().tolist()[:2])
