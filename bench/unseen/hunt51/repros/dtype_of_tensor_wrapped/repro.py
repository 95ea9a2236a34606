"""An attention block that makes its mask value with the dtype of the scores it meets (the GPT-NeoX shape),
written for hunt51. Launched with XLA_DOWNCAST_BF16=1 by run.sh."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm


class Attn(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, 4)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-1, -2) / 4.0
        causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device).tril()
        mask_value = torch.tensor(-10000.0, dtype=scores.dtype).to(scores.device)
        scores = torch.where(causal, scores, mask_value)
        return self.out((F.softmax(scores, dim=-1) @ v).mean(1))


def main():
    torch.manual_seed(0)
    dev = torch_xla.device()
    model = Attn().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(1)
    for step in range(int(os.environ.get("STEPS", "4"))):
        x = torch.randn(4, 6, 16, generator=g).to(dev)
        y = torch.randint(0, 4, (4,), generator=g).to(dev)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")


if __name__ == "__main__":
    main()
