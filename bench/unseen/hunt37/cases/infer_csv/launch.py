"""Nightly scoring launcher: runs predict.py with the accelerator settings."""
import os
import subprocess
import sys

env = dict(os.environ)
env.update(PJRT_DEVICE=env.get("PJRT_DEVICE", "TPU"), XLA_USE_BF16="1")
sys.exit(subprocess.run([sys.executable, "predict.py", "churn.pt"], env=env, check=False).returncode)
