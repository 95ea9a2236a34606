"""Which device factories the legacy switch makes bf16 on torch-xla 2.9 (XLA CPU device): prints each one's XLA element type."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch_xla


def xla_type(t):
    info = torch_xla._XLAC._get_xla_tensor_debug_info(t)
    return info.split("XLA Shape:")[1].split("[")[0].strip() if "XLA Shape:" in info else "?"


def main():
    d = torch_xla.device()
    made = {
        "linspace": torch.linspace(0.0, 1.0, 6, device=d),
        "arange_f32": torch.arange(6, device=d, dtype=torch.float32),
        "arange_float": torch.arange(6, device=d).float(),
        "ones": torch.ones(6, device=d),
        "zeros": torch.zeros(6, device=d),
        "randn": torch.randn(6, device=d),
        "full": torch.full((6,), 0.5, device=d),
        "tensor": torch.tensor([0.5, 1.0], device=d),
        "eye": torch.eye(3, device=d),
        "logspace": torch.logspace(0.0, 1.0, 6, device=d),
        "moved": torch.linspace(0.0, 1.0, 6).to(d),
    }
    for name, t in made.items():
        torch_xla.sync()
        print(f"{name:14s} {t.dtype} -> {xla_type(t)}  {(t + 0).sum().item()!r}")


if __name__ == "__main__":
    main()
