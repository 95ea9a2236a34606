import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

device = xm.xla_device()
model = nn.Linear(6, 3).to(device)
model.eval()
preds = []
with torch.no_grad():
    for _ in range(3):
        preds.append(model(torch.randn(4, 6).to(device)))
xm.mark_step()
torch.save(preds, "/tmp/h31_save_list.pt")
# legacy: every tensor that left the device (here, written to disk) is float32
print("saved dtype", torch.load("/tmp/h31_save_list.pt")[0].dtype)
