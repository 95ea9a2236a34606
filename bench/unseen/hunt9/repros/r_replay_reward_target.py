"""A TD target built from replay arrays moved with torch.as_tensor(..., device=) in a plain class's
method, used in a hand-written squared error."""
import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


class Replay:
    def __init__(self, n):
        rng = np.random.default_rng(0)
        self.obs = rng.standard_normal((n, 4)).astype(np.float32)
        self.rew = rng.standard_normal(n).astype(np.float32)

    def sample(self, rng, device):
        idx = rng.integers(0, len(self.rew), 8)
        return [torch.as_tensor(a[idx], device=device) for a in (self.obs, self.rew)]


def main():
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    device = xm.xla_device()
    q = nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(q.parameters(), lr=0.1)
    buf = Replay(64)
    for step in range(3):
        obs, rew = buf.sample(rng, device)
        with torch.no_grad():
            backup = rew + 0.9 * q(obs).squeeze(-1)
        loss = ((q(obs).squeeze(-1) - backup) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(step, loss.item(), "rew", rew.dtype, "backup", backup.dtype, "loss", loss.dtype)


main()
