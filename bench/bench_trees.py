"""The fixtures of fixtures/trees/ proven in every mode: ``bf16-migrate CASE --mode M --verify`` on
a scratch copy of each case (a ``pyproject.toml`` beside it marks the project), with the verdict
and the wall time of each. CI proves one mode per case, the one its behaviour is about
(tests/test_trees.py); this runs the nine, for the record in bench/RESULTS.md.

Usage (hold the machine's XLA lock)::

    flock /tmp/bfm-xla.lock /work/main/.venv/bin/python bench/bench_trees.py [--steps 12] [CASE ...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREES = ROOT / "fixtures" / "trees"
MODES = ("stochastic", "gpu-compatible", "amp")


def prove(case: str, mode: str, steps: int) -> tuple[str, float, int]:
    """(the verify table's verdict column for the case's scripts, seconds, exit code)."""
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp)
        shutil.copytree(TREES / case, where / case, ignore=shutil.ignore_patterns("expected", "__pycache__"))
        (where / "pyproject.toml").write_text("[project]\nname = 'trees'\nversion = '0'\n")
        start = time.perf_counter()
        cmd = [sys.executable, "-m", "bf16_migrate.cli", case, "--mode", mode, "--verify", "--verify-steps", str(steps)]
        proc = subprocess.run(cmd, cwd=where, capture_output=True, text=True, env=None)
        seconds = time.perf_counter() - start
    rows = [line for line in proc.stdout.splitlines() if line.startswith(f"{case}/") and line.count("|") >= 6]
    verdicts = ", ".join(
        f"{row.split('|')[0].strip()} {row.split('|')[4].strip()} ({row.split('|')[-1].strip()})" for row in rows
    )
    return verdicts or "no verify row", seconds, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument(
        "cases", nargs="*", default=sorted(p.name for p in TREES.iterdir() if (p / "train.py").is_file())
    )
    args = parser.parse_args()
    for case in args.cases:
        for mode in MODES:
            verdicts, seconds, code = prove(case, mode, args.steps)
            print(f"{case:18} {mode:15} exit {code}  {seconds:6.1f} s  {verdicts}", flush=True)


if __name__ == "__main__":
    main()
