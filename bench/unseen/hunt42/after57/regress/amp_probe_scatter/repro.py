"""after57 regression (amp): a part of the model called by its own name inside the arguments of a probe helper
(`acc = knn(encoder(bank_x), bank_y, encoder(q_x), q_y)`, hunt42 contrastive_helper). amp now puts the whole
statement under autocast, so the helper's own code runs there too: `votes = torch.zeros(...)` (f32) meets the bf16
`(w / tau).exp()` (the topk of an autocast matmul) in `scatter_add_`, which raises; at 2d3f9cd the probe ran outside
autocast (f32, hunt42 gap 2's amp half) and the script ran."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


def knn(bank, bank_y, query, query_y, k=3, tau=0.1):
    sim = F.normalize(query, dim=-1) @ F.normalize(bank, dim=-1).T
    w, idx = sim.topk(k, dim=-1)
    votes = torch.zeros(query.shape[0], 2, device=query.device)
    votes.scatter_add_(1, bank_y[idx], (w / tau).exp())
    return (votes.argmax(1) == query_y).float().mean()


dev = torch_xla.device()
torch.manual_seed(0)
bank_x, bank_y = torch.randn(32, 8).to(dev), torch.randint(0, 2, (32,)).to(dev)
q_x, q_y = torch.randn(8, 8).to(dev), torch.randint(0, 2, (8,)).to(dev)
encoder = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
head = nn.Linear(16, 1)
model = nn.Sequential(encoder, head).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(int(os.environ.get("STEPS", "4"))):
    x = torch.randn(16, 8).to(dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch_xla.sync()
    if step % 2 == 1:
        with torch.no_grad():
            acc = knn(encoder(bank_x), bank_y, encoder(q_x), q_y)
        print(step, loss.item(), acc.item())
