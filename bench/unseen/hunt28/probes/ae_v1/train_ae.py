"""Denoising autoencoder on synthetic tabular rows; reconstruction error per feature for the report."""
import argparse
import itertools
import json
import os

import numpy as np
import torch
import torch.nn.functional as F
import torch_xla
import torch_xla.core.xla_model as xm

from nets import make_nets

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=10)
p.add_argument("--ckpt", default="ckpt/ae.pt")
p.add_argument("--noise", type=float, default=0.2)
args = p.parse_args()

device = torch_xla.device()
torch.manual_seed(0)
rng = np.random.default_rng(0)
rows = rng.normal(size=(512, 24)).astype(np.float32)
rows[:, 12:] = rows[:, :12] * 0.5 + 0.1 * rng.normal(size=(512, 12)).astype(np.float32)
mu, sd = rows.mean(0), rows.std(0) + 1e-6
table = torch.from_numpy((rows - mu) / sd)

nets = {name: net.to(device) for name, net in make_nets().items()}
params = list(nets["enc"].parameters()) + list(nets["dec"].parameters())
opt = torch.optim.AdamW(params, lr=3e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

for step in range(args.steps):
    for n in nets.values():
        n.train()
    idx = torch.from_numpy(rng.integers(0, len(table), 32))
    clean = table[idx].to(device)
    noisy = clean + args.noise * torch.randn_like(clean)
    z = nets["enc"](noisy)
    recon = nets["dec"](z)
    loss = F.mse_loss(recon, clean) + 1e-3 * z.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    xm.mark_step()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.5f}")

for n in nets.values():
    n.eval()
with torch.no_grad():
    full = table.to(device)
    rec = nets["dec"](nets["enc"](full))
    err = (rec - full).pow(2).mean(0)
err_np = err.cpu().numpy() * sd ** 2
z_np = nets["enc"](full).detach().cpu().numpy()
corr = np.corrcoef(z_np.T)
report = {"mse_per_feature": err_np.round(4).tolist(), "latent_offdiag": float(np.abs(corr - np.eye(8)).max())}
os.makedirs(os.path.dirname(args.ckpt), exist_ok=True)
torch.save({"enc": nets["enc"].state_dict(), "dec": nets["dec"].state_dict(),
            "opt": opt.state_dict(), "step": args.steps}, args.ckpt)
with open("report.json", "w") as f:
    json.dump(report, f, indent=1)
print("worst feature mse", max(report["mse_per_feature"]))
