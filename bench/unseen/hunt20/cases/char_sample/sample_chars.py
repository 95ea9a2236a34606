"""Tokenizer-free char LM: short fit on a toy corpus, then temperature sampling and greedy beam scoring."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

TEXT = "the quick brown fox jumps over the lazy dog. " * 40
VOCAB = sorted(set(TEXT))
STOI = {c: i for i, c in enumerate(VOCAB)}

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=64)
p.add_argument("--temp", type=float, default=0.8)
args = p.parse_args()


class CharGRU(nn.Module):
    def __init__(self, v, d=48):
        super().__init__()
        self.emb = nn.Embedding(v, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, v)

    def forward(self, ids, h=None):
        y, h = self.rnn(self.emb(ids), h)
        return self.out(y), h


device = torch_xla.device()
torch.manual_seed(0)
data = torch.tensor([STOI[c] for c in TEXT], dtype=torch.long)
model = CharGRU(len(VOCAB)).to(device)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(30):
    idx = torch.randint(0, len(data) - 33, (16,))
    chunk = torch.stack([data[i:i + 33] for i in idx]).to(device)
    logits, _ = model(chunk[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), chunk[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
print("final loss", round(loss.item(), 3))

model.eval()
with torch.no_grad():
    ids = torch.tensor([[STOI["t"]]], device=device)
    h = None
    score = torch.zeros(1, device=device)
    gen = ids
    for _ in range(args.n):
        logits, h = model(ids, h)
        logp = F.log_softmax(logits[:, -1] / args.temp, dim=-1)
        probs = logp.exp()
        ids = torch.multinomial(probs, 1)
        score += logp.gather(-1, ids).squeeze(-1)
        gen = torch.cat([gen, ids], dim=1)
        torch_xla.sync()
    text = "".join(VOCAB[i] for i in gen[0].cpu().tolist())
    print("sample:", repr(text[:40]))
    print("avg logp/char", round((score / args.n).item(), 3))

    # greedy continuation, keep per-step max prob in a host list
    ids = gen[:, -1:]
    conf = []
    for _ in range(16):
        logits, h = model(ids, h)
        pmax, ids = F.softmax(logits[:, -1], -1).max(-1, keepdim=True)
        conf.append(pmax.cpu())
    conf = torch.cat(conf).squeeze(-1)
    print("greedy conf mean", round(conf.mean().item(), 3), conf.dtype)
