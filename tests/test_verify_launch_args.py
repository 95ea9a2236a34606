"""``bf16-migrate verify run.sh -- ARGS`` where run.sh runs ``python train.py --steps
"${STEPS:-40}" --batch-size 32 "$@"``: the launch's computed words are resolved as the shell would
once the launcher's arguments and environment are known (carriers/shell/launch_args.py), the
values used are said, and the launch is verified. Before, the launch was "computed when the
launcher runs: not verified" and verify answered NOTHING VERIFIED (exit 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate.carriers import analyze
from bf16_migrate.carriers.shell.launch_args import ResolvedArgs
from bf16_migrate.verify.launch import plan_launcher

ROOT = Path(__file__).resolve().parent.parent
TRAIN = (ROOT / "fixtures" / "project" / "src" / "train.py").read_text()
RUN_SH = """#!/bin/bash
# Train with the defaults; extra arguments go to the script.
set -euo pipefail
export XLA_USE_BF16=1
python train.py --steps "${STEPS:-40}" --batch-size 32 "$@"
"""


def _launch(text: str):
    (launch,) = analyze("shell", text, "run.sh").launches
    assert launch.resolve_args is not None
    return launch


@pytest.mark.parametrize(
    "line, environ, argv, words, used",
    [
        ('python t.py --steps "${STEPS:-40}" "$@"', {}, ["--lr", "0.1"], ["--steps", "40", "--lr", "0.1"], "STEPS"),
        ('python t.py --steps "${STEPS:-40}"', {"STEPS": "7"}, [], ["--steps", "7"], "STEPS"),
        ('python t.py --steps "${STEPS-40}"', {}, [], ["--steps", "40"], "STEPS"),
        ('python t.py --lr "${1:-0.1}" --seed "$2"', {}, ["0.5", "3"], ["--lr", "0.5", "--seed", "3"], "$1"),
        ('python t.py --lr "${1:-0.1}"', {}, [], ["--lr", "0.1"], "1"),
        ('python t.py "$*"', {}, ["a", "b"], ["a b"], "$@"),
        ('python t.py $EXTRA --x "$@"', {"EXTRA": "--a 1"}, ["y"], ["--a", "1", "--x", "y"], "EXTRA"),
    ],
)
def test_a_launch_line_resolved_as_the_shell_would(line, environ, argv, words, used):
    found = _launch(line + "\n").resolve_args(environ, argv)
    assert found.words == words and found.unknown == []
    assert used in found.used


@pytest.mark.parametrize(
    "text, unknown",
    [
        ('python t.py --data "$DATA"\n', "DATA"),  # unset, no default: the shell would pass "", not guessed
        ('python t.py --host "$(hostname)"\n', "$(hostname)"),
        ('if [ -n "$A" ]; then N=1; else N=2; fi\npython t.py --n "$N" --x "$X"\n', "X"),
    ],
)
def test_what_stays_unknown_is_named(text, unknown):
    launch = analyze("shell", text, "run.sh").launches[-1]
    assert launch.resolve_args is not None
    found = launch.resolve_args({}, [])
    assert isinstance(found, ResolvedArgs)
    assert None in found.words and any(unknown in u for u in found.unknown)


def test_the_script_own_assignments_still_win():
    found = _launch('STEPS=12\npython t.py --steps "${STEPS:-40}" --n "${N:-2}"\n').resolve_args({"STEPS": "99"}, [])
    assert found.words == ["--steps", "12", "--n", "2"]


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN)
    (repo / "run.sh").write_text(RUN_SH)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def test_the_plan_says_which_values_were_used(tmp_path, monkeypatch):
    monkeypatch.delenv("STEPS", raising=False)
    repo = _repo(tmp_path)
    (job,) = plan_launcher(repo / "run.sh", extra_args=["--lr", "0.01"])
    assert job.args == ["--steps", "40", "--batch-size", "32", "--lr", "0.01"]
    assert job.legacy_env == {"XLA_USE_BF16": "1"}
    assert (
        'run.sh:5: its arguments resolved as the shell would: STEPS is unset, so its default is used; "$@" is '
        "the arguments after `--` (--lr 0.01)"
    ) in job.notes
    monkeypatch.setenv("STEPS", "8")
    (job,) = plan_launcher(repo / "run.sh")
    assert job.args == ["--steps", "8", "--batch-size", "32"]
    assert any("STEPS=8 (from this environment)" in note for note in job.notes)


def test_a_launch_that_stays_unknown_is_not_verified_and_says_what_to_set(tmp_path, monkeypatch):
    monkeypatch.delenv("DATA", raising=False)
    repo = _repo(tmp_path)
    (repo / "run.sh").write_text(RUN_SH.replace('"$@"', '--data "$DATA"'))
    notes: list[str] = []
    assert plan_launcher(repo / "run.sh", notes=notes) == []
    assert "DATA unknown (unset, with no default: set it to verify this launch): not verified" in notes[0]


@pytest.mark.xla
def test_verify_a_launcher_with_its_arguments_on_the_device(tmp_path):
    """The issue's case, end to end on the XLA CPU device: `verify run.sh -- --lr 0.01` runs
    `python train.py --steps 40 --batch-size 32 --lr 0.01` (stopped after --steps) and PASSes."""
    repo = _repo(tmp_path)
    out = tmp_path / "verify.json"
    env = {k: v for k, v in os.environ.items() if k != "STEPS"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bf16_migrate.cli",
            "verify",
            "run.sh",
            "--steps",
            "4",
            "--json",
            str(out),
            "--",
            "--lr",
            "0.01",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "NOTHING VERIFIED" not in proc.stdout + proc.stderr
    (result,) = json.loads(out.read_text())["results"]
    assert result["report"]["script_args"] == ["--steps", "40", "--batch-size", "32", "--lr", "0.01"]
    assert result["report"]["runs"]["legacy"]["legacy_env"] == {"XLA_USE_BF16": "1"}
    assert "STEPS is unset, so its default is used" in proc.stdout + proc.stderr
