"""Ops without a bf16 kernel on the device (BFM155): in the bf16 modes the code that runs on the
device runs ``torch.linalg.cholesky`` and its kin in float32 and casts the result back, as the
legacy run's CPU fallback computed them; an op returning several tensors keeps the switch.

Checked on small scripts (no XLA), and on the XLA CPU device both ways with
fixtures/contract/kernel_regression (our own writing: a Gaussian-process marginal likelihood on a
small network's features, its Cholesky factor and solves in methods of the model the script calls):
the stochastic migration PASSes, and without the float32 ops the migrated script raises."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import libcst as cst
import pytest

from bf16_migrate.python import migrate_source

from conftest import FIXTURES

SCRIPT = """import os
import torch
import torch_xla
os.environ["XLA_USE_BF16"] = "1"


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(4, 8).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(3):
        f = model(torch.randn(16, 4).to(device))
        K = f @ f.T + 0.5 * torch.eye(16, device=device)
        {line}
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    host = torch.randn(4, 4, dtype=torch.float64)
    print(torch.linalg.cholesky(host @ host.T + torch.eye(4, dtype=torch.float64)))


main()
"""


def _migrated(line: str, mode: str = "stochastic"):
    result = migrate_source(SCRIPT.replace("{line}", line), mode, "train.py")
    cst.parse_module(result.code)
    assert migrate_source(result.code, mode, "train.py").code == result.code  # a second run changes nothing
    return result


def test_an_op_without_a_bf16_kernel_runs_in_float32_and_its_result_is_cast_back():
    result = _migrated("loss = torch.log(torch.diagonal(torch.linalg.cholesky(K))).sum() + torch.logdet(K)")
    assert "torch.diagonal(torch.linalg.cholesky(K.float()).to(K.dtype))" in result.code
    assert "torch.logdet(K.float()).to(K.dtype)" in result.code
    assert "    print(torch.linalg.cholesky(host @ host.T + torch.eye(4, dtype=torch.float64)))\n" in result.code
    assert [d.fixed for d in result.diagnostics if d.code == "BFM155"] == [True, True]
    assert 'os.environ["XLA_USE_BF16"]' not in result.code


def test_an_operand_that_is_not_a_name_casts_the_result_to_bf16():
    result = _migrated("loss = torch.linalg.solve(K + 1.0, f.sum(1, keepdim=True)).sum()")
    assert "torch.linalg.solve((K + 1.0).float(), f.sum(1, keepdim=True).float()).to(torch.bfloat16)" in result.code


def test_an_op_returning_several_tensors_keeps_the_switch():
    result = _migrated("loss = torch.linalg.qr(K).R.diagonal().abs().log().sum()")
    codes = [(d.code, d.fixed) for d in result.diagnostics if d.code == "BFM155"]
    assert codes == [("BFM155", False), ("BFM155", False)]  # the op, and the switch kept
    assert 'os.environ["XLA_USE_BF16"] = "1"' in result.code


@pytest.mark.parametrize("mode", ["amp"])
def test_amp_leaves_the_ops_alone(mode):
    result = _migrated("loss = torch.logdet(K)", mode)
    assert "torch.logdet(K)" in result.code and not [d for d in result.diagnostics if d.code == "BFM155"]


def test_the_contract_fixtures_rewrite_reaches_the_methods_the_script_calls():
    """``model.nll(x, y)`` and ``model.posterior_mean(...)`` are the model's code as ``forward`` is:
    their ops and the ``torch.eye`` their helper makes follow (the eye stayed f32 before)."""
    source = (FIXTURES / "contract" / "kernel_regression" / "train.py").read_text()
    code = migrate_source(source, "stochastic", "train.py").code
    assert "torch.eye(z.shape[0], device=z.device, dtype=jitter.dtype)" in code
    assert "chol = torch.linalg.cholesky(self.gram(x).float()).to(torch.bfloat16)\n" in code
    assert "alpha = torch.cholesky_solve(y.unsqueeze(1).float(), chol.float()).to(torch.bfloat16)\n" in code
    assert "torch.linalg.solve(self.gram(x).float(), y.unsqueeze(1).float()).to(torch.bfloat16)\n" in code


@pytest.mark.xla
def test_kernel_regression_both_ways(tmp_path):
    from bf16_migrate.verify import verify_script
    from bf16_migrate.verify.parts import PASS

    shutil.copytree(FIXTURES / "contract" / "kernel_regression", tmp_path / "case")
    script = tmp_path / "case" / "train.py"
    report = verify_script(script, "stochastic", steps=8, timeout=300)
    assert report.verdict.status == PASS, [(p.name, p.status, p.detail) for p in report.parts]
    migrated = migrate_source(script.read_text(), "stochastic", "train.py").code
    without = re.sub(r"\(([^()]*(?:\([^()]*\))?[^()]*)\.float\(\)\)\.to\(torch\.bfloat16\)", r"(\1)", migrated)
    without = without.replace("chol.float()", "chol").replace("y.unsqueeze(1).float()", "y.unsqueeze(1)")
    assert "torch.linalg.cholesky(self.gram(x))" in without
    path = tmp_path / "case" / "without.py"
    path.write_text(without)
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_")} | {"PJRT_DEVICE": "CPU"}
    run = subprocess.run(
        [sys.executable, str(path), "--steps", "2"], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode != 0 and "not implemented for 'BFloat16'" in run.stderr, run.stderr[-2000:]
