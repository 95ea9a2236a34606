"""Soft prompt tuning: a frozen tiny encoder, a learnable prompt prepended to the token embeddings, a new head."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 20))
N_PROMPT = 6
D = 32


class TinyEncoder(nn.Module):
    def __init__(self, vocab=64, d=D):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, 64, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(d)

    def embed(self, ids):
        return self.tok(ids)

    def encode(self, h):
        h = h + self.pos[:, : h.shape[1]]
        return self.ln(self.enc(h))


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    encoder = TinyEncoder().to(dev)
    encoder.requires_grad_(False)
    encoder.eval()

    prompt = nn.Parameter(torch.randn(N_PROMPT, D, device=dev) * 0.02)
    head = nn.Linear(D, 3).to(dev)
    opt = torch.optim.Adam([{"params": [prompt], "lr": 3e-2}, {"params": head.parameters(), "lr": 1e-2}])

    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 64, (96, 10), generator=g)
    labels = (ids[:, :3].sum(1) % 3)
    for step in range(STEPS):
        sel = torch.randint(0, 96, (24,), generator=g)
        x, y = ids[sel].to(dev), labels[sel].to(dev)
        emb = encoder.embed(x)
        B = emb.shape[0]
        h = torch.cat([prompt.unsqueeze(0).expand(B, -1, -1), emb], 1)
        out = encoder.encode(h)
        logits = head(out[:, :N_PROMPT].mean(1))
        loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")

    torch.save({"prompt": prompt.detach().cpu(), "head": {k: v.cpu() for k, v in head.state_dict().items()}},
               "/tmp/hunt52_prompt.pt")
    ck = torch.load("/tmp/hunt52_prompt.pt")
    print("DTYPES", prompt.dtype, head.weight.dtype, ck["prompt"].dtype, ck["head"]["weight"].dtype)
    print("prompt norms", [round(v, 3) for v in prompt.norm(dim=1).tolist()])


if __name__ == "__main__":
    main()
