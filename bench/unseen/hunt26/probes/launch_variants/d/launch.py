import os, subprocess, sys
os.environ["XLA_USE_BF16"] = "1"
subprocess.run([sys.executable, "train.py"], check=True)
