"""Small CLI items: `-` with --stdin-filename, --quiet, --statistics, --exit-zero,
`bf16-migrate explain`, `bf16_migrate.__version__`, colour only on a terminal (NO_COLOR)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

from click.testing import CliRunner

import bf16_migrate
from bf16_migrate.cli import main
from bf16_migrate.rules import load_rules

from conftest import FIXTURES

SCRIPT = (FIXTURES / "mlp_regression" / "train.py").read_text()


def invoke(*args, **kwargs):
    return CliRunner().invoke(main, [str(a) for a in args], **kwargs)


def cli(*args, stdin: str | None = None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
    )


def test_stdin_migrated_source_to_stdout_diagnostics_to_stderr(tmp_path):
    proc = cli("-", "--stdin-filename", "src/train.py", stdin=SCRIPT, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # the docstring's mention is left to do (BFM091)
    assert 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"' in proc.stdout and 'XLA_USE_BF16"]' not in proc.stdout
    assert "src/train.py:8:12: BFM001 XLA_USE_BF16 replaced" in proc.stderr
    assert "bf16-migrate-stdin" not in proc.stderr  # the temporary copy is never named
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_stdin_keeps_bom_and_crlf(tmp_path):
    data = b"\xef\xbb\xbf" + SCRIPT.replace("\n", "\r\n").encode()
    proc = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", "-", "--stdin-filename", "train.py"], input=data, capture_output=True
    )
    assert proc.stdout.startswith(b"\xef\xbb\xbf") and b"NEURON_RT_STOCHASTIC_ROUNDING_EN" in proc.stdout
    assert proc.stdout.count(b"\r\n") == proc.stdout.count(b"\n")
    script = tmp_path / "train.py"
    script.write_bytes(data)
    CliRunner().invoke(main, [str(script)])
    assert proc.stdout == script.read_bytes()  # the same bytes as the rewrite in place


def test_stdin_diff_check_and_clean_input(tmp_path):
    diff = cli("-", "--stdin-filename", "train.py", "--diff", stdin=SCRIPT)
    assert diff.returncode == 1 and diff.stdout.startswith("--- a/train.py") and "would replace" in diff.stderr
    check = cli("-", "--stdin-filename", "train.py", "--check", stdin=SCRIPT)
    assert check.returncode == 1 and check.stdout == ""
    clean = cli("-", "--stdin-filename", "train.py", stdin="import torch\n")
    assert clean.returncode == 0 and clean.stdout == "import torch\n"


def test_stdin_shell_and_force_exclude(tmp_path):
    launcher = "#!/bin/bash\nexport XLA_USE_BF16=1\n"
    proc = cli("-", "--stdin-filename", "env.sh", stdin=launcher)
    assert proc.stdout == launcher and "env.sh:2:8: BFM110" in proc.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.bf16-migrate]\nexclude = ["vendor"]\n')
    proc = cli("-", "--stdin-filename", "vendor/train.py", "--force-exclude", stdin=SCRIPT, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == SCRIPT and proc.stderr == ""


def test_stdin_usage_errors(tmp_path):
    assert "needs --stdin-filename" in invoke("-", input=SCRIPT).stderr
    assert "--stdin-filename only goes with" in invoke(tmp_path, "--stdin-filename", "x.py").stderr
    assert "cannot be combined" in invoke("-", tmp_path, "--stdin-filename", "x.py").stderr


def test_quiet_prints_the_findings_only(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = invoke(script, "--check", "--quiet")
    assert result.exit_code == 1
    assert result.stderr == "" and result.stdout.count("\n") == 2


def test_statistics(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = invoke(script, "--check", "--statistics")
    assert result.stdout.splitlines() == [
        "1\tBFM001\t[*] legacy-bf16-switch",
        "1\tBFM091\tdocumentation-names-variable",
    ]
    data = json.loads(invoke(script, "--check", "--statistics", "--json").stdout)
    assert data == [
        {"code": "BFM001", "name": "legacy-bf16-switch", "count": 1, "fixable": True},
        {"code": "BFM091", "name": "documentation-names-variable", "count": 1, "fixable": False},
    ]
    assert invoke(script, "--statistics", "--output-format", "sarif").exit_code == 2


def test_exit_zero(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    assert invoke(script, "--check").exit_code == 1
    assert invoke(script, "--check", "--exit-zero").exit_code == 0
    (tmp_path / "bad.py").write_text('import os\nos.environ["XLA_USE_BF16"] = "1"\ndef (:\n')
    assert invoke(tmp_path, "--check", "--exit-zero").exit_code == 2  # errors still exit 2


def test_explain():
    rule = load_rules().diagnostics["BFM050"]
    result = invoke("explain", "bfm050")
    assert result.exit_code == 0
    assert result.stdout.startswith(
        f"BFM050 {rule.title}\n\nWhat it does\n{rule.what}\n\nWhy it matters\n{rule.why}\n\nExample\n    "
    )
    for line in rule.example.splitlines() + rule.instead.splitlines():
        assert f"    {line}\n" in result.stdout
    assert "\nFix: fixed automatically, review. Replaced when the switch is migrated unconditionally" in result.stdout
    assert result.stdout.endswith(f"\nWhat to do: {rule.todo}\n")
    listing = invoke("explain")
    assert listing.exit_code == 0 and len(listing.stdout.splitlines()) == len(load_rules().diagnostics)
    unknown = invoke("explain", "BFM999")
    assert (
        unknown.exit_code == 2
        and unknown.stderr == "error: BFM999: no such diagnostic code (`bf16-migrate explain` lists them)\n"
    )


def test_rule_is_ruffs_name_for_explain(tmp_path, monkeypatch):
    """`bf16-migrate rule CODE` prints explain's page (ruff's `ruff rule F401`), `rule` and
    `rule --all` the list; a word close to it is a usage error naming it, not a missing path."""
    assert invoke("rule", "BFM050").stdout == invoke("explain", "BFM050").stdout != ""
    listing = invoke("explain").stdout
    assert invoke("rule").stdout == invoke("rule", "--all").stdout == listing
    assert invoke("rule", "BFM999").exit_code == 2
    assert invoke("rule", "BFM050", "--all").exit_code == 2
    monkeypatch.chdir(tmp_path)
    mistyped = invoke("rules", "BFM050")
    assert mistyped.exit_code == 2 and "did you mean `bf16-migrate rule`?" in mistyped.stderr


def test_version():
    assert bf16_migrate.__version__ == version("bf16-migrate")
    assert bf16_migrate.__version__ in invoke("--version").stdout


def test_colour_on_a_terminal_only_and_never_with_no_color(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    plain = invoke(script, "--check")
    assert "\x1b[" not in plain.stdout
    coloured = invoke(script, "--check", color=True)  # click's runner acting as a terminal
    assert "\x1b[" in coloured.stdout and "BFM001" in coloured.stdout
    no_color = invoke(script, "--check", color=True, env={"NO_COLOR": "1"})
    assert "\x1b[" not in no_color.stdout and no_color.stdout == plain.stdout


def test_python_dash_m_package_is_the_same_command(tmp_path):
    """``python -m bf16_migrate`` runs the command line ``bf16-migrate`` runs: the same rewrite of stdin."""
    package = subprocess.run(
        [sys.executable, "-m", "bf16_migrate", "-", "--stdin-filename", "train.py"],
        input=SCRIPT,
        capture_output=True,
        text=True,
    )
    script = cli("-", "--stdin-filename", "train.py", stdin=SCRIPT)
    assert "NEURON_RT_STOCHASTIC_ROUNDING_EN" in package.stdout
    assert (package.returncode, package.stdout, package.stderr) == (script.returncode, script.stdout, script.stderr)
