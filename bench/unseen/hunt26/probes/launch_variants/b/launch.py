import os, subprocess, sys
env = dict(os.environ)
env["XLA_USE_BF16"] = "1"
subprocess.run([sys.executable, "train.py"], env=env, check=True)
