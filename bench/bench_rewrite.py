"""Rewrite-path benchmarks: per-file codemod time and CLI start-up (pre-commit must start fast).

Run: python bench/bench_rewrite.py   (results are recorded by hand in bench/RESULTS.md)
"""

from __future__ import annotations

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


def main() -> None:
    for mode, ms in per_file_ms().items():
        print(f"migrate_source, {mode:15s}: {ms:7.1f} ms per file (median, {len(SCRIPTS)} fixtures)")
    print(f"CLI start-up + one file --check : {cli_startup_ms():7.1f} ms (median of 10)")
    lines = sum(len(s.read_text().splitlines()) for s in SCRIPTS)
    print(f"({lines} lines in {len(SCRIPTS)} fixtures)")


if __name__ == "__main__":
    main()
