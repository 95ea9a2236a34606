"""Regression with ReduceLROnPlateau on the validation loss, early stopping, and the best weights kept in memory.

When the scheduler lowers the LR, training restarts from the best weights seen so far (a common trick).
"""
import argparse
import copy
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

parser = argparse.ArgumentParser()
parser.add_argument("--patience", type=int, default=2)
parser.add_argument("--val-every", type=int, default=3)
parser.add_argument("--stop-after", type=int, default=4)
args = parser.parse_args()
STEPS = int(os.environ.get("STEPS", 18))
dev = xm.xla_device()
torch.manual_seed(0)

X = torch.rand(600, 8) * 4 - 2
Y = torch.sin(X[:, :1] * 2) + X[:, 1:2] ** 2 + 0.05 * torch.randn(600, 1)
tr_x, tr_y, va_x, va_y = X[:480], Y[:480], X[480:].to(dev), Y[480:].to(dev)

model = nn.Sequential(nn.Linear(8, 48), nn.Tanh(), nn.Linear(48, 48), nn.Tanh(), nn.Linear(48, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=args.patience)


def validate():
    model.eval()
    with torch.no_grad():
        err = model(va_x) - va_y
        val = (err ** 2).mean()
    model.train()
    return val.item()


best_val, best_state, bad = float("inf"), None, 0
for step in range(STEPS):
    idx = torch.randint(0, 480, (32,))
    loss = nn.functional.mse_loss(model(tr_x[idx].to(dev)), tr_y[idx].to(dev))
    opt.zero_grad()
    loss.backward()
    opt.step()
    xm.mark_step()
    print(f"step {step} loss {loss.item():.4f} lr {opt.param_groups[0]['lr']:.4f}")
    if (step + 1) % args.val_every:
        continue
    val = validate()
    lr_before = opt.param_groups[0]["lr"]
    sched.step(val)
    if val < best_val - 1e-4:
        best_val, bad = val, 0
        best_state = copy.deepcopy(model.state_dict())
    else:
        bad += 1
    if opt.param_groups[0]["lr"] < lr_before and best_state is not None:
        print(f"  lr dropped to {opt.param_groups[0]['lr']}: restarting from the best weights ({best_val:.4f})")
        model.load_state_dict(best_state)
    print(f"  val {val:.4f} best {best_val:.4f} bad {bad}")
    if bad >= args.stop_after:
        print("  early stop")
        break

if best_state is not None:
    model.load_state_dict(best_state)
print(f"restored best: val {validate():.4f} (recorded {best_val:.4f})")
print("DTYPES", best_state["0.weight"].dtype if best_state else None, next(model.parameters()).dtype)
