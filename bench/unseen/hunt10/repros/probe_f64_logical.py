"""Under XLA_USE_BF16=1: the dtype a float64 NumPy array says on the XLA device, by the way it got there, and
what `.cpu()` hands back."""
import numpy as np
import torch
import torch_xla

d = torch_xla.device()
a = np.linspace(0, 1, 4)  # float64
ways = {
    "torch.tensor(a, device=d)": lambda: torch.tensor(a, device=d),
    "torch.as_tensor(a, device=d)": lambda: torch.as_tensor(a, device=d),
    "torch.from_numpy(a).to(d)": lambda: torch.from_numpy(a).to(d),
    "torch.tensor(a).to(d)": lambda: torch.tensor(a).to(d),
}
for name, mk in ways.items():
    t = mk()
    r = (t * 2).cpu()
    print(f"{name:30s} on device says {t.dtype}, (t*2).cpu() -> {r.dtype}")
