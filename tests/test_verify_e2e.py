"""End-to-end verify runs on the XLA CPU device (slow: each test starts two or three XLA
processes).

The first tests use tests/data/verify_mlp.py (legacy, XLA_USE_BF16) and its hand-migrated copy
tests/data/verify_mlp_stochastic.py, so they do not depend on the codemod's output. The later
ones run real script shapes through the codemod: a GRU whose legacy run crashes, a loop inside
try/except Exception, xmp.spawn with one process, and --against a git revision (with the
negative control: variable deleted, nothing cast).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bf16_migrate.verify import RunError, format_report, verify_script

from conftest import part_of

pytestmark = pytest.mark.xla

DATA = Path(__file__).parent / "data"
LEGACY = DATA / "verify_mlp.py"
STEPS = 8
JOBS = int(os.environ.get("BF16_MIGRATE_TEST_JOBS", "2"))  # children at once (2 cores)


def _source(name: str) -> str:
    return (DATA / name).read_text()


def test_hand_migrated_stochastic_run_passes():
    migrated = _source("verify_mlp_stochastic.py")
    report = verify_script(LEGACY, "stochastic", steps=STEPS, migrated_source=migrated, run_reference=False, jobs=JOBS)
    text = format_report(report)
    assert report.passed, text
    assert report.runs["migrated"].losses == report.runs["legacy"].losses  # AdamW: bit-identical
    assert report.runs["migrated"].steps == STEPS
    assert report.runs["migrated"].param_dtypes == {"bfloat16": 4}
    assert report.runs["legacy"].device_param_dtypes == {"bf16": 4}
    assert report.runs["legacy"].exit_reason == "steps_reached"
    assert "VERDICT: PASS" in text


def test_migrated_run_that_crashes_is_a_run_error_with_the_output_tail():
    # Model cast to bf16 but the float inputs left in f32: the HLO verifier rejects the graph
    # at the first sync ("mixed precision is disallowed"; measured with torch-xla 2.9 on the XLA
    # CPU device, this test).
    broken = _source("verify_mlp_stochastic.py").replace(".to(device).to(torch.bfloat16)", ".to(device)")
    start = time.monotonic()
    with pytest.raises(RunError) as info:
        verify_script(LEGACY, "stochastic", steps=STEPS, migrated_source=broken, run_reference=False, jobs=JOBS)
    err = info.value
    assert err.run == "migrated"
    assert err.returncode not in (None, 0)
    assert err.tail and len(err.tail) <= 20
    assert "the legacy run succeeded" in str(err)
    assert err.broke  # a failed check: the CLI exits 1, a tree's table says FAIL
    assert "last output lines" in str(err)
    assert time.monotonic() - start < 300


def test_negative_control_only_deleting_the_variable_fails_matches():
    fp32 = _source("verify_mlp.py").replace('os.environ["XLA_USE_BF16"] = "1"', "")
    report = verify_script(LEGACY, "stochastic", steps=STEPS, migrated_source=fp32, run_reference=False, jobs=JOBS)
    assert not report.passed
    assert part_of(report.verdict, "matches").status == "FAIL", format_report(report)
    assert part_of(report.verdict, "precision").status == "FAIL"


def test_timeout_kills_the_child():
    with pytest.raises(RunError) as info:
        verify_script(
            LEGACY,
            "stochastic",
            steps=STEPS,
            migrated_source=_source("verify_mlp_stochastic.py"),
            run_reference=False,
            jobs=JOBS,
            timeout=1.0,
        )
    assert "timed out" in str(info.value)


# -- real script shapes (tests/data/verify_*.py) ----------------------------------------------


def _cli(*args, cwd=None, timeout=900):
    return subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", "verify", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
    )


def test_legacy_run_that_crashes_falls_back_to_the_fp32_reference(tmp_path):
    """nn.GRU under XLA_USE_BF16 crashes in torch-xla 2.9 (measured; see the script's docstring):
    verify shows the legacy error and compares the migrated run with the FP32 reference."""
    out = tmp_path / "gru.json"
    proc = _cli(DATA / "verify_gru.py", "--steps", "6", "--json", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "legacy    FAILED: exited with code 1: RuntimeError: Call parameter must match argument" in proc.stdout
    assert "compared with the FP32 reference instead" in proc.stdout
    data = json.loads(out.read_text())
    # the bar is measured in the same verify: the script's plain full-bf16 run, said to be weaker evidence
    assert any("weaker evidence" in n and "plain full-bf16 run of the script" in n for n in data["notes"])
    assert "control" in data["runs"] and data["tolerance"]["source"].startswith("legacy run unusable: measured")
    assert data["baseline"] == "reference" and data["fallback"] is True
    assert data["runs"]["legacy"]["ok"] is False
    assert {p["name"]: p["status"] for p in data["parts"]}["graph"] == "PASS"


def test_loop_wrapped_in_try_except_exception_is_still_stopped():
    report = verify_script(DATA / "verify_try_except.py", "stochastic", steps=5, run_reference=False, jobs=JOBS)
    assert report.passed, format_report(report)
    for name in ("legacy", "migrated"):
        assert report.runs[name].steps == 5 and report.runs[name].exit_reason == "steps_reached"


def test_xmp_spawn_with_one_process():
    report = verify_script(
        DATA / "verify_spawn.py", "stochastic", steps=5, script_args=["--nprocs", "1"], run_reference=False, jobs=JOBS
    )
    assert report.passed, format_report(report)
    assert report.runs["migrated"].steps == 5
    assert report.runs["legacy"].device_param_dtypes == {"bf16": 4}
    assert report.runs["migrated"].graph is not None and report.runs["migrated"].graph.matmuls_bf16 == 5


def _git(cwd, *args):
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def test_against_a_git_revision_and_the_negative_control(tmp_path):
    """The CI use: the migration is a commit; verify the work tree against the commit before it.
    Then the negative control: a "migration" that only deletes the variable (no cast) must fail
    on precision, with the graph evidence (no bf16 matmul) behind it."""
    from bf16_migrate.python import migrate_source

    repo = tmp_path / "repo"
    repo.mkdir()
    legacy = LEGACY.read_text()
    script = repo / "train.py"
    script.write_text(legacy)
    _git(repo, "init", "-q")
    _git(repo, "add", "train.py")
    _git(repo, "commit", "-q", "-m", "legacy")
    script.write_text(migrate_source(legacy, "stochastic", "train.py").code)
    _git(repo, "commit", "-q", "-am", "migrate to explicit bf16")

    out = tmp_path / "against.json"
    proc = _cli("train.py", "--against", "HEAD~1", "--steps", "6", "--json", out, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "legacy version: git HEAD~1" in proc.stdout
    data = json.loads(out.read_text())
    assert data["passed"] and data["legacy_version"].startswith("git HEAD~1 (")
    assert data["runs"]["legacy"]["losses"] == data["runs"]["migrated"]["losses"]  # AdamW: bit-identical

    script.write_text(legacy.replace('os.environ["XLA_USE_BF16"] = "1"\n', ""))
    proc = _cli("train.py", "--against", "HEAD~1", "--steps", "6", "--json", out, cwd=repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    parts = {p["name"]: p for p in json.loads(out.read_text())["parts"]}
    assert parts["precision"]["status"] == "FAIL"
    assert "no matmul of the migrated step graph is bf16" in parts["precision"]["detail"]
    assert parts["matches"]["status"] == "FAIL"
