import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla


class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.step = 0

    def train_step(self, xb, yb):
        loss = F.mse_loss(self.model(xb), yb)
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.step += 1
        return loss


device = torch_xla.device()
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
trainer = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1))
data, target = torch.randn(64, 8), torch.randn(64, 2)
for i in range(0, 64, 16):
    loss = trainer.train_step(data[i:i + 16].to(device), target[i:i + 16].to(device))
    torch_xla.sync()
print("loss dtype", loss.dtype, loss.item())
