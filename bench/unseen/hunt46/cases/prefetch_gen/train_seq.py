"""1-D conv regressor fed by a device prefetcher, evaluated through a generator of device batches."""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch_xla

from data import DevicePrefetcher, make_loader, take


class ConvReg(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(2, ch, 5, padding=2), nn.ReLU(), nn.Conv1d(ch, ch, 3, padding=1))
        self.head = nn.Linear(ch, 1)

    def forward(self, x):
        return self.head(self.conv(x).mean(-1)).squeeze(-1)


def batches(x, y, bs, device):
    for i in range(0, len(x), bs):
        yield x[i:i + bs].to(device), y[i:i + bs].to(device)


def main(steps, out_dir):
    dev = torch_xla.device()
    torch.manual_seed(0)
    model = ConvReg().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss_fn = nn.MSELoss()
    stream = take(DevicePrefetcher(make_loader(), dev), steps)
    for step, (xb, yb) in enumerate(stream):
        loss = loss_fn(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        torch_xla.sync()
        print(f"step {step} loss {loss.item():.5f}")

    rng = np.random.default_rng(7)
    v_np = rng.standard_normal((40, 2, 24)).cumsum(-1) / 5.0
    vx = torch.from_numpy(v_np.astype(np.float32))
    vy = torch.from_numpy(v_np[:, 0, -4:].mean(-1) - v_np[:, 1, -4:].mean(-1))
    preds, sq = [], torch.zeros((), device=dev)
    model.eval()
    with torch.no_grad():
        for xb, yb in batches(vx, vy, 16, dev):
            p = model(xb)
            sq += ((p - yb) ** 2).sum()
            preds.append(p.cpu())
    preds = torch.cat(preds).numpy()
    os.makedirs(out_dir, exist_ok=True)
    np.save(os.path.join(out_dir, "preds.npy"), preds)
    print(f"val mse {(sq / len(vx)).item():.5f}")
    print("DTYPES", next(model.parameters()).dtype, preds.dtype, sq.dtype)


if __name__ == "__main__":
    main(int(os.environ.get("STEPS", "8")), sys.argv[1] if len(sys.argv) > 1 else "out")
