# hunt26 repro (dpsgd_func/launch.py): the switch set in the env dict handed to subprocess.run
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
subprocess.run([sys.executable, os.path.join(here, "train.py")], env={**os.environ, "XLA_USE_BF16": "1"}, check=True)
