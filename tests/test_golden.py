"""Golden in/out for every fixture and mode, idempotence, re-parse, and the CLI on the fixtures."""

from __future__ import annotations

import ast
import re

import libcst as cst
import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.python import migrate_source
from bf16_migrate.rules import load_rules

from conftest import CASES, FIXTURES, MODES
from goldens import expected_dir

LEGACY = tuple(load_rules().variables)


def golden(case: str, mode: str):
    """The golden migration of ``fixtures/<case>/train.py`` in ``mode``."""
    return expected_dir(FIXTURES / case, mode) / "train.py"


def only_the_docstring(diagnostics, source: str) -> bool:
    """The fixtures' module docstrings describe the legacy switch: documentation (BFM091, never
    fixed: the text is updated by hand) is the only finding a migration leaves in them."""
    end = ast.parse(source).body[0].end_lineno
    return all(d.code == "BFM091" and d.line <= end for d in diagnostics)


def left_in_output(output: str) -> list[str]:
    """The codes of the unfixed findings the CLI printed."""
    return [
        m.group(1)
        for m in re.finditer(r"^\S+:\d+:\d+: (BFM\d+) .*$", output, re.M)
        if not m.group(0).endswith("[fixed]")
    ]


def test_there_are_fixtures():
    assert set(CASES) >= {"mlp_regression", "cnn_trainer", "tiny_transformer", "optimizer_before_to"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_golden(case, mode, goldens):
    source = (FIXTURES / case / "train.py").read_text()
    result = migrate_source(source, mode, f"{case}/train.py")
    goldens.check(expected_dir(FIXTURES / case, mode), {"train.py": result.code})
    assert result.unfixed and only_the_docstring(result.unfixed, source), [d.format_text() for d in result.unfixed]
    assert any(d.code == "BFM001" and d.fixed for d in result.diagnostics)
    cst.parse_module(result.code)  # re-parses
    compile(result.code, f"{case}/{mode}.py", "exec")
    # no legacy variable is left in any string literal
    strings = [
        cst.ensure_type(s, cst.SimpleString).evaluated_value
        for s in cst.matchers.findall(cst.parse_module(result.code), cst.matchers.SimpleString())
    ]
    assert not set(strings) & set(LEGACY)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_idempotent(case, mode):
    expected = golden(case, mode).read_text()
    again = migrate_source(expected, mode, f"{case}/expected/{mode}/train.py")
    assert again.code == expected
    assert only_the_docstring(again.diagnostics, expected), [d.format_text() for d in again.diagnostics]


@pytest.mark.parametrize("mode", MODES)
def test_migrated_script_never_imports_the_tool(mode):
    for case in CASES:
        expected = golden(case, mode).read_text()
        assert "bf16_migrate" not in expected


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_cli_rewrites_fixture_directory_to_golden(case, mode, fixture_copy):
    script = fixture_copy(case)
    runner = CliRunner()
    result = runner.invoke(main, [str(script.parent), "--mode", mode])
    # exit 1: everything is fixed but the docstring, which names the variable (BFM091)
    assert result.exit_code == 1 and set(left_in_output(result.output)) == {"BFM091"}, result.output
    assert script.read_text() == golden(case, mode).read_text()
    assert f"{script}:" in result.output and "BFM001" in result.output
    second = runner.invoke(main, [str(script.parent), "--mode", mode, "--check"])
    assert "0 file(s) would change" in second.output and set(left_in_output(second.output)) == {"BFM091"}, second.output
