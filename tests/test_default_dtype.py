"""A float64 default dtype under XLA_DOWNCAST_BF16 keeps the switch (BFM058): the switch stored f64 as
f32 on the device, so such a script's legacy run computed in f32, not bf16 (torch_xla/csrc/dtype.cpp).
Migrated, its model cast or autocast made the whole run bf16 (bench/unseen/hunt9 default_f64_downcast:
8 of 8 matmuls bf16 where the legacy run had none)."""

from __future__ import annotations

import pytest

from bf16_migrate.python import migrate_source
from bf16_migrate.python.outcome import Refusal

SCRIPT = """import os
import torch
import torch_xla
{switch}
{default}


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(2, 2).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(3):
        s = torch.randn(8, 2).to(device)
        loss = (model(s) - s).pow(2).mean()
        loss.backward()
        optimizer.step()


main()
"""

DOWNCAST = 'os.environ["XLA_DOWNCAST_BF16"] = "1"'
F64 = "torch.set_default_dtype(torch.float64)"


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible", "amp"])
@pytest.mark.parametrize("default", [F64, "torch.set_default_tensor_type(torch.DoubleTensor)"])
def test_a_float64_default_under_downcast_keeps_the_switch(mode, default):
    source = SCRIPT.format(switch=DOWNCAST, default=default)
    result = migrate_source(source, mode, "train.py")
    assert result.code == source
    assert [why for why, _ in result.outcome.refused()] == [Refusal.DEFAULT_F64]
    [finding] = [d for d in result.diagnostics if d.code == "BFM058"]
    assert finding.line == 4
    assert "(line 5)" in finding.message


@pytest.mark.parametrize("mode", ["stochastic", "amp"])
def test_a_launchers_downcast_names_the_script_and_keeps_nothing_of_it(mode):
    """The variable set by a launcher: the script is refused, so its launcher keeps the setting."""
    source = SCRIPT.format(switch="", default=F64)
    result = migrate_source(source, mode, "train.py", launched_with={"XLA_DOWNCAST_BF16": "1"})
    assert result.code == source
    assert [why for why, _ in result.outcome.refused()] == [Refusal.DEFAULT_F64]


def test_under_xla_use_bf16_f64_was_bf16_and_the_script_migrates():
    """XLA_USE_BF16 made f64 bf16 on the device as it did f32: the legacy run was bf16, the model is cast."""
    source = SCRIPT.format(switch='os.environ["XLA_USE_BF16"] = "1"', default=F64)
    result = migrate_source(source, "stochastic", "train.py")
    assert "model.to(torch.bfloat16)" in result.code
    assert not result.outcome.refused()


def test_a_float32_default_under_downcast_migrates():
    source = SCRIPT.format(switch=DOWNCAST, default="torch.set_default_dtype(torch.float32)")
    result = migrate_source(source, "stochastic", "train.py")
    assert "model.to(torch.bfloat16)" in result.code
    assert not result.outcome.refused()


def test_under_xla_use_bf16_amp_keeps_the_switch_for_a_float64_default():
    """amp keeps the model as the script builds it and autocast casts no float64: the switch removed, the model
    and the whole run stayed float64 where the legacy run computed in bf16 (bench/unseen/hunt37 amp_default_f64,
    a PINN: 0 of 9 matmuls bf16). The switch is kept, the call named (BFM058 ``autocast``)."""
    source = SCRIPT.format(switch='os.environ["XLA_USE_BF16"] = "1"', default=F64)
    result = migrate_source(source, "amp", "train.py")
    assert result.code == source
    assert [why for why, _ in result.outcome.refused()] == [Refusal.DEFAULT_F64]
    [finding] = [d for d in result.diagnostics if d.code == "BFM058"]
    assert "autocast casts no float64" in finding.message and "(line 5)" in finding.message
