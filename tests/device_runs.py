"""Run a fixture of fixtures/device_modules/ on the XLA CPU device under the forward-hook probe
(tests/device_probe.py), and hold what it printed to another run's figures.

Used by tests/test_device_modules.py and bench/bench_device_modules.py. A run is one process
(torch-xla reads the legacy variables once per process): the script as written (the legacy run:
its own write of the switch), its FP32 reference (the legacy writes removed, nothing added: what
verify compares amp with) or a migration. Its figures are the numbers of each line it prints,
keyed by the line with its numbers taken out; its record, per class of module whose forward ran
outermost on the device, the dtypes of its parameters and outputs and whether autocast was on.

The figures compared are the script's outputs: every printed line but a training step's
(``step N loss ...``: the training losses are what verify compares, step by step). They are held
as verify holds losses (``rules/modes.toml``, ``drift_factor``): a figure of the migrated run may
differ from the same figure of its baseline (the legacy run; amp: the FP32 reference run; with
``drift_band``, gpu-compatible: either) by :data:`GAP_FACTOR` x the precision gap (how far that
figure of the legacy run and of the FP32 reference run are apart), never less than a floor:
:data:`FLOOR` relative to the largest number of the line, or for a metric (a fraction of samples:
an accuracy, an agreement) :data:`METRIC_FLOOR` absolute, a little more than one sample of the
256 the fixtures evaluate.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GROUP = ROOT / "fixtures" / "device_modules"
PROBE = ROOT / "tests" / "device_probe.py"
NUMBER = re.compile(r"(-?\d+\.\d+)")
GAP_FACTOR = 2.0
FLOOR = 0.01
"""The floor of a figure's allowed relative difference: bf16 keeps 8 bits of mantissa (a relative
step of 2**-8 = 0.0039 at worst), and a figure printed with 4 decimals is off by 5e-5 more."""
METRIC_FLOOR = 0.005
METRIC = re.compile(r"(accuracy|agreement|acc)\b")


def script(case: str) -> Path:
    """The script of a case of fixtures/device_modules/ (its one ``.py`` file)."""
    (found,) = [p for p in (GROUP / case).glob("*.py")]
    return found


@dataclass
class Probed:
    """One run: ``figures`` ((key, value) in print order), ``record`` (the probe's, per module
    class), ``failed`` (the end of its error output when it did not exit 0, else None)."""

    figures: list[tuple[str, float]]
    record: dict
    failed: str | None


def run(source: Path, work: Path, name: str, legacy: tuple[str, ...], timeout: float = 900) -> Probed:
    """Run ``source`` (a script written in ``work``) under the probe in ``work`` on the XLA CPU
    device, the legacy variables (``legacy``: their names) taken out of the environment first (the
    legacy run sets its own). Lines naming a legacy variable are torch-xla's deprecation notice
    (the legacy run's only), not outputs."""
    record = work / f"{name}.json"
    env = {k: v for k, v in os.environ.items() if k not in legacy}
    env.update({"PJRT_DEVICE": "CPU", "PYTHONPATH": str(ROOT)})
    proc = subprocess.run(
        [sys.executable, str(PROBE), str(record), str(source)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=work,
        env=env,
    )
    figures = []
    for line in proc.stdout.splitlines():
        if any(variable in line for variable in legacy):
            continue
        key = NUMBER.sub("#", line)
        figures += [(f"{key}[{k}]", float(v)) for k, v in enumerate(NUMBER.findall(line))]
    failed = None if proc.returncode == 0 else (proc.stdout[-1000:] + proc.stderr[-3000:])
    return Probed(figures, json.loads(record.read_text()) if record.is_file() else {}, failed)


def outputs(figures: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The figures of the script's outputs: every line's but a training step's (``step N ...``)."""
    return [(key, value) for key, value in figures if not key.startswith("step ")]


def _scales(figures: list[tuple[str, float]]) -> dict[str, float]:
    """Per printed line, the largest absolute number on it."""
    scales: dict[str, float] = {}
    for key, value in figures:
        line = key.rsplit("[", 1)[0]
        scales[line] = max(scales.get(line, 0.0), abs(value))
    return scales


def _metric(key: str, value: float) -> bool:
    """Whether the figure is a metric: a fraction of samples, named so (its word right before it)."""
    line, index = key.rsplit("[", 1)
    words = line.split("#")
    position = int(index.rstrip("]"))
    return 0.0 <= value <= 1.0 and position < len(words) and bool(METRIC.search(words[position]))


def relative(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> list[tuple[str, float, float, float]]:
    """Per figure (the same keys in the same order, else AssertionError): (key, a's value, b's
    value, their difference: absolute for a metric, else relative to the largest number of b's
    line)."""
    assert [k for k, _ in a] == [k for k, _ in b], (a, b)
    scales = _scales(b)
    out = []
    for (key, x), (_, y) in zip(a, b):
        scale = 1.0 if _metric(key, y) else max(scales[key.rsplit("[", 1)[0]], 1e-12)
        out.append((key, x, y, abs(x - y) / scale))
    return out


def beyond(
    migrated: list[tuple[str, float]],
    bases: list[list[tuple[str, float]]],
    legacy: list[tuple[str, float]],
    reference: list[tuple[str, float]],
) -> list[str]:
    """The output figures (:func:`outputs`) of ``migrated`` farther than allowed (module docstring)
    from each of ``bases``' (a run's figures: within the limit of one of them is enough), the
    precision gap of each figure from ``legacy`` and ``reference``; one line each."""
    gaps = {key: amount for key, _, _, amount in relative(outputs(legacy), outputs(reference))}
    worst: dict[str, tuple[float, str]] = {}
    for base in bases:
        for key, x, y, amount in relative(outputs(migrated), outputs(base)):
            limit = max(METRIC_FLOOR if _metric(key, y) else FLOOR, GAP_FACTOR * gaps[key])
            excess = amount / limit
            text = f"{key}: migrated {x} baseline {y}, difference {amount:.3g} > {limit:.3g} (gap {gaps[key]:.3g})"
            if key not in worst or excess < worst[key][0]:
                worst[key] = (excess, text)
    return [text for excess, text in worst.values() if excess > 1]
