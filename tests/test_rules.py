"""The rules as data: loading, validation, and the truthiness rule measured on torch-xla 2.9."""

from __future__ import annotations

import shutil

import pytest

from bf16_migrate.diagnostics import RULES_REFERENCE, Diagnostic, report, with_readme_table
from bf16_migrate.rules import (
    EMIT_MARKS,
    EMITS,
    FIX_KINDS,
    MODES,
    REFERENCE,
    RULES_DIR,
    Emit,
    RuleError,
    diagnostic_rules,
    is_truthy,
    load_rules,
    mode_named,
    variable_rules,
)

from conftest import ROOT


def test_rules_load_and_cover_every_mode():
    rules = load_rules()
    assert set(rules.variables) == {"XLA_USE_BF16", "XLA_DOWNCAST_BF16", "XLA_USE_FP16", "XLA_DOWNCAST_FP16"}
    assert tuple(rules.modes) == MODES == ("stochastic", "gpu-compatible", "amp")
    for mode in rules.modes.values():
        assert rules.variables["XLA_USE_BF16"].emits(mode) == mode.emit != frozenset()
        assert rules.variables["XLA_USE_FP16"].emits(mode) == frozenset()  # no effect since torch-xla 2.5
    assert rules.variables["XLA_DOWNCAST_BF16"].f64_becomes == "f32"
    assert rules.variables["XLA_USE_BF16"].f64_becomes == "bf16"
    assert not rules.variables["XLA_USE_FP16"].effective


def test_what_code_asks_of_a_mode_is_read_from_what_it_emits():
    """Neuron's migration guide: stochastic = bf16 model + stochastic rounding; gpu-compatible =
    bf16 model + FP32 master weights; amp = FP32 model under autocast."""
    asked = {
        name: (m.casts_model, m.stochastic_rounding, m.master_weights, m.autocast)
        for name, m in load_rules().modes.items()
    }
    assert asked == {
        "stochastic": (True, True, False, False),
        "gpu-compatible": (True, False, True, False),
        "amp": (False, False, False, True),
    }
    assert mode_named("amp") is load_rules().modes["amp"]
    assert mode_named(REFERENCE.name) is REFERENCE and REFERENCE.removes_only
    # the FP32 reference adds only what an FP32 run needs to run at all: float64 inputs made float32
    assert REFERENCE.emit == {Emit.FLOAT32_INPUTS}
    with pytest.raises(ValueError, match="unknown mode 'fast'; choose one of stochastic, gpu-compatible, amp"):
        mode_named("fast")


def test_a_modes_marks_are_what_its_migrations_write_and_no_other_modes_do():
    """A mode's marks (``Mode.marks``, from what it emits) are in the golden migrations of the
    fixtures in that mode, more often than in the legacy script, and a migration in another mode
    adds none of the marks that mode does not share: verify tells a migration's mode by them."""
    assert set(EMIT_MARKS) <= EMITS
    assert {name: sorted(m.marks) for name, m in load_rules().modes.items()} == {
        "stochastic": [".to(torch.bfloat16)", "NEURON_RT_STOCHASTIC_ROUNDING_EN"],
        "gpu-compatible": [".to(torch.bfloat16)", "with_fp32_master_weights"],
        "amp": ["torch.autocast("],
    }
    every = set(EMIT_MARKS.values())
    seen: dict[str, set[str]] = {name: set() for name in MODES}
    goldens = sorted((ROOT / "fixtures").glob("*/expected/*/train.py"))
    assert len(goldens) >= 15
    for golden in goldens:
        mode = mode_named(golden.parent.name)
        legacy = (golden.parent.parent.parent / "train.py").read_text()
        added = {mark for mark in every if golden.read_text().count(mark) > legacy.count(mark)}
        assert added <= mode.marks, f"{golden}: {sorted(added - mode.marks)}"
        seen[mode.name] |= added
    assert seen == {name: set(m.marks) for name, m in load_rules().modes.items()}


# Measured on the XLA CPU device, torch-xla 2.9: XLA_USE_BF16=<value>, then the dtype of the HLO
# of `torch.ones(2, 2, device=xla) * 1.5` (the parse is GetEnvBool, torch_xla/csrc/runtime/sys_util.cc).
@pytest.mark.parametrize(
    "value, on",
    [
        ("1", True),
        ("true", True),
        ("2", True),
        (" 1", True),
        ("0", False),
        ("false", False),
        ("yes", False),
        ("", False),
        ("TRUE", False),
    ],
)
def test_truthiness_as_torch_xla_reads_it(value, on):
    assert is_truthy(value) is on


def _copy_rules(tmp_path):
    target = tmp_path / "rules"
    shutil.copytree(RULES_DIR, target)
    return target


def test_the_variables_and_the_catalogue_are_read_without_the_codemods_tables(tmp_path):
    """What the command line reads (the variables, the diagnostics) is read file by file, once:
    a broken codemod table does not stop it, and :func:`load_rules` holds the same objects."""
    rules = _copy_rules(tmp_path)
    (rules / "host_exits.toml").write_text("[[exit]]\ncolour = 'red'\n")
    assert set(variable_rules(rules)) == set(load_rules().variables)
    assert diagnostic_rules(rules).keys() == load_rules().diagnostics.keys()
    with pytest.raises(RuleError, match="host_exits.toml"):
        load_rules(rules)
    assert load_rules().diagnostics is diagnostic_rules() and load_rules().variables is variable_rules()


CORRUPTIONS = [
    # (file, old text, new text or None for "replace the whole file", error pattern)
    ("XLA_USE_BF16.toml", None, 'name = "XLA_USE_BF16"\n', r"XLA_USE_BF16\.toml: missing key"),
    ("modes.toml", '"autocast"', '"autocats"', r"modes\.toml: \[amp\] emits unknown changes \['autocats'\]"),
    (
        "XLA_USE_BF16.toml",
        "neuron_stochastic_rounding = true",
        "neuron_stochastic_rounding = true\n[modes.amp]\nemit = []",
        "not the variable's",
    ),
    ("XLA_USE_FP16.toml", "effective = false", "effective = true", "the modes replace bf16 only"),
    ("diagnostics_python.toml", "[BFM062]", "[BFM001]", "defined twice"),
    ("modes.toml", "[amp]", "[stochastic]", r"modes\.toml: cannot read rule file"),
    ("modes.toml", "[amp]", "[reference]", "verify's own reference run"),
    ("modes.toml", 'by_hand = "autocast the forward pass"\n', "", r"modes\.toml: missing key 'by_hand'"),
]


@pytest.mark.parametrize(
    "name, old, new, error",
    CORRUPTIONS,
    ids=[
        "missing-key",
        "unknown-emit",
        "variable-emits",
        "effective-fp16",
        "duplicate-code",
        "duplicate-mode",
        "reference-mode",
        "mode-text",
    ],
)
def test_a_bad_rule_file_is_rejected_naming_it(tmp_path, name, old, new, error):
    rules = _copy_rules(tmp_path)
    path = rules / name
    text = path.read_text()
    if old is not None:
        assert old in text
    path.write_text(new if old is None else text.replace(old, new))
    with pytest.raises(RuleError, match=error):
        load_rules.__wrapped__(rules)


def test_readme_table_is_the_catalogue():
    """docs/rules.md's diagnostics table is generated from rules/diagnostics*.toml; regenerate it
    with `python -m bf16_migrate.diagnostics --readme` after changing the catalogue."""
    readme = (ROOT / RULES_REFERENCE).read_text()
    assert with_readme_table(readme) == readme, (
        f"{RULES_REFERENCE}'s diagnostics table and rules/diagnostics*.toml disagree: run "
        f"`python -m bf16_migrate.diagnostics --readme` and review `git diff {RULES_REFERENCE}`"
    )
    for code, rule in load_rules().diagnostics.items():
        assert f"| {code} | {rule.title} |" in readme, code


def test_every_rule_page_is_complete():
    for code, rule in load_rules().diagnostics.items():
        for key in ("title", "what", "why", "example", "instead", "fix_note", "todo", "message"):
            assert getattr(rule, key).strip(), (code, key)
        assert rule.fix in FIX_KINDS
        assert rule.fixable is (rule.fix != "needs a hand")


def test_the_catalogue_says_what_the_code_fixes():
    """The codes the codemod reports both fixed and not (the review found BFM043, BFM050 and
    BFM055 reported [fixed] while the catalogue said they could not be)."""
    rules = load_rules().diagnostics
    assert {rules[c].fix for c in ("BFM043", "BFM050", "BFM055")} <= {
        "fixed automatically",
        "fixed automatically, review",
    }
    assert rules["BFM010"].fix == "needs a hand"


def test_report_formats_the_template():
    d = report("BFM002", "t.py", 3, 1, True, variable="XLA_USE_BF16", value='"0"')
    assert d.message == 'XLA_USE_BF16="0" means bf16 was off: removed, nothing added' and d.fixed
    d = report("BFM050", "t.py", 3, 1, True, "replaced", variable="XLA_USE_BF16")
    assert d.message.startswith("XLA_USE_BF16 is no longer set; this read is replaced")


@pytest.mark.parametrize(
    "args, fields, error",
    [
        (
            ("BFM002", "t.py", 1, 1, True),
            {"variable": "X"},
            r"wants fields \['value', 'variable'\], got \['variable'\]",
        ),
        (("BFM002", "t.py", 1, 1, True), {"variable": "X", "value": "0", "mode": "amp"}, "wants fields"),
        (("BFM050", "t.py", 1, 1, False, "nope"), {"variable": "X"}, "no message variant 'nope'"),
    ],
    ids=["missing-field", "unknown-field", "unknown-variant"],
)
def test_report_rejects_fields_the_template_does_not_have(args, fields, error):
    with pytest.raises(KeyError, match=error):
        report(*args, **fields)


def test_fixed_implies_fixable():
    with pytest.raises(ValueError, match="BFM010 is reported fixed, but its rule page says 'needs a hand'"):
        report("BFM010", "t.py", 1, 1, True, variable="XLA_USE_BF16", by_hand="cast it")
    with pytest.raises(ValueError, match="BFM040 is reported fixed"):
        Diagnostic("BFM040", "t.py", 1, 1, "a ready message", True)


def test_context_report_takes_fields_and_the_old_form():
    from bf16_migrate.python.context import FileContext

    ctx = FileContext.__new__(FileContext)
    ctx.path, ctx.diagnostics = "t.py", []
    ctx.report_at("BFM044", 2, 5, fixed=True, variable="XLA_USE_BF16")
    ctx.report_at("BFM131", 3, 1, "XLA_USE_BF16 is named somewhere: edit it by hand", False)
    assert ctx.diagnostics == [
        Diagnostic(
            "BFM044",
            "t.py",
            2,
            5,
            "XLA_USE_BF16 is taken out of the environment here; once no code sets it this is dead: removed",
            True,
        ),
        Diagnostic("BFM131", "t.py", 3, 1, "XLA_USE_BF16 is named somewhere: edit it by hand", False),
    ]
    with pytest.raises(TypeError, match="no template fields"):
        ctx.report_at("BFM131", 3, 1, "a message", False, variable="X")


PAGE_CORRUPTIONS = [
    (
        'title = "legacy-switch-off"',
        'title = "legacy-switch-off"\nsummary = "old"',
        r"diagnostics\.toml: \[BFM002\] has unknown keys \['summary'\]",
    ),
    (
        'why = "A false value had no effect on the device; keeping it keeps '
        'a deprecated name in the code for nothing."\n',
        "",
        r"diagnostics\.toml \[BFM002\]: missing key 'why'",
    ),
    (
        'fix = "fixed automatically: removing a write',
        'fix = "fixed: removing a write',
        r"diagnostics\.toml \[BFM002\]: 'fix' must be one of",
    ),
    (
        'fix = "fixed automatically: removing a write of a false value changes nothing the script computes."',
        'fix = "needs a hand"',
        "'fix' must be one of",
    ),
    (
        'message = "{variable}={value} means',
        'message = "{}={value} means',
        r"\[BFM002\]: message is not a template with named fields",
    ),
    (
        'message = "{variable}={value} means',
        'message = "{fixed}={value} means',
        r"\[BFM002\]: message uses the reserved field names \['fixed'\]",
    ),
]


@pytest.mark.parametrize(
    "old, new, error",
    PAGE_CORRUPTIONS,
    ids=["unknown-key", "missing-key", "bad-fix", "fix-without-sentence", "positional-field", "reserved-field"],
)
def test_a_bad_rule_page_is_rejected_naming_it(tmp_path, old, new, error):
    rules = _copy_rules(tmp_path)
    path = rules / "diagnostics.toml"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))
    with pytest.raises(RuleError, match=error):
        load_rules.__wrapped__(rules)
