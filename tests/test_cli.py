"""CLI behaviour: exit codes, --diff/--check write nothing, output format, file preservation."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from click.testing import CliRunner

from bf16_migrate.cli import main

from conftest import FIXTURES

SCRIPT = (FIXTURES / "mlp_regression" / "train.py").read_text()


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_clean_tree_exits_0(tmp_path):
    (tmp_path / "ok.py").write_text("import torch\n")
    result = invoke(tmp_path)
    assert result.exit_code == 0, result.output
    assert "0 file(s) changed" in result.output


def test_check_finds_and_writes_nothing(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    before = script.stat().st_mtime_ns
    result = invoke(tmp_path, "--check")
    assert result.exit_code == 1
    assert script.read_text() == SCRIPT and script.stat().st_mtime_ns == before
    assert f"{script}:8:12: BFM001 " in result.output
    assert "1 file(s) would change" in result.output


def test_diff_prints_unified_diff_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = invoke(script, "--diff", "--mode", "amp")  # an absolute path: the patch names it from the cwd
    assert result.exit_code == 1
    assert result.stdout.startswith("--- a/train.py\n+++ b/train.py\n@@ ")
    assert '-os.environ["XLA_USE_BF16"] = "1"' in result.output
    assert '+        with torch.autocast("xla", dtype=torch.bfloat16):' in result.output
    assert script.read_text() == SCRIPT


def test_unfixable_finding_exits_1_even_when_writing(tmp_path):
    script = tmp_path / "train.py"
    script.write_text('import os\nfor name in names:\n    os.environ["XLA_USE_BF16"] = "1"\n')
    result = invoke(script)
    assert result.exit_code == 1
    assert "BFM041" in result.output and "[fixed]" not in result.output


def test_missing_path_exits_2():
    result = invoke("does/not/exist")
    assert result.exit_code == 2
    assert "does/not/exist: no such file or directory" in result.output


def test_parse_error_exits_2_names_file_and_other_files_still_processed(tmp_path):
    (tmp_path / "bad.py").write_text('import os\nos.environ["XLA_USE_BF16"] = "1"\ndef (:\n')
    good = tmp_path / "good.py"
    good.write_text(SCRIPT)
    result = invoke(tmp_path)
    assert result.exit_code == 2
    assert f"{tmp_path / 'bad.py'}:3:" in result.output
    assert "NEURON_RT_STOCHASTIC_ROUNDING_EN" in good.read_text()
    assert (tmp_path / "bad.py").read_text().startswith("import os")


def test_usage_errors_exit_2(tmp_path):
    assert invoke(tmp_path, "--diff", "--check").exit_code == 2
    assert invoke(tmp_path, "--mode", "fp8").exit_code == 2
    assert invoke().exit_code == 2


def test_json_format(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    result = CliRunner().invoke(main, [str(script), "--check", "--format", "json"])
    data = json.loads(result.stdout)
    assert data["errors"] == []
    # the module docstring names the variable (line 4: documentation, never fixed), then the switch
    assert [(d["code"], d["line"], d["col"], d["fixed"]) for d in data["diagnostics"][:2]] == [
        ("BFM091", 4, 13, False),
        ("BFM001", 8, 12, True),
    ]
    assert data["diagnostics"][1] == {
        "code": "BFM001",
        "path": str(script),
        "line": 8,
        "col": 12,
        "message": data["diagnostics"][1]["message"],
        "fixed": True,
    }


def test_write_keeps_crlf_bom_and_mode(tmp_path):
    script = tmp_path / "train.py"
    script.write_bytes(b"\xef\xbb\xbf" + SCRIPT.replace("\n", "\r\n").encode())
    os.chmod(script, 0o755)
    result = invoke(script)
    # all fixed but the docstring that names the variable: positions stay right with a BOM and CRLF
    assert result.exit_code == 1 and f"{script}:4:13: BFM091 " in result.output
    assert "1 left to do by hand" in result.output
    data = script.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert b"NEURON_RT_STOCHASTIC_ROUNDING_EN" in data
    assert not [p for p in tmp_path.iterdir() if p.name != "train.py"]  # no temp file left


def test_launcher_whose_script_is_missing_is_reported_and_kept(tmp_path):
    (tmp_path / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py\n")
    (tmp_path / "NOTES.md").write_text("We used XLA_USE_BF16 once.\n")
    result = invoke(tmp_path)
    assert result.exit_code == 1
    assert f"{tmp_path / 'run.sh'}:2:8: BFM111" in result.output
    assert "export XLA_USE_BF16=1" in (tmp_path / "run.sh").read_text()  # kept: nothing trains in fp32 by surprise
    assert (
        f"{tmp_path / 'NOTES.md'}:1:9: BFM091 documentation names XLA_USE_BF16" in result.output
    )  # reported, not edited
    assert (tmp_path / "NOTES.md").read_text() == "We used XLA_USE_BF16 once.\n"


def test_unparsed_carrier_kind_is_reported_not_skipped(tmp_path):
    (tmp_path / "tox.ini").write_text("[testenv]\nsetenv =\n    XLA_USE_BF16=1\n")
    result = invoke(tmp_path)
    assert result.exit_code == 1
    assert f"{tmp_path / 'tox.ini'}:3:5: BFM090" in result.output


def test_console_script_runs_without_importing_torch(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    code = (
        "import sys; from bf16_migrate.cli import main\n"
        "try:\n    main([sys.argv[1], '--check'])\nexcept SystemExit as e:\n"
        "    assert 'torch' not in sys.modules, 'rewrite path imported torch'\n    raise\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(script)], capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr


def test_report_ends_with_a_todo_list_grouped_by_file(tmp_path):
    (tmp_path / "a.py").write_text('import os\nos.environ["XLA_USE_BF16"] = 1\n')
    (tmp_path / "b.py").write_text(SCRIPT)
    result = invoke(tmp_path)
    assert result.exit_code == 1
    todo = result.output[result.output.index("Left to do by hand (2):") :]
    assert f"  {tmp_path / 'a.py'}\n    [ ] line 2: non-string-value (BFM046): Fix the line by hand" in todo
    # everything in b.py was fixed but its docstring, which names the variable
    assert (
        f"  {tmp_path / 'b.py'}\n    [ ] line 4: documentation-names-variable (BFM091): Update the text by hand" in todo
    )


def test_fp32_optimizer_state_flag(tmp_path):
    script = tmp_path / "train.py"
    script.write_text((FIXTURES / "shapes" / "custom_optimizer" / "custom_optimizer.py").read_text())
    result = invoke(script, "--fp32-optimizer-state")
    assert result.exit_code == 0, result.output
    assert "grad = p.grad.data.float()" in script.read_text()
    assert "BFM061" in result.output


def test_a_run_walks_the_tree_once(tmp_path, monkeypatch):
    """The command line scans first (to skip all start-up work when nothing names a variable) and
    hands its candidates to the migration: one scan per run, no second walk of the tree."""
    from bf16_migrate import project, scan

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text((FIXTURES / "mlp_regression" / "train.py").read_text())
    calls = []
    real = scan.scan

    def counted_scan(*a, **k):
        calls.append(a)
        return real(*a, **k)

    monkeypatch.setattr(scan, "scan", counted_scan)
    monkeypatch.setattr(project, "scan", scan.scan)
    result = invoke(tmp_path, "--check")
    assert result.exit_code == 1, result.output
    assert len(calls) == 1, calls
