"""Sequence regressor (1-D conv) trained with validation every N steps,
Python-float and device-tensor metric accumulators, early stopping on the
validation loss, and the best weights restored and saved at the end."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

ap = argparse.ArgumentParser()
ap.add_argument("--patience", type=int, default=3)
ap.add_argument("--val-every", type=int, default=5)
ap.add_argument("--max-steps", type=int, default=int(os.environ.get("STEPS", "40")))
args = ap.parse_args()

dev = torch_xla.device()
torch.manual_seed(31)


class ConvReg(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(3, 24, 5, padding=2)
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(24, 1)

    def forward(self, x):
        h = F.gelu(self.conv(x)).amax(dim=2)
        return self.out(self.drop(h)).squeeze(-1)


def series(n):
    x = torch.randn(n, 3, 50).cumsum(dim=2) / 7.0
    y = x[:, 0, -10:].mean(1) - 0.5 * x[:, 2, :5].mean(1)
    return x, y


val_x, val_y = series(256)
val_x, val_y = val_x.to(dev), val_y.to(dev)
model = ConvReg().to(dev)
opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, alpha=0.95)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)

best, best_state, bad = float("inf"), None, 0
running, seen = 0.0, 0
for step in range(args.max_steps):
    model.train()
    x, y = series(64)
    x, y = x.to(dev), y.to(dev)
    loss = F.smooth_l1_loss(model(x), y, beta=0.5)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    torch_xla.sync()
    running += loss.item()
    seen += 1
    print(f"step {step} loss {loss.item():.5f}")

    if (step + 1) % args.val_every == 0:
        model.eval()
        val_sum = torch.zeros((), device=dev)
        abs_err = torch.zeros(1, device=dev)
        with torch.no_grad():
            for i in range(0, 256, 64):
                pred = model(val_x[i:i + 64])
                val_sum += F.smooth_l1_loss(pred, val_y[i:i + 64], beta=0.5, reduction="sum")
                abs_err += (pred - val_y[i:i + 64]).abs().sum()
        val_loss = val_sum / 256
        torch_xla.sync()
        print(f"  val {val_loss.item():.5f} mae {(abs_err / 256).item():.5f} train {running / seen:.5f}")
        running, seen = 0.0, 0
        if val_loss.item() < best - 1e-4:
            best, bad = val_loss.item(), 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            bad += 1
            if bad >= args.patience:
                print(f"early stop at step {step}")
                break

model.load_state_dict(best_state)
torch.save(best_state, "best.pt")
print(f"best val {best:.5f}")
print("DTYPES", model.conv.weight.dtype, val_sum.dtype, best_state["out.weight"].dtype,
      torch.load("best.pt")["out.weight"].dtype)
