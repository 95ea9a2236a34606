"""moco_spawn: the first forward of the case's own MoCo, legacy (XLA_USE_BF16=1 in the environment) vs the
stochastic migration's code (MIGRATED=1: model.to(bf16), inputs cast): which intermediate differs first?"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "moco_spawn", os.environ.get("VARIANT", "variant_nospawn")))
import torch
import torch.nn.functional as F
import torch_xla
from train_moco import FEAT, MoCo, augment

mig = os.environ.get("MIGRATED") == "1"
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
dev = torch_xla.device()
protos = torch.randn(8, FEAT, generator=g)
model = MoCo().to(dev)
if mig:
    model.to(torch.bfloat16)
base = protos[torch.randint(0, 8, (32,), generator=g)] + 0.3 * torch.randn(32, FEAT, generator=g)
xq, xk = augment(base, g).to(dev), augment(base, g).to(dev)
if mig:
    xq, xk = xq.to(torch.bfloat16), xk.to(torch.bfloat16)
out = {}
out["queue"] = model.queue.clone()
out["h_body"] = model.q_enc.body(xq)
out["q"] = model.q_enc(xq)
with torch.no_grad():
    model.momentum_update()
    out["k_weight0_after_update"] = model.k_enc.body[0].weight.clone()
    out["k"] = model.k_enc(xk)
out["pos"] = (out["q"] * out["k"]).sum(1, keepdim=True)
out["neg"] = out["q"] @ out["queue"].t()
out["logits"] = torch.cat([out["pos"], out["neg"]], dim=1) / model.t
out["loss"] = F.cross_entropy(out["logits"], torch.zeros(32, dtype=torch.long, device=dev))
torch_xla.sync()
for k, v in out.items():
    h = v.detach().float().cpu()
    print(f"{k:24s} sum {h.double().sum().item():.6f} absmax {h.abs().max().item():.6f}")
