"""docs/architecture.md's recipe for an emitted change ("Adding an emitted change"), followed: a
made-up change, ``optimizer-note`` (a comment line right above each optimizer, saying the model it
trains is bf16 from there on), added the way the recipe says and nowhere else: its word in
``rules.Emit`` (rule_files.py; here an extended copy of the enum), one unit module (written here to
a file of its own: ``EMIT`` and ``plan``), its row in ``changes.REGISTRY``, the word in the ``emit``
of a mode of ``rules/modes.toml`` and its rule page in ``rules/diagnostics_python.toml`` (in a copy
of the rules, as tests/test_rules_source.py adds a made-up mode). A migration in that mode makes
the change and reports it, the page's examples hold; an ``Emit`` without its unit fails when the
package is loaded, naming it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from bf16_migrate import rule_files, rules
from bf16_migrate.project import migrate_paths
from bf16_migrate.python import changes, migrate_source
from bf16_migrate.python.changes import REGISTRY, Unit, UnitMissing, check_registry
from bf16_migrate.python.guard import CodemodError
from bf16_migrate.rule_files import RULES_DIR, Emit, Word, mode_named

from conftest import FIXTURES, ROOT

NOTE = "optimizer-note"
CODE = "BFM199"
MODE = "bf16-noted"
COMMENT = "# bf16-migrate: the model this optimizer trains is bf16 from here on"
TRAIN = (FIXTURES / "mlp_regression" / "train.py").read_text()

UNIT = f'''"""optimizer-note (made up for tests/test_change_recipe.py): a comment line right above each
optimizer built from a model, saying that the model is bf16 from there on."""

from __future__ import annotations

import libcst as cst

from bf16_migrate.python.changes.migration import Migration, Planned
from bf16_migrate.rules import Emit

EMIT = Emit.OPTIMIZER_NOTE


def plan(m: Migration, planned: Planned) -> Planned:
    """The comment above each optimizer's statement, reported ({CODE})."""
    for site in m.sites:
        if site.statement is None or site.model is None:
            continue
        m.plan.replace[id(site.statement)] = lambda node: node.with_changes(
            leading_lines=[*node.leading_lines, cst.EmptyLine(comment=cst.Comment({COMMENT!r}))]
        )
        m.ctx.report("{CODE}", site.call, fixed=True, model=m.ctx.code(site.model))
    return planned
'''

PAGE = f"""
[{CODE}]
title = "{NOTE}"
what = "A made-up change: a comment line above each optimizer built from a bf16 model."
why = "tests/test_change_recipe.py follows the recipe for an emitted change with it."
example = '''optimizer = torch.optim.SGD(model.parameters(), lr=0.1)'''
instead = '''{COMMENT}'''
fix = "fixed automatically: the comment is written."
todo = "Nothing."
message = "a note above the optimizer of `{{model}}`"

[[{CODE}.invalid]]
mode = "{MODE}"
holds = {{ "train.py" = "{COMMENT}" }}
files."train.py" = '''
import os
import torch
os.environ["XLA_USE_BF16"] = "1"
model = torch.nn.Linear(4, 2).to("xla")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
print(model(torch.randn(8, 4).to("xla")).sum())
'''

[[{CODE}.valid]]
mode = "stochastic"
files."train.py" = '''
import os
import torch
os.environ["XLA_USE_BF16"] = "1"
model = torch.nn.Linear(4, 2).to("xla")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
print(model(torch.randn(8, 4).to("xla")).sum())
'''
"""


def _extended() -> type[Emit]:
    """``rules.Emit`` with the made-up word: step 1 of the recipe, a member of the enum."""
    return Word("Emit", [(e.name, e.value) for e in Emit] + [("OPTIMIZER_NOTE", NOTE)])  # type: ignore[call-overload]


@pytest.fixture
def noted_rules(tmp_path_factory, monkeypatch) -> Path:
    """The recipe's rule files (a copy of the rules with the word in a new mode's ``emit`` and the
    change's rule page) and its word in ``Emit``; the rules read from the copy."""
    target = tmp_path_factory.mktemp("rules") / "rules"
    shutil.copytree(RULES_DIR, target)
    with (target / "modes.toml").open("a") as f:
        f.write(
            f'\n[{MODE}]\nsummary = "model cast to torch.bfloat16, a note above the optimizer"\n'
            f'emit = ["model-cast", "input-cast", "{NOTE}"]\n'
            'by_hand = "cast the model by hand"\nscript_change = "the model cast, noted"\n'
        )
    with (target / "diagnostics_python.toml").open("a") as f:
        f.write(PAGE)
    rules.load_rules(), rule_files.diagnostic_rules()  # the stock rules read (and kept) with the stock Emit
    extended = _extended()
    monkeypatch.setattr(rule_files, "Emit", extended)
    monkeypatch.setattr(rules, "Emit", extended)
    # the rules read from the copy, as with BF16_MIGRATE_RULES_DIR: its modes, its catalogue of findings
    monkeypatch.setattr(rule_files, "MODES", tuple(mode.name for mode in rule_files.all_modes(target)))
    monkeypatch.setattr(rule_files, "RULES_DIR", target)
    return target


def _unit(where: Path) -> ModuleType:
    """Step 2: the unit, one module of its own."""
    path = where / "optimizer_note.py"
    path.write_text(UNIT)
    spec = importlib.util.spec_from_file_location("optimizer_note", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_change_added_by_the_recipe_is_made_in_the_mode_that_emits_it(noted_rules, tmp_path, monkeypatch):
    unit = _unit(tmp_path)
    monkeypatch.setattr(changes, "REGISTRY", (*REGISTRY, Unit(unit.EMIT, unit.plan)))  # step 3: its row
    noted = mode_named(MODE, noted_rules)
    assert NOTE in noted.emit
    result = migrate_source(TRAIN, noted, "train.py")
    lines = result.code.splitlines()
    optimizer = next(i for i, line in enumerate(lines) if "torch.optim." in line)
    assert lines[optimizer - 1].strip() == COMMENT
    assert "model.to(torch.bfloat16)" in result.code  # the mode's other changes, as before
    assert [d.code for d in result.diagnostics if d.code == CODE] == [CODE]
    assert "a note above the optimizer of `model`" in next(d.message for d in result.diagnostics if d.code == CODE)
    # the stock modes do not emit it
    assert COMMENT not in migrate_source(TRAIN, mode_named("stochastic"), "train.py").code


def test_the_rule_page_examples_of_the_new_change_hold(noted_rules, tmp_path, monkeypatch):
    """The page's INVALID example produces the code with its line, its VALID one (stochastic mode)
    does not (run as tests/test_rule_examples.py runs every page's)."""
    unit = _unit(tmp_path)
    monkeypatch.setattr(changes, "REGISTRY", (*REGISTRY, Unit(unit.EMIT, unit.plan)))
    page = rule_files.diagnostic_rules()[CODE]
    (invalid,), (valid,) = page.invalid, page.valid
    for number, example in enumerate((invalid, valid)):
        tree = tmp_path / f"tree{number}"
        for name, text in example.files.items():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_text(text)
        outcome = migrate_paths([tree], example.mode, write=True)
        assert not outcome.errors, outcome.errors
        mine = [d for d in outcome.diagnostics if d.code == CODE]
        assert bool(mine) is example.invalid
        for name, line in example.holds.items():
            assert line in [kept.strip() for kept in (tree / name).read_text().splitlines()]


def test_an_emitted_change_without_its_unit_stops_the_migration_naming_it(noted_rules):
    """Steps 1, 4 and 5 without 2 and 3: the migration in the mode stops, naming the change."""
    with pytest.raises(CodemodError, match=f"UnitMissing: the emitted change '{NOTE}' has no unit in"):
        migrate_source(TRAIN, mode_named(MODE, noted_rules), "train.py")


def test_an_emit_without_a_unit_or_with_two_is_refused():
    with pytest.raises(UnitMissing, match=f"'{NOTE}' has no unit"):
        check_registry(REGISTRY, _extended())
    twice = (*REGISTRY, REGISTRY[1])
    with pytest.raises(UnitMissing, match=f"'{REGISTRY[1].emit}' has 2 units"):
        check_registry(twice)
    check_registry()  # the package's own: every Emit once


def test_an_emit_without_a_unit_fails_when_the_package_is_loaded():
    """Step 1 without step 3: the package refuses to load, naming the change."""
    code = (
        "from bf16_migrate import rule_files, rules\n"
        f"rule_files.Emit = rules.Emit = rule_files.Word('Emit', [(e.name, e.value) for e in rule_files.Emit]"
        f" + [('OPTIMIZER_NOTE', {NOTE!r})])\n"
        "import bf16_migrate.python\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0
    assert f"UnitMissing: the emitted change '{NOTE}' has no unit in" in proc.stderr, proc.stderr
