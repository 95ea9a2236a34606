"""Launch the evolution-strategies run in this interpreter (the cluster wrapper imports this file).

Precision and runtime flags are set here, before torch_xla is imported by the training script.
"""
import os
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

os.environ.setdefault("PJRT_DEVICE", "TPU")
os.environ.setdefault("XLA_USE_BF16", "1")

if __name__ == "__main__":
    sys.argv = [str(HERE / "es_train.py"), *sys.argv[1:]]
    runpy.run_path(str(HERE / "es_train.py"), run_name="__main__")
