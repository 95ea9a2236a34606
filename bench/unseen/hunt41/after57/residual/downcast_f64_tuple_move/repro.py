"""after57 residual of hunt41 gap 7 (tabular_f64's form: the batch moved in a tuple assignment). The DOWNCAST switch: float64 rows from NumPy (a DataLoader batch of unknown dtype) standardised inside the model by
float64 buffers; under the switch both were float32 on the device, only the Linear was bf16."""
import os

os.environ["XLA_DOWNCAST_BF16"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402


class Net(nn.Module):
    def __init__(self, mu, sd):
        super().__init__()
        self.register_buffer("mu", torch.from_numpy(mu))
        self.register_buffer("sd", torch.from_numpy(sd))
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        z = (x - self.mu) / self.sd
        print("standardised in", z.dtype, "max |z|", round(float(z.abs().max()), 2))
        return self.fc(z.to(self.fc.weight.dtype))


rng = np.random.default_rng(0)
X = rng.normal(size=(64, 3)) * 0.01 + 1000.0
loader = DataLoader(TensorDataset(torch.from_numpy(X), torch.zeros(64, dtype=torch.long)), batch_size=16)
dev = xm.xla_device()
model = Net(X.mean(0), X.std(0)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for xb, yb in loader:
    xb, yb = xb.to(dev), yb.to(dev)
    opt.zero_grad()
    loss = model(xb).pow(2).mean()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(loss.item())
