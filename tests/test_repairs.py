"""The repair units of verify's dtype trace (bf16_migrate/repairs/): every unit's VALID and
INVALID examples, run through the same entry point verify --fix and `--trace FILE` use
(``apply_repairs``): an INVALID example becomes exactly its fixed text, which parses; a VALID one
is left as it is (a second --fix finds nothing to change). Then the driver's own rules: sites
of one file applied last-first, a moved line found again by its text, a line gone left with
why, alternatives of one group."""

from __future__ import annotations

import ast

import pytest

from bf16_migrate.repairs import RepairKind, RepairSite, Span, apply_repairs, unit_for

EXAMPLES = [
    pytest.param(kind, example, id=f"{kind.value}-{'INVALID' if example.fixed is not None else 'VALID'}-{n}")
    for kind in RepairKind
    for n, example in enumerate(unit_for(kind).EXAMPLES)
]


def test_every_unit_has_valid_and_invalid_examples():
    for kind in RepairKind:
        unit = unit_for(kind)
        assert unit.KIND is kind
        assert any(e.fixed is not None for e in unit.EXAMPLES), kind
        assert any(e.fixed is None for e in unit.EXAMPLES), kind
        assert all(e.why.startswith(("VALID", "INVALID")) for e in unit.EXAMPLES)
        assert all(e.why.startswith("VALID") == (e.fixed is None) for e in unit.EXAMPLES)


@pytest.mark.parametrize(("kind", "example"), EXAMPLES)
def test_example(kind, example):
    site = example.site(kind)
    outcome = apply_repairs(example.source, [site])
    if example.fixed is None:
        assert outcome.text == example.source
        assert outcome.applied == []
        assert [s for s, _why in outcome.left] == [site]
    else:
        assert outcome.text == example.fixed
        assert outcome.applied == [site]
        ast.parse(outcome.text)


def _site(kind, source, line, expr, **more):
    text = source.splitlines()[line - 1]
    col = text.index(expr)
    return RepairSite(kind, "t.py", Span(line, col, line, col + len(expr), text), **more)


def test_sites_of_one_file_apply_last_first_and_each_once():
    source = "a = x.cpu()\nb = y.cpu()\nc = h + pos\n"
    sites = [
        _site(RepairKind.HOST_FLOAT, source, 1, "x.cpu()"),
        _site(RepairKind.CAST_OPERAND, source, 3, "h + pos", names=("pos",), partner="h"),
        _site(RepairKind.HOST_FLOAT, source, 2, "y.cpu()"),
    ]
    outcome = apply_repairs(source, sites)
    assert outcome.text == "a = x.cpu().float()\nb = y.cpu().float()\nc = h + pos.to(h.dtype)\n"
    assert len(outcome.applied) == 3 and outcome.left == []


def test_a_moved_line_is_found_again_by_its_text_and_a_gone_one_is_left_with_why():
    traced = "x = 1\npreds = model(x).cpu()\n"
    site = _site(RepairKind.HOST_FLOAT, traced, 2, "model(x).cpu()")
    moved = "import os\n\nx = 1\npreds = model(x).cpu()\n"
    assert apply_repairs(moved, [site]).text == "import os\n\nx = 1\npreds = model(x).cpu().float()\n"
    gone = "x = 1\npreds = model(x)\n"
    outcome = apply_repairs(gone, [site])
    assert outcome.text == gone
    assert "no longer the traced line" in outcome.left[0][1]


def test_alternatives_of_a_group_stand_for_one_repair():
    source = "model = Net()\nema = EMA(model)\nmodel.to(torch.bfloat16)\n"
    inner = _site(RepairKind.CAST_COPY, source, 1, "Net()", group="g")  # nothing to move before it
    outer = _site(RepairKind.CAST_COPY, source, 2, "EMA(model)", group="g")
    outcome = apply_repairs(source, [inner, outer])
    assert outcome.text == "model = Net()\nmodel.to(torch.bfloat16)\nema = EMA(model)\n"
    assert outcome.applied == [outer] and outcome.left == []


def test_a_site_round_trips_through_json():
    site = _site(
        RepairKind.CAST_OPERAND,
        "y = h + pos\n",
        1,
        "h + pos",
        names=("pos",),
        partner="h",
        finding=("BFM200", 1, 5),
        message="m",
    )
    assert RepairSite.from_dict(site.to_dict()) == site


def test_a_repair_the_text_holds_already_is_said_so():
    traced = "x = 1\npreds = model(x).cpu()\n"
    site = _site(RepairKind.HOST_FLOAT, traced, 2, "model(x).cpu()")
    repaired = apply_repairs(traced, [site]).text
    outcome = apply_repairs(repaired, [site])
    assert outcome.text == repaired
    assert outcome.already == [site] and outcome.left == [] and outcome.applied == []
