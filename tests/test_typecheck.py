"""mypy (configured in pyproject.toml's [tool.mypy]: the package and the code of tests/ and bench/,
Python 3.11, the bodies of unannotated functions checked too; the codemod's input scripts left
out) finds no error; CI runs it through this test."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def test_mypy_is_clean_on_the_package_tests_and_bench():
    mypy = shutil.which("mypy") or str(ROOT / ".venv" / "bin" / "mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy"], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0 and "No module named mypy" in proc.stderr:
        proc = subprocess.run([mypy], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout, proc.stdout + proc.stderr


def test_mypy_reads_the_tests_and_bench_but_not_the_input_scripts():
    """``[tool.mypy] files`` names tests/ and bench/; its ``exclude`` leaves out the training
    scripts that are test data (tests/data, bench/calibration, bench/trace_shapes, bench/unseen's
    cases), which are written as users write them, not to be typed."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert {"bf16_migrate", "tests", "bench"} <= set(config["files"])
    excluded = [re.compile(pattern) for pattern in config["exclude"]]
    for data in (
        "tests/data/verify_mlp.py",
        "bench/calibration/grad_accum/train.py",
        "bench/unseen/vit_k8s/vit/train.py",
    ):
        assert any(p.search(data) for p in excluded), data
    for code in ("tests/conftest.py", "bench/calibrate.py", "bench/unseen/run.py", "bench/unseen/outputs.py"):
        assert not any(p.search(code) for p in excluded), code
