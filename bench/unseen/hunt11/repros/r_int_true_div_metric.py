"""stochastic: a true division of two integer device tensors (a bincount-based IoU) is f32 on the device after the
migration; under the switch it was bf16. The tensors come from `torch.zeros(..., dtype=torch.long, device=)` +=
`torch.bincount(...)` and a `reshape` (a division of two aranges is made bf16: BFM154). From seg_patchdict/ctor_variant/seg_eval.py:57, 70, 80."""
import os
import sys

os.environ["XLA_USE_BF16"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

from _ir import ir_dtype

C = 4
device = xm.xla_device()
torch.manual_seed(0)
model = nn.Conv2d(1, C, 3, padding=1).to(device).eval()
hist = torch.zeros(C * C, dtype=torch.long, device=device)
with torch.no_grad():
    for _ in range(3):
        img, gt = torch.rand(2, 1, 8, 8).to(device), torch.randint(0, C, (2, 8, 8)).to(device)
        pred = model(img).argmax(1)
        hist += torch.bincount(gt.flatten() * C + pred.flatten(), minlength=C * C)
        torch_xla.sync()
h = hist.reshape(C, C)
iou = h.diag() / (h.sum(0) + h.sum(1) - h.diag()).clamp(min=1)
direct = torch.arange(1, 5, device=device) / torch.arange(2, 6, device=device)
print(f"iou: IR {ir_dtype(iou)}; arange/arange: IR {ir_dtype(direct)}; iou {[round(v, 5) for v in iou.cpu().tolist()]}")
