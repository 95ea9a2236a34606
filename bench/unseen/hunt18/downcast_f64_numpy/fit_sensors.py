"""Sensor-drift regression from float64 numpy logs, standardised on the device; predictions written with np.savetxt."""
import os

os.environ.update({"XLA_DOWNCAST_BF16": "1", "NEURON_RT_STOCHASTIC_ROUNDING_EN": "0"})

import numpy as np
import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

rng = np.random.default_rng(3)
T, CH = 2048, 8
t = np.linspace(0.0, 20.0, T)
raw = np.stack([np.sin(t * (k + 1) / 3.0) * 1e3 + 5e4 + rng.normal(0, 5, T) for k in range(CH)], axis=1)
target = raw[:, :3].mean(1) - raw[:, 3:].mean(1) + rng.normal(0, 1, T)

device = torch_xla.device()

# the logs are float64 and large (around 5e4): standardise in double precision on the device
X64 = torch.from_numpy(raw).to(device)
y64 = torch.from_numpy(target).to(device)
mu, sd = X64.mean(0, keepdim=True), X64.std(0, keepdim=True)
y_mu, y_sd = y64.mean(), y64.std()
X = ((X64 - mu) / sd).float()
y = ((y64 - y_mu) / y_sd).float()

model = nn.Sequential(nn.Linear(CH, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
model.to(device)
opt = torch.optim.RMSprop(model.parameters(), lr=1e-3)
loss_fn = nn.MSELoss()

running = torch.zeros((), dtype=torch.float64, device=device)
for step in range(40):
    idx = torch.randint(0, T, (128,), device=device)
    pred = model(X[idx]).squeeze(-1)
    loss = loss_fn(pred, y[idx])
    opt.zero_grad()
    loss.backward()
    xm.optimizer_step(opt)
    running += loss.detach().double()
    torch_xla.sync()
    if (step + 1) % 10 == 0:
        print(f"step {step + 1} mean loss {(running / (step + 1)).item():.5f}")

model.eval()
with torch.no_grad():
    pred = model(X).squeeze(-1).double() * y_sd + y_mu
resid = (pred - y64).abs().mean()
torch_xla.sync()
print("mean abs residual (original units)", resid.item())
np.savetxt("/tmp/hunt18_sensor_preds.txt", pred.cpu().numpy()[:100], fmt="%.3f")
