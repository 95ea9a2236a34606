"""The rules as data: loading, validation, and the truthiness rule measured on torch-xla 2.9."""

from __future__ import annotations

import shutil

import pytest
from conftest import ROOT

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
    readme = (ROOT / "README.md").read_text()
    for code in load_rules().diagnostics:
        assert f"| {code} |" in readme, code


# Measured on the XLA CPU device, torch-xla 2.9: XLA_USE_BF16=<value>, then the dtype of the HLO
# of `torch.ones(2, 2, device=xla) * 1.5` (the parse is GetEnvBool, torch_xla/csrc/runtime/sys_util.cc).
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


CORRUPTIONS = [
    # (file, old text, new text or None for "replace the whole file", error pattern)
    ("XLA_USE_BF16.toml", None, 'name = "XLA_USE_BF16"\n', r"XLA_USE_BF16\.toml: missing key"),
    ("XLA_USE_BF16.toml", '"autocast"', '"autocats"', "unknown changes"),
    ("XLA_USE_FP16.toml", "[modes.amp]\nemit = []", '[modes.amp]\nemit = ["autocast"]', "no effect must emit nothing"),
    ("diagnostics_python.toml", "[BFM062]", "[BFM001]", "defined twice"),
    ("modes.toml", '"amp"]', '"amp", "amp"]', r"modes\.toml: 'modes' must be a non-empty list of distinct names"),
]


@pytest.mark.parametrize("name, old, new, error", CORRUPTIONS, ids=["missing-key", "unknown-emit", "noop-emits", "duplicate-code", "duplicate-mode"])
def test_a_bad_rule_file_is_rejected_naming_it(tmp_path, name, old, new, error):
    rules = _copy_rules(tmp_path)
    path = rules / name
    text = path.read_text()
    if old is not None:
        assert old in text
    path.write_text(new if old is None else text.replace(old, new))
    with pytest.raises(RuleError, match=error):
        load_rules.__wrapped__(rules)
