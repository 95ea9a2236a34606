"""Train a small GRU forecaster, checkpointing everything needed to resume bit-for-bit.

If the checkpoint exists the run continues from it (loaded on the host, moved to the device piece by piece) (model, Adam moments, scheduler, GradScaler-style loss scale,
RNG state and a step counter held as a device tensor); otherwise it starts fresh. It always saves at the end.
"""
import argparse
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

p = argparse.ArgumentParser()
p.add_argument("--ckpt", default="/tmp/resume_ckpt.pt")
p.add_argument("--steps", type=int, default=int(os.environ.get("STEPS", "8")))
args = p.parse_args()


class Forecaster(nn.Module):
    def __init__(self, n_in=4, hidden=32):
        super().__init__()
        self.gru = nn.GRU(n_in, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1]).squeeze(-1)


def batch(gen, n=16, t=12):
    x = torch.randn(n, t, 4, generator=gen)
    y = x[:, -3:, 0].mean(dim=1) + 0.1 * torch.randn(n, generator=gen)
    return x, y


device = xm.xla_device()
torch.manual_seed(0)
model = Forecaster()
model.to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=100)
loss_scale = torch.tensor(1.0, device=device)
step = torch.zeros((), device=device)
gen = torch.Generator().manual_seed(1)

if os.path.exists(args.ckpt):
    ckpt = torch.load(args.ckpt, map_location="cpu")
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])  # moves Adam's moments to the parameters' device
    scheduler.load_state_dict(ckpt["scheduler"])
    loss_scale = ckpt["loss_scale"].to(device)
    step = ckpt["step"].to(device)
    gen.set_state(ckpt["rng"])
    print(f"resumed at step {int(step.item())}, loss scale {loss_scale.item():.1f}")

loss_fn = nn.SmoothL1Loss()
for _ in range(args.steps):
    x, y = batch(gen)
    x, y = x.to(device), y.to(device)
    optimizer.zero_grad()
    pred = model(x)
    loss = loss_fn(pred, y)
    (loss * loss_scale).backward()
    for prm in model.parameters():
        prm.grad.div_(loss_scale)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    step += 1
    xm.mark_step()
    print(f"step {int(step.item())} loss {loss.item():.5f}")

exp_avg = next(iter(optimizer.state.values()))["exp_avg"]
print("DTYPES", next(model.parameters()).dtype, exp_avg.dtype, step.dtype, loss_scale.dtype)
xm.save(
    {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "loss_scale": loss_scale,
        "step": step,
        "rng": gen.get_state(),
    },
    args.ckpt,
)
saved = torch.load(args.ckpt)
print("SAVED", saved["model"]["head.weight"].dtype, saved["optimizer"]["state"][0]["exp_avg"].dtype, saved["step"].dtype)
