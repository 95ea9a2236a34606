import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla  # noqa: E402

from trainer import Trainer  # noqa: E402

device = torch_xla.device()
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3)).to(device)
trainer = Trainer(model, device)
batches = [(torch.randn(8, 4), torch.randint(0, 3, (8,))) for _ in range(3)]
logits, loss = trainer.fit(batches)
print("dtype", model[0].weight.dtype, logits.dtype, loss.dtype, type(trainer.opt).__name__, [v.dtype for v in trainer.opt.state[model[0].weight].values()])
