"""Tabular regressor built straight on the device with a `torch.device` context."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

STEPS = int(os.environ.get("STEPS", "10"))


class Regressor(nn.Module):
    def __init__(self, d_in=12, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def main():
    torch.manual_seed(0)
    dev = xm.xla_device()
    with torch.device(dev):
        model = Regressor()
        w_true = torch.randn(12)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    loss_fn = nn.SmoothL1Loss()
    for step in range(STEPS):
        x = torch.randn(64, 12, device=dev)
        y = x @ w_true + 0.1 * torch.randn(64, device=dev)
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.5f}")
    print("DTYPES", next(model.parameters()).dtype, w_true.dtype, model(x).dtype)
    preds = model(x).detach().cpu()
    print("host preds", preds.dtype, preds[:3].tolist())


if __name__ == "__main__":
    main()
