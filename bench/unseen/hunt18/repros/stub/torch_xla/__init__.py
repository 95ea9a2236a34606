"""CPU stub of torch_xla for static hunts (hunt18): device() -> cpu, sync() no-op. No XLA semantics."""
import os
import torch

__version__ = "2.9.0+stub"
_orig_autocast = torch.autocast


class _Autocast(_orig_autocast):
    # autocast("xla", ...) runs as CPU autocast
    def __init__(self, device_type, *a, **k):
        if device_type == "xla":
            device_type = "cpu"
        super().__init__(device_type, *a, **k)


torch.autocast = _Autocast
if any(os.environ.get(v) for v in ("XLA_USE_BF16", "XLA_DOWNCAST_BF16")):
    print("[stub] legacy switch set:", {v: os.environ.get(v) for v in ("XLA_USE_BF16", "XLA_DOWNCAST_BF16")})


def device(n=None):
    return torch.device("cpu")


def sync(*a, **k):
    pass


from . import core, runtime  # noqa: E402,F401
from .core import xla_model  # noqa: E402,F401
