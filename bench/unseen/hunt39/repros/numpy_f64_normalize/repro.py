"""embed_kmeans: NumPy float64 centroids come back to the device and meet the normalised model output in a matmul."""
import os

os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

dev = torch_xla.device()
torch.manual_seed(0)
enc = nn.Linear(8, 4).to(dev)
opt = torch.optim.SGD(enc.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(16, 8).to(dev)
    cent = np.random.default_rng(step).normal(size=(3, 4))
    cent_t = torch.from_numpy(cent).to(dev)
    emb = F.normalize(enc(x), dim=1)
    logits = emb @ F.normalize(cent_t, dim=1).T
    loss = F.cross_entropy(logits, torch.zeros(16, dtype=torch.long, device=dev))
    opt.zero_grad(); loss.backward(); opt.step()
    torch_xla.sync()
    print(loss.item())
print("dtype", enc.weight.dtype, cent_t.dtype, logits.dtype)
