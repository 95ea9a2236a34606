import os

os.environ["XLA_USE_BF16"] = "1"

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from engine import Engine  # noqa: E402
from module import LitRegressor  # noqa: E402


def loaders(n=512, d_in=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    y = torch.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.05 * torch.randn(n, generator=g)
    ds = TensorDataset(x, y)
    return DataLoader(ds, batch_size=32, shuffle=True), DataLoader(TensorDataset(x[:128], y[:128]), batch_size=64)


def main():
    torch.manual_seed(0)
    train_dl, val_dl = loaders()
    module = LitRegressor()
    engine = Engine(max_steps=8)
    engine.fit(module, train_dl)
    mae, preds = engine.validate(module, val_dl)
    np.save("val_preds.npy", preds)
    w = module.net[0].weight
    print("DTYPES weight", w.dtype, "loss", engine.last_loss.dtype, "preds", preds.dtype, "mae", round(mae, 4))


if __name__ == "__main__":
    main()
