"""A legacy switch set by the script's own ``#!`` line (``#!/usr/bin/env -S XLA_USE_BF16=1 python3``).

The script runs under it when started as ``./train.py``: it is migrated as a script its launcher
starts with the setting, and the setting in the line is replaced (stochastic) or removed, only
when the change is made (bf16-migrate said "0 findings" for it before: found by a hunt of our own).
"""

from __future__ import annotations

import pytest

from bf16_migrate.python import migrate_source

BODY = (
    '"""A tabular classifier."""\nimport torch\nimport torch_xla\n\n\n'
    "def main():\n    device = torch_xla.device()\n    model = torch.nn.Linear(4, 2).to(device)\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    for _ in range(3):\n"
    "        x = torch.randn(8, 4).to(device)\n        loss = model(x).sum()\n        loss.backward()\n"
    "        opt.step()\n\n\nmain()\n"
)


def _codes(result):
    return [(d.line, d.code, d.fixed) for d in result.diagnostics]


@pytest.mark.parametrize(
    ("mode", "first", "changed"),
    [
        ("stochastic", "#!/usr/bin/env -S NEURON_RT_STOCHASTIC_ROUNDING_EN=1 python3 -u", "model.to(torch.bfloat16)"),
        ("gpu-compatible", "#!/usr/bin/env -S python3 -u", "with_fp32_master_weights"),
        ("amp", "#!/usr/bin/env -S python3 -u", 'torch.autocast("xla", dtype=torch.bfloat16)'),
    ],
)
def test_the_shebang_setting_is_replaced_with_the_scripts_change(mode, first, changed):
    source = "#!/usr/bin/env -S XLA_USE_BF16=1 python3 -u\n" + BODY
    result = migrate_source(source, mode, "train.py")
    assert result.code.split("\n", 1)[0] == first
    assert changed in result.code
    assert (1, "BFM001", True) in _codes(result)
    finding = next(d for d in result.diagnostics if d.code == "BFM001" and d.col == 19)
    assert "#! line" in finding.message
    assert migrate_source(result.code, mode, "train.py").code == result.code


def test_an_off_value_is_removed_and_nothing_added():
    source = "#!/usr/bin/env -S XLA_USE_BF16=0 PYTHONUNBUFFERED=1 python3\n" + BODY
    result = migrate_source(source, "stochastic", "train.py")
    assert result.code.split("\n", 1)[0] == "#!/usr/bin/env -S PYTHONUNBUFFERED=1 python3"
    assert "model.to(torch.bfloat16)" not in result.code
    assert [c for c in _codes(result) if c[1] != "BFM002"] == [] and (1, "BFM002", True) in _codes(result)


def test_a_refused_migration_keeps_the_line_and_says_why():
    """No optimizer: the model cannot be found, the switch is kept in the #! line (BFM010, never a
    silent skip)."""
    source = "#!/usr/bin/env -S XLA_USE_BF16=1 python3\nimport torch\nimport torch_xla\nprint(torch.ones(2))\n"
    result = migrate_source(source, "stochastic", "tool.py")
    assert result.code.split("\n", 1)[0] == "#!/usr/bin/env -S XLA_USE_BF16=1 python3"
    assert any(code == "BFM010" and not fixed for _, code, fixed in _codes(result))


@pytest.mark.parametrize(
    "first",
    [
        "#!/usr/bin/python3",
        "#!/usr/bin/env python3",
        "# XLA_USE_BF16=1 is set by run.sh",
        "#!/usr/bin/env -S 'unclosed",
    ],
)
def test_other_first_lines_set_nothing(first):
    source = first + "\n" + BODY
    result = migrate_source(source, "stochastic", "train.py")
    assert result.code == source and not [c for c in _codes(result) if c[1] == "BFM001"]
