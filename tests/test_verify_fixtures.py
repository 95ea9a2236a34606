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


def test_verify_with_legacy_env_for_a_script_its_launcher_switched(tmp_path):
    """The variable is set by a shell launcher, not the script: `--legacy-env` supplies it to the
    legacy run, and the migrated copy still gets the model and input casts."""
    source = (FIXTURES / "mlp_regression" / "train.py").read_text()
    script = tmp_path / "train.py"
    script.write_text(source.replace('os.environ["XLA_USE_BF16"] = "1"\n', ""))
    (tmp_path / "launch.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py \"$@\"\n")
    proc = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", "verify", str(script), "--legacy-env", "XLA_USE_BF16=1",
         "--steps", "10", "--", "--batch-size", "32"],
        capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "device params bf16" in proc.stdout  # the legacy run really ran in bf16


def test_verify_reports_a_script_that_crashes_with_exit_2(tmp_path):
    script = tmp_path / "train.py"
    script.write_text((FIXTURES / "mlp_regression" / "train.py").read_text().replace(
        "    loss_fn = nn.MSELoss()\n", "    loss_fn = nn.MSELoss()\n    raise RuntimeError('dataset shard missing')\n"))
    proc = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", "verify", str(script), "--steps", "5"],
        capture_output=True, text=True, timeout=900,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "dataset shard missing" in proc.stderr
