"""Suppressions: `# noqa` (ruff's syntax) in Python, shell and YAML; --select/--ignore by code
or prefix; the summary's "N suppressed"; and the safety rule: a suppression never makes a
legacy switch go without its replacement."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.suppress import ALL, Selection, SelectionError, check_codes, noqa_by_line, parse_noqa

from conftest import FIXTURES

# the fixture without the docstring's mention of the variable (a BFM091 finding of its own)
SCRIPT = (
    (FIXTURES / "mlp_regression" / "train.py")
    .read_text()
    .replace("through the XLA_USE_BF16 environment variable", "through an environment variable")
)
WRITE = 'os.environ["XLA_USE_BF16"] = "1"\n'
READ = "    args = parse_args()\n"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_parse_noqa_follows_ruff():
    assert parse_noqa("# noqa") is ALL
    assert parse_noqa("# NOQA") is ALL
    assert parse_noqa("# noqa: BFM050") == {"BFM050"}
    assert parse_noqa("#noqa:BFM050,BFM022") == {"BFM050", "BFM022"}
    assert parse_noqa("# noqa: BFM050, E501") == {"BFM050", "E501"}
    assert parse_noqa("# a comment") is None


def test_noqa_in_python_is_read_from_real_comments_only():
    text = 'x = "# noqa"\ny = 1  # noqa: BFM001\n"""\n# noqa\n"""\n'
    assert noqa_by_line(text, "python") == {2: {"BFM001"}}
    assert noqa_by_line("export X=1 # noqa\necho '#noqa'x\n", "shell") == {1: ALL}
    assert noqa_by_line("env:\n  - name: X  # noqa: BFM110\n", "yaml") == {2: {"BFM110"}}
    assert noqa_by_line("ENV X=1 # noqa\n", "dockerfile") == {}


def test_noqa_on_a_read_suppresses_the_finding_and_the_file_is_still_migrated(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.replace(READ, READ + '    print(os.environ.get("XLA_USE_BF16"))  # noqa: BFM050\n'))
    result = invoke(script, "--check", "--json")
    data = json.loads(result.stdout)
    assert [d["code"] for d in data["suppressed"]] == ["BFM050"]
    assert [d["code"] for d in data["diagnostics"]] == ["BFM001"]
    text = invoke(script, "--check")
    assert "BFM050" not in text.stdout and "1 suppressed" in text.stderr
    invoke(script)
    assert "NEURON_RT_STOCHASTIC_ROUNDING_EN" in script.read_text()  # the rewrite is the same


@pytest.mark.parametrize("comment", ["# noqa", "# noqa: BFM001", "# NOQA:BFM001,BFM050"])
def test_noqa_on_a_legacy_write_keeps_the_file_as_it_is(tmp_path, comment):
    script = tmp_path / "train.py"
    source = SCRIPT.replace(WRITE, WRITE.rstrip("\n") + f"  {comment}\n")
    script.write_text(source)
    result = invoke(script)
    assert result.exit_code == 0, result.output
    assert script.read_text() == source
    assert f"left as it is: {script} (`# noqa` on line 8, a legacy setting (BFM001))" in result.stderr
    assert "0 file(s) changed" in result.stderr and "suppressed" in result.stderr
    assert "[fixed]" not in result.stdout
    check = invoke(script, "--check")
    assert check.exit_code == 0 and check.stdout == ""


def test_noqa_for_another_tool_on_a_write_changes_nothing(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT.replace(WRITE, WRITE.rstrip("\n") + "  # noqa: E501\n"))
    result = invoke(script)
    assert result.exit_code == 0 and "XLA_USE_BF16" not in script.read_text()
    assert "suppressed" not in result.stderr


def _launcher_tree(tmp_path, script_suffix="", launcher_suffix=""):
    tree = tmp_path / "job"
    tree.mkdir()
    (tree / "run.sh").write_text(f"#!/bin/bash\nexport XLA_USE_BF16=1{launcher_suffix}\npython3 train.py\n")
    body = SCRIPT.replace(WRITE, "")
    if script_suffix:
        body = body.replace(
            "import os\n", f"import os\nif os.environ.get('RANK') == '0':\n    {WRITE.rstrip()}{script_suffix}\n", 1
        )
    (tree / "train.py").write_text(body)
    return tree


def test_noqa_on_a_launcher_write_keeps_the_launcher_and_never_drops_the_switch(tmp_path):
    tree = _launcher_tree(tmp_path, launcher_suffix="  # noqa: BFM001")
    before = (tree / "run.sh").read_text()
    result = invoke(tree)
    assert result.exit_code == 0, result.output
    assert (tree / "run.sh").read_text() == before  # the switch stays
    assert "left as it is" in result.stderr and "run.sh" in result.stderr


def test_noqa_on_a_script_write_keeps_its_launchers_too(tmp_path):
    """A script kept as it is by a noqa, started by a launcher that sets the switch: the
    launcher is kept too, so the switch never goes while the script keeps no replacement."""
    tree = _launcher_tree(tmp_path, script_suffix="  # noqa")
    before = {p.name: p.read_text() for p in tree.iterdir()}
    result = invoke(tree)
    assert {p.name: p.read_text() for p in tree.iterdir()} == before, result.output
    assert result.exit_code == 0, result.output
    assert f"left as it is: {tree / 'run.sh'} (it launches {tree / 'train.py'}, left as it is by a `# noqa`)" in (
        result.stderr
    )


TRAIN_OF = """\
import torch
import torch_xla.core.xla_model as xm
from model import Net


def main():
    device = xm.xla_device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(10):
        optimizer.zero_grad()
        loss = model(torch.randn(8, 4, device=device)).sum()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""
MODEL = """\
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        bias = torch.ones(2, device=x.device)
        return self.fc(x) + bias
"""


def _noqa_tree(tmp_path, shared_module: bool):
    """scripts/run.sh starts src/train.py under the switch; src/noqa_train.py sets the switch
    itself behind a `# noqa`; with ``shared_module`` both import src/model.py (whose model code
    the migration changes), else train.py builds its own layer."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "scripts" / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython src/train.py\n")
    train = (
        TRAIN_OF
        if shared_module
        else TRAIN_OF.replace("from model import Net\n", "").replace("Net()", "torch.nn.Linear(4, 2)")
    )
    (tmp_path / "src" / "train.py").write_text(train)
    (tmp_path / "src" / "model.py").write_text(MODEL)
    noqa = 'import os\n\nos.environ["XLA_USE_BF16"] = "1"  # noqa\n' + TRAIN_OF
    (tmp_path / "src" / "noqa_train.py").write_text(noqa)
    return tmp_path


def test_noqa_on_one_script_keeps_no_launcher_that_starts_another(tmp_path, monkeypatch):
    """A launcher is kept with a noqa'd script only when its settings reach that script: run.sh
    runs src/train.py, not src/noqa_train.py, so it is migrated with train.py (the launcher was
    kept before, naming a script it does not launch, while train.py was changed)."""
    tree = _noqa_tree(tmp_path, shared_module=False)
    monkeypatch.chdir(tree)
    result = invoke(".", "--check")
    assert result.exit_code == 1, result.output
    assert "scripts/run.sh:2:8: BFM001 would replace XLA_USE_BF16" in result.stdout
    assert "src/train.py:1:1: BFM001" in result.stdout
    kept = [line for line in result.stderr.splitlines() if "left as it is:" in line]
    assert kept == [
        "bf16-migrate: left as it is: src/noqa_train.py (`# noqa` on line 3, a legacy setting (BFM001))",
        "bf16-migrate: left as it is: src/model.py (it is imported by src/noqa_train.py, left as it is by a `# noqa`)",
    ]
    assert invoke(".").exit_code == 0
    assert "XLA_USE_BF16" not in (tree / "scripts" / "run.sh").read_text()
    assert "model.to(torch.bfloat16)" in (tree / "src" / "train.py").read_text()
    assert 'os.environ["XLA_USE_BF16"] = "1"  # noqa' in (tree / "src" / "noqa_train.py").read_text()


def test_noqa_on_a_script_keeps_its_modules_and_what_else_imports_them(tmp_path, monkeypatch):
    """src/model.py, imported by the noqa'd script, is kept; src/train.py imports it too, so it is
    kept (migrated, it would miss the module's change), and so is run.sh, which launches it: each
    reason names the file it goes with. Nothing is written, nothing left without its switch."""
    tree = _noqa_tree(tmp_path, shared_module=True)
    monkeypatch.chdir(tree)
    before = {p: p.read_text() for p in tree.rglob("*") if p.is_file()}
    result = invoke(".")
    assert result.exit_code == 0, result.output
    assert {p: p.read_text() for p in tree.rglob("*") if p.is_file()} == before
    kept = [line.removeprefix("bf16-migrate: left as it is: ") for line in result.stderr.splitlines()]
    assert kept[:4] == [
        "src/noqa_train.py (`# noqa` on line 3, a legacy setting (BFM001))",
        "src/model.py (it is imported by src/noqa_train.py, left as it is by a `# noqa`)",
        "src/train.py (it imports src/model.py, left as it is with src/noqa_train.py)",
        "scripts/run.sh (it launches src/train.py, left as it is with src/noqa_train.py)",
    ]
    (tree / "src" / "noqa_train.py").unlink()  # without the noqa'd script, all three are migrated
    assert invoke(".").exit_code == 0
    assert "dtype=" in (tree / "src" / "model.py").read_text()
    assert "XLA_USE_BF16" not in (tree / "scripts" / "run.sh").read_text()


def test_noqa_in_shell_suppresses_an_unfixed_finding(tmp_path):
    (tmp_path / "env.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\n")
    assert invoke(tmp_path, "--check").exit_code == 1  # nothing launched after it: BFM110
    (tmp_path / "env.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1  # noqa: BFM110\n")
    result = invoke(tmp_path, "--check")
    assert result.exit_code == 0, result.output
    assert "1 suppressed" in result.stderr


def test_select_and_ignore_by_code_and_prefix(tmp_path):
    script = tmp_path / "train.py"
    script.write_text((FIXTURES / "mlp_regression" / "train.py").read_text())
    codes = lambda *a: [d["code"] for d in json.loads(invoke(script, "--check", "--json", *a).stdout)["diagnostics"]]  # noqa: E731
    assert codes() == ["BFM091", "BFM001"]
    assert codes("--select", "BFM0") == ["BFM091", "BFM001"]
    assert codes("--select", "BFM00") == ["BFM001"]
    assert codes("--ignore", "BFM09") == ["BFM001"]
    assert codes("--select", "bfm001,BFM091", "--ignore", "BFM091") == ["BFM001"]
    # an unfixed finding that is ignored no longer fails the run; the rewrite is the same
    result = invoke(script, "--ignore", "BFM091")
    assert result.exit_code == 0 and "1 suppressed" in result.stderr
    assert "NEURON_RT_STOCHASTIC_ROUNDING_EN" in script.read_text()


def test_check_fails_while_a_file_would_change_whatever_is_suppressed(tmp_path):
    """`--check` says "exit 1 if anything would change": a suppression hides a finding, never
    the change (the rewrite still writes the file), so a file that would change fails the check
    even when every finding about it is suppressed, and a line says so (with --quiet too); a
    `# noqa` on the legacy write keeps the file as it is, and then the check passes."""
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    assert "exit 1 if anything would change" in " ".join(invoke("migrate", "--help").stdout.split())
    assert invoke(script, "--check").exit_code == 1
    for extra in (("--quiet",), ()):
        hidden = invoke(script, "--check", "--ignore", "BFM001", *extra)
        assert hidden.exit_code == 1, hidden.output
        assert hidden.stdout == ""  # nothing reported
        assert f"bf16-migrate: {script} would change; its findings are suppressed (BFM001)" in hidden.stderr
    assert "1 file(s) would change, 0 finding(s) would be fixed, 0 left to do by hand, 1 suppressed" in hidden.stderr
    assert script.read_text() == SCRIPT
    ignored = invoke(script, "--ignore", "BFM001")  # what --check was about: the rewrite writes it
    assert ignored.exit_code == 0 and "model.to(torch.bfloat16)" in script.read_text()
    script.write_text(SCRIPT.replace(WRITE, WRITE.replace("\n", "  # noqa: BFM001\n"), 1))
    kept = invoke(script, "--check")
    assert kept.exit_code == 0 and "0 file(s) would change" in kept.stderr and "would change;" not in kept.stderr


def test_check_with_a_launcher_and_its_script_all_suppressed_fails(tmp_path):
    """Two files that would change (a launcher and the script it starts), every finding
    suppressed: exit 1, each file named once."""
    tree = _launcher_tree(tmp_path)
    result = invoke(tree, "--check", "--ignore", "BFM")
    assert result.exit_code == 1, result.output
    assert "2 file(s) would change" in result.stderr and result.stderr.count("would change; its findings") == 2


@pytest.mark.parametrize("option", ["--select", "--ignore"])
def test_unknown_code_is_a_one_line_usage_error(tmp_path, option):
    result = invoke(tmp_path, option, "XYZ1")
    assert result.exit_code == 2
    assert (
        result.stderr == f"usage error: {option} XYZ1: no diagnostic code starts with it (see `bf16-migrate explain`)\n"
    )


def test_selection_unit():
    sel = Selection(select=("BFM1",), ignore=("BFM11",))
    assert sel.enabled("BFM102") and not sel.enabled("BFM110") and not sel.enabled("BFM001")
    with pytest.raises(SelectionError):
        check_codes("--select", ["BFM9999"], ["BFM001"])


def test_suppressed_in_sarif_carry_suppressions(tmp_path):
    script = tmp_path / "train.py"
    script.write_text((FIXTURES / "mlp_regression" / "train.py").read_text())
    data = json.loads(invoke(script, "--check", "--output-format", "sarif", "--ignore", "BFM091").stdout)
    [ignored] = [r for r in data["runs"][0]["results"] if r["ruleId"] == "BFM091"]
    assert ignored["suppressions"] == [{"kind": "external"}]
