"""A floating tensor moved to the device and upcast with ``.double()`` in the loss, under
XLA_DOWNCAST_BF16: the switch held it as bf16 on the device, so the upcast widened bf16-rounded
values; the migration rounds it the same way before ``.double()`` becomes ``.float()``."""

from __future__ import annotations

import pytest

from bf16_migrate.python import migrate_source

CRITERION = """import os
os.environ["{variable}"] = "1"
import torch
import torch.nn as nn
import torch_xla


def main(loader):
    device = torch_xla.device()
    net = nn.Linear(6, 1).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        out = net(x)
        loss = nn.functional.mse_loss(out.double(), y.double())
        loss.backward()
        opt.step()
"""

GUARDED = """import argparse
import os
import torch
import torch.nn as nn
import torch_xla


def main(loader, argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args(argv)
    if args.bf16:
        os.environ["XLA_DOWNCAST_BF16"] = "1"
    device = torch_xla.device()
    net = nn.Linear(6, 1).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        out = net(x)
        loss = ((out.double() - y.double()) ** 2).mean()
        loss.backward()
        opt.step()
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible"])
def test_the_target_is_rounded_to_bf16_before_the_upcast(mode):
    code = migrate_source(CRITERION.format(variable="XLA_DOWNCAST_BF16"), mode, "train.py").code
    # the loader's dtypes cannot be told from the code: the run-time helper casts floating tensors only
    assert "mse_loss(out.float(), floating_to_bf16(y).float())" in code
    assert "def floating_to_bf16(" in code


def test_amp_keeps_the_f32_target():
    # amp keeps the model and its data in f32: autocast rounds inside the ops it lowers
    code = migrate_source(CRITERION.format(variable="XLA_DOWNCAST_BF16"), "amp", "train.py").code
    assert "mse_loss(out.float(), y.float())" in code


def test_xla_use_bf16_double_is_not_an_fp32_upcast():
    # under XLA_USE_BF16 f64 was bf16 too: `.double()` there is not the fp32 idiom (no rounding before a
    # `.float()`); it was bf16 on the device, and so it is now (BFM048 use_bf16), never a real float64
    result = migrate_source(CRITERION.format(variable="XLA_USE_BF16"), "stochastic", "train.py")
    code = result.code
    assert "mse_loss(out.to(torch.bfloat16), y.to(torch.bfloat16))" in code
    assert ".double()" not in code and ".to(torch.bfloat16).float()" not in code
    assert [d.line for d in result.diagnostics if d.code == "BFM048"] == [16, 16]


def test_a_guarded_migration_parenthesises_the_conditional_cast():
    result = migrate_source(GUARDED, "stochastic", "train.py")
    compile(result.code, "train.py", "exec")
    line = next(s.strip() for s in result.code.splitlines() if s.strip().startswith("loss ="))
    assert ".float() - (floating_to_bf16(y) if args.bf16 else y).float()) ** 2).mean()" in line, line
