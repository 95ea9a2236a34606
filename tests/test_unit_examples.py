"""The examples each rule unit carries (bf16_migrate/python/unit_examples.py): every VALID one is
left as written by the unit, every INVALID one gets exactly the text the example shows, with the
unit's findings in order; each output parses, and a second run changes nothing."""

from __future__ import annotations

import ast

import pytest

from bf16_migrate.python import deliberate_f32, device_tensors, meet, migrate_source, no_tensor

MODEL_CODE = {"BFM080", "BFM081", "BFM082", "BFM083", "BFM084", "BFM085", "BFM087", "BFM088", "BFM089"}
UNITS = {  # each unit's examples, and the codes they are about
    "meet": (meet.EXAMPLES, MODEL_CODE),
    "deliberate_f32": (deliberate_f32.EXAMPLES, MODEL_CODE),
    "no_tensor": (no_tensor.EXAMPLES, {"BFM170"}),
    "device_tensors": (device_tensors.EXAMPLES, {"BFM154"}),
}


def _cases():
    for unit, (examples, codes) in UNITS.items():
        for example in examples:
            name = f"{unit}: {'VALID' if example.valid else 'INVALID'} {example.name}"
            yield pytest.param(example, frozenset(codes), id=name)


@pytest.mark.parametrize("example, codes", list(_cases()))
def test_unit_example(example, codes):
    result = migrate_source(example.source, "stochastic", "example.py")
    ast.parse(result.code)
    assert [d.code for d in result.diagnostics if d.code in codes] == list(example.codes)
    if example.kept:
        assert result.code == example.source  # the switch stays, nothing is half done
        assert all(not d.fixed for d in result.diagnostics if d.code in codes)
    else:
        assert all(d.fixed for d in result.diagnostics if d.code in codes)
    lines = result.code.splitlines()
    for line in example.lines:
        assert line in lines, line
        assert (line in example.source.splitlines()) is example.valid, line
    for line in example.gone:
        assert line in example.source.splitlines() and line not in lines, line
    again = migrate_source(result.code, "stochastic", "example.py")
    assert again.code == result.code
