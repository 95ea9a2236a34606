"""Tiny causal LM: tied embedding/output weights, a dataclass of outputs consumed by a loss object."""
import os
from dataclasses import dataclass

os.environ["XLA_USE_BF16"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch_xla  # noqa: E402

VOCAB, D, T = 50, 32, 12
STEPS = int(os.environ.get("STEPS", "8"))


@dataclass
class LMOutput:
    logits: torch.Tensor
    aux_loss: torch.Tensor
    attn: torch.Tensor


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.randn(T, D) * 0.02)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.norm = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)
        self.lm_head.weight = self.embed.weight

    def forward(self, idx):
        h = self.embed(idx) + self.pos[: idx.size(1)]
        q, k, v = self.qkv(self.norm(h)).chunk(3, dim=-1)
        mask = torch.triu(torch.full((idx.size(1), idx.size(1)), float("-inf"), device=idx.device), 1)
        attn = torch.softmax(q @ k.transpose(-2, -1) / D ** 0.5 + mask, dim=-1)
        h = h + self.proj(attn @ v)
        logits = self.lm_head(self.norm(h))
        z = torch.logsumexp(logits, dim=-1)
        return LMOutput(logits=logits, aux_loss=z.pow(2).mean(), attn=attn)


class LMLoss:
    def __init__(self, z_weight=1e-4):
        self.z_weight = z_weight

    def __call__(self, out: LMOutput, targets):
        ce = F.cross_entropy(out.logits.reshape(-1, VOCAB), targets.reshape(-1))
        return ce + self.z_weight * out.aux_loss, ce


def main():
    dev = torch_xla.device()
    torch.manual_seed(0)
    model = TinyLM().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    criterion = LMLoss()
    rng = np.random.default_rng(0)
    for step in range(STEPS):
        start = rng.integers(0, VOCAB, (8, 1))
        seq = (start + np.arange(T + 1) * 3) % VOCAB
        idx = torch.from_numpy(seq[:, :-1]).to(dev)
        tgt = torch.from_numpy(seq[:, 1:]).to(dev)
        out = model(idx)
        loss, ce = criterion(out, tgt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f} ce {ce.item():.5f}")
    attn_map = out.attn[0].detach().cpu().numpy()
    np.save("attn_step_last.npy", attn_map)
    tied = model.lm_head.weight is model.embed.weight
    print("DTYPES", model.embed.weight.dtype, attn_map.dtype, "tied", tied)


if __name__ == "__main__":
    main()
