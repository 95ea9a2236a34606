"""Rewrite-path benchmarks: per-file codemod time and CLI start-up (pre-commit must start fast).

Run: python bench/bench_rewrite.py   (results are recorded by hand in bench/RESULTS.md)

``--cpu FILE...`` times one file's migration instead, the issue's per-file cost: the CPU
(``time.process_time``, this process and its threads) and wall time of
``migrate_source(text, MODE, path)``, after ``--warmup`` untimed calls, median of ``--repeat``
calls in one process. With ``--before DIR`` (another checkout, e.g. a ``git worktree`` at the
commit compared with), each file is timed ``--rounds`` times in new processes, that checkout's
and this one's alternating (``PYTHONPATH``), and the medians of the rounds' medians are printed
with their ratio.

     python bench/bench_rewrite.py --cpu fixtures/tiny_transformer/train.py --repeat 60
     python bench/bench_rewrite.py --cpu FILE... --before /path/to/checkout --rounds 5 --repeat 40
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bf16_migrate.python import migrate_source
from bf16_migrate.rules import MODES

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "fixtures").glob("*/train.py"))


def per_file_ms(repeats: int = 20) -> dict[str, float]:
    """Median milliseconds of one migrate_source call, per mode, over all fixtures."""
    out = {}
    for mode in MODES:
        samples = []
        for _ in range(repeats):
            for script in SCRIPTS:
                source = script.read_text()
                start = time.perf_counter()
                migrate_source(source, mode, str(script))
                samples.append((time.perf_counter() - start) * 1000)
        out[mode] = statistics.median(samples)
    return out


def cli_startup_ms(repeats: int = 10) -> float:
    """Median wall milliseconds of `bf16-migrate FILE --check` on one fixture (a new process)."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "bf16_migrate.cli", str(SCRIPTS[0]), "--check"], capture_output=True)
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def file_cpu_ms(path: Path, mode: str, repeat: int, warmup: int) -> tuple[float, float]:
    """Median CPU and wall milliseconds of one ``migrate_source`` call on ``path`` (in this
    process, after ``warmup`` calls)."""
    source = path.read_text()
    for _ in range(warmup):
        migrate_source(source, mode, str(path))
    cpus, walls = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        migrate_source(source, mode, str(path))
        cpus.append((time.process_time() - cpu) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)
    return statistics.median(cpus), statistics.median(walls)


def paired(args: argparse.Namespace) -> None:
    """Each file timed in new processes, ``--before``'s checkout and this one alternating."""
    checkouts = {"before": args.before.resolve(), "now": ROOT}
    for path in args.cpu:
        figures: dict[str, dict[str, list[float]]] = {k: {"cpu": [], "wall": []} for k in checkouts}
        for _ in range(args.rounds):
            for label, checkout in checkouts.items():
                env = dict(os.environ, PYTHONPATH=str(checkout))
                cmd = [sys.executable, __file__, "--cpu", str(path.resolve()), "--mode", args.mode]
                cmd += ["--repeat", str(args.repeat), "--warmup", str(args.warmup), "--one"]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
                cpu, wall = (float(x) for x in out.split())
                figures[label]["cpu"].append(cpu)
                figures[label]["wall"].append(wall)
        med = {k: {f: statistics.median(v) for f, v in fs.items()} for k, fs in figures.items()}
        print(
            f"{path} ({args.mode}, {args.rounds} rounds of {args.repeat}): CPU {med['before']['cpu']:.1f} -> "
            f"{med['now']['cpu']:.1f} ms ({med['now']['cpu'] / med['before']['cpu']:.2f}x), wall "
            f"{med['before']['wall']:.1f} -> {med['now']['wall']:.1f} ms; load {os.getloadavg()[0]:.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cpu", type=Path, nargs="+", help="time one file's migration (see the docstring)")
    parser.add_argument("--mode", default="stochastic", choices=list(MODES))
    parser.add_argument("--repeat", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--before", type=Path, help="--cpu: another checkout, timed alternately with this one")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a round's process
    args = parser.parse_args()
    if args.cpu and args.before:
        paired(args)
        return
    if args.cpu:
        for path in args.cpu:
            cpu, wall = file_cpu_ms(path, args.mode, args.repeat, args.warmup)
            print(f"{cpu:.2f} {wall:.2f}" if args.one else f"{path}: {cpu:.1f} ms CPU, {wall:.1f} ms wall (median)")
        return
    for mode, ms in per_file_ms().items():
        print(f"migrate_source, {mode:15s}: {ms:7.1f} ms per file (median, {len(SCRIPTS)} fixtures)")
    print(f"CLI start-up + one file --check : {cli_startup_ms():7.1f} ms (median of 10)")
    lines = sum(len(s.read_text().splitlines()) for s in SCRIPTS)
    print(f"({lines} lines in {len(SCRIPTS)} fixtures)")


if __name__ == "__main__":
    main()
