"""Every rule page's runnable examples, run for every code (as Fixit 2 runs its rules' VALID and
INVALID examples, and ruff snapshots each rule's fixture).

A page of ``rules/diagnostics*.toml`` holds its examples as data (schema: the docstring of
:mod:`bf16_migrate.rules`, the header of rules/diagnostics.toml):

* an INVALID example (``[[BFMnnn.invalid]]``) is a small tree migrated with
  :func:`bf16_migrate.project.migrate_paths` in its mode: the code must be produced (reported
  fixed as the example says: by default as the page's fix says), the migrated tree must hold the
  example's ``holds`` lines, every migrated ``.py`` file must parse, and a second run over the
  migrated tree must change nothing;
* a VALID example (``[[BFMnnn.valid]]``): a nearby legacy or migrated tree where the code must
  not be produced.

The trace codes (BFM2xx, rules/diagnostics_trace.toml) are a separate category: ``verify``'s
run-time trace produces them from a run on the device, not the rewrite from a text, so no text
example can produce them here. Their page names instead (``tested_by``) the test of
tests/test_trace_findings.py or tests/test_verify_trace.py that produces them; this file checks
that the test exists and names the code.

Every code must have both kinds (a trace code its ``tested_by``), but for :data:`NOT_YET`.
"""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest

from bf16_migrate import escaped_bytes
from bf16_migrate.project import migrate_paths
from bf16_migrate.rules import RuleError, RuleExample, load_rules
from bf16_migrate.suppress import Selection, filter_findings

from conftest import ROOT

RULES = load_rules().diagnostics

# The codes that do not yet have both a VALID and an INVALID example (a trace code: no
# `tested_by`). The set may only shrink: a code that gains its examples must leave it, and a new
# code without examples fails test_every_code_has_its_examples.
NOT_YET: set[str] = {
    "BFM113",  # a module that is there but unreadable (a FIFO, a dangling symlink): no text file makes one
}

# Codes reported only as the reason inside another code's finding (BFM015's page: "BFM112 gives
# the reason"): produced means named there as "(BFMnnn at line ...".
NAMED_IN = {"BFM015": "BFM112"}

# Examples that show a defect of the rewrite, kept as written (never weakened): id -> the defect.
DEFECTS: dict[str, str] = {}


def _is_trace(code: str) -> bool:
    return RULES[code].tested_by is not None or code.startswith("BFM2")


def _cases() -> list:
    cases = []
    for code, page in sorted(RULES.items()):
        for kind, examples in (("invalid", page.invalid), ("valid", page.valid)):
            for number, example in enumerate(examples, 1):
                case_id = f"{code}-{kind}-{number}"
                marks = []
                if case_id in DEFECTS:
                    marks.append(pytest.mark.xfail(strict=True, reason=DEFECTS[case_id]))
                cases.append(pytest.param(code, example, id=case_id, marks=marks))
    return cases


def _write(where: Path, files: dict[str, str]) -> Path:
    """The example's files under ``where``, UTF-8 but for the characters that stand for a byte
    that is not UTF-8 (U+10FE80..U+10FEFF, :mod:`bf16_migrate.escaped_bytes`): written as that byte."""
    for name, text in files.items():
        path = where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(escaped_bytes.encode(text))
    return where


def _texts(tree: Path) -> dict[str, str]:
    return {
        str(p.relative_to(tree)): p.read_bytes().decode(escaped_bytes.NAME)
        for p in sorted(tree.rglob("*"))
        if p.is_file()
    }


def _findings(found) -> list[str]:
    return [d.format_text() for d in found]


def _run(tree: Path, example: RuleExample, write: bool):
    """The outcome of migrating ``tree`` as ``example`` says, and its findings (with the unused
    ``# noqa`` ones when the example selects them: ``extend_select``, as the command line does)."""
    options = dict(example.options)
    extend_select = options.pop("extend_select", ())
    outcome = migrate_paths([tree], example.mode, write=write, **options)
    assert not outcome.errors, outcome.errors
    found = list(outcome.diagnostics)
    if extend_select:
        found = filter_findings(found, Selection(extend_select=extend_select, root=tree), {}).reported
    return outcome, found


@pytest.mark.parametrize("code, example", _cases())
def test_rule_example(tmp_path: Path, code: str, example: RuleExample):
    """An INVALID example produces its code (fixed as it says, its lines held, the output
    parsing, a second run a no-op); a VALID one does not produce it."""
    tree = _write(tmp_path / "tree", dict(example.files))
    outcome, found = _run(tree, example, write=False)
    mine = [d for d in found if d.code == code]
    if code in NAMED_IN:
        mine = [d for d in found if d.code == NAMED_IN[code] and f"({code} at line " in d.message]
    if not example.invalid:
        assert mine == [], _findings(found)
        return
    assert mine, f"{code} not produced in {example.mode}: {_findings(found)}"
    assert example.fixed in {d.fixed for d in mine}, _findings(found)
    migrated = tmp_path / "migrated"
    shutil.copytree(tree, migrated)
    _run(migrated, example, write=True)
    texts = _texts(migrated)
    for name, line in example.holds.items():
        assert line in [kept.strip() for kept in texts[name].splitlines()], f"{name} lacks {line!r}:\n{texts[name]}"
    for name, text in texts.items():
        if name.endswith(".py"):
            ast.parse(text, name)
    again, found = _run(migrated, example, write=True)
    assert again.changed == [] and _texts(migrated) == texts, _findings(found)


def _test_source(tested_by: str) -> str:
    """The source of the test function ``tests/<file>.py::<test>`` (up to the next top-level
    statement); empty when there is none."""
    file, _, name = tested_by.partition("::")
    path = ROOT / file
    if not path.is_file():
        return ""
    found = re.search(rf"^def {re.escape(name)}\(.*?(?=^\S)", path.read_text() + "\n#", re.S | re.M)
    return found.group(0) if found else ""


@pytest.mark.parametrize("code", sorted(c for c in RULES if _is_trace(c) and c not in NOT_YET))
def test_a_trace_code_names_the_test_that_produces_it(code: str):
    """A trace code's ``tested_by`` is a test of the trace's test files, and that test names the code."""
    tested_by = RULES[code].tested_by
    assert tested_by is not None, f"{code}: a trace code names its test with `tested_by`"
    assert tested_by.split("::")[0] in ("tests/test_trace_findings.py", "tests/test_verify_trace.py"), tested_by
    source = _test_source(tested_by)
    assert source, f"{code}: no test {tested_by}"
    assert code in source, f"{code}: {tested_by} does not name {code}"


def _missing() -> set[str]:
    missing = set()
    for code, page in RULES.items():
        if _is_trace(code):
            if page.tested_by is None:
                missing.add(code)
        elif not page.invalid or not page.valid:
            missing.add(code)
    return missing


def test_every_code_has_its_examples():
    """Every code has a VALID and an INVALID example (a trace code its test), but for the codes of
    :data:`NOT_YET`, which are exactly those still without."""
    missing = _missing()
    assert sorted(missing - NOT_YET) == [], "codes without a VALID and an INVALID example"
    assert sorted(NOT_YET - missing) == [], "codes that have their examples now: take them out of NOT_YET"


def test_every_defect_names_an_example():
    """An entry of :data:`DEFECTS` names an example that exists (a renamed one would pass unseen)."""
    ids = {case.id for case in _cases()}
    assert sorted(set(DEFECTS) - ids) == []


def test_a_trace_code_has_no_text_examples():
    """A trace code is produced by the run-time trace only: a text example could not produce it."""
    assert [c for c in RULES if _is_trace(c) and (RULES[c].invalid or RULES[c].valid)] == []


@pytest.mark.parametrize(
    "addition, complaint",
    [
        ("[[BFM002.invalid]]\nmode = 'fast'\nuse = 'example'\n", "'mode' must be one of"),
        ("[[BFM002.invalid]]\nuse = 'example'\n", "a fixed finding needs 'holds'"),
        ("[[BFM002.valid]]\nuse = 'example'\nfiles = {'a.py' = ''}\n", "exactly one of 'use' and 'files'"),
        ("[[BFM002.valid]]\nuse = 'example'\nholds = {'train.py' = 'x'}\n", "unknown keys ['holds']"),
        ("[[BFM002.invalid]]\nuse = 'example'\nholds = {'run.sh' = 'x'}\n", "'holds' must be a table"),
        ("[[BFM002.valid]]\nuse = 'example'\noptions = {select = 'BFM900'}\n", "'options' must be a table of"),
    ],
    ids=["mode", "holds-missing", "use-and-files", "valid-holds", "holds-elsewhere", "options"],
)
def test_a_bad_example_is_an_error_naming_the_file_and_the_code(tmp_path, addition: str, complaint: str):
    """The loader refuses a malformed example, naming the file and the code."""
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    page = rules / "diagnostics.toml"
    page.write_text(page.read_text() + "\n" + addition)  # one more example of BFM002's, the bad one
    with pytest.raises(RuleError) as raised:
        load_rules(rules)
    assert "diagnostics.toml [BFM002]" in str(raised.value) and complaint in str(raised.value), str(raised.value)
