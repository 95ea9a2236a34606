"""Sweep launcher: one training process per noise multiplier, each with the device env it needs."""
import itertools
import os
import subprocess
import sys

SWEEP = {"noise": [0.8, 1.1], "clip": [1.0]}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    failures = 0
    for noise, clip in itertools.product(SWEEP["noise"], SWEEP["clip"]):
        out = os.path.join("out", f"dp_n{noise}_c{clip}")
        cmd = [sys.executable, os.path.join(here, "train_dp.py"), "--noise", str(noise), "--clip", str(clip), "--out", out]
        cmd += sys.argv[1:]
        print("launch:", " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, env={**os.environ, "XLA_USE_BF16": "1", "PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "TPU")})
        failures += proc.returncode != 0
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
