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


def prepare(case: Case, where: Path, mode: str | None) -> Path:
    """A copy of the case in ``where``: as written (``mode`` None, the legacy run), or with the
    files its migration in ``mode`` changes (its goldens, ``expected/<mode>/``) in their place."""
    source = FIXTURES / case.case
    shutil.copytree(source, where, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    if mode is not None:
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


def run(case: Case, tree: Path, env: dict[str, str], timeout: float = 900) -> Run:
    """Run the case's commands in ``tree`` (the output directory ``tree/out``) with ``env`` on
    top of this process's environment, the legacy variables taken out of it first, on the XLA CPU
    device."""
    out = tree / "out"
    out.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith("XLA_") and k != "PYTHONPATH"}
    full = {**base, "PJRT_DEVICE": "CPU", **env}
    codes, exceptions, tails = [], [], []
    start = time.perf_counter()
    for command in case.commands:
        argv = [sys.executable, *(str(out) if a == OUT else a for a in command)]
        proc = subprocess.run(argv, cwd=tree, env=full, capture_output=True, text=True, timeout=timeout)
        codes.append(proc.returncode)
        exceptions.append(raised(proc.stderr) if proc.returncode else None)
        tails.append((proc.stdout + proc.stderr)[-3000:])
        if proc.returncode:
            break
    return Run(codes, exceptions, tails, out, time.perf_counter() - start)


@dataclass(frozen=True)
class Tolerance:
    """How close a migrated run's outputs must be to the legacy run's. ``rel``: an array's
    ``||a - b|| / ||b||`` (and a Python number's relative difference); ``metric``: the absolute
    difference of a number in [0, 1] named like a metric (accuracy, AUC: one sample more or
    less right moves them by 1/n)."""

    rel: float
    metric: float


def compare(legacy: Path, migrated_out: Path, outputs: tuple[str, ...], tol: Tolerance) -> list[str]:
    """The differences between the two runs' ``outputs`` beyond ``tol``, one line each (empty:
    the same dtypes and values within the tolerance). A file missing from either run is one."""
    problems: list[str] = []
    for rel in outputs:
        a, b = migrated_out / rel, legacy / rel
        if not b.is_file() or not a.is_file():
            problems.append(f"{rel}: written by the legacy run {b.is_file()}, by the migrated run {a.is_file()}")
            continue
        problems += [f"{rel}: {p}" for p in _compare_file(a, b, tol)]
    return problems


def _compare_file(a: Path, b: Path, tol: Tolerance) -> list[str]:
    suffix = a.suffix
    if suffix == ".npy":
        import numpy as np

        return _values(np.load(a), np.load(b), "", tol)
    if suffix == ".npz":
        import numpy as np

        with np.load(a) as za, np.load(b) as zb:
            return _values(dict(za), dict(zb), "", tol)
    if suffix == ".pt":
        import torch

        return _values(
            torch.load(a, map_location="cpu", weights_only=False),
            torch.load(b, map_location="cpu", weights_only=False),
            "",
            tol,
        )
    if suffix == ".json":
        return _values(json.loads(a.read_text()), json.loads(b.read_text()), "", tol)
    if suffix == ".jsonl":
        la, lb = a.read_text().splitlines(), b.read_text().splitlines()
        if len(la) != len(lb):
            return [f"{len(la)} records, the legacy run {len(lb)}"]
        return [p for k, (x, y) in enumerate(zip(la, lb)) for p in _values(json.loads(x), json.loads(y), f"[{k}]", tol)]
    return _values(_words(a.read_text()), _words(b.read_text()), "", tol)


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


def _values(a, b, where: str, tol: Tolerance) -> list[str]:
    """Differences between a migrated value ``a`` and the legacy one ``b`` (nested)."""
    import numpy as np

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(b, torch.Tensor):
        if not isinstance(a, torch.Tensor):
            return [f"{where}: a {type(a).__name__}, the legacy run a tensor"]
        if a.dtype != b.dtype:
            return [f"{where}: {a.dtype}, the legacy run {b.dtype}"]
        a, b = a.numpy() if a.dtype != torch.bfloat16 else a.float().numpy(), b.numpy()
    if isinstance(b, np.ndarray):
        if not isinstance(a, np.ndarray) or a.dtype != b.dtype or a.shape != b.shape:
            shown = (type(a).__name__, getattr(a, "dtype", None), getattr(a, "shape", None))
            return [f"{where}: {shown}, the legacy run {(type(b).__name__, b.dtype, b.shape)}"]
        if b.dtype.kind in "iub":
            return [] if np.array_equal(a, b) else [f"{where}: integers differ"]
        norm = float(np.linalg.norm(b.astype(np.float64)))
        diff = float(np.linalg.norm(a.astype(np.float64) - b.astype(np.float64)))
        if diff > tol.rel * max(norm, 1e-12):
            return [f"{where}: relative difference {diff / max(norm, 1e-12):.3g} > {tol.rel}"]
        return []
    if isinstance(b, dict):
        if not isinstance(a, dict) or set(a) != set(b):
            return [f"{where}: keys {sorted(map(str, a)) if isinstance(a, dict) else a!r}, the legacy run {sorted(map(str, b))}"]
        return [p for k in b for p in _values(a[k], b[k], f"{where}.{k}", tol)]
    if isinstance(b, (list, tuple)):
        if not isinstance(a, (list, tuple)) or len(a) != len(b):
            return [f"{where}: {len(a) if isinstance(a, (list, tuple)) else a!r} items, the legacy run {len(b)}"]
        return [p for k, (x, y) in enumerate(zip(a, b)) for p in _values(x, y, f"{where}[{k}]", tol)]
    if isinstance(b, bool) or isinstance(b, str) or b is None:
        return [] if a == b else [f"{where}: {a!r}, the legacy run {b!r}"]
    if isinstance(b, (int, float)):
        if not isinstance(a, (int, float)):
            return [f"{where}: {a!r}, the legacy run {b!r}"]
        if isinstance(b, int) and isinstance(a, int):
            return [] if a == b else [f"{where}: {a}, the legacy run {b}"]
        if _is_metric(where) and 0 <= b <= 1:
            return [] if abs(a - b) <= tol.metric else [f"{where}: {a:.6g}, the legacy run {b:.6g} (> {tol.metric})"]
        if math.isclose(a, b, rel_tol=tol.rel, abs_tol=tol.rel * 1e-3):
            return []
        return [f"{where}: {a:.6g}, the legacy run {b:.6g} (relative > {tol.rel})"]
    return [] if a == b else [f"{where}: {a!r}, the legacy run {b!r}"]


def _is_metric(where: str) -> bool:
    return bool(re.search(r"(accuracy|auc|acc|recall|precision)$", where))
