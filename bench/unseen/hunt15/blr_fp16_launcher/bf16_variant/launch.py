"""Launch the evidence-maximisation job on the accelerator, half precision on (as the TPU v2 runbook asked)."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main(argv):
    env = dict(os.environ)
    env.update(PJRT_DEVICE=env.get("PJRT_DEVICE", "TPU"), XLA_USE_BF16="1")
    cmd = [sys.executable, os.path.join(HERE, "blr_evidence.py"), *argv]
    print("launching:", " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, cwd=HERE).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
