"""torch.multinomial without replacement and torch.where(bf16, f32) on the XLA CPU device: each variant in a fresh
process (`python probes/xla_promote_probe.py NAME`), run with and without XLA_USE_BF16=1."""
import os
import sys

import torch
import torch_xla

legacy = bool(os.environ.get("XLA_USE_BF16"))
DT = torch.float32 if legacy else torch.bfloat16
dev = torch_xla.device()
torch.manual_seed(0)
logits = torch.randn(4, 6, device=dev).to(DT)
x = torch.randn(8, device=dev).to(DT)
V = {
    "multinomial(p,1)": lambda: torch.multinomial(logits.softmax(-1), 1),
    "multinomial(p,3)": lambda: torch.multinomial(logits.softmax(-1), 3),
    "multinomial(p,1,replacement)": lambda: torch.multinomial(logits.softmax(-1), 1, replacement=True),
    "multinomial(p.float(),1)": lambda: torch.multinomial(logits.softmax(-1).float(), 1),
    "multinomial(p 1-D,1)": lambda: torch.multinomial(logits[0].softmax(-1), 1),
    "Categorical(probs).sample": lambda: torch.distributions.Categorical(probs=logits.softmax(-1)).sample(),
    "where(m,x,f32 vec)": lambda: torch.where(x > 0, x, torch.zeros(8, device=dev)),
    "where(m,x,f32 0-dim)": lambda: torch.where(x > 0, x, torch.tensor(-1e4, device=dev)),
    "where(m,x,-inf float)": lambda: torch.where(x > 0, x, float("-inf")),
    "x + f32 vec": lambda: x + torch.zeros(8, device=dev),
    "where(m,x,f32 vec from host)": lambda: torch.where(x > 0, x, torch.zeros(8).to(dev)),
}
name = sys.argv[1]
try:
    out = V[name]()
    torch_xla.sync()
    print(f"{'legacy' if legacy else 'bf16  '} {name:32s} ok     {out.dtype} {out.float().sum().item():.4g}", flush=True)
except Exception as e:  # noqa: BLE001
    print(f"{'legacy' if legacy else 'bf16  '} {name:32s} RAISES {type(e).__name__}: {str(e).strip().splitlines()[0][:140]}", flush=True)
