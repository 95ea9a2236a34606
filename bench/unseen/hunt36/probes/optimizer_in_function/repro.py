import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla  # noqa: E402

from loop import fit  # noqa: E402

device = torch_xla.device()
model = nn.Linear(4, 3).to(device)
opt, loss = fit(model, [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(3)], device)
print("dtype", model.weight.dtype, loss.dtype, type(opt).__name__, opt.state[model.weight]["exp_avg"].dtype)
