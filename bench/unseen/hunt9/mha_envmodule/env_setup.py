"""Runtime settings for the TPU jobs. Import this module before torch_xla."""
import os

os.environ.setdefault("PJRT_DEVICE", "TPU")
os.environ.setdefault("XLA_USE_BF16", "1")
os.environ.setdefault("XLA_TENSOR_ALLOCATOR_MAXSIZE", "100000000")
