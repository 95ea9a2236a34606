"""Gap (amp): the model's forward is reached only through a method (`model.step`) called in a
helper (`generate(model, ...)`): the switch is removed, nothing goes under autocast, and the
whole generation runs in FP32 where the legacy run ran bf16."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


class TinyLM(nn.Module):
    def __init__(self, vocab=32, d=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.head = nn.Linear(d, vocab)

    def step(self, token):
        return self.head(torch.tanh(self.tok(token)))


@torch.no_grad()
def generate(model, token, n):
    out = []
    for _ in range(n):
        probs = torch.softmax(model.step(token), dim=-1)
        print(probs[:, :4].cpu().numpy())
        token = torch.multinomial(probs, 1).squeeze(1)
        out.append(token)
        xm.mark_step()
    return torch.stack(out, 1)


torch.manual_seed(0)
dev = torch_xla.device()
model = TinyLM().to(dev).eval()
print(generate(model, torch.zeros(2, dtype=torch.long, device=dev), 4).cpu().tolist())
