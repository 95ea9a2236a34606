import os
import sys

import cfgload

HERE = os.path.dirname(os.path.abspath(__file__))
cfg = cfgload.load(os.path.join(HERE, "conf", "config.yaml"), sys.argv[1:])
if cfg.precision == "bf16":
    os.environ["XLA_USE_BF16"] = "1"
elif cfg.precision != "fp32":
    raise SystemExit(f"unknown precision {cfg.precision!r}")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

from model import ResidualMLP  # noqa: E402


def evaluate(net, device, w_true):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(128, cfg.model.in_dim, generator=g)
    y = torch.tanh(x @ w_true)
    with torch.no_grad():
        pred = net(x.to(device))
    err = (pred - y.to(device)).abs()
    return err.cpu().numpy()


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    m = cfg.model
    net = ResidualMLP(m.in_dim, m.hidden, m.depth).to(device)
    opt = torch.optim.Adam(net.parameters(), lr=cfg.trainer.lr)
    w_true = torch.randn(m.in_dim)
    for step in range(cfg.trainer.steps):
        x = torch.randn(cfg.trainer.batch, m.in_dim)
        y = torch.tanh(x @ w_true) + 0.05 * torch.randn(cfg.trainer.batch)
        pred = net(x.to(device))
        loss = torch.nn.functional.smooth_l1_loss(pred, y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
        if (step + 1) % cfg.trainer.eval_every == 0:
            err = evaluate(net, device, w_true)
            print(f"eval mae {err.mean():.4f} p90 {np.percentile(err, 90):.4f} err {err.dtype}")
    print("DTYPES", cfg.precision, "weight", net.inp.weight.dtype, "pred", pred.dtype, "loss", loss.dtype)
    with open(os.path.join(HERE, "resolved.yaml"), "w") as f:
        f.write(cfgload.to_yaml(cfg))


if __name__ == "__main__":
    main()
