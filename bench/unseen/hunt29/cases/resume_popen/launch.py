"""Runs the fit in two legs (the second resumes from the first one's checkpoint), as the preemptible queue does."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
env = dict(os.environ, PJRT_DEVICE="CPU", XLA_DOWNCAST_BF16="1")
for leg in range(2):
    cmd = [sys.executable, os.path.join(HERE, "fit.py"), "--steps", "6", "--ckpt", "ckpt/last.pt"]
    proc = subprocess.Popen(cmd, env=env, cwd=HERE)
    if proc.wait() != 0:
        sys.exit(f"leg {leg} failed")
