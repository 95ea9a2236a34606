"""moco_spawn: which op makes the first-step loss differ between the legacy run (XLA_USE_BF16=1) and the explicit
bf16 run (MIGRATED=1)? Same inputs; each piece printed to the host as float32."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

mig = os.environ.get("MIGRATED") == "1"
torch.manual_seed(0)
dev = torch_xla.device()
bf = (lambda t: t.to(torch.bfloat16)) if mig else (lambda t: t)
x = bf(torch.randn(32, 64).to(dev))
ln = nn.LayerNorm(64).to(dev)
if mig:
    ln.to(torch.bfloat16)
q = bf(F.normalize(torch.randn(32, 16), dim=1).to(dev))
k = bf(F.normalize(torch.randn(32, 16), dim=1).to(dev))
queue = bf(F.normalize(torch.randn(128, 16), dim=1).to(dev))
pieces = {
    "layernorm": ln(x),
    "normalize": F.normalize(q, dim=1),
    "dot_sum": (q * k).sum(1, keepdim=True),
    "queue_mm": q @ queue.t(),
}
logits = torch.cat([pieces["dot_sum"], pieces["queue_mm"]], dim=1) / 0.25
pieces["cross_entropy"] = F.cross_entropy(logits, torch.zeros(32, dtype=torch.long, device=dev))
pieces["log_softmax"] = F.log_softmax(logits, dim=1)
pieces["logsumexp"] = torch.logsumexp(logits, dim=1)
pieces["ce_by_hand"] = (torch.logsumexp(logits, dim=1) - logits[:, 0]).mean()
torch_xla.sync()
for k, v in pieces.items():
    h = v.float().cpu() if mig else v.cpu()
    print(f"{k:14s} sum {h.double().sum().item():.6f} first {h.reshape(-1)[:3].tolist()}")
