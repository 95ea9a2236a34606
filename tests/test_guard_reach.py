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


FLAG = """import argparse
import os
import sys

import torch
import torch_xla.core.xla_model as xm


def main():
    if "--bf16" in sys.argv:
        sys.argv.remove("--bf16")
        os.environ["XLA_USE_BF16"] = "1"
    args = argparse.ArgumentParser().parse_args()
    device = xm.xla_device()
    model = torch.nn.Linear(4, 3).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(2, 4), torch.tensor([0, 1])
        loss = torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()


main()
"""


def test_a_condition_the_script_changes_after_deciding_keeps_the_switch():
    """``if "--bf16" in sys.argv: sys.argv.remove("--bf16")``: the same condition put on the cast
    would read False there (the flag is gone), so every change would be skipped while the switch
    went: it is kept, the change named."""
    for mode in ("stochastic", "gpu-compatible", "amp"):
        result = migrate_source(FLAG, mode, "train.py")
        assert result.code == FLAG
        [finding] = [d for d in result.diagnostics if d.code == "BFM041"]
        assert (finding.line, finding.fixed) == (12, False)
        assert 'changes at line 11 (`sys.argv.remove("--bf16")`)' in finding.message


def test_a_condition_left_as_it_is_is_migrated_under_it():
    """The control: a flag the script reads but does not take out of ``sys.argv``."""
    kept = FLAG.replace('        sys.argv.remove("--bf16")\n', "").replace(
        "parse_args()", 'parse_args([a for a in sys.argv[1:] if a != "--bf16"])'
    )
    result = migrate_source(kept, "stochastic", "train.py")
    assert result.code != kept and not [d for d in result.diagnostics if d.code == "BFM041"]
    assert 'if "--bf16" in sys.argv:\n        model.to(torch.bfloat16)' in result.code


OPERAND = """import argparse
import os

import torch
import torch_xla


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bf16", action="store_true")
    args = ap.parse_args()
    if args.bf16:
        os.environ["XLA_USE_BF16"] = "1"
    device = torch_xla.device()
    model = torch.nn.Linear(4, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x, y = torch.randn(8, 4).to(device), torch.randn(8, 1).to(device)
        out = model(x)
        loss = (out - y).abs().mean() + 0.5 * (out - y).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


main()
"""


def test_a_guarded_cast_of_an_operand_is_parenthesised():
    """``out - y`` with ``y`` cast under the script's condition: ``out - (y.to(...) if c else y)``.
    Without the parentheses Python reads ``(out - y.to(...)) if c else y``: in the configuration
    without the flag the term loses the model (its loss silently another). ``y`` read twice is cast in its
    move instead, under the condition too."""
    once = OPERAND.replace(" + 0.5 * (out - y).pow(2).mean()", "")
    assert once != OPERAND
    result = migrate_source(once, "stochastic", "train.py")
    assert "loss = (out - (y.to(torch.bfloat16) if args.bf16 else y)).abs().mean()\n" in result.code
    assert "out = model(x.to(torch.bfloat16) if args.bf16 else x)\n" in result.code  # an argument: bare
    cst.parse_module(result.code)
    twice = migrate_source(OPERAND, "stochastic", "train.py").code
    assert "torch.randn(8, 1).to(device, dtype=(torch.bfloat16 if args.bf16 else None))" in twice
    assert "loss = (out - y).abs().mean() + 0.5 * (out - y).pow(2).mean()\n" in twice
    cst.parse_module(twice)


def test_a_write_under_another_key_leaves_the_condition_as_it_was():
    """``if os.environ.get("BF16") == "1": os.environ["XLA_USE_BF16"] = "1"``: the write changes
    ``os.environ``, but not under the key the condition reads; migrated under the condition (it was
    refused as changed, a regression the first version of the check had). A condition that reads the
    very key it sets (``!= "1"`` then set) no longer holds after it: kept."""
    source = SCRIPT.replace("print(evaluate(model, batches, device))", "pass").replace(
        '    bf16 = os.environ.get("BF16", "0") == "1"\n    if bf16:\n', '    if os.environ.get("BF16", "0") == "1":\n'
    )
    assert 'if os.environ.get("BF16", "0") == "1":' in source
    result = migrate_source(source, "stochastic", "train.py")
    assert not [d for d in result.diagnostics if d.code == "BFM041"] and result.code != source
    reads_itself = source.replace('os.environ.get("BF16", "0") == "1"', 'os.environ.get("XLA_USE_BF16") != "1"')
    assert reads_itself != source
    kept = migrate_source(reads_itself, "stochastic", "train.py")
    assert kept.code == reads_itself
    assert any(d.code == "BFM041" and "whose operands the script changes" in d.message for d in kept.diagnostics)
