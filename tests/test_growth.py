"""The rewrite's cost grows with the work, not faster: the growth is checked, never a time.

A pass per training site over the whole file made a file of many sites cost sites x lines (a
108-line script pasted 93 times took 7.6x the CPU of a quarter of it); a pass per file over the
tree would do the same for trees. Each test measures, in this process, the CPU time (this
process and the children it waited for: the tree's second reader is a forked child) for some
work and for 4x that work, and asks for at most :data:`LIMIT` times as much: linear with slack,
where a quadratic pass gives 6x and more. CPU time, not wall time, so that the other processes
of a shared machine do not count; the rest of the noise is kept out as follows:

- each figure is the least of several runs (a run can only be slowed down: by another process
  sharing the core's caches, by a page fault storm the first time memory grows), the small and
  the large work in turn, so that a slow stretch of the machine hits both;
- one untimed run of each first (the rules, the regular expressions, the file system's cache);
- the garbage collector off while measuring (``migrate_source`` pauses it itself; the tree scan
  does not), so a collection does not land in one figure and not the other;
- work of a second or more per figure, so that the kernel's CPU accounting (in clock ticks for
  the children) is fine enough;
- when the ratio is over the limit, both are measured again (a third time at most) and the
  least figures kept: a slow machine passes on a retry, a quadratic pass fails each time.

A failure prints both figures."""

from __future__ import annotations

import gc
import resource
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.python import migrate_source
from bf16_migrate.scan import scan

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import bench_scale  # noqa: E402  (bench/ is not a package)

LIMIT = 5.0
"""The most the CPU time may grow for 4x the work."""


def _cpu() -> float:
    """CPU seconds (user + system) of this process and of its children waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _growth(small: Callable[[], object], large: Callable[[], object], runs: int = 2) -> tuple[float, float]:
    """The least CPU seconds of ``small()`` and of ``large()`` (see the module docstring)."""
    small(), large()  # untimed: caches
    best = [float("inf"), float("inf")]
    for _attempt in range(3):
        for _ in range(runs):
            for k, work in enumerate((small, large)):
                gc.collect()
                gc.disable()
                try:
                    start = _cpu()
                    work()
                    best[k] = min(best[k], _cpu() - start)
                finally:
                    gc.enable()
        if best[1] <= LIMIT * best[0]:
            break
    return best[0], best[1]


def test_a_file_of_4x_the_training_sites_costs_at_most_5x(tmp_path, monkeypatch):
    """15 and 60 copies of a 108-line legacy training script, names changed (1.6k and 6.6k
    lines): the whole run of ``bf16-migrate --check FILE`` on each (the migration, the patch, the
    findings and their report), in this process."""
    small = "".join(bench_scale.training_site(i) for i in range(15))
    large = "".join(bench_scale.training_site(i) for i in range(60))
    assert large.count("\n") >= 4 * small.count("\n") - 10
    (tmp_path / "small.py").write_text(small)
    (tmp_path / "large.py").write_text(large)
    monkeypatch.chdir(tmp_path)

    def run(name: str) -> Callable[[], object]:
        def check() -> None:
            result = CliRunner().invoke(main, ["--check", "-q", name])
            assert result.exit_code == 1, result.output  # findings: the scripts are migrated

        return check

    first, second = _growth(run("small.py"), run("large.py"))
    assert second <= LIMIT * first, (
        f"4x the lines and the training sites ({small.count(chr(10))} -> {large.count(chr(10))} lines) cost "
        f"{second / first:.1f}x the CPU: {first:.2f} s -> {second:.2f} s (at most {LIMIT}x)"
    )


def test_a_tree_of_4x_the_files_costs_at_most_5x(tmp_path):
    """5,000 and 20,000 files that name no legacy variable (the scan: the walk and the byte
    prefilter, in two processes from 2,000 files), then the same trees with one legacy script
    planted (the scan and its migration)."""
    small = bench_scale.make_tree(tmp_path / "small", 5_000)
    large = bench_scale.make_tree(tmp_path / "large", 20_000)

    def scans(root: Path) -> Callable[[], object]:
        return lambda: [scan([root]) for _ in range(4)]  # a figure of a second or so (see above)

    first, second = _growth(scans(small), scans(large))
    assert second <= LIMIT * first, (
        f"4x the files (5,000 -> 20,000) cost {second / first:.1f}x the CPU to scan: {first:.2f} s -> {second:.2f} s "
        f"(at most {LIMIT}x)"
    )
    for root in (small, large):
        (root / "planted_0").mkdir()
        (root / "planted_0" / "train.py").write_text(bench_scale.training_site(0))

    def migrated(root: Path) -> Callable[[], object]:
        def work() -> None:
            for candidate in scan([root]):
                migrate_source(candidate.path.read_text(), "stochastic", str(candidate.path))

        return work

    first, second = _growth(migrated(small), migrated(large))
    assert second <= LIMIT * first, (
        f"4x the files (5,000 -> 20,000, one legacy script) cost {second / first:.1f}x the CPU: "
        f"{first:.2f} s -> {second:.2f} s (at most {LIMIT}x)"
    )


def test_the_growth_check_catches_a_quadratic_pass():
    """The check itself: work that grows as the square of its size fails it."""

    def work(n: int) -> Callable[[], object]:
        return lambda: sum(i ^ j for i in range(n) for j in range(n))

    first, second = _growth(work(300), work(1200), runs=1)
    assert second > LIMIT * first, (first, second)
