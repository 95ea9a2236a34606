"""Train a small classifier, then report per-class precision/recall and ECE each epoch."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

from metrics import CalibrationMeter, update_confusion

STEPS = int(os.environ.get("STEPS", 12))
C = 5
dev = xm.xla_device()
torch.manual_seed(0)

centres = torch.randn(C, 16) * 2.0
def make_split(n):
    y = torch.randint(0, C, (n,))
    x = centres[y] + torch.randn(n, 16)
    return x, y

train_x, train_y = make_split(256)
val_x, val_y = make_split(96)

model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, C)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.CrossEntropyLoss()


def report(conf):
    cm = conf.cpu().numpy()
    tp = np.diag(cm).astype(np.float64)
    prec = tp / np.maximum(cm.sum(axis=0), 1)
    rec = tp / np.maximum(cm.sum(axis=1), 1)
    f1 = 2 * prec * rec / np.maximum(prec + rec, 1e-12)
    for c in range(C):
        print(f"  class {c}: precision {prec[c]:.3f} recall {rec[c]:.3f} f1 {f1[c]:.3f} support {cm[c].sum()}")
    return f1.mean()


def evaluate():
    model.eval()
    conf = torch.zeros(C, C, dtype=torch.long, device=dev)
    meter = CalibrationMeter(10, dev)
    with torch.no_grad():
        for i in range(0, len(val_x), 32):
            x = val_x[i:i + 32].to(dev)
            y = val_y[i:i + 32].to(dev)
            probs = model(x).softmax(dim=1)
            update_confusion(conf, y, probs.argmax(dim=1), C)
            meter.update(probs, y)
    model.train()
    macro_f1 = report(conf)
    ece = meter.ece()
    bin_conf = (meter.conf_sum / meter.count.clamp(min=1)).cpu().numpy()
    print("bin confidence", np.round(bin_conf, 3).tolist())
    print("DTYPES", meter.conf_sum.dtype, bin_conf.dtype, ece.dtype)
    return macro_f1, ece.item()


step = 0
epoch = 0
while step < STEPS:
    perm = torch.randperm(len(train_x))
    for i in range(0, len(train_x), 64):
        idx = perm[i:i + 64]
        x, y = train_x[idx].to(dev), train_y[idx].to(dev)
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
        step += 1
        if step >= STEPS:
            break
    epoch += 1
    f1, ece = evaluate()
    print(f"epoch {epoch} macro-F1 {f1:.3f} ECE {ece:.4f}")
