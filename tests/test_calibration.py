"""The calibration suite of verify's verdict (bench/calibration, bench/calibrate.py): its cases load,
and its fast subset (the ``ci`` migrations of cases.toml) gets the verdict each must get on the
XLA CPU device, for the reason it must get it.

The whole suite (every case and migration, about an hour on 2 cores) runs with
``python bench/calibrate.py``; its confusion matrix is in bench/RESULTS.md. The subset here is
three verifies of shapes the verdict once got wrong: gradient accumulation with a sync per
micro-batch and a loss that bf16 and FP32 give alike at first and that bf16 keeps flat (the whole
step's graphs, a control that passes too, trains against the legacy trajectory), a model behind
``torch.compile`` (dynamo's graphs, the compile allowance), and a wrong migration that computes
its loss in f32 (a legacy run that crashes is tests/test_verify_e2e.py's GRU, f32 matmuls from
the forward pass fixtures/tiny_transformer's).
"""

from __future__ import annotations

import ast
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import calibrate  # noqa: E402  (bench/ is not a package)

CASES = calibrate.load_cases()
SUBSET = [(case, m) for case in CASES for m in case.migrations if m.label in case.ci]


def test_the_suite_is_at_least_twelve_shapes_each_with_right_and_wrong_migrations():
    assert len(CASES) >= 12
    kinds = {m.label.split(":")[1] for case in CASES for m in case.migrations if m.expected == calibrate.FAIL}
    assert len(kinds) >= 4, kinds
    for case in CASES:
        assert case.script.is_file(), case.name
        assert any(m.expected == calibrate.PASS for m in case.migrations), case.name
        assert any(m.label == "wrong:delete_only" for m in case.migrations), case.name
        for m in case.migrations:
            source = m.source(case.script.read_text())
            ast.parse(source)  # every migration is Python
            # a migration changes the script, unless a launcher held its setting (delete-only: the export)
            assert source != case.script.read_text() or case.legacy_env, f"{case.name} {m.label} changes nothing"


def _part(entry, name):
    return next(p for p in entry["parts"] if p["name"] == name)


def _why(entry):
    return "\n".join(f"{p['name']} {p['status']}: {p['detail']}" for p in entry.get("parts") or []) + str(
        entry.get("notes") or entry.get("error")
    )


def _accumulation_decided_by_the_graphs(entry):
    # bf16 and FP32 both give exactly 1/8 at first: the control passes the onset check too,
    # and the graphs of the whole step (4 micro-batch syncs and the optimizer's) decide
    matches = _part(entry, "matches")
    assert matches["figures"]["control_passes_onset"] is True, matches["detail"]
    assert matches["figures"]["decided_by"] == "graphs", matches["detail"]
    assert entry["runs"]["migrated"]["graph"]["graphs_in_window"] >= 5
    assert entry["runs"]["migrated"]["graph"]["matmuls_bf16"] == 32  # 4 micro-batches x 8 (0 in the largest graph)
    # bf16 drops the small updates: the legacy loss stays at 1/8 over the 12 steps, FP32's falls;
    # trains judges the migrated run against the legacy trajectory
    _flat_legacy_loss_judged_relative(entry)


def _dynamo_graphs_and_the_allowance(entry):
    graph = _part(entry, "graph")
    assert entry["runs"]["migrated"]["graph"]["dynamo_graphs"] >= 2
    assert entry["runs"]["migrated"]["graph"]["matmuls_bf16"] > 0  # the forward/backward convolutions
    assert "+1 for the input-cast hook under torch.compile" in graph["detail"], graph["detail"]


def _flat_legacy_loss_judged_relative(entry):
    trains = _part(entry, "trains")
    assert trains["figures"].get("relative") is True, trains["detail"]


def _f32_input_fails_precision_and_matches(entry):
    assert "the loss the migrated run backpropagates is f32" in _part(entry, "precision")["detail"]
    assert _part(entry, "matches")["status"] == "FAIL"


WHY = {
    ("accum_zero_head", "right:stochastic"): _accumulation_decided_by_the_graphs,
    ("compiled_model", "right:stochastic"): _dynamo_graphs_and_the_allowance,
    ("weighted_loss", "wrong:input_f32:model_input_f32"): _f32_input_fails_precision_and_matches,
}


@pytest.mark.xla
@pytest.mark.parametrize("case,migration", SUBSET, ids=[f"{c.name}-{m.label}" for c, m in SUBSET])
def test_the_fast_subset_gets_its_verdict_for_its_reason(case, migration):
    entry = calibrate.verify_migration(case, migration, timeout=900)
    assert entry["verdict"] == migration.expected, _why(entry)
    check = WHY.get((case.name, migration.label))
    if check is not None:
        check(entry)


def test_every_subset_entry_says_why_it_gets_its_verdict():
    assert {(c.name, m.label) for c, m in SUBSET} == set(WHY)
