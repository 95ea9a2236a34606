"""The rules as data: loading, validation, and the truthiness rule measured on torch-xla 2.9."""

from __future__ import annotations

import shutil

import pytest

from bf16_migrate.rules import MODES, RULES_DIR, RuleError, is_truthy, load_rules


def test_rules_load_and_cover_every_mode():
    rules = load_rules()
    assert set(rules.variables) == {"XLA_USE_BF16", "XLA_DOWNCAST_BF16", "XLA_USE_FP16", "XLA_DOWNCAST_FP16"}
    for rule in rules.variables.values():
        assert set(rule.emit) == set(MODES)
    assert rules.variables["XLA_DOWNCAST_BF16"].f64_becomes == "f32"
    assert rules.variables["XLA_USE_BF16"].f64_becomes == "bf16"
    assert not rules.variables["XLA_USE_FP16"].effective


def test_every_diagnostic_code_in_readme_and_rules():
    readme = (RULES_DIR.parent.parent / "README.md").read_text()
    for code in load_rules().diagnostics:
        assert f"| {code} |" in readme, code


# Measured on the XLA CPU device, torch-xla 2.9: XLA_USE_BF16=<value>, then the dtype of the HLO
# of `torch.ones(2, 2, device=xla) * 1.5` (note of issue 2).
@pytest.mark.parametrize(
    "value, on",
    [("1", True), ("true", True), ("2", True), (" 1", True), ("0", False), ("false", False),
     ("yes", False), ("", False), ("TRUE", False)],
)
def test_truthiness_as_torch_xla_reads_it(value, on):
    assert is_truthy(value) is on


def _copy_rules(tmp_path):
    target = tmp_path / "rules"
    shutil.copytree(RULES_DIR, target)
    return target


def test_malformed_rule_names_the_file(tmp_path):
    rules = _copy_rules(tmp_path)
    (rules / "XLA_USE_BF16.toml").write_text('name = "XLA_USE_BF16"\n')
    with pytest.raises(RuleError, match=r"XLA_USE_BF16\.toml: missing key"):
        load_rules.__wrapped__(rules)


def test_unknown_emit_is_rejected(tmp_path):
    rules = _copy_rules(tmp_path)
    path = rules / "XLA_USE_BF16.toml"
    path.write_text(path.read_text().replace('"autocast"', '"autocats"'))
    with pytest.raises(RuleError, match="unknown changes"):
        load_rules.__wrapped__(rules)


def test_noop_variable_must_emit_nothing(tmp_path):
    rules = _copy_rules(tmp_path)
    path = rules / "XLA_USE_FP16.toml"
    path.write_text(path.read_text().replace("[modes.amp]\nemit = []", '[modes.amp]\nemit = ["autocast"]'))
    with pytest.raises(RuleError, match="no effect must emit nothing"):
        load_rules.__wrapped__(rules)
