"""ruff's lint (configured in pyproject.toml: pyflakes, pycodestyle, bugbear, import order,
pyupgrade) is clean on the package; CI runs it through this test."""

from __future__ import annotations

import shutil
import subprocess
import sys

from conftest import ROOT


def test_ruff_is_clean_on_the_package():
    ruff = shutil.which("ruff") or str(ROOT / ".venv" / "bin" / "ruff")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "bf16_migrate", "--output-format", "concise"], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0 and "No module named ruff" in proc.stderr:
        proc = subprocess.run([ruff, "check", "bf16_migrate", "--output-format", "concise"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
