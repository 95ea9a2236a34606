"""What verify verifies: the rewrite's own decision, never nothing called a pass.

No XLA here: most cases are decided before a run is made (planning, the migration), or read the
verdict of synthetic records; two make CPU-only torch runs whose losses are made to order (marked
``xla``: they need the xla extra's torch) to follow a verdict that cannot decide through its
second round of runs. An already-migrated script is refused with the
``--against REV`` to run; a launcher whose launches were all left out is "nothing verified"
(exit 4), never exit 0, and its message holds no Python ``None``; a launch line ending in
``"$@"`` takes the arguments given after ``--``; the place that still sets a legacy variable is
named.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate.rules import mode_named
from bf16_migrate.verify.launch import plan_launcher
from bf16_migrate.verify.migration import refuse_nothing_to_verify
from bf16_migrate.verify.records import RunError

from conftest import part_of
from test_verify_unit import LEGACY_LOSSES, judge, runs

TRAIN = '''"""A small regressor."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch_xla

from wide_sgd import WideSGD


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(4, 1).to(device)
    optimizer = WideSGD(model.parameters(), lr=0.1)
    for _ in range(5):
        x = torch.randn(8, 4).to(device)
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        optimizer.step()
        torch_xla.sync()


if __name__ == "__main__":
    main()
'''

WIDE_SGD = '''"""SGD that keeps its update wider than the weights when the switch downcasts them."""
import os

import torch

WIDE = os.environ.get("XLA_USE_BF16") == "1"


class WideSGD(torch.optim.SGD):
    pass
'''

MIGRATED_ALREADY = '''"""Trained in bf16; it used to set XLA_USE_BF16, now it casts the model."""
import torch
import torch_xla

device = torch_xla.device()
model = torch.nn.Linear(4, 1).to(device)
model.to(torch.bfloat16)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
'''


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@e"
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def _verify(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", "verify", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_an_already_migrated_script_is_refused_with_the_revision_to_verify_against(tmp_path):
    # the legacy commit, then the migration; the docstring still names the variable
    (tmp_path / "train.py").write_text(
        TRAIN.replace("from wide_sgd import WideSGD\n", "").replace("WideSGD", "torch.optim.SGD")
    )
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "legacy")
    (tmp_path / "train.py").write_text(MIGRATED_ALREADY)
    _git(tmp_path, "commit", "-q", "-am", "migrate")
    migration = _git(tmp_path, "log", "-1", "--format=%h").strip()
    proc = _verify("train.py", "--steps", "3", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert (
        "nothing to verify: the migration changes nothing, it names XLA_USE_BF16 but sets none of them" in proc.stderr
    )
    assert f"--against {migration}~1" in proc.stderr
    assert "run started" not in proc.stderr  # refused before any run


def test_a_script_whose_own_setting_the_migration_kept_is_verified():
    # the codemod cannot migrate it (no model): the setting stays, and verify runs it to show where
    source = 'import os\nos.environ["XLA_USE_BF16"] = "1"\nprint("no model here")\n'
    refuse_nothing_to_verify(Path("train.py"), source, source, {})  # no error
    docstring_only = '"""It used to set XLA_USE_BF16."""\nprint("no model here")\n'
    with pytest.raises(RunError, match="nothing to verify"):
        refuse_nothing_to_verify(Path("train.py"), docstring_only, docstring_only, {})
    refuse_nothing_to_verify(Path("train.py"), docstring_only, docstring_only, {"XLA_USE_BF16": "1"})  # a launcher's


def test_a_launcher_that_sets_the_variable_in_a_form_the_codemod_does_not_read_is_not_said_to_name_it_in_text():
    # a Python launcher handing the switch to the script it starts through subprocess's env (BFM042)
    launcher = (
        "import os\nimport subprocess\nimport sys\n\n"
        'env = {**os.environ, "XLA_USE_BF16": "1"}\n'
        'subprocess.run([sys.executable, "train.py"], env=env, check=True)\n'
    )
    with pytest.raises(RunError) as caught:
        refuse_nothing_to_verify(Path("launch.py"), launcher, launcher, {})
    message = str(caught.value)
    assert "in text only" not in message
    assert "in a form the codemod does not read (line 5, BFM042" in message
    assert "--legacy-env XLA_USE_BF16=1" in message


RUN_SH = '#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py --lr 0.1 "$@"\n'


def test_a_launch_line_ending_in_all_arguments_takes_those_after_double_dash(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN.replace('os.environ["XLA_USE_BF16"] = "1"\n', ""))
    (tmp_path / "wide_sgd.py").write_text(WIDE_SGD)
    (tmp_path / "run.sh").write_text(RUN_SH)
    notes: list[str] = []
    (job,) = plan_launcher(tmp_path / "run.sh", None, None, None, 20, ["--steps", "40"], notes)
    assert job.args == ["--lr", "0.1", "--steps", "40"]
    assert job.legacy_env == {"XLA_USE_BF16": "1"}
    (job,) = plan_launcher(tmp_path / "run.sh", None, None, None, 20, [], notes)
    assert job.args == ["--lr", "0.1"]
    assert any('passes the launcher\'s own arguments (`"$@"`): none given after `--`' in n for n in job.notes)


def test_a_launcher_with_nothing_verified_exits_4_and_says_why(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN.replace('os.environ["XLA_USE_BF16"] = "1"\n', ""))
    (tmp_path / "wide_sgd.py").write_text(WIDE_SGD)
    (tmp_path / "run.sh").write_text('#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py --data "$DATA"\n')
    proc = _verify("run.sh", "--", "--steps", "40", cwd=tmp_path)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "nothing verified: no launch of" in proc.stdout
    assert (
        "its arguments are computed when the launcher runs: DATA unknown (unset, with no default: set it to verify"
        " this launch): not verified" in proc.stdout
    )
    assert "VERDICT: NOTHING VERIFIED" in proc.stdout
    assert "None" not in proc.stdout + proc.stderr


def test_the_place_that_still_sets_a_variable_is_named():
    r = runs(LEGACY_LOSSES)
    r["migrated"].legacy_env = {"XLA_USE_BF16": "1"}
    r["migrated"].legacy_env_origin = {"XLA_USE_BF16": "/work/train.py [migrated copy]:4"}
    detail = part_of(judge(mode_named("stochastic"), r), "precision").detail
    assert "XLA_USE_BF16=1, set by the migrated script itself at /work/train.py:4 (the rewrite kept" in detail
    r["migrated"].legacy_env_origin = {"XLA_USE_BF16": "/work/lib/setup_env.py:12"}
    assert "set at /work/lib/setup_env.py:12 (imported by the migrated script)" in (
        part_of(judge(mode_named("stochastic"), r), "precision").detail
    )


def test_a_stochastic_optimizer_state_in_another_precision_than_the_legacy_run_s_is_said():
    r = runs(LEGACY_LOSSES)
    r["legacy"].state_dtypes = {"exp_avg": {"float32/bf16": 6}}
    r["migrated"].state_dtypes = {"exp_avg": {"float32/f32": 6}}
    v = judge(mode_named("stochastic"), r)
    assert part_of(v, "precision").status == "PASS"
    assert "the migrated optimizer state is f32 x6 on the device where the legacy run had bf16 x6" in (
        part_of(v, "precision").detail
    )
    assert any("optimizer_dtype=torch.bfloat16" in n for n in v.notes)
    r["migrated"].state_dtypes = {"exp_avg": {"bfloat16/bf16": 6}}
    assert "the migrated optimizer state is" not in part_of(judge(mode_named("stochastic"), r), "precision").detail


# A training loop on the CPU (torch only, no XLA: the harness records it the same way) whose
# losses are made to order: the FP32 control gives the legacy numbers for its first 30 steps and
# departs from step 31 on; the migrated run tracks the FP32 run (amp). Without graphs, the first
# 20 steps cannot tell the precisions apart.
STAGED = """import os
os.environ["XLA_USE_BF16"] = "1"
import sys

import torch

MIGRATED = False


def main():
    steps = int(sys.argv[1])
    w = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([w], lr=0.0)
    full_bf16 = os.environ.get("XLA_USE_BF16") == "1" and not MIGRATED
    for step in range(steps):
        value = 2.0 - 0.01 * step
        if full_bf16 and step >= 30:
            value *= 1.01
        if MIGRATED:
            value *= 1 + 1e-5
        loss = (w + value).sum()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


main()
"""


def _staged_verify(tmp_path, **kw):
    from bf16_migrate.verify import verify_script

    script = tmp_path / "train.py"
    script.write_text(STAGED)
    unset = STAGED.replace('os.environ["XLA_USE_BF16"] = "1"\n', "")
    return verify_script(
        script,
        mode="amp",
        steps=20,
        script_args=["200"],
        migrated_source=unset.replace("MIGRATED = False", "MIGRATED = True"),
        reference_source=unset,
        graphs=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("XLA_")},
        **kw,
    )


@pytest.mark.xla  # needs torch (the xla extra), though not the XLA device
def test_an_undecided_verdict_makes_the_runs_again_with_more_steps(tmp_path):
    report = _staged_verify(tmp_path)
    assert report.rounds == [20, 80]
    matches = part_of(report.verdict, "matches")
    assert matches.status == "PASS" and matches.figures["decided_by"] == "departure", matches.detail
    assert report.verdict.status == "PASS" and report.steps == 80
    assert "The first 20 steps could not tell the precisions apart" in report.verdict.notes[0]


@pytest.mark.xla
def test_an_undecided_verdict_past_its_budget_says_what_to_run(tmp_path):
    report = _staged_verify(tmp_path, max_steps=20)  # no budget beyond --steps
    assert report.rounds == [20]
    assert report.verdict.status == "INCONCLUSIVE" and not report.passed
    notes = report.verdict.notes
    assert any("INCONCLUSIVE (exit 3)" in n and "no larger than --steps 20" in n and "--steps 40" in n for n in notes)


def test_a_launchers_setting_the_migration_keeps_is_nothing_to_verify():
    """--legacy-env with a migration that keeps the setting (a refusal: an op without a bf16 kernel,
    BFM155): the launcher still runs the script under it, so there is no migrated run to compare;
    verify says why instead of FAILing an FP32 run (bench/unseen/hunt8 ctc_subproc)."""
    from bf16_migrate.python import migrate_source

    source = (
        "import torch\nimport torch_xla\n\n\ndef main():\n    device = torch_xla.device()\n"
        "    model = torch.nn.Linear(4, 4).to(device)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    for _ in range(3):\n        f = model(torch.randn(4, 4).to(device))\n"
        "        loss = torch.logdet(f @ f.T + torch.eye(4, device=device))\n"
        "        loss.backward()\n        opt.step()\n\n\nmain()\n"
    )
    result = migrate_source(source, "stochastic", "train.py", launched_with={"XLA_USE_BF16": "1"})
    refusals = [finding for _, finding in result.outcome.refused()]
    assert result.code == source and refusals
    with pytest.raises(
        RunError, match="nothing to verify: the migration keeps the launcher's XLA_USE_BF16=1"
    ) as caught:
        refuse_nothing_to_verify(Path("train.py"), source, result.code, {"XLA_USE_BF16": "1"}, refusals)
    assert "BFM155" in str(caught.value)
    refuse_nothing_to_verify(Path("train.py"), source, result.code, {"XLA_USE_BF16": "1"})  # no refusal: verified


SCORER = '''"""Batch scorer. Run on the TPU VM as:  XLA_USE_BF16=1 python score.py"""
import torch
import torch_xla

device = torch_xla.device()
net = torch.nn.Linear(8, 2).to(device).eval()
with torch.no_grad():
    out = net(torch.randn(64, 8).to(device))
print(out.cpu().numpy()[:2])
'''


def test_against_a_revision_that_sets_no_legacy_variable_is_refused_before_any_run(tmp_path):
    """``--against HEAD`` where the revision names the switch in its docstring alone and no launcher or
    ``--legacy-env`` sets it: its run would be FP32, and a text left FP32 PASSed against it while the codemod's
    bf16 migration FAILed (bench/unseen/hunt35 docstring_mention). Refused, as plain verify refuses it; with
    ``--legacy-env`` the revision is the legacy run again."""
    from bf16_migrate.verify.migration import refuse_unswitched_revision

    (tmp_path / "score.py").write_text(SCORER)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "legacy")
    (tmp_path / "score.py").write_text(SCORER.replace("out.cpu().numpy()", "out.cpu().float().numpy()"))
    proc = _verify("score.py", "--against", "HEAD", "--steps", "3", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "nothing to compare with: at the legacy revision it names XLA_USE_BF16 but sets none of them" in proc.stderr
    assert "--legacy-env XLA_USE_BF16=1" in proc.stderr and "run started" not in proc.stderr
    refuse_unswitched_revision(Path("score.py"), SCORER, {"XLA_USE_BF16": "1"}, "HEAD")  # a launcher's: no error
    sets = SCORER.replace("import torch\n", 'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\n', 1)
    refuse_unswitched_revision(Path("score.py"), sets, {}, "HEAD")  # the revision sets it itself
