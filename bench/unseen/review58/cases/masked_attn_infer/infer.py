"""Inference of a tiny attention pooler over padded sequences (masked with torch.finfo(torch.float32).min); scores to JSON."""
import json
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

STEPS = int(os.environ.get("STEPS", 4))


class AttnPool(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.q = nn.Parameter(torch.randn(d) / d ** 0.5)
        self.proj = nn.Linear(d, d)
        self.head = nn.Linear(d, 2)

    def forward(self, x, lengths):
        h = torch.tanh(self.proj(x))
        att = h @ self.q
        pad = torch.arange(x.shape[1], device=x.device)[None, :] >= lengths[:, None]
        att = att.masked_fill(pad, torch.finfo(torch.float32).min)
        w = att.softmax(-1).unsqueeze(-1)
        return self.head((w * h).sum(1)), w.squeeze(-1)


@torch.inference_mode()
def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    model = AttnPool().to(dev).eval()
    results = []
    for step in range(STEPS):
        lengths = torch.randint(1, 9, (4,))
        x = torch.randn(4, 8, 16)
        logits, w = model(x.to(dev), lengths.to(dev))
        probs = logits.softmax(-1)
        for i in range(4):
            results.append({"step": step, "p1": probs[i, 1].item(),
                            "weights": w[i, : lengths[i]].tolist()})
        xm.mark_step()
    print(json.dumps(results[:2])[:200])
    print("DTYPES", logits.dtype, type(results[0]["p1"]), len(results))


if __name__ == "__main__":
    main()
