"""(hunt41 copy: + launch) CPU stub of torch_xla for static hunts (hunt18): device() -> cpu, sync() no-op. No XLA semantics."""
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

# hunt19: tensorboard is not installed here; a fake torch.utils.tensorboard whose add_scalar converts the value
# the way the real one does (torch/utils/tensorboard/_convert_np.py make_np: bf16 -> float16, then .cpu().numpy()).
import sys as _sys, types as _types  # noqa: E402
try:
    import tensorboard  # noqa: F401
except ImportError:
    _tb = _types.ModuleType("torch.utils.tensorboard")

    class SummaryWriter:
        def __init__(self, *a, **k):
            self.rows = []

        def add_scalar(self, tag, value, step=None, **k):
            if isinstance(value, torch.Tensor):
                if value.dtype == torch.bfloat16:
                    value = value.to(torch.float16)
                value = value.detach().cpu().numpy()
            self.rows.append((tag, float(value), step))

        def flush(self):
            pass

        def close(self):
            pass

    _tb.SummaryWriter = SummaryWriter
    _sys.modules["torch.utils.tensorboard"] = _tb


# hunt41: torch_xla.launch runs the function in this process as ordinal 0 (one device).
def launch(fn, args=(), start_method="spawn", debug_single_process=False):
    return fn(0, *args)
