"""after57 residual of hunt41 gap 1 (tabular_f64's form: the NumPy class weights in a name first). The DOWNCAST switch: class weights made float64 from NumPy, then `.float()` for the loss (bf16 on the device then)."""
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

dev = xm.xla_device()
labels = np.array([0, 0, 0, 1, 0, 1, 0, 0])
class_w = labels.size / (2.0 * np.bincount(labels))
w = torch.tensor(class_w, device=dev)
criterion = nn.CrossEntropyLoss(weight=w.float())
model = nn.Linear(4, 2).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(0)
for _ in range(3):
    x = torch.randn(8, 4, generator=g).to(dev)
    y = torch.from_numpy(labels).to(dev)
    opt.zero_grad()
    loss = criterion(model(x), y)
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
print("dtype", model.weight.dtype, criterion.weight.dtype)
