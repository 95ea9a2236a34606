"""Run a fixture's script to its end, and compare what two runs left on the host.

Used by tests/test_run_to_end.py and bench/bench_run_to_end.py. A run is one or more commands
(``python SCRIPT ARGS``) in a copy of the case, in its own process each (torch-xla reads the legacy
variables once per process); its outputs are the files it writes into the output directory given on
its command line. Two runs' outputs are compared file by file: NumPy arrays, checkpoints read back
with ``torch.load``, JSON metrics and text, each value's dtype exactly and its numbers within a
tolerance (:class:`Tolerance`).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
DIAGNOSTICS = "diagnostics.txt"
OUT = "{out}"
"""Replaced, in a command's arguments, by the run's output directory."""


@dataclass(frozen=True)
class Case:
    """A fixture run to its end: ``case`` (its directory under fixtures/), ``commands`` (a script
    of the case and its arguments, run in order; :data:`OUT` is the output directory),
    ``legacy_env`` (what its launcher sets for the legacy run; a script's own writes need nothing),
    ``outputs`` (the files compared, relative to the output directory)."""

    case: str
    commands: tuple[tuple[str, ...], ...]
    legacy_env: dict[str, str] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    migrated_args: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(mode, arguments) the migration's launcher adds to the first command in that mode (amp through
    the script's own autocast flag: its launchers pass ``--use_amp`` where they set the variable)."""
    rankings: tuple[tuple[str, str], ...] = ()
    """(key of a ranking, key of the scores it ranks) in the records of the outputs: a ranking is
    compared through the legacy run's scores of what it ranks, so that items the legacy run scored
    the same (ties) may come in another order."""

    @property
    def name(self) -> str:
        return self.case.replace("/", "-")


@dataclass
class Run:
    """What one run did: each command's return code, the exception it ended with (its type
    name, or the last line of its error output when it ended without a traceback), its output
    tail, where it wrote, and how long it took (seconds)."""

    returncodes: list[int]
    raised: list[str | None]
    tails: list[str]
    out: Path
    seconds: float

    @property
    def failed(self) -> str | None:
        """The first command's failure, as ``"<exception>"``, or None when every command ran."""
        for code, raised in zip(self.returncodes, self.raised):
            if code != 0:
                return raised or f"exit {code}"
        return None


_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit|Interrupt|Warning))\b")


def raised(stderr: str) -> str | None:
    """The type name of the exception a Python process ended with (the last line of its
    traceback), else its last non-empty line, else None."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if not lines:
        return None
    if "Traceback (most recent call last):" in stderr:
        for line in reversed(lines):
            found = _EXCEPTION.match(line.strip())
            if found:
                return found.group(1)
    return lines[-1].strip()


REFERENCE = "reference"
"""The FP32 reference run: the legacy writes removed, nothing added (verify's), the baseline of a
mode whose ``[MODE.verify]`` says ``baseline = "reference"`` (amp)."""


def prepare(case: Case, where: Path, mode: str | None) -> Path:
    """A copy of the case in ``where``: as written (``mode`` None, the legacy run), with the files
    its migration in ``mode`` changes (its goldens, ``expected/<mode>/``) in their place, or for
    :data:`REFERENCE` migrated here with the legacy writes removed (``bf16_migrate.rules.REFERENCE``)."""
    source = FIXTURES / case.case
    shutil.copytree(source, where, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    if mode == REFERENCE:
        from bf16_migrate.project import migrate_paths
        from bf16_migrate.rules import REFERENCE as REFERENCE_MODE

        outcome = migrate_paths([where], REFERENCE_MODE, write=True)
        assert not outcome.errors, outcome.errors
    elif mode is not None:
        golden = source / "expected" / mode
        for path in sorted(golden.rglob("*")):
            if path.is_file() and path.name != DIAGNOSTICS:
                target = where / path.relative_to(golden)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
    return where


def migrated(case: Case, mode: str) -> bool:
    """Whether the case's migration in ``mode`` changes a file (a kept switch changes none)."""
    golden = FIXTURES / case.case / "expected" / mode
    return any(p.is_file() and p.name != DIAGNOSTICS for p in golden.rglob("*"))


def run(case: Case, tree: Path, env: dict[str, str], mode: str | None = None, timeout: float = 900) -> Run:
    """Run the case's commands in ``tree`` (the output directory ``tree/out``) with ``env`` on
    top of this process's environment, the legacy variables taken out of it first, on the XLA CPU
    device; the migration in ``mode`` with the arguments its launchers add (:attr:`Case.migrated_args`)."""
    out = tree / "out"
    out.mkdir()
    from bf16_migrate.rules import variable_names

    legacy = set(variable_names())
    base = {k: v for k, v in os.environ.items() if k not in legacy and k != "PYTHONPATH"}
    full = {**base, "PJRT_DEVICE": "CPU", **env}
    codes, exceptions, tails = [], [], []
    start = time.perf_counter()
    added = dict(case.migrated_args).get(mode, ()) if mode is not None else ()
    for k, command in enumerate(case.commands):
        argv = [sys.executable, *(str(out) if a == OUT else a for a in command), *(added if k == 0 else ())]
        proc = subprocess.run(argv, cwd=tree, env=full, capture_output=True, text=True, timeout=timeout)
        codes.append(proc.returncode)
        exceptions.append(raised(proc.stderr) if proc.returncode else None)
        tails.append((proc.stdout + proc.stderr)[-3000:])
        if proc.returncode:
            break
    return Run(codes, exceptions, tails, out, time.perf_counter() - start)


@dataclass(frozen=True)
class Tolerance:
    """How close a migrated run's outputs must be to its baseline's (the legacy run's; amp: the FP32
    reference run's), as verify holds its losses: within ``gap_factor`` x the precision gap (how far
    the same output of the legacy run and of the FP32 reference run are apart), and never closer
    than the floors. ``rel``: the floor of a relative difference (an array's or a list of numbers'
    ``||a - b|| / ||b||``, a number's against the largest number of its record: a histogram's mean
    near 0 against its standard deviation); ``metric``: the floor of the absolute difference of a
    number in [0, 1] named like a metric, or of a histogram's cumulative counts (one sample more or
    less right, or across a bin edge, moves them by 1/n, also allowed)."""

    rel: float
    metric: float
    gap_factor: float = 2.0


@dataclass(frozen=True)
class Difference:
    """Where two runs' outputs differ (``where``: the file and the path in it), by how much
    (``amount``: relative, or absolute for a metric; ``math.inf`` for a dtype, a shape, a key or a
    string that differs), what is compared (``detail``), and the difference one sample makes
    (``one``: 1/n for a histogram's counts, else 0)."""

    where: str
    amount: float
    detail: str
    metric: bool = False
    one: float = 0.0

    def limit(self, tol: Tolerance, gap: float = 0.0) -> float:
        """The largest amount allowed: the floor, ``tol.gap_factor`` x the precision gap ``gap``,
        plus one sample."""
        return max(tol.metric if self.metric else tol.rel, tol.gap_factor * gap) + self.one


def differences(legacy: Path, migrated_out: Path, outputs: tuple[str, ...], rankings=()) -> list[Difference]:
    """Every difference between the two runs' ``outputs``, the worst of each file first. A file
    missing from either run is one, of infinite amount. ``rankings``: :attr:`Case.rankings`."""
    found: list[Difference] = []
    for rel in outputs:
        a, b = migrated_out / rel, legacy / rel
        if not b.is_file() or not a.is_file():
            found.append(
                Difference(rel, math.inf, f"written by the legacy run {b.is_file()}, by the migrated {a.is_file()}")
            )
            continue
        diffs = [replace_where(d, rel) for d in _compare_file(a, b, dict(rankings))]
        found += sorted(diffs, key=lambda d: -d.amount)
    return found


def compare(
    base: Path, migrated_out: Path, case: Case, tol: Tolerance, gap: tuple[Path, Path] | None = None
) -> list[str]:
    """The differences from the baseline's outputs beyond their limits (:meth:`Difference.limit`),
    one line each (empty: the same dtypes, and values within the limits). ``gap``: the output
    directories of the legacy run and of the FP32 reference run, whose differences are the
    precision gap of each value, or of a file's discrete values together (none given: the floors
    alone)."""
    gaps: dict[str, float] = {}
    for d in differences(*gap, case.outputs, case.rankings) if gap else ():
        # a value's own gap; for a discrete one (a metric, a histogram's counts, where one sample
        # moves it) the file's largest, since where a sample falls at one record is chance
        key = _file_metric(d) if d.metric else d.where
        gaps[key] = max(gaps.get(key, 0.0), d.amount)
    found = differences(base, migrated_out, case.outputs, case.rankings)
    limits = [(d, d.limit(tol, gaps.get(_file_metric(d) if d.metric else d.where, 0.0))) for d in found]
    return [f"{d.where}: {d.detail} (limit {limit:.3g})" for d, limit in limits if d.amount > limit]


def _file_metric(d: Difference) -> str:
    return d.where.split(":", 1)[0] + ":metric"


def worst(legacy: Path, migrated_out: Path, case: Case) -> dict[str, float]:
    """The largest difference of each output file (metrics apart: ``<file>:metric``)."""
    out: dict[str, float] = {}
    for d in differences(legacy, migrated_out, case.outputs, case.rankings):
        key = d.where.split(":", 1)[0] + (":metric" if d.metric else "")
        out[key] = max(out.get(key, 0.0), d.amount)
    return out


def replace_where(d: Difference, rel: str) -> Difference:
    return Difference(f"{rel}:{d.where}", d.amount, d.detail, d.metric)


def _compare_file(a: Path, b: Path, rankings: dict[str, str]) -> list[Difference]:
    suffix = a.suffix
    if suffix == ".npy":
        import numpy as np

        return _values(np.load(a), np.load(b), "", 0.0, rankings)
    if suffix == ".npz":
        import numpy as np

        with np.load(a) as za, np.load(b) as zb:
            return _values(dict(za), dict(zb), "", 0.0, rankings)
    if suffix == ".pt":
        import torch

        return _values(
            torch.load(a, map_location="cpu", weights_only=False),
            torch.load(b, map_location="cpu", weights_only=False),
            "",
            0.0,
            rankings,
        )
    if suffix == ".json":
        return _values(json.loads(a.read_text()), json.loads(b.read_text()), "", 0.0, rankings)
    if suffix == ".jsonl":
        la, lb = a.read_text().splitlines(), b.read_text().splitlines()
        if len(la) != len(lb):
            return [Difference("", math.inf, f"{len(la)} records, the legacy run {len(lb)}")]
        return [
            d
            for k, (x, y) in enumerate(zip(la, lb))
            for d in _values(json.loads(x), json.loads(y), f"[{k}]", 0.0, rankings)
        ]
    return _values(_words(a.read_text()), _words(b.read_text()), "", 0.0, rankings)


def _words(text: str) -> list[object]:
    """A text as its words, numbers as floats."""
    out: list[object] = []
    for word in re.split(r"[\s,()]+", text):
        try:
            out.append(float(word))
        except ValueError:
            if word:
                out.append(word)
    return out


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _array_values(a, b, where: str) -> list[Difference]:
    """:func:`_values` of a NumPy array ``b``: the relative difference of the norms (float64), or
    one infinite difference when ``a`` is no array of the same dtype and shape."""
    import numpy as np

    if not isinstance(a, np.ndarray) or a.dtype != b.dtype or a.shape != b.shape:
        shown = (type(a).__name__, str(getattr(a, "dtype", "")), getattr(a, "shape", None))
        return [Difference(where, math.inf, f"{shown}, the legacy run {(str(b.dtype), b.shape)}")]
    norm = float(np.linalg.norm(b.astype(np.float64)))
    diff = float(np.linalg.norm(a.astype(np.float64) - b.astype(np.float64)))
    amount = diff / norm if norm else (0.0 if diff == 0 else math.inf)
    return [Difference(where, amount, f"{b.dtype}{list(b.shape)}: relative difference {amount:.3g}")] if diff else []


def _dict_values(a, b: dict, where: str, rankings: dict[str, str]) -> list[Difference]:
    """:func:`_values` of a dict ``b``, key by key (a ranking, a histogram, or a value scaled by
    the largest number of ``b``); ``a`` may have keys ``b`` has not (FP32 master weights)."""
    if not isinstance(a, dict) or not set(b) <= set(a):  # a key the mode adds (FP32 master weights) is allowed
        keys = sorted(map(str, a)) if isinstance(a, dict) else type(a).__name__
        return [Difference(where, math.inf, f"keys {keys}, the legacy run {sorted(map(str, b))}")]
    record = max([abs(v) for v in b.values() if _number(v)], default=0.0)
    found = []
    for k in b:
        if k in rankings and rankings[k] in b:
            found += _ranking(a[k], b[k], b[rankings[k]], f"{where}.{k}")
        elif "count" in str(k) and isinstance(b[k], list) and b[k] and all(isinstance(x, int) for x in b[k]):
            found += _histogram(a[k], b[k], f"{where}.{k}")
        else:
            found += _values(a[k], b[k], f"{where}.{k}", record, rankings)
    return found


def _values(a, b, where: str, scale: float, rankings: dict[str, str]) -> list[Difference]:
    """Differences between a migrated value ``a`` and the legacy one ``b`` (nested); ``scale``:
    the largest number of the record ``b`` belongs to; ``rankings``: :attr:`Case.rankings`. A
    list of integers under a key naming counts (a histogram's) is compared as a distribution: the
    largest difference of the cumulative fractions, bins that noise moved a value across."""
    import numpy as np

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(b, torch.Tensor):
        if not isinstance(a, torch.Tensor) or a.dtype != b.dtype:
            return [Difference(where, math.inf, f"{getattr(a, 'dtype', type(a).__name__)}, the legacy run {b.dtype}")]
        a, b = a.numpy(), b.numpy()
    if isinstance(b, (list, tuple)) and b and all(_number(x) for x in b):
        if not (isinstance(a, (list, tuple)) and len(a) == len(b) and all(_number(x) for x in a)):
            return [Difference(where, math.inf, f"{a!r:.80}, the legacy run {len(b)} numbers")]
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if isinstance(b, np.ndarray):
        return _array_values(a, b, where)
    if isinstance(b, dict):
        return _dict_values(a, b, where, rankings)
    if isinstance(b, (list, tuple)):
        if not isinstance(a, (list, tuple)) or len(a) != len(b):
            return [
                Difference(
                    where, math.inf, f"{len(a) if isinstance(a, (list, tuple)) else a!r} items, the legacy run {len(b)}"
                )
            ]
        return [d for k, (x, y) in enumerate(zip(a, b)) for d in _values(x, y, f"{where}[{k}]", scale, rankings)]
    if _number(b):
        if not _number(a):
            return [Difference(where, math.inf, f"{a!r}, the legacy run {b!r}")]
        if a == b:
            return []
        if _is_metric(where) and 0 <= b <= 1:
            return [Difference(where, abs(a - b), f"{a:.6g}, the legacy run {b:.6g}", metric=True)]
        amount = abs(a - b) / max(abs(b), scale)
        return [Difference(where, amount, f"{a:.6g}, the legacy run {b:.6g}: relative difference {amount:.3g}")]
    return [] if a == b else [Difference(where, math.inf, f"{a!r}, the legacy run {b!r}")]


def _is_metric(where: str) -> bool:
    return bool(re.search(r"(accuracy|auc|acc|recall|precision)$", where))


def _ranking(a, b, scores, where: str) -> list[Difference]:
    """A migrated ranking ``a`` against the legacy ``b``, through the legacy ``scores`` of what they
    rank: position by position, the difference of the legacy scores of the two items ranked there,
    relative to the largest score (0 where the items are the same or were tied)."""
    if not (isinstance(a, list) and len(a) == len(b) and all(isinstance(i, int) and 0 <= i < len(scores) for i in a)):
        return [Difference(where, math.inf, f"{a!r:.80}, the legacy run {b!r:.80}")]
    scale = max(abs(s) for s in scores) or 1.0
    amount = max(abs(scores[i] - scores[j]) for i, j in zip(a, b)) / scale
    return (
        [Difference(where, amount, f"ranks {a}, the legacy run {b}: legacy scores {amount:.3g} apart")]
        if amount
        else []
    )


def _histogram(a, b, where: str) -> list[Difference]:
    """Histogram counts: the largest difference of the cumulative fractions (Kolmogorov-Smirnov)."""
    if not (isinstance(a, list) and len(a) == len(b) and all(isinstance(x, int) for x in a)) or sum(a) != sum(b):
        return [Difference(where, math.inf, f"{a!r:.80}, the legacy run {b!r:.80}")]
    total, ca, cb, amount = sum(b) or 1, 0, 0, 0.0
    for x, y in zip(a, b):
        ca, cb = ca + x, cb + y
        amount = max(amount, abs(ca - cb) / total)
    return (
        [Difference(where, amount, f"cumulative counts {amount:.3g} apart", metric=True, one=1 / total)]
        if amount
        else []
    )
