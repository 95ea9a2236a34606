"""verify checks before it starts (and ``--verify`` before it rewrites): torch and torch-xla
installed (else exit 2 with the install line), the device named, the script's arguments
accepted by one short process that stops once argparse has parsed them; and ``--markdown``."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.verify.markdown import error_markdown, report_markdown, tree_markdown
from bf16_migrate.verify.preflight import check_arguments, check_xla, xla_install_line
from bf16_migrate.verify.records import RunError

from conftest import ROOT

SHOWCASE = (ROOT / "examples" / "showcase" / "train.py").read_text()
HAS_TORCH = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("torch_xla") is not None

# argparse first, the heavy imports after the parse: the check costs no torch import
NEEDS_DATA = """import argparse
import os
os.environ["XLA_USE_BF16"] = "1"
parser = argparse.ArgumentParser()
parser.add_argument("--data-dir", required=True)
parser.add_argument("--steps", type=int, default=3)
args = parser.parse_args()
import torch  # noqa: E402
raise SystemExit("trained")
"""
SUBCOMMANDS = """import argparse
parser = argparse.ArgumentParser()
sub = parser.add_subparsers(dest="cmd", required=True)
train = sub.add_parser("train")
train.add_argument("--lr", type=float, default=0.1)
args = parser.parse_args()
raise SystemExit("trained")
"""


def _script(tmp_path: Path, text: str, name: str = "train.py") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_arguments_accepted_rejected_or_not_checked(tmp_path):
    script = _script(tmp_path, NEEDS_DATA)
    started = time.monotonic()
    assert check_arguments(script, ["--data-dir", "d", "--steps", "5"], NEEDS_DATA) is True
    with pytest.raises(RunError) as info:
        check_arguments(script, [], NEEDS_DATA)
    assert "train.py does not accept the arguments (none)" in info.value.message
    assert "the following arguments are required: --data-dir" in info.value.message
    assert info.value.hint is not None and "after `--`" in info.value.hint
    with pytest.raises(RunError, match="invalid int value"):
        check_arguments(script, ["--data-dir", "d", "--steps", "x"], NEEDS_DATA)
    with pytest.raises(RunError, match="unrecognized arguments: --bogus"):
        check_arguments(
            script, ["--data-dir", "d", "--bogus"], NEEDS_DATA
        )  # parse_args' own check, after parse_known_args
    assert time.monotonic() - started < 30  # four short processes, none trained
    nested = _script(tmp_path, SUBCOMMANDS, "nested.py")
    assert check_arguments(nested, ["train", "--lr", "0.5"], SUBCOMMANDS) is True
    with pytest.raises(RunError, match="unrecognized arguments: --momentum"):
        check_arguments(nested, ["train", "--momentum", "0.9"], SUBCOMMANDS)
    plain = "import sys\nprint(sys.argv)\n"
    assert check_arguments(_script(tmp_path, plain, "plain.py"), ["x"], plain) is False  # no argparse: not checked
    broken = "import argparse\nimport no_such_module_here\n"
    with pytest.raises(RunError, match="failed before it parsed its arguments") as info:
        check_arguments(_script(tmp_path, broken, "broken.py"), [], broken)
    assert "No module named 'no_such_module_here'" in " ".join(info.value.tail)


def test_without_torch_verify_stops_before_any_run_with_the_install_line(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name in ("torch", "torch_xla") else real(name, *a)
    )
    with pytest.raises(RunError) as info:
        check_xla()
    assert info.value.hint == f"install them into this environment: {xla_install_line()}"
    assert "pip install 'torch==2.9.0' 'torch-xla==2.9.0'" in info.value.hint
    script = _script(tmp_path, SHOWCASE)
    report = tmp_path / "summary.md"
    result = CliRunner().invoke(main, ["verify", str(script), "--steps", "3", "--markdown", str(report)])
    assert result.exit_code == 2
    assert "verify needs torch and torch-xla" in result.stderr and "pip install 'torch==2.9.0'" in result.stderr
    assert "run started" not in result.stderr  # no run was made
    assert "could not be made" in report.read_text() and "pip install" in report.read_text()
    # --verify rewrites nothing it cannot then verify
    monkeypatch.chdir(tmp_path)
    rewrite = CliRunner().invoke(main, ["train.py", "--verify"])
    assert rewrite.exit_code == 2 and "nothing was rewritten" in rewrite.stderr
    assert script.read_text() == SHOWCASE


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch and torch-xla installed (the xla extra)")
def test_a_script_that_needs_arguments_costs_one_short_process(tmp_path, monkeypatch):
    script = _script(tmp_path, NEEDS_DATA)
    started = time.monotonic()
    result = CliRunner().invoke(main, ["verify", str(script), "--steps", "3"])
    assert result.exit_code == 2, result.output
    assert "XLA device: the CPU (PJRT_DEVICE=" in result.stderr
    assert "train.py does not accept the arguments (none)" in result.stderr and "run started" not in result.stderr
    assert time.monotonic() - started < 60
    # --verify: the launch line's arguments are checked before anything is written (a script
    # the rewrite changes: the showcase, given a required argument its launcher does not pass)
    project = tmp_path / "project"
    project.mkdir()
    steps = '    parser.add_argument("--steps", type=int, default=30)\n'
    required = '    parser.add_argument("--data-dir", required=True)\n'
    needs = SHOWCASE.replace('os.environ["XLA_USE_BF16"] = "1"\n', "").replace(steps, steps + required)
    assert needs.count("--data-dir") == 1 and "XLA_USE_BF16" not in needs
    (project / "train.py").write_text(needs)
    (project / "run.sh").write_text("#!/bin/sh\nexport XLA_USE_BF16=1\npython train.py --steps 3\n")
    monkeypatch.chdir(project)
    rewrite = CliRunner().invoke(main, [".", "--verify"])
    assert rewrite.exit_code == 2, rewrite.output
    assert (
        "train.py does not accept the arguments --steps 3" in rewrite.stderr
        and "nothing was rewritten" in rewrite.stderr
    )
    assert (project / "train.py").read_text() == needs and "export XLA_USE_BF16=1" in (project / "run.sh").read_text()
    assert "1 file(s) would change" not in rewrite.stderr and CliRunner().invoke(main, [".", "--check"]).exit_code == 1


DOC = {
    "schema": "bf16-migrate/verify/2",
    "script": "train.py",
    "mode": "stochastic",
    "steps": 3,
    "script_args": ["--steps", "3"],
    "device": "CPU",
    "legacy_env": {"XLA_USE_BF16": "1"},
    "legacy_env_source": ["run.sh:2"],
    "passed": True,
    "baseline": "legacy",
    "parts": [
        {"name": "runs", "status": "PASS", "detail": "legacy 3 steps | migrated 3 steps", "figures": {}},
        {"name": "matches", "status": "PASS", "detail": "3 of the first 3 steps the same", "figures": {}},
    ],
    "rel_diff": [0.0, 0.0, 0.0063],
    "notes": ["Stochastic rounding exists only on Neuron hardware"],
    "runs": {
        "legacy": {"ok": True, "steps": 3, "losses": [1.5, 1.25, "nan"], "wall_time_s": 9.5, "graph": None},
        "migrated": {
            "ok": True,
            "steps": 3,
            "losses": [1.5, 1.25, 1.125],
            "wall_time_s": 9.1,
            "graph": {"matmuls": 9, "matmuls_bf16": 9},
            "device_param_dtypes": {"bf16": 6},
        },
    },
}


def test_verify_markdown_renders_the_verdict_the_losses_and_the_runs():
    from markdown_it import MarkdownIt

    text = report_markdown(DOC)
    assert text.startswith("## bf16-migrate verify `train.py`: **PASS**\n")
    assert "legacy run under `XLA_USE_BF16=1` (from run.sh:2)" in text
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    assert [t.type for t in tokens].count("table_open") == 3  # parts, losses, runs
    cells = [t.content for t in tokens if t.type == "inline"]
    assert "legacy 3 steps \\| migrated 3 steps" not in cells and "legacy 3 steps | migrated 3 steps" in cells
    assert "| 3 | nan | 1.125 | 6.30e-03 |" in text and "| migrated | 3 | 9.1 s | 9 of 9 | bf16 x6 | ok |" in text
    tree = tree_markdown(
        {
            "exit_code": 2,
            "notes": [],
            "results": [
                {"script": "a.py", "status": "PASS", "report": DOC},
                {
                    "script": "b.py",
                    "status": "ERROR",
                    "report": None,
                    "error": {"message": "it crashed", "hint": "look", "tail": ["Traceback"]},
                },
            ],
        },
        "bf16-migrate verify --against HEAD~1",
    )
    assert tree.startswith("## bf16-migrate verify --against HEAD~1: **ERROR**")
    assert (
        "### bf16-migrate verify `train.py`: **PASS**" in tree
        and "### bf16-migrate verify `b.py`: **could not be made**" in tree
    )
    assert "```\nTraceback\n```" in error_markdown("b.py", {"message": "m", "tail": ["Traceback"]})
    json.dumps(DOC)  # the documents it reads are --json documents
