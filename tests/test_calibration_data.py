"""The calibration suite's data (bench/calibration/cases.toml, read by bench/calibrate.py), without XLA:
every migration's text can be made and parses, a fixture case reads its fixture (no copies), a wrong
migration made by edits fails to load with a one-line error naming the case and the edit when an edit's
``old`` is not in its base exactly once, and the labels the stored results (bench/results/calibration.json)
are keyed by stay the same."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import libcst as cst
import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import calibrate  # noqa: E402  (bench/ is not a package)

CASES = calibrate.load_cases()
RIGHT = ("right:stochastic", "right:gpu-compatible", "right:amp")

# The labels of every case (its right migrations, then its wrong ones, then those that compute what a right
# one does), as the suite had them when its copies and wrong files became data, and amp_backward, measured to
# execute right:amp's step graph, moved from wrong to same: bench/results/calibration.json is keyed by them.
LABELS = {
    "grad_accum": (*RIGHT, "wrong:delete_only"),
    "compiled_model": (*RIGHT, "wrong:delete_only", "wrong:input_f32"),
    "accum_zero_head": (*RIGHT, "wrong:delete_only"),
    "autocast_flag": ("right:stochastic", "right:gpu-compatible", "wrong:delete_only"),
    "lm_large_loss": (
        *RIGHT,
        "wrong:delete_only",
        "wrong:forward_f32",
        "wrong:gpu_no_master",
        "same:amp_backward",
    ),
    "gru_crash": (*RIGHT, "wrong:delete_only"),
    "long_run": (*RIGHT, "wrong:delete_only", "wrong:gpu_no_master", "same:amp_backward"),
    "weighted_loss": (
        *RIGHT,
        "wrong:delete_only",
        "wrong:input_f32:model_input_f32",
        "wrong:input_f32:loss_inputs_f32",
    ),
    "autoencoder_eval": (*RIGHT, "wrong:delete_only"),
    "lstm_loader": (*RIGHT, "wrong:delete_only"),
    "mlp_regression": (*RIGHT, "wrong:delete_only"),
    "cnn_trainer": (*RIGHT, "wrong:delete_only"),
    "tiny_transformer": (*RIGHT, "wrong:delete_only"),
    "optimizer_before_to": (*RIGHT, "wrong:delete_only"),
    "zero1_sharded": (*RIGHT, "wrong:delete_only"),
    "resume_checkpoint": (*RIGHT, "wrong:delete_only"),
}


def test_the_labels_are_those_the_stored_results_are_keyed_by():
    assert {case.name: tuple(m.label for m in case.migrations) for case in CASES} == LABELS
    loaded = {(case.name, m.label): (m.mode, m.expected) for case in CASES for m in case.migrations}
    for entry in json.loads((ROOT / "bench" / "results" / "calibration.json").read_text()):
        key = (entry["case"], entry["migration"])
        assert loaded.get(key) == (entry["mode"], entry["expected"]), key


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_migration_is_made_and_parses(case):
    legacy = case.script.read_text(encoding="utf-8")
    cst.parse_module(legacy)
    for m in case.migrations:
        source = m.source(legacy)
        cst.parse_module(source)  # raises ParserSyntaxError for a text that is not Python
        if m.edits:
            base = m.base.source(legacy) if m.base is not None else legacy
            assert source != base and m.why, f"{case.name} {m.label}"
            for edit in m.edits:
                assert base.count(edit.old) == 1, f"{case.name} {m.label}: {edit.old!r}"


def test_a_fixture_case_reads_its_fixture_and_keeps_no_copy():
    fixture_cases = [c for c in CASES if c.fixture is not None]
    assert {c.name: c.fixture for c in fixture_cases} == {
        "autocast_flag": "trees/autocast_flag",
        **{name: name for name in ("mlp_regression", "cnn_trainer", "tiny_transformer", "optimizer_before_to")},
        **{name: name for name in ("zero1_sharded", "resume_checkpoint")},
    }
    for case in fixture_cases:
        fixture = ROOT / "fixtures" / str(case.fixture)
        assert case.script == fixture / "train.py"
        for m in case.migrations:
            if m.expected == calibrate.PASS:
                assert m.file == fixture / "expected" / m.mode / "train.py"
        assert not (calibrate.SUITE / case.name).exists(), f"{case.name}: a copy of its fixture is back"
    assert next(c for c in CASES if c.name == "autocast_flag").legacy_env == {"XLA_USE_BF16": "1"}


LEGACY = 'import os\nos.environ["XLA_USE_BF16"] = "1"\nx = 1\nx = 1\n'
RIGHT_STOCHASTIC = 'import os\nos.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"\nx = 1\nx = 1\n'


def _suite(tmp_path: Path, wrong: str) -> Path:
    (tmp_path / "c" / "right").mkdir(parents=True)
    (tmp_path / "c" / "train.py").write_text(LEGACY)
    (tmp_path / "c" / "right" / "stochastic.py").write_text(RIGHT_STOCHASTIC)
    toml = tmp_path / "cases.toml"
    head = '[c]\nshape = "s"\nsteps = 4\nright = ["stochastic"]\n\n'
    head += '[[c.wrong]]\nkind = "delete_only"\nmode = "stochastic"\n'
    toml.write_text(head + "\n[[c.wrong]]\n" + wrong)
    return toml


def test_a_wrong_migration_is_its_base_with_its_edits(tmp_path):
    toml = _suite(
        tmp_path,
        'kind = "gpu_no_master"\nmode = "gpu-compatible"\nbase = "right:stochastic"\nwhy = "w"\n'
        'edits = [{ old = "os.environ[\\"NEURON_RT_STOCHASTIC_ROUNDING_EN\\"] = \\"1\\"\\n", new = "" }]\n',
    )
    (case,) = calibrate.load_cases(toml, fixtures=tmp_path)
    m = case.migrations[-1]
    assert (m.label, m.base_label, m.expected) == ("wrong:gpu_no_master", "right:stochastic", calibrate.FAIL)
    assert m.source(LEGACY) == "import os\nx = 1\nx = 1\n"


@pytest.mark.parametrize(
    "wrong,message",
    [
        (
            'kind = "k"\nmode = "stochastic"\nbase = "legacy"\nwhy = "w"\nedits = [{ old = "x = 1", new = "x = 2" }]\n',
            "[c] wrong:k: edit 1 (old 'x = 1') occurs 2 times in legacy, not exactly once",
        ),
        (
            'kind = "k"\nmode = "stochastic"\nbase = "right:stochastic"\nwhy = "w"\n'
            'edits = [{ old = "import os", new = "import sys" }, { old = "y = 2", new = "y = 3" }]\n',
            "[c] wrong:k: edit 2 (old 'y = 2') occurs 0 times in right:stochastic, not exactly once",
        ),
        (
            'kind = "k"\nmode = "stochastic"\nbase = "right:amp"\nwhy = "w"\nedits = [{ old = "a", new = "b" }]\n',
            "base",
        ),
        ('kind = "k"\nmode = "stochastic"\nbase = "legacy"\nedits = [{ old = "import os", new = "" }]\n', "a why"),
        ('kind = "k"\nmode = "stochastic"\nbase = "legacy"\nwhy = "w"\nedits = [{ old = "x", new = "x" }]\n', "edit 1"),
        ('kind = "k"\nmode = "stochastic"\n', "no file and no base"),
        ('kind = "k"\nmode = "stochastic"\nfile = "right/stochastic.py"\n', "kept as a file needs a why"),
        ('kind = "k"\nmode = "stochastic"\nbase = "legacy"\nwhy = "w"\nedit = [{ old = "x", new = "y" }]\n', "edit"),
    ],
    ids=[
        "old-twice",
        "old-missing",
        "unknown-base",
        "no-why",
        "edit-changes-nothing",
        "no-edits",
        "file-without-why",
        "unknown-key",
    ],
)
def test_a_wrong_migration_that_cannot_be_made_is_a_one_line_error_naming_case_and_edit(tmp_path, wrong, message):
    toml = _suite(tmp_path, wrong)
    with pytest.raises(ValueError) as exc:
        calibrate.load_cases(toml, fixtures=tmp_path)
    text = str(exc.value)
    assert text.startswith(f"{toml}: [c]") and message in text and "\n" not in text, text


def _entry(migration, verdict, graph_hash, same_as=None):
    entry = {"case": "c", "migration": migration, "mode": "amp", "verdict": verdict, "expected": "PASS", "wall_s": 1.0}
    entry["right"] = verdict == "PASS"
    entry["parts"] = [{"name": "graph", "status": "PASS", "detail": "", "figures": {"graph_hash": graph_hash}}]
    if same_as:
        entry["same_as"] = same_as
    return entry


def test_a_same_migration_is_right_only_with_a_pass_and_the_right_migrations_step_graph():
    right = _entry("right:amp", "PASS", "h1")
    same = _entry("same:amp_backward", "PASS", "h1", same_as="right:amp")
    other_graph = _entry("same:x", "PASS", "h2", same_as="right:amp")
    failed = _entry("same:y", "FAIL", "h1", same_as="right:amp")
    alone = _entry("same:z", "PASS", "h1", same_as="right:stochastic")  # its right migration not measured
    entries = [right, same, other_graph, failed, alone]
    calibrate.check_same(entries)
    assert [e["right"] for e in entries] == [True, True, False, False, False]
    assert "step graph the same as right:amp's" in calibrate._figures(same)
    assert "NOT the same as" in calibrate._figures(other_graph)
    table = calibrate.matrix(entries)
    assert "| same computation as a right migration (4) | 3 | 1 |" in table
    assert "| right migration (1) | 1 |" in table


def test_the_amp_backward_migrations_compute_what_right_amp_does():
    """amp_backward is a ``same`` migration of right:amp in both cases that have it: expected PASS."""
    same = [(case.name, m) for case in CASES for m in case.migrations if m.label.startswith("same:")]
    assert {(name, m.label) for name, m in same} == {
        ("lm_large_loss", "same:amp_backward"),
        ("long_run", "same:amp_backward"),
    }
    for _name, m in same:
        assert m.expected == calibrate.PASS and m.same_as is not None and m.same_as.label == "right:amp"
