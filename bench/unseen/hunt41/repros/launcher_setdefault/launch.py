import os
import subprocess
import sys

env = os.environ.copy()
env.setdefault("PJRT_DEVICE", "TPU")
env["XLA_USE_BF16"] = "1"
sys.exit(subprocess.run([sys.executable, "train.py"], env=env, check=False).returncode)
