import utils.env  # noqa: F401  (sets the XLA environment first)

import torch  # noqa: E402
import torch_xla  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402

from utils.common import Regressor, dataset  # noqa: E402
from utils.env import CKPT  # noqa: E402


def main(steps=8, bs=32):
    torch.manual_seed(0)
    device = torch_xla.device()
    x_all, y_all = dataset(512)
    model = Regressor().to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    running = torch.zeros((), dtype=torch.float64, device=device)
    for step in range(steps):
        i = torch.randint(0, len(x_all), (bs,))
        x, y = x_all[i].to(device), y_all[i].to(device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.detach().double()
        xm.mark_step()
        print(f"step {step} loss {loss.item():.4f}")
    print("DTYPES weight", model.net[0].weight.dtype, "loss", loss.dtype, "running", running.dtype)
    print("mean loss", (running / steps).item())
    xm.save(model.state_dict(), CKPT)


if __name__ == "__main__":
    main()
