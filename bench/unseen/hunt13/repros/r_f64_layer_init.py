"""BFM048 rewrites `nn.Linear(..., dtype=torch.float64)` to `dtype=torch.float32` (XLA_DOWNCAST_BF16: f64 meant
f32 on the device). The layer's initial weights change: torch draws a float64 and a float32 uniform_ differently
from the same seed, so the migrated script starts from another model than the legacy run and the FP32 reference
(both built the layer in float64). CPU only, no switch needed."""
import torch
import torch.nn as nn

torch.manual_seed(0)
a = nn.Linear(64, 6, dtype=torch.float64)
torch.manual_seed(0)
b = nn.Linear(64, 6, dtype=torch.float32)
torch.manual_seed(0)
c = nn.Linear(64, 6, dtype=torch.float64).to(torch.float32)
print("f64-built vs f32-built: max |diff| of the initial weights", (a.weight.float() - b.weight).abs().max().item())
print("f64-built vs f64-built then .to(float32):", (a.weight.float() - c.weight).abs().max().item())
