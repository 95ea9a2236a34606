"""ruff's lint (configured in pyproject.toml: pyflakes, pycodestyle, bugbear, import order,
pyupgrade, McCabe complexity at 15) and ruff's formatter are clean on the package and on the code
of tests/ and bench/ (the training scripts there that are the codemod's inputs are excluded in
pyproject.toml and bench/unseen/ruff.toml: their bytes are the tests' data); CI runs them through
these tests."""

from __future__ import annotations

import shutil
import subprocess
import sys

from conftest import ROOT

CHECKED = ["bf16_migrate", "tests", "bench"]
"""What the lint and the formatter check: the package and the code that tests and measures it."""


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    """``ruff ARGS`` in the repository (the module of this interpreter, else the one on PATH)."""
    proc = subprocess.run([sys.executable, "-m", "ruff", *args], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0 and "No module named ruff" in proc.stderr:
        ruff = shutil.which("ruff") or str(ROOT / ".venv" / "bin" / "ruff")
        proc = subprocess.run([ruff, *args], capture_output=True, text=True, cwd=ROOT)
    return proc


def test_ruff_is_clean_on_the_package_tests_and_bench():
    proc = _ruff("check", *CHECKED, "--output-format", "concise")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr


def test_ruff_format_is_clean_on_the_package_tests_and_bench():
    """``ruff format --check`` (pyproject.toml's line length): the code is formatted as ruff
    formats it (data tables that read better on one line are fenced with ``# fmt: off``)."""
    proc = _ruff("format", "--check", *CHECKED)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_codemods_input_scripts_are_left_out():
    """The training scripts that are test data keep their own shapes (unsorted imports, long
    lines): ruff reads none of them, so neither the lint nor the formatter can ask to change a
    byte the goldens and the calibration depend on. (bench/unseen's cases are linted under their
    own ruff.toml and never formatted: the format test above would fail on them otherwise.)"""
    proc = _ruff("check", "--show-files", *CHECKED)
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout
    for data in ("tests/data/", "bench/calibration/", "bench/trace_shapes/"):
        assert data not in shown, data
    assert "bench/unseen/run.py" in shown and "tests/conftest.py" in shown
