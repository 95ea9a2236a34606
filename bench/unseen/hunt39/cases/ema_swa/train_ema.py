"""Image-ish classifier trained with an EMA copy (updated by hand) and an SWA
average (torch.optim.swa_utils); all three are evaluated at the end."""
import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel
import torch_xla

STEPS = int(os.environ.get("STEPS", "40"))
EMA_DECAY = 0.99
SWA_START = STEPS // 2
dev = torch_xla.device()
torch.manual_seed(3)


class SmallConvNet(nn.Module):
    def __init__(self, n_cls=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.head = nn.Linear(32, n_cls)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.conv2(x)).mean(dim=(2, 3))
        return self.head(x)


def make_batch(n=32):
    labels = torch.randint(0, 10, (n,))
    imgs = torch.randn(n, 1, 12, 12) * 0.5
    imgs[torch.arange(n), 0, labels, labels] += 3.0
    return imgs, labels


model = SmallConvNet().to(dev)
ema = copy.deepcopy(model)
for p in ema.parameters():
    p.requires_grad_(False)
swa = AveragedModel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)


@torch.no_grad()
def ema_update(decay):
    for ema_p, p in zip(ema.parameters(), model.parameters()):
        ema_p.mul_(decay).add_(p, alpha=1 - decay)
    for ema_b, b in zip(ema.buffers(), model.buffers()):
        ema_b.copy_(b)


for step in range(STEPS):
    imgs, labels = make_batch()
    imgs, labels = imgs.to(dev), labels.to(dev)
    loss = F.cross_entropy(model(imgs), labels, label_smoothing=0.1)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema_update(min(EMA_DECAY, (1 + step) / (10 + step)))
    if step >= SWA_START:
        swa.update_parameters(model)
    torch_xla.sync()
    print(f"step {step} loss {loss.item():.5f}")


@torch.no_grad()
def evaluate(net, n_batches=3):
    net.eval()
    correct = torch.zeros((), device=dev, dtype=torch.float64)
    total = 0
    for _ in range(n_batches):
        imgs, labels = make_batch(64)
        logits = net(imgs.to(dev))
        correct += (logits.argmax(-1) == labels.to(dev)).double().sum()
        total += labels.numel()
    return (correct / total).item()


print(f"acc model {evaluate(model):.4f} ema {evaluate(ema):.4f} swa {evaluate(swa):.4f}")
print("DTYPES", model.conv1.weight.dtype, ema.conv1.weight.dtype, swa.module.conv1.weight.dtype,
      swa.n_averaged.dtype)
