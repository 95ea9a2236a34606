"""hunt10 G: tensors made inside `with torch.device(xla):` (and after torch.set_default_device(xla)) carry no
device= argument: bf16 under the switch, left f32 by the migration, no diagnostic; here a per-class loss weight."""
import os
os.environ["XLA_USE_BF16"] = "1"
import re
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

def ir_dtype(t):
    root = [l for l in torch_xla._XLAC._get_xla_tensors_text([t]).splitlines() if "ROOT" in l][-1]
    return re.search(r"= (\w+)\[", root).group(1)

device = torch_xla.device()
torch.manual_seed(0)
with torch.device(device):
    model = nn.Linear(4, 3)
    class_w = torch.tensor([1.0, 0.5, 2.0])
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(8, 4).to(device)
    y = torch.arange(8).remainder(3).to(device)
    loss = (class_w[y] * F.cross_entropy(model(x), y, reduction="none")).mean()
    print(step, "loss computed in", ir_dtype(loss), "class_w in", ir_dtype(class_w))
    opt.zero_grad(); loss.backward(); opt.step(); torch_xla.sync()
    print(step, round(loss.item(), 4))
