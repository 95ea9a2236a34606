"""ruff's lint (configured in pyproject.toml: pyflakes, pycodestyle, bugbear, import order,
pyupgrade) and ruff's formatter are clean on the package; CI runs them through these tests."""

from __future__ import annotations

import shutil
import subprocess
import sys

from conftest import ROOT


def test_ruff_is_clean_on_the_package():
    ruff = shutil.which("ruff") or str(ROOT / ".venv" / "bin" / "ruff")
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "bf16_migrate", "--output-format", "concise"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    if proc.returncode != 0 and "No module named ruff" in proc.stderr:
        proc = subprocess.run(
            [ruff, "check", "bf16_migrate", "--output-format", "concise"], capture_output=True, text=True, cwd=ROOT
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr


def test_ruff_format_is_clean_on_the_package():
    """``ruff format --check`` (pyproject.toml's line length): the package is formatted as ruff
    formats it (data tables that read better on one line are fenced with ``# fmt: off``)."""
    ruff = shutil.which("ruff") or str(ROOT / ".venv" / "bin" / "ruff")
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "bf16_migrate"], capture_output=True, text=True, cwd=ROOT
    )
    if proc.returncode != 0 and "No module named ruff" in proc.stderr:
        proc = subprocess.run([ruff, "format", "--check", "bf16_migrate"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
