import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla  # noqa: E402

from loop import fit  # noqa: E402

device = torch_xla.device()
model = nn.Linear(4, 1).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(8, 4), torch.rand(8, 1)) for _ in range(3)]
out, loss = fit(model, opt, batches, nn.MSELoss(), device)
print("dtype", model.weight.dtype, out.dtype, loss.dtype)
