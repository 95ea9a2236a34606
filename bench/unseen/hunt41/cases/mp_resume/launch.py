"""Launch the data-parallel job with the environment the cluster expects."""
import os
import subprocess
import sys

env = os.environ.copy()
env.setdefault("PJRT_DEVICE", "TPU")
env["XLA_USE_BF16"] = "1"
cmd = [sys.executable, "train_mp.py", "--steps", os.environ.get("STEPS", "6")]
sys.exit(subprocess.run(cmd, env=env, check=False).returncode)
