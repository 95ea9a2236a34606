import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

from loop import train

dev = xm.xla_device()
torch.manual_seed(0)
model = nn.Linear(8, 3).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(4, 8), torch.randint(0, 3, (4,))) for _ in range(int(os.environ.get("STEPS", "3")))]
train(model, opt, nn.CrossEntropyLoss(), batches, dev)
