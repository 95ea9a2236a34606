"""Wall time of `bf16-migrate verify` against running the scripts by hand, one after the other.

For each fixture (default: mlp_regression and cnn_trainer) and each repetition:

* ``verify``: ``bf16-migrate verify fixtures/CASE/train.py --steps N`` in a new process (the
  migration, three runs - legacy, migrated, FP32 reference - at most ``default_jobs`` at once,
  the graph dump, the report);
* ``by hand``: ``python fixtures/CASE/train.py --steps N`` (the legacy script, switch in force),
  then ``python fixtures/CASE/expected/stochastic/train.py --steps N`` (the migrated script), one
  after the other, with ``PJRT_DEVICE=CPU``: what a user does without the tool (and still has
  no comparison, no reference, no evidence);
* ``verify, no graph dump``: ``verify_script(..., graphs=False)`` in a new process, to show the
  cost of ``XLA_SAVE_TENSORS_FILE``.

Prints one line per measurement and a median table (seconds). Usage::

    /work/venv/bin/python bench/bench_verify.py [--steps 20] [--repeat 3] [CASE ...]

The machine has 2 cores; another process using them makes every figure slower, so compare
figures from one invocation only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=["mlp_regression", "cnn_trainer"])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    env = {**os.environ, "PJRT_DEVICE": os.environ.get("PJRT_DEVICE", "CPU")}
    py = sys.executable
    results: dict[tuple[str, str], list[float]] = {}
    for case in args.cases:
        script = ROOT / "fixtures" / case / "train.py"
        migrated = ROOT / "fixtures" / case / "expected" / "stochastic" / "train.py"
        for rep in range(args.repeat):
            t, rc = _timed([py, "-m", "bf16_migrate.cli", "verify", str(script), "--steps", str(args.steps)], env, ROOT)
            results.setdefault((case, "verify"), []).append(t)
            print(f"{case} rep {rep + 1} verify: {t:.1f} s (exit {rc})", flush=True)
            t1, rc1 = _timed([py, str(script), "--steps", str(args.steps)], env, script.parent)
            t2, rc2 = _timed([py, str(migrated), "--steps", str(args.steps)], env, script.parent)
            results.setdefault((case, "by hand"), []).append(t1 + t2)
            print(
                f"{case} rep {rep + 1} by hand: {t1:.1f} + {t2:.1f} = {t1 + t2:.1f} s (exit {rc1}, {rc2})", flush=True
            )
            code = (
                "import sys; from bf16_migrate.verify import verify_script; "
                f"r = verify_script(sys.argv[1], steps={args.steps}, graphs=False); sys.exit(0 if r.passed else 1)"
            )
            t, rc = _timed([py, "-c", code, str(script)], env, ROOT)
            results.setdefault((case, "verify, no graph dump"), []).append(t)
            print(f"{case} rep {rep + 1} verify without graph dump: {t:.1f} s (exit {rc})", flush=True)
    print()
    print(f"| fixture | what | median wall time over {args.repeat} (s) |")
    print("|---|---|---|")
    for (case, what), times in results.items():
        print(f"| {case} | {what} | {statistics.median(times):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
