"""verify (this checkout) of the amp migration hunt14 judged wrong (alibi_tied_azure, made by the package at the
session's start, the float64 slopes left): its precision part must now FAIL on the f64 matmuls. Usage:
PYTHONPATH=<this checkout> python repros/old_alibi_amp_verify.py OLD_PACKAGE_ROOT"""

import subprocess
import sys
from pathlib import Path

from bf16_migrate.verify import verify_script

here = Path(__file__).resolve().parent.parent
script = here / "alibi_tied_azure" / "train_alibi_lm.py"
old = subprocess.run(
    [sys.executable, "-m", "bf16_migrate", "-", "--stdin-filename", str(script), "--mode", "amp"]
    + ["--legacy-env", "XLA_USE_BF16=1"],
    input=script.read_text(),
    capture_output=True,
    text=True,
    env={"PYTHONPATH": sys.argv[1], "PATH": "/usr/bin:/bin"},
).stdout
assert "torch.autocast" in old and "model.to(torch.float32)" not in old, "not the old migration"
report = verify_script(
    script,
    "amp",
    steps=12,
    migrated_source=old,
    legacy_env={"XLA_USE_BF16": "1"},
    timeout=600,
    script_args=["--steps", "30"],
)
print(report.verdict.status)
for part in report.parts:
    print(part.name, part.status, part.detail[:300])
