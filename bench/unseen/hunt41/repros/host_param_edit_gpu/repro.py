"""No training: a state dict perturbed on the host (a CPU model from the factory the device model also comes from),
then evaluated on the device (gpu-compatible)."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch_xla.core.xla_model as xm  # noqa: E402


def make_model():
    return nn.Linear(4, 2)


def perturbed_states(n):
    torch.manual_seed(0)
    base = make_model()
    states = []
    for _ in range(n):
        with torch.no_grad():
            for prm in base.parameters():
                prm.add_(0.01 * torch.randn_like(prm))
        states.append({k: v.clone() for k, v in base.state_dict().items()})
    return states


dev = xm.xla_device()
model = make_model().to(dev)
model.load_state_dict(perturbed_states(3)[-1])
x = torch.randn(8, 4)
with torch.no_grad():
    out = model(x.to(dev))
print(out.sum().item(), "dtype", model.weight.dtype)
