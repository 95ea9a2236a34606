"""Start the CTC keyword trainer with the precision switches the TPU pod used."""
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv):
    env = {**os.environ, "XLA_USE_BF16": "1", "PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "TPU")}
    cmd = [sys.executable, str(HERE / "train_ctc.py"), "--steps", "12", *argv]
    print("launching:", " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
