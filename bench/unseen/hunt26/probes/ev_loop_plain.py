# hunt26 repro (ema_confusion): the evaluation forward runs in a function called for the live model and
# its EMA copy from a loop over (name, module) pairs: amp leaves it outside autocast (f32; legacy bf16).
import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
import torch_xla

device = torch_xla.device()


def evaluate(model, x):
    with torch.no_grad():
        logits = model(x)
    print("eval logits dtype", logits.dtype)
    return logits.argmax(1).cpu()


model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4)).to(device)
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(3):
    x, y = torch.randn(16, 8).to(device), torch.randint(0, 4, (16,)).to(device)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.update_parameters(model)
for m in (model, ema.module):
    evaluate(m, torch.randn(16, 8).to(device))
