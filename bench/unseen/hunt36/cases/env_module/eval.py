import utils.env  # noqa: F401

import torch  # noqa: E402
import torch_xla  # noqa: E402

from utils.common import Regressor, dataset  # noqa: E402
from utils.env import CKPT  # noqa: E402


@torch.no_grad()
def main():
    device = torch_xla.device()
    model = Regressor()
    model.load_state_dict(torch.load(CKPT))
    model.to(device).eval()
    x, y = dataset(256, seed=1)
    sse = torch.zeros((), dtype=torch.float64, device=device)
    sae = torch.zeros((), dtype=torch.float64, device=device)
    for xb, yb in zip(x.split(64), y.split(64)):
        pred = model(xb.to(device))
        err = pred.double() - yb.to(device).double()
        sse += (err**2).sum()
        sae += err.abs().sum()
    n = len(x)
    print("EVAL rmse", (sse / n).sqrt().item(), "mae", (sae / n).item(), "pred", pred.dtype, "sse", sse.dtype)


if __name__ == "__main__":
    main()
