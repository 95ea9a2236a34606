import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class Dec(nn.Module):
    def __init__(self, V=20, d=16):
        super().__init__()
        self.emb = nn.Embedding(V, d)
        self.proj = nn.Linear(d, V)

    def forward(self, ids):
        return self.proj(self.emb(ids).mean(1))


device = torch_xla.device()
model = Dec().to(device)
model.eval()
B, K, V = 2, 3, 20
with torch.no_grad():
    seqs = torch.zeros(B * K, 1, dtype=torch.long, device=device)
    beam = torch.full((B, K), -1e9, device=device)
    beam[:, 0] = 0.0
    for t in range(5):
        logp = F.log_softmax(model(seqs), -1).view(B, K, V)
        cand = (beam.unsqueeze(-1) + logp).view(B, -1)
        beam, flat = cand.topk(K, dim=-1)
        src = flat // V
        tok = flat % V
        seqs = torch.cat([seqs.view(B, K, -1).gather(1, src.unsqueeze(-1).expand(-1, -1, seqs.size(-1))).view(B * K, -1), tok.view(-1, 1)], 1)
    print("1 beam", beam.dtype, beam[:, 0].cpu().tolist())
    dist = torch.distributions.Categorical(logits=model(seqs))
    s = dist.sample()
    lp = dist.log_prob(s)
    print("2 cat", lp.mean().item())
    ent = dist.entropy().cpu().numpy()
    print("3 ent", ent.dtype)
    half = model.half()
    print("4 half", half(seqs).dtype)
