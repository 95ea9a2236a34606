"""Without the switch: the XLA element type of torch.linspace(..., dtype=torch.bfloat16) and friends on the XLA device."""
import torch
import torch_xla


def xla_type(t):
    info = torch_xla._XLAC._get_xla_tensor_debug_info(t)
    return info.split("XLA Shape:")[1].split("[")[0].strip() if "XLA Shape:" in info else "?"


def main():
    d = torch_xla.device()
    made = {
        "linspace_bf16": torch.linspace(0.0, 1.0, 6, device=d, dtype=torch.bfloat16),
        "linspace_then_to": torch.linspace(0.0, 1.0, 6, device=d).to(torch.bfloat16),
        "arange_bf16": torch.arange(6, device=d, dtype=torch.bfloat16),
        "logspace_bf16": torch.logspace(0.0, 1.0, 6, device=d, dtype=torch.bfloat16),
    }
    for name, t in made.items():
        torch_xla.sync()
        print(f"{name:18s} {t.dtype} -> {xla_type(t)}  {(t * 1.001).sum().item()!r}")


if __name__ == "__main__":
    main()
