"""End-to-end: `bf16-migrate verify` on every fixture in every mode, on the XLA CPU device.

Each case runs the legacy script and the migrated copy (and, for amp, the FP32 reference) in
their own processes; the verdict must pass. Selected with `-m xla`; they run in CI.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import CASES, FIXTURES, MODES

pytestmark = pytest.mark.xla


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_verify_passes_on_fixture(case, mode):
    script = FIXTURES / case / "train.py"
    proc = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", "verify", str(script), "--mode", mode, "--steps", "12"],
        capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout
    # the table has one row per recorded step
    for step in range(1, 13):
        assert any(line.split()[:1] == [str(step)] for line in proc.stdout.splitlines()), proc.stdout
