"""A switch set under a condition of one function (``if bf16:`` in ``main``) while the model's
loss is computed in another (``evaluate(model, batches, device)``): the guarded cast of a loss target
written in ``evaluate`` would read ``bf16``, a name that function does not have, and the migrated
script would raise NameError at its first evaluation. The planner finds such a cast and keeps the
switch (BFM041, the line named) instead."""

from __future__ import annotations

import libcst as cst

from bf16_migrate.python import migrate_source

SCRIPT = """import os
import torch
import torch_xla.core.xla_model as xm


def evaluate(model, batches, device):
    total = 0.0
    for x, y in batches:
        total += torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device)).item()
    return total


def main():
    bf16 = os.environ.get("BF16", "0") == "1"
    if bf16:
        os.environ["XLA_USE_BF16"] = "1"
    device = xm.xla_device()
    model = torch.nn.Linear(4, 3).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    batches = [(torch.randn(2, 4), torch.tensor([0, 1]))]
    for x, y in batches:
        loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
    print(evaluate(model, batches, device))


main()
"""


def test_a_guard_that_cannot_reach_a_loss_target_keeps_the_switch():
    result = migrate_source(SCRIPT, "stochastic", "train.py")
    assert result.code == SCRIPT
    [finding] = [d for d in result.diagnostics if d.code == "BFM041"]
    assert (finding.line, finding.fixed) == (16, False)
    assert "where the model's inputs or the loss's targets are cast (line 9, in another function)" in finding.message


def test_the_same_script_with_the_evaluation_in_main_is_migrated_under_the_guard():
    """The control: the loss targets in the function that sets the switch take the guard."""
    inlined = SCRIPT.replace("    print(evaluate(model, batches, device))\n", "")
    result = migrate_source(inlined, "stochastic", "train.py")
    cst.parse_module(result.code)
    assert result.code != inlined and not [d for d in result.diagnostics if d.code == "BFM041"]
    assert "if bf16 else y.to(device)" in result.code
    assert "floating_to_bf16(y.to(device)) if bf16 else" not in result.code.split("def main")[0]
