"""Output of the rewrite: dry-run wording, --output-format text|json|sarif|github, --json alias,
notebook locations, edits in JSON, SARIF read back with maintained SARIF libraries."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.diagnostics import Diagnostic
from bf16_migrate.output import escape_data, escape_property, github_command, location
from bf16_migrate.rules import load_rules
from bf16_migrate.wording import would

from conftest import FIXTURES, MODES

SCRIPT = (FIXTURES / "mlp_regression" / "train.py").read_text()


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def project(tmp_path, monkeypatch):
    """fixtures/project copied (without its expected/ outputs), the current directory there."""
    tree = tmp_path / "project"
    shutil.copytree(FIXTURES / "project", tree, ignore=shutil.ignore_patterns("expected"))
    monkeypatch.chdir(tree)
    return tree


# 1. a run that writes nothing says "would"


@pytest.mark.parametrize("flag", ["--check", "--diff"])
def test_dry_run_says_would_and_never_fixed(project, flag):
    result = invoke(".", flag)
    assert result.exit_code == 1
    findings = result.stdout if flag == "--check" else result.stderr  # --diff: stdout is the patch alone
    lines = [line for line in findings.splitlines() if re.match(r"^\S+:\d+:\d+: BFM", line)]
    assert lines and "[fixed]" not in result.output
    assert all(line.endswith("[fixable]") and " would " in f" {line}" for line in lines), lines
    assert (
        "run.sh:6:8: BFM001 would replace XLA_USE_BF16 by "
        "NEURON_RT_STOCHASTIC_ROUNDING_EN=1; src/train.py would then have" in findings
    )
    assert "would be fixed" in result.stderr and "would change" in result.stderr


def test_write_run_keeps_the_done_wording(project):
    result = invoke(".")
    assert result.exit_code == 0, result.output
    assert (
        "run.sh:6:8: BFM001 XLA_USE_BF16 replaced by NEURON_RT_STOCHASTIC_ROUNDING_EN=1; src/train.py now has"
        in result.stdout
    )
    assert "[fixed]" in result.stdout and "would" not in result.stdout
    assert "finding(s) fixed" in result.stderr


def test_would_rewords_every_fixed_message_of_the_fixtures():
    """Each fixed message of every fixture, in every mode, says "would" once reworded, and no
    longer has the done forms."""
    done = re.compile(r"^\S+ (replaced|removed)\b|\bnow (has|have)\b")
    for mode in MODES:
        data = json.loads(invoke(FIXTURES, "--check", "--mode", mode, "--output-format", "json").stdout)
        fixed = [d["message"] for d in data["diagnostics"] if d["fixed"]]
        assert len(fixed) > 20
        for message in fixed:
            assert "would" in message and not done.search(message), message
    assert would("XLA_USE_BF16 removed; a.py now has x") == "would remove XLA_USE_BF16; a.py would then have x"
    assert would("something else entirely") == "would fix: something else entirely"


# 2. formats


def test_json_has_schema_dry_run_and_edits(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = invoke(script, "--check", "--output-format", "json")
    data = json.loads(result.stdout)
    assert data["schema"] == 1 and data["dry_run"] is True
    assert data["suppressed"] == [] and data["kept"] == []
    [entry] = data["edits"]
    assert entry["path"] == str(script)
    first = entry["edits"][0]
    assert first["location"] == {"row": 8, "column": 1} and first["end_location"] == {"row": 9, "column": 1}
    assert first["content"] == 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"\n'
    # applying the edits (bottom-up) gives the migrated file
    lines = SCRIPT.splitlines(keepends=True)
    for edit in reversed(entry["edits"]):
        lines[edit["location"]["row"] - 1 : edit["end_location"]["row"] - 1] = [edit["content"]]
    invoke(script)
    assert "".join(lines) == script.read_text()


def test_json_alias_and_format_alias(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    by_flag = invoke(script, "--check", "--json")
    by_old = invoke(script, "--check", "--format", "json")
    by_new = invoke(script, "--check", "--output-format", "json")
    assert json.loads(by_flag.stdout) == json.loads(by_old.stdout) == json.loads(by_new.stdout)
    clash = invoke(script, "--check", "--json", "--output-format", "sarif")
    assert clash.exit_code == 2 and "--json and --output-format sarif" in clash.stderr


def _sarif(project, *args):
    result = invoke(".", "--check", "--output-format", "sarif", *args)
    assert result.exit_code == 1, result.output
    (project.parent / "out.sarif").write_text(result.stdout)
    return json.loads(result.stdout), project.parent / "out.sarif"


def test_sarif_validates_with_sarif_pydantic(project):
    from sarif_pydantic import Sarif

    data, _ = _sarif(project)
    log = Sarif.model_validate(data)
    assert log.version == "2.1.0"
    run = log.runs[0]
    rules = {rule.id: rule for rule in run.tool.driver.rules}
    catalogue = load_rules().diagnostics
    assert set(rules) == set(catalogue)
    assert rules["BFM050"].short_description.text == catalogue["BFM050"].title
    assert rules["BFM050"].help.text == catalogue["BFM050"].todo
    for result in run.results:
        assert run.tool.driver.rules[result.rule_index].id == result.rule_id


def test_sarif_read_back_with_sarif_tools(project):
    from sarif import loader

    data, path = _sarif(project)
    sarif_file = loader.load_sarif_file(str(path))
    records = sarif_file.get_records()
    by_location = {(r["Location"], r["Line"]) for r in records}
    assert ("run.sh", 6) in by_location and ("k8s/job.yaml", 20) in by_location
    results = data["runs"][0]["results"]
    run_sh = next(r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "run.sh")
    assert run_sh["ruleId"] == "BFM001" and run_sh["level"] == "warning"
    assert run_sh["locations"][0]["physicalLocation"]["region"] == {"startLine": 6, "startColumn": 8}
    assert run_sh["message"]["text"].startswith("would replace XLA_USE_BF16")


def test_sarif_and_github_point_notebook_findings_at_the_ipynb(project):
    data, _ = _sarif(project)
    [nb] = [
        r
        for r in data["runs"][0]["results"]
        if ".ipynb" in r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    ]
    assert nb["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "notebooks/quick_run.ipynb"
    # cell 2's `%env XLA_USE_BF16=1` is line 29 of the .ipynb, the name at column 11 there
    assert nb["locations"][0]["physicalLocation"]["region"] == {"startLine": 29, "startColumn": 11}
    assert nb["message"]["text"].startswith("cell 2, line 1, col 6: would replace XLA_USE_BF16")
    gh = invoke(".", "--check", "--output-format", "github")
    [line] = [line for line in gh.stdout.splitlines() if "ipynb" in line.split("::")[1]]
    assert line.startswith(
        "::warning file=notebooks/quick_run.ipynb,line=29,col=11,title=BFM001::cell 2, line 1, col 6: would replace"
    )
    text = invoke(".", "--check")
    [line] = [line for line in text.stdout.splitlines() if "ipynb" in line]
    # the text output names the cell, as docs/usage.md says
    assert line.startswith("notebooks/quick_run.ipynb#cell2:1:6: BFM001 would replace XLA_USE_BF16")
    [nb] = [d for d in json.loads(invoke(".", "--check", "--json").stdout)["diagnostics"] if "ipynb" in d["path"]]
    assert (nb["path"], nb["line"], nb["col"]) == (
        "notebooks/quick_run.ipynb#cell2",
        1,
        6,
    )  # JSON keeps the cell's place


def test_github_workflow_commands(project):
    result = invoke(".", "--check", "--output-format", "github")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert all(line.startswith(("::warning ", "::error ", "::notice ")) for line in lines), lines
    assert any(
        line.startswith("::warning file=run.sh,line=6,col=8,title=BFM001::would replace XLA_USE_BF16") for line in lines
    )
    written = invoke(".", "--output-format", "github")
    assert any(
        line.startswith("::notice file=run.sh,line=6,col=8,title=BFM001::XLA_USE_BF16 replaced")
        for line in written.stdout.splitlines()
    )


def test_github_escaping():
    """GitHub docs, "Workflow commands": %, CR and LF escaped in the message; also : and , in
    the properties (as the Actions toolkit's escapeProperty)."""
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    d = Diagnostic("BFM090", "we,ird:name.cfg", 3, 2, "100% sure\nreally", False)
    assert (
        github_command(d, dry_run=True)
        == "::error file=we%2Cird%3Aname.cfg,line=3,col=2,title=BFM090::100%25 sure%0Areally"
    )


def test_location_of_a_notebook_cell():
    d = Diagnostic("BFM001", "nb/x.ipynb#cell12", 4, 7, "m", True)
    assert location(d) == ("nb/x.ipynb", None, None, "cell 12, line 4, col 7: ")
    assert location(Diagnostic("BFM001", "a.py", 4, 7, "m", True)) == ("a.py", 4, 7, "")


def test_sarif_from_a_subprocess_is_valid_json(tmp_path):
    """The installed entry point (not CliRunner) writes SARIF to stdout, the summary nowhere."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    proc = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", str(script), "--check", "--output-format", "sarif"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert {r["ruleId"] for r in data["runs"][0]["results"]} == {"BFM001", "BFM091"}


def test_sarif_fixes_applied_give_the_migrated_tree(project):
    """``--check --output-format sarif`` carries each file's change as a ``fix`` (once per
    file, on its first fixable finding); applying every fix's replacements to the files gives
    byte for byte what the write run gives."""
    from sarif_pydantic import Sarif

    data, _ = _sarif(project)
    Sarif.model_validate(data)
    changes: dict[str, list[dict]] = {}
    for result in data["runs"][0]["results"]:
        for fix in result.get("fixes", []):
            assert result["properties"]["fixed"] and "suppressions" not in result
            for change in fix["artifactChanges"]:
                uri = change["artifactLocation"]["uri"]
                assert uri not in changes, f"{uri}: two fixes"
                changes[uri] = change["replacements"]
    assert {"run.sh", "Dockerfile", "k8s/job.yaml", "src/train.py", "notebooks/quick_run.ipynb"} <= set(changes)
    applied = {}
    for uri, replacements in changes.items():
        text = (project / uri).read_bytes().decode("utf-8")
        for rep in sorted(replacements, key=lambda r: r["deletedRegion"]["charOffset"], reverse=True):
            start = rep["deletedRegion"]["charOffset"]
            text = text[:start] + rep["insertedContent"]["text"] + text[start + rep["deletedRegion"]["charLength"] :]
        applied[uri] = text
    assert invoke(".").exit_code == 0
    for uri, text in applied.items():
        assert (project / uri).read_bytes().decode("utf-8") == text, uri


def test_sarif_of_a_write_run_has_no_fixes(project):
    result = invoke(".", "--output-format", "sarif")
    assert result.exit_code == 0, result.output
    assert not any("fixes" in r for r in json.loads(result.stdout)["runs"][0]["results"])
