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

``--floor FILE...`` times each stage alone instead (median CPU of ``--repeat`` calls, the
collector off as in a migration): CPython's compile, libcst's parse, libcst's own metadata
providers for what the codemod reads, the codemod's :class:`FileContext` for the same, one
rendering of the module, and the whole ``migrate_source``: what libcst's parse and walks leave.

     python bench/bench_rewrite.py --floor fixtures/tiny_transformer/train.py --repeat 30
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import libcst as cst
from libcst.metadata import (
    ExpressionContextProvider,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    ScopeProvider,
)

from bf16_migrate.python import migrate_source
from bf16_migrate.python.context import FileContext
from bf16_migrate.rules import MODES, load_rules

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


def floor_ms(path: Path, mode: str, repeat: int) -> dict[str, float]:
    """Median CPU milliseconds of each stage of a migration of ``path`` timed alone (see the
    module docstring's ``--floor``)."""
    source = path.read_text()
    migrate_source(source, mode, str(path))  # the first call's one-time costs left out
    module = cst.parse_module(source)
    rules = load_rules()
    providers = [PositionProvider, ExpressionContextProvider, ScopeProvider, ParentNodeProvider]
    stages = {
        "CPython's compile to an AST": lambda: compile(source, str(path), "exec", flags=0x400, dont_inherit=True),
        "libcst.parse_module": lambda: cst.parse_module(source),
        "libcst's providers (positions, contexts, scopes, parents)": lambda: MetadataWrapper(
            module, unsafe_skip_copy=True
        ).resolve_many(providers),
        "FileContext (the same, and the index)": lambda: FileContext(
            str(path), MetadataWrapper(module, unsafe_skip_copy=True), rules, source=source
        ),
        "one rendering (module.code)": lambda: module.code,
        "migrate_source": lambda: migrate_source(source, mode, str(path)),
    }
    out = {}
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for name, stage in stages.items():
            cpus = []
            for _ in range(repeat):
                cpu = time.process_time()
                stage()
                cpus.append((time.process_time() - cpu) * 1000)
            out[name] = statistics.median(cpus)
    finally:
        if was_enabled:
            gc.enable()
    return out


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
    parser.add_argument("--floor", type=Path, nargs="+", help="time each stage alone (see the docstring)")
    args = parser.parse_args()
    if args.floor:
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))  # libcst's providers recurse
        for path in args.floor:
            for name, ms in floor_ms(path, args.mode, args.repeat).items():
                print(f"{path}: {name}: {ms:.1f} ms CPU (median of {args.repeat})")
        return
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
