import utils.env  # noqa: F401

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch_xla  # noqa: E402

from utils.common import Regressor, dataset  # noqa: E402
from utils.env import CKPT  # noqa: E402


def main(out="regressor_export.npz"):
    device = torch_xla.device()
    model = Regressor().to(device)
    model.load_state_dict(torch.load(CKPT))
    weights = {name.replace(".", "_"): p.detach().cpu().numpy() for name, p in model.state_dict().items()}
    x, _ = dataset(16, seed=2)
    with torch.no_grad():
        golden = model(x.to(device)).cpu().numpy()
    np.savez(out, golden_x=x.numpy(), golden_y=golden, **weights)
    print("EXPORT", len(weights), "arrays", {k: str(v.dtype) for k, v in list(weights.items())[:2]}, "golden", golden.dtype)


if __name__ == "__main__":
    main()
