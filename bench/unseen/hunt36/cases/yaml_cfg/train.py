import os
import sys

import cfgload

cfg = cfgload.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "conf", "config.yaml"), sys.argv[1:])
for key, value in cfg.env.items():
    os.environ.setdefault(key, str(value))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

from model import ResidualMLP  # noqa: E402


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    m = cfg.model
    net = ResidualMLP(m.in_dim, m.hidden, m.depth).to(device)
    # bf16 runs want a larger eps for Adam's denominator
    eps = 1e-6 if cfg.precision == "bf16" else 1e-8
    opt = torch.optim.Adam(net.parameters(), lr=cfg.trainer.lr, eps=eps)
    w_true = torch.randn(m.in_dim)
    losses = []
    for step in range(cfg.trainer.steps):
        x = torch.randn(cfg.trainer.batch, m.in_dim)
        y = torch.tanh(x @ w_true) + 0.05 * torch.randn(cfg.trainer.batch)
        x, y = x.to(device), y.to(device)
        pred = net(x)
        loss = torch.nn.functional.smooth_l1_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        losses.append(loss.detach())
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES weight", net.inp.weight.dtype, "pred", pred.dtype, "loss", loss.dtype)
    curve = torch.stack(losses).cpu().numpy()
    np.savetxt("loss_curve.txt", curve)
    print("precision", cfg.precision, "curve", curve.dtype, "final", float(curve[-1]))


if __name__ == "__main__":
    main()
