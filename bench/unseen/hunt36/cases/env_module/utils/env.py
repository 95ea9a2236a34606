"""Process setup shared by every entry script. Import it first: `import utils.env  # noqa: F401`.

XLA reads these once, at the first device tensor, so they must be set before anything touches the device.
"""
import os

os.environ.setdefault("PJRT_DEVICE", "CPU")
# bf16 on the device, but keep float64 ("double") tensors in fp32: our accumulators rely on it
os.environ.setdefault("XLA_DOWNCAST_BF16", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CKPT = os.environ.get("CKPT", "ckpt_regressor.pt")
