"""Entry point on the TPU VM: settings first, then one process per core."""
import os
import sys

os.environ.setdefault("PJRT_DEVICE", "TPU")
os.environ["XLA_USE_BF16"] = "1"

import torch_xla.distributed.xla_multiprocessing as xmp  # noqa: E402

from kws.train import _mp_fn, parse_flags  # noqa: E402

if __name__ == "__main__":
    xmp.spawn(_mp_fn, args=(parse_flags(sys.argv[1:]),))
