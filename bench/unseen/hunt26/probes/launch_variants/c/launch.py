import os, subprocess, sys
env = os.environ.copy()
env.update(XLA_USE_BF16="1")
subprocess.run([sys.executable, "train.py"], env=env, check=True)
