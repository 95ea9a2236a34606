"""hunt10 G: f32 spelled so that the migration does not see it. Each tensor was bf16 on the device under the switch;
after the migration: `dtype=torch.get_default_dtype()` and `dtype=DT` (a module name bound to torch.float32) are left
f32 with no diagnostic; `x.new_tensor(...)` follows the script's input variable, which stays f32 (the input is cast
only at the model's call); `dtype=torch.float` is kept as a "deliberate f32 island (BFM089) ... never meets the bf16
stream" although it is added to the model's output. Each promotes the step to f32."""
import os
os.environ["XLA_USE_BF16"] = "1"
import re
import torch
import torch.nn as nn
import torch_xla

DT = torch.float32


def ir_dtype(t):
    root = [l for l in torch_xla._XLAC._get_xla_tensors_text([t]).splitlines() if "ROOT" in l][-1]
    return re.search(r"= (\w+)\[", root).group(1)


device = torch_xla.device()
torch.manual_seed(0)
model = nn.Linear(4, 4).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4).to(device)
for step in range(2):
    a = torch.ones(4, dtype=torch.get_default_dtype(), device=device)
    d = torch.full((4,), 0.1, dtype=torch.float, device=device)
    e = torch.zeros(4, dtype=DT, device=device)
    h = x.new_tensor([1.0, 2.0, 3.0, 4.0])
    y = model(x)
    print(step, "y*a", ir_dtype(y * a), "y+d", ir_dtype(y + d), "y+e", ir_dtype(y + e), "y+h", ir_dtype(y + h))
    loss = (y * a + d + e + h).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step(); torch_xla.sync()
    print(step, round(loss.item(), 4))
