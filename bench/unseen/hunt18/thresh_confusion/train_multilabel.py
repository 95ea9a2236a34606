"""Multi-label tagger with per-class decision thresholds tuned on the fly, and a confusion-matrix report."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

NUM_TAGS = 6
FEATS = 40
STEPS = 12

torch.manual_seed(0)
device = torch_xla.device()


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATS, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU())
        self.out = nn.Linear(64, NUM_TAGS)

    def forward(self, x):
        return self.out(self.body(x))


def synth_batch(n=32):
    x = torch.randn(n, FEATS)
    w = torch.linspace(-1, 1, FEATS * NUM_TAGS).reshape(FEATS, NUM_TAGS)
    y = (x @ w + 0.3 * torch.randn(n, NUM_TAGS) > 0.2).float()
    return x, y


model = Tagger().to(device)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)

# per-class thresholds kept on the host as plain floats, nudged each step
thresholds = [0.5] * NUM_TAGS

for step in range(STEPS):
    x, y = synth_batch()
    x, y = x.to(device), y.to(device)
    logits = model(x)
    probs = torch.sigmoid(logits)
    th = torch.tensor(thresholds, device=device)
    # BCE plus a hinge that pushes positives above their class threshold
    margin = F.relu(th + 0.1 - probs) * y
    loss = F.binary_cross_entropy_with_logits(logits, y) + margin.mean()
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)
    torch_xla.sync()
    # move each threshold toward the mean positive probability of its class
    pos_mean = (probs.detach() * y).sum(0) / y.sum(0).clamp(min=1.0)
    for c, v in enumerate(pos_mean.cpu().tolist()):
        thresholds[c] = 0.9 * thresholds[c] + 0.1 * min(max(v, 0.2), 0.8)
    if step % 4 == 0:
        print(f"step {step} loss {loss.item():.4f}")

# evaluation: a 2x2 confusion matrix per tag, built with bincount
model.eval()
x, y = synth_batch(256)
x, y = x.to(device), y.to(device)
with torch.no_grad():
    probs = torch.sigmoid(model(x))
th = torch.tensor(thresholds, device=device)
pred = (probs > th).long()
truth = y.long()
codes = truth * 2 + pred + 4 * torch.arange(NUM_TAGS, device=device)
cm = torch.bincount(codes.flatten(), minlength=4 * NUM_TAGS).reshape(NUM_TAGS, 2, 2)
tp = cm[:, 1, 1].float()
fp = cm[:, 0, 1].float()
fn = cm[:, 1, 0].float()
f1 = 2 * tp / (2 * tp + fp + fn).clamp(min=1.0)
torch_xla.sync()
print("f1 per tag", [round(v, 3) for v in f1.cpu().tolist()])
print("macro f1", f1.mean().item())
torch.save({"thresholds": th.cpu(), "f1": f1.cpu()}, "/tmp/hunt18_thresh.pt")
