"""The host outputs of a run (the files it wrote), read back and compared with another run's.

run.py's "to the end" check runs a case's legacy script (switch in force) and its rewritten script,
each to completion in its own process, and compares what each wrote to disk. Under the switch every
floating tensor that left the device was float32: so a file's *structure* (names, shapes, dtypes) must
be the legacy run's exactly, and its *values* equal within bf16 noise.

Files are read by their suffix:

- ``.npy``, ``.npz``: NumPy's loader (``allow_pickle=False``); one array per name;
- ``.pt``, ``.pth``, ``.ckpt``, ``.bin``: ``torch.load(map_location="cpu", weights_only=False)`` (our own
  runs' files), walked through dicts, lists and tuples; a tensor keeps its torch dtype (``bfloat16``
  has no NumPy dtype), its values are read as float64;
- ``.json``, ``.jsonl`` (one document per line): numbers, and lists of numbers as arrays; strings,
  booleans and nulls compared exactly;
- ``.csv``: ``csv.reader``; a cell that parses as a float is a number, any other cell text;
- anything else: its bytes.

A *leaf* is one array (with its dtype, or "number" for JSON/CSV numbers) or one other value at a
path inside the file (``model/head.weight``, ``[3]/accuracy``, ``row 7/col 2``).

The relative difference of two values is verify's: ``|a - b| / max(|b|, 1% of the largest |b| of
the leaf)`` (the 1% keeps a value near 0 from blowing it up); 0 where both are 0.

*bf16 numbers*: what left the device under the switch was float32 holding bf16-rounded values, so a
float32 array the legacy run wrote from the device holds only bf16 numbers (float32 values whose low 16
bits are zero), and the same array from a faithful bf16 migration does too; from a computation that ran
in f32 on the device (an EMA copy left FP32, an accumulator made f32) it does not. ``compare_file`` with
``bf16_contract`` names the float32 arrays (16 values or more, not all integers) that hold only bf16
numbers in the comparison run's file and not in ours. This holds only where XLA rounds as the program
says: by default (``xla_allow_excess_precision``) it may drop a bf16 rounding that a ``.float()`` in the
same graph undoes, so run.py runs every script to the end with that flag off. Arrays the host computes
from bf16 numbers can hold bf16 numbers too (``np.histogram``'s edges between two bf16 numbers lie on a
grid bf16 often holds): a case names them (``host``, patterns as ``ignore``'s) and they are not asked.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

TORCH_SUFFIXES = (".pt", ".pth", ".ckpt", ".bin")

# Values within bf16 noise (one bf16 step is 2**-8 to 2**-7 of a value): the median relative difference
# at most TOL_MEDIAN and at most TOL_FAR_SHARE of the values more than TOL_FAR apart (a text cell that
# differs, such as a predicted label, counts as one far value). run.py widens the two limits, file by
# file, to the drift a run may have after many updates (FileComparison.limits). Checked on the cases'
# hand migrations and FP32 controls: RESULTS.md, "To the end".
TOL_MEDIAN = 2.0**-8
TOL_FAR = 2.0**-5
TOL_FAR_SHARE = 0.05
# The bf16-number check reads float32 arrays of at least this many values (a short list of host-computed
# numbers, three quantiles say, can be bf16 numbers by chance: ties of bf16 values interpolate exactly).
BF16_MIN_VALUES = 16


def bf16_numbers(values: np.ndarray) -> np.ndarray:
    """Which of VALUES (any float array) are bf16 numbers: float32 values whose low 16 bits are zero
    (bfloat16 is the upper half of float32: sign, 8 exponent bits, 7 mantissa bits)."""
    f32 = np.asarray(values).astype(np.float32)
    exact = f32.astype(np.float64) == np.asarray(values, np.float64)  # a value float32 cannot hold is not one
    return exact & ((f32.view(np.uint32) & 0xFFFF) == 0)


def speaks_bf16(leaf: Leaf) -> bool:
    """Whether LEAF is a float32 array of BF16_MIN_VALUES values or more, not all integers, holding only bf16
    numbers: what a device tensor under the switch (or in bf16) gave back to the host."""
    if leaf.dtype != "float32" or leaf.values is None or leaf.values.size < BF16_MIN_VALUES:
        return False
    v = leaf.values
    return bool(bf16_numbers(v).all() and not (np.isfinite(v) & (v == np.round(v))).all())


@dataclass
class Leaf:
    """One array of a file (dtype: numpy/torch dtype name, or "number") or one other value (dtype None)."""

    dtype: str | None
    shape: tuple[int, ...] = ()
    values: np.ndarray | None = None  # float64 copy of the array's values
    value: Any = None  # a non-numeric leaf


def read_leaves(path: Path) -> dict[str, Leaf]:
    """The leaves of the file at PATH, by their path inside it. Raises what the reader raises."""
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return {"": _array_leaf(np.load(path, allow_pickle=False))}
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as z:
            return {name: _array_leaf(z[name]) for name in z.files}
    if suffix in TORCH_SUFFIXES:
        import torch  # only here: the rest of the benchmark does not need it

        out: dict[str, Leaf] = {}
        _walk(torch.load(path, map_location="cpu", weights_only=False), "", out)
        return out
    if suffix == ".json":
        out = {}
        _walk(json.loads(path.read_text()), "", out)
        return out
    if suffix == ".jsonl":
        out = {}
        for i, line in enumerate(path.read_text().splitlines()):
            if line.strip():
                _walk(json.loads(line), f"line {i + 1}", out)
        return out
    if suffix == ".csv":
        out = {}
        with open(path, newline="") as f:
            for r, row in enumerate(csv.reader(f)):
                for c, cell in enumerate(row):
                    out[f"row {r}/col {c}"] = _csv_leaf(cell)
        return out
    return {"": Leaf(None, value=path.read_bytes())}


def _array_leaf(a: np.ndarray) -> Leaf:
    if a.dtype.kind in "biuf":
        return Leaf(str(a.dtype), tuple(a.shape), a.astype(np.float64))
    return Leaf(str(a.dtype), tuple(a.shape), None, a.tolist())


def _csv_leaf(cell: str) -> Leaf:
    try:
        x = float(cell)
    except ValueError:
        return Leaf(None, value=cell)
    return Leaf("number", (), np.array(x))


def _walk(obj: Any, path: str, out: dict[str, Leaf]) -> None:
    """Leaves of a loaded object: tensors, arrays, lists of numbers as arrays; containers walked."""
    join = lambda k: f"{path}/{k}" if path else str(k)
    if type(obj).__module__.startswith("torch") and hasattr(obj, "is_complex"):  # a tensor or a Parameter
        t = obj.detach()
        dtype = str(t.dtype).replace("torch.", "")
        if t.is_complex():
            out[path] = Leaf(dtype, tuple(t.shape), None, t.tolist())
        else:
            out[path] = Leaf(dtype, tuple(t.shape), t.double().numpy())
    elif isinstance(obj, np.ndarray):
        out[path] = _array_leaf(obj)
    elif isinstance(obj, bool) or obj is None or isinstance(obj, str | bytes):
        out[path] = Leaf(None, value=obj)
    elif isinstance(obj, int | float | np.number):
        out[path] = Leaf("number", (), np.array(float(obj)))
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _walk(v, join(k), out)
    elif isinstance(obj, list | tuple):
        if obj and all(isinstance(x, int | float) and not isinstance(x, bool) for x in obj):
            out[path] = Leaf("number", (len(obj),), np.array(obj, dtype=np.float64))
        elif obj and all(isinstance(x, list) for x in obj) and _numeric_matrix(obj):
            a = np.array(obj, dtype=np.float64)
            out[path] = Leaf("number", tuple(a.shape), a)
        else:
            for i, v in enumerate(obj):
                _walk(v, join(f"[{i}]"), out)
    else:
        out[path] = Leaf(None, value=repr(obj))


def _numeric_matrix(rows: Sequence) -> bool:
    width = len(rows[0])
    return all(len(r) == width and all(isinstance(x, int | float) and not isinstance(x, bool) for x in r) for r in rows)


def rel_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise |a - b| / max(|b|, 1% of max |b|); 0 where a == b (NaN == NaN, inf == inf included)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    finite_b = np.abs(b[np.isfinite(b)])
    floor = 0.01 * (finite_b.max() if finite_b.size else 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.abs(a - b) / np.maximum(np.abs(b), floor)
    d = np.where(same, 0.0, d)
    return np.where(np.isnan(d), np.inf, d)


@dataclass
class FileComparison:
    """How one output file of a run compares with the same file of the comparison run."""

    path: str
    problems: list[str] = field(default_factory=list)  # structure: missing, extra, dtype, shape
    values: int = 0
    exact: int = 0
    far: int = 0  # values more than TOL_FAR apart (text that differs included)
    texts: list[str] = field(default_factory=list)  # a few of the text values that differ
    median_rel: float = 0.0
    max_rel: float = 0.0
    worst: str = ""  # the leaf holding max_rel
    not_bf16: list[str] = field(default_factory=list)  # bf16_contract: leaves f32 in ours, bf16 in theirs
    limits: tuple[float, float] = (TOL_MEDIAN, TOL_FAR_SHARE)  # median and far share allowed (run.py widens)

    def within_tolerance(self) -> bool:
        median, far_share = self.limits
        return not self.values or (self.median_rel <= median and self.far <= far_share * self.values)

    def far_share(self) -> float:
        return self.far / self.values if self.values else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "problems": self.problems,
            "values": self.values,
            "exact": self.exact,
            "far": self.far,
            "texts": self.texts,
            "within_tolerance": self.within_tolerance(),
            "median_rel": _round(self.median_rel),
            "max_rel": _round(self.max_rel),
            "worst": self.worst,
            "not_bf16": self.not_bf16,
            "limits": [_round(x) for x in self.limits],
        }


def _round(x: float) -> float | str:
    return "inf" if math.isinf(x) else float(f"{x:.3g}")


def compare_file(
    path: str,
    ours: dict[str, Leaf],
    theirs: dict[str, Leaf],
    ignore: tuple[str, ...] = (),
    limit: int = 6,
    bf16_contract: bool = False,
    host: tuple[str, ...] = (),
) -> FileComparison:
    """OURS (the run judged) against THEIRS (the comparison run) for the file at PATH; leaves whose
    "PATH:LEAF" matches a pattern of IGNORE (fnmatch: a wall time, a date) are left out. BF16_CONTRACT:
    name in ``not_bf16`` the leaves THEIRS holds as bf16 numbers (speaks_bf16) and OURS does not, leaves
    matching a pattern of HOST (computed on the host) left out."""
    fc = FileComparison(path)
    kept = {n for n in set(ours) | set(theirs) if not any(fnmatch.fnmatchcase(f"{path}:{n}", p) for p in ignore)}
    ours = {n: v for n, v in ours.items() if n in kept}
    theirs = {n: v for n, v in theirs.items() if n in kept}
    for name in sorted(set(theirs) - set(ours))[:limit]:
        fc.problems.append(f"{name or '(file)'}: missing")
    for name in sorted(set(ours) - set(theirs))[:limit]:
        fc.problems.append(f"{name or '(file)'}: not in the comparison run's file")
    diffs: list[np.ndarray] = []
    worst = -1.0
    for name in sorted(set(ours) & set(theirs)):
        a, b = ours[name], theirs[name]
        label = name or "(file)"
        if a.dtype != b.dtype:
            fc.problems.append(f"{label}: dtype {b.dtype} -> {a.dtype}")
        if a.shape != b.shape:
            fc.problems.append(f"{label}: shape {b.shape} -> {a.shape}")
            continue
        if a.values is None or b.values is None:
            same = a.value == b.value
            d = np.array([0.0 if same else np.inf])
            if not same and len(fc.texts) < limit:
                fc.texts.append(f"{label}: {_short(b.value)} -> {_short(a.value)}")
        else:
            d = rel_diff(a.values, b.values).ravel()
            device = not any(fnmatch.fnmatchcase(f"{path}:{name}", p) for p in host)
            if bf16_contract and device and speaks_bf16(b) and a.dtype == b.dtype and not bf16_numbers(a.values).all():
                off = int((~bf16_numbers(a.values)).sum())
                fc.not_bf16.append(f"{label} ({off} of {a.values.size} values not bf16 numbers)")
        diffs.append(d)
        if d.size and d.max() > worst:
            worst, fc.worst = float(d.max()), label
    if diffs:
        d = np.concatenate(diffs)
        fc.values, fc.exact, fc.far = int(d.size), int((d == 0).sum()), int((d > TOL_FAR).sum())
        if d.size:
            fc.median_rel, fc.max_rel = float(np.median(d)), float(d.max())
    return fc


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 40 else s[:37] + "..."


def snapshot(tree: Path) -> dict[str, tuple[int, int]]:
    """Every file under TREE (outside .git and __pycache__): relative path -> (size, mtime_ns)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = [d for d in dirnames if d not in (".git", "__pycache__")]
        for name in filenames:
            p = Path(dirpath) / name
            st = p.stat()
            out[str(p.relative_to(tree))] = (st.st_size, st.st_mtime_ns)
    return out


def written(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    """The files created or changed between two snapshots, sorted."""
    return sorted(p for p, st in after.items() if before.get(p) != st)
