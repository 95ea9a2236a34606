"""verify at the level people migrate: a whole commit (--against REV without a script), the
legacy side from the tree at REV (its modules, its launchers' settings), a launcher, --list,
--merge, --jobs.

Each test builds a temporary git repository: a first commit holding the legacy code (``run.sh``
exporting XLA_DOWNCAST_BF16=1 for ``train.py``, which imports ``wide_adam.py``, an optimizer
that keeps its moments wider than the weights when that variable is set, through the
``.double()`` idiom; two scripts that set XLA_USE_BF16 themselves), a second commit made by
``bf16-migrate . --mode stochastic``. The tests marked ``xla`` run the verifies on the XLA CPU
device (6 steps each); the others only plan, list, merge and render.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from bf16_migrate.rules import MODES, mode_named
from bf16_migrate.verify.gitrev import Checkout, changed_paths, repo_root
from bf16_migrate.verify.launchers import launch_settings, settings_for
from bf16_migrate.verify.parts import ERROR, FAIL, INCONCLUSIVE, PASS
from bf16_migrate.verify.records import RunError
from bf16_migrate.verify.report import SCHEMA, error_dict
from bf16_migrate.verify.tree import (
    TREE_SCHEMA,
    Job,
    Outcome,
    detect_mode,
    exit_code,
    merge_documents,
    plan_script,
    plan_tree,
    run_jobs,
    summary_table,
    tree_dict,
)

STEPS = "6"

RUN_SH = """#!/bin/bash
set -e
export XLA_DOWNCAST_BF16=1
python train.py --steps 30
"""

WIDE_ADAM = '''"""Adam keeping its moments wider than the weights when the launcher downcasts them."""
import os

import torch


class WideAdam(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.99), eps=1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))
        self.wide = os.environ.get("XLA_DOWNCAST_BF16") == "1"

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.double() if self.wide else p.grad
                state = self.state[p]
                if not state:
                    state["t"] = 0
                    state["m"] = torch.zeros_like(grad)
                    state["v"] = torch.zeros_like(grad)
                state["t"] += 1
                state["m"].mul_(beta1).add_(grad, alpha=1 - beta1)
                state["v"].mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                m_hat = state["m"] / (1 - beta1 ** state["t"])
                v_hat = state["v"] / (1 - beta2 ** state["t"])
                update = m_hat / (v_hat.sqrt() + group["eps"]) * group["lr"]
                p.sub_(update.to(p.dtype))
'''

TRAIN = '''"""A small regressor trained full-batch with the tree's own optimizer."""
import argparse

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm

from wide_adam import WideAdam


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.manual_seed(0)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(0)
    features = torch.randn(256, 16, generator=gen)
    targets = features @ torch.randn(16, 2, generator=gen)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 2)).to(device)
    optimizer = WideAdam(model.parameters(), lr=2e-2)
    loss_fn = nn.MSELoss()
    x, y = features.to(device), targets.to(device)
    for _ in range(args.steps):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        xm.mark_step()


if __name__ == "__main__":
    main()
'''

SELF_SET = '''"""A regressor that switches bf16 on itself, the old way."""
import os
os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


def main():
    torch.manual_seed(1)
    device = torch_xla.device()
    gen = torch.Generator().manual_seed(1)
    features = torch.randn(256, 8, generator=gen)
    targets = features @ torch.randn(8, 1, generator=gen)
    model = nn.Sequential(nn.Linear(8, 24), nn.GELU(), nn.Linear(24, 1)).to(device)
    optimizer = OPTIMIZER
    loss_fn = nn.MSELoss()
    x, y = features.to(device), targets.to(device)
    for _ in range(40):
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        xm.mark_step()


if __name__ == "__main__":
    main()
'''


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def _cli(*args, cwd: Path, timeout: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _legacy_repo(where: Path, three: bool = True) -> Path:
    """The first commit: run.sh -> train.py -> wide_adam.py (and two self-setting scripts)."""
    repo = where / "repo"
    repo.mkdir()
    (repo / "run.sh").write_text(RUN_SH)
    (repo / "wide_adam.py").write_text(WIDE_ADAM)
    (repo / "train.py").write_text(TRAIN)
    if three:
        (repo / "train_adamw.py").write_text(
            SELF_SET.replace("OPTIMIZER", "torch.optim.AdamW(model.parameters(), lr=1e-2)")
        )
        (repo / "train_sgd.py").write_text(
            SELF_SET.replace("OPTIMIZER", "torch.optim.SGD(model.parameters(), lr=5e-2, momentum=0.9)")
        )
    (repo / ".gitignore").write_text("data/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "legacy: bf16 through the environment")
    return repo


def _migrated_repo(where: Path, mode: str = "stochastic", three: bool = True) -> Path:
    """The second commit: what `bf16-migrate . --mode MODE` wrote."""
    repo = _legacy_repo(where, three)
    proc = _cli(".", "--mode", mode, cwd=repo, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _git(repo, "commit", "-q", "-am", f"migrate off the legacy variables ({mode})")
    return repo


# -- the checkout of REV ---------------------------------------------------------------------


def test_checkout_is_the_tree_at_rev_read_only(tmp_path):
    repo = _migrated_repo(tmp_path, three=False)
    (repo / "data").mkdir()
    (repo / "data" / "set.bin").write_bytes(b"\x00\x01")  # ignored: data the legacy run needs too
    (repo / "notes.txt").write_text("untracked\n")
    status = _git(repo, "status", "--porcelain", "--ignored")
    refs = _git(repo, "for-each-ref")
    with Checkout(repo_root(repo, "HEAD~1"), "HEAD~1") as co:
        assert (co.tree / "run.sh").read_text() == RUN_SH
        assert (co.tree / "wide_adam.py").read_text() == WIDE_ADAM  # the legacy module, not the work tree's
        assert (co.tree / "data" / "set.bin").read_bytes() == b"\x00\x01"  # linked in
        assert co.path_for(repo / "train.py") == co.tree / "train.py"
        assert co.relative(co.tree / "train.py") == "train.py"
        assert co.label.startswith("git HEAD~1 (") and len(co.sha) == 40
        assert co.map_pythonpath(f"{repo / 'src'}{os.pathsep}/elsewhere") == f"{co.tree / 'src'}{os.pathsep}/elsewhere"
        tree = co.tree
    assert not tree.exists()
    assert _git(repo, "status", "--porcelain", "--ignored") == status
    assert _git(repo, "for-each-ref") == refs
    assert "worktree" not in _git(repo, "worktree", "list")  # one line: the main work tree only
    assert changed_paths(repo, _git(repo, "rev-parse", "HEAD~1").strip()) == {"run.sh", "train.py", "wide_adam.py"}


def test_checkout_errors(tmp_path):
    repo = _legacy_repo(tmp_path, three=False)
    with pytest.raises(RunError, match="no such commit"):
        Checkout(repo, "no-such-branch")
    with pytest.raises(RunError, match="is not inside a git repository"):
        repo_root(tmp_path, "HEAD")


# -- the launchers' settings at REV -------------------------------------------------------------


def test_launch_settings_come_from_the_launchers(tmp_path):
    repo = _legacy_repo(tmp_path, three=False)
    (repo / "Dockerfile").write_text(
        'FROM python:3.11\nENV XLA_USE_BF16=1\nCMD ["python", "train.py", "--steps", "100"]\n'
    )
    found = settings_for(repo / "train.py", launch_settings(repo))
    by_launcher = {s.launcher.name: s for s in found}
    assert by_launcher["run.sh"].env == {"XLA_DOWNCAST_BF16": "1"} and by_launcher["run.sh"].line == 4
    assert by_launcher["run.sh"].args == ["--steps", "30"]
    assert by_launcher["Dockerfile"].env == {"XLA_USE_BF16": "1"}


def test_launchers_that_disagree_give_one_job_per_setting(tmp_path):
    repo = _migrated_repo(tmp_path, three=False)
    _git(repo, "checkout", "-q", "HEAD~1")  # add a second launcher to the legacy commit
    _git(repo, "checkout", "-q", "-b", "legacy2")
    (repo / "Dockerfile").write_text('FROM python:3.11\nENV XLA_USE_BF16=1\nCMD ["python", "train.py"]\n')
    (repo / "fp32.sh").write_text("#!/bin/sh\nunset XLA_USE_BF16\npython train.py --steps 5\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "more launchers")
    proc = _cli(".", "--mode", "stochastic", cwd=repo, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    _git(repo, "commit", "-q", "-am", "migrate")
    with Checkout(repo, "HEAD~1") as co:
        jobs = plan_script(repo / "train.py", co)
    envs = sorted(tuple(sorted(j.legacy_env.items())) for j in jobs)
    assert envs == [(("XLA_DOWNCAST_BF16", "1"),), (("XLA_USE_BF16", "1"),)]
    assert {tuple(j.source) for j in jobs} == {("run.sh:4",), ("Dockerfile:3",)}
    assert any("disagree" in n for n in jobs[0].notes)
    assert any("fp32.sh:3" in n and "without a legacy setting" in n for n in jobs[0].notes)
    # --legacy-env replaces them: one job
    with Checkout(repo, "HEAD~1") as co:
        (job,) = plan_script(repo / "train.py", co, legacy_env={"XLA_USE_BF16": "1"})
    assert job.source == ["--legacy-env"]


# -- which scripts, which mode ----------------------------------------------------------------


def test_plan_tree_selects_the_scripts_the_migration_changed(tmp_path):
    repo = _migrated_repo(tmp_path)
    (repo / "unrelated.py").write_text("print('hello')\n")
    _git(repo, "add", "unrelated.py")
    _git(repo, "commit", "-q", "-m", "unrelated")
    notes: list[str] = []
    with Checkout(repo, "HEAD~2") as co:
        jobs = plan_tree(co, notes=notes)
    by = {j.rel: j for j in jobs}
    assert sorted(by) == ["train.py", "train_adamw.py", "train_sgd.py"]  # wide_adam.py is a module
    assert by["train.py"].legacy_env == {"XLA_DOWNCAST_BF16": "1"} and by["train.py"].source == ["run.sh:4"]
    assert by["train_adamw.py"].legacy_env == {} and by["train_adamw.py"].source == ["its own writes"]
    assert all(j.mode.name == "stochastic" and j.mode_source == "codemod output" for j in jobs)
    assert "wide_adam.py changed" in by["train.py"].notes[0] and "run.sh changed" in by["train.py"].notes[0]
    assert not any("still sets" in n for j in jobs for n in j.notes)  # run.sh's export went with the migration
    with Checkout(repo, "HEAD") as co:  # nothing migrated since HEAD
        assert plan_tree(co) == []


def test_a_launcher_only_change_selects_the_script_it_starts(tmp_path):
    repo = _legacy_repo(tmp_path, three=False)
    (repo / "run.sh").write_text(RUN_SH.replace("export XLA_DOWNCAST_BF16=1\n", ""))
    _git(repo, "commit", "-q", "-am", "drop the variable")
    with Checkout(repo, "HEAD~1") as co:
        (job,) = plan_tree(co)
    assert job.rel == "train.py" and job.legacy_env == {"XLA_DOWNCAST_BF16": "1"}
    assert "its launcher run.sh changed" in job.notes[0]


def test_detect_mode_reads_the_migration(tmp_path):
    legacy = SELF_SET.replace("OPTIMIZER", "torch.optim.AdamW(model.parameters(), lr=1e-2)")
    from bf16_migrate.python import migrate_source

    for mode in MODES:
        migrated = migrate_source(legacy, mode, "t.py").code
        assert detect_mode(legacy, migrated, "t.py") == (mode_named(mode), "codemod output")
        edited = migrated + "\n# reviewed\n"
        assert detect_mode(legacy, edited, "t.py") == (mode_named(mode), "read from the migrated text")


def test_list_prints_a_ci_matrix(tmp_path):
    repo = _migrated_repo(tmp_path)
    proc = _cli("verify", "--against", "HEAD~1", "--list", cwd=repo, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["against"] == "HEAD~1" and len(data["sha"]) == 40
    entries = {e["script"]: e for e in data["scripts"]}
    assert sorted(entries) == ["train.py", "train_adamw.py", "train_sgd.py"]
    # train.py is started by run.sh's `python train.py --steps 30`: the matrix job runs it with those words
    assert entries["train.py"]["command"] == [
        "bf16-migrate",
        "verify",
        "train.py",
        "--against",
        "HEAD~1",
        "--mode",
        "stochastic",
        "--legacy-env",
        "XLA_DOWNCAST_BF16=1",
        "--",
        "--steps",
        "30",
    ]
    assert entries["train.py"]["args"] == ["--steps", "30"] and entries["train.py"]["args_source"] == ["run.sh:4"]
    assert entries["train_sgd.py"]["legacy_env"] == {}
    assert (
        entries["train_sgd.py"]["args"] == [] and entries["train_sgd.py"]["args_source"] == []
    )  # no launcher starts it
    assert "--" not in entries["train_sgd.py"]["command"]
    proc = _cli("verify", "--list", cwd=repo, timeout=60)
    assert proc.returncode == 2 and "--list needs --against" in proc.stderr
    proc = _cli("verify", cwd=repo, timeout=60)
    assert proc.returncode == 2 and "verify needs SCRIPT" in proc.stderr


def test_a_commit_without_double_dash_takes_each_launch_line_s_arguments(tmp_path):
    """`verify --against REV` (no `--`): each script runs with the words of the launch line that
    gives it its setting; `--` replaces them for every script, even with nothing after it."""
    repo = _migrated_repo(tmp_path, three=False)
    proc = _cli("verify", "--against", "HEAD~1", "--list", "--", cwd=repo, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (entry,) = json.loads(proc.stdout)["scripts"]
    assert entry["script"] == "train.py" and entry["args"] == [] and entry["args_source"] == []
    assert "--" not in entry["command"]
    proc = _cli("verify", "--against", "HEAD~1", "--list", "--", "--steps", "7", cwd=repo, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (entry,) = json.loads(proc.stdout)["scripts"]
    assert entry["args"] == ["--steps", "7"] and entry["args_source"] == ["--"]
    assert entry["command"][-3:] == ["--", "--steps", "7"]
    # SCRIPT before `--` stays the one script verified, with the arguments after it
    proc = _cli("verify", "train.py", "--against", "HEAD~1", "--list", "--", "--steps", "4", cwd=repo, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (entry,) = json.loads(proc.stdout)["scripts"]
    assert entry["script"] == "train.py" and entry["args"] == ["--steps", "4"]


def test_launch_arguments_per_setting_and_the_launches_not_followed(tmp_path):
    """Two launchers with the same setting and other words: the first launch's words, the other
    named in a note; a launch with computed words is not guessed; another setting takes its own
    launch line's words."""
    repo = _legacy_repo(tmp_path, three=False)
    (repo / "long.sh").write_text("#!/bin/bash\nexport XLA_DOWNCAST_BF16=1\npython train.py --steps 90\n")
    (repo / "computed.sh").write_text('#!/bin/bash\nexport XLA_DOWNCAST_BF16=1\npython train.py --steps "$N"\n')
    (repo / "Dockerfile").write_text(
        'FROM python:3.11\nENV XLA_USE_BF16=1\nCMD ["python", "train.py", "--steps", "12"]\n'
    )
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "more launchers")
    (repo / "train.py").write_text(TRAIN + "# migrated\n")
    with Checkout(repo, "HEAD") as co:
        jobs = plan_tree(co, mode=mode_named("stochastic"))
        pinned = plan_tree(co, mode=mode_named("stochastic"), args=["--steps", "3"])
    by_env = {tuple(j.legacy_env): j for j in jobs}
    assert sorted(by_env) == [("XLA_DOWNCAST_BF16",), ("XLA_USE_BF16",)]
    down, use = by_env[("XLA_DOWNCAST_BF16",)], by_env[("XLA_USE_BF16",)]
    assert use.args == ["--steps", "12"] and use.args_source == ["Dockerfile:3"]
    # the first launch in the tree's order (computed.sh, long.sh, run.sh) with words written out
    assert down.args == ["--steps", "90"] and down.args_source == ["long.sh:3"]
    assert (
        "run.sh:4 (`python train.py --steps 30`) starts train.py with other arguments: verified with those of long.sh:3"
        in down.notes
    )
    assert any(n.startswith("computed.sh:3 ") and "computed when it runs: not used" in n for n in down.notes), (
        down.notes
    )
    assert not any("arguments computed" in n or "other arguments" in n for n in use.notes), use.notes
    assert all(j.args == ["--steps", "3"] and j.args_source == ["--"] for j in pinned) and len(pinned) == 2


def test_launcher_plan_uses_the_launch_line(tmp_path):
    from bf16_migrate.verify.launch import plan_launcher

    repo = _legacy_repo(tmp_path, three=False)
    (job,) = plan_launcher(repo / "run.sh", extra_args=["--extra"])
    assert job.rel == "train.py" and job.args == ["--steps", "30", "--extra"]
    assert job.legacy_env == {"XLA_DOWNCAST_BF16": "1"} and job.source == ["run.sh:4"]
    (repo / "other.sh").write_text('python train.py --data "$DATA"\n')
    notes: list[str] = []
    with pytest.raises(RunError, match="no launch of a Python script"):
        plan_launcher(repo / "README.md" if (repo / "README.md").exists() else repo / ".gitignore", notes=notes)
    assert plan_launcher(repo / "other.sh", notes=notes) == [] and "computed" in notes[0]
    # a notebook launching no script: its own code is not verified, and the hint says how to verify it (a hunt's
    # notebook was sent to "verify the script itself", which does not exist)
    nbformat = pytest.importorskip("nbformat")
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('import os\nos.environ["XLA_USE_BF16"] = "1"')])
    nbformat.write(book, str(repo / "train.ipynb"))
    with pytest.raises(RunError, match="a notebook's own code is not verified") as info:
        plan_launcher(repo / "train.ipynb")
    assert "jupyter nbconvert --to script train.ipynb, then bf16-migrate verify train.py" in str(info.value.hint)


# -- one table, one exit code; --merge; --jobs ---------------------------------------------------


def _report_doc(script: str, passed: bool, failed_part: str | None = None) -> dict:
    parts: list[dict[str, Any]] = [
        {"name": n, "status": "FAIL" if n == failed_part else "PASS", "detail": "", "figures": {}}
        for n in ("runs", "trains", "precision", "matches", "graph", "trace")
    ]
    return {
        "schema": "bf16-migrate/verify/2",
        "script": script,
        "mode": "stochastic",
        "passed": passed,
        "legacy_env": {"XLA_USE_BF16": "1"},
        "legacy_env_source": ["run.sh:2"],
        "parts": parts,
        "runs": {"migrated": {"steps": 6}},
        "wall_time_s": 12.5,
    }


def test_merge_gives_one_table_and_one_exit_code(tmp_path):
    a, b, c = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.json"
    a.write_text(json.dumps(_report_doc("a.py", True)))
    b.write_text(json.dumps(_report_doc("b.py", False, "matches")))
    c.write_text(
        json.dumps(
            {
                "schema": "bf16-migrate/verify/2",
                "passed": False,
                "script": "c.py",
                "error": {"message": "the migrated run exited with code 1\nmore", "run": "migrated"},
            }
        )
    )
    table, doc, code = merge_documents([a, b])
    assert code == 1 and doc["schema"] == TREE_SCHEMA and len(doc["results"]) == 2
    assert "failed: matches" in table and "VERDICT: FAIL (1 passed, 1 failed, 0 could not be made)" in table
    assert "XLA_USE_BF16=1 (run.sh:2)" in table
    table, doc, code = merge_documents([a, b, c])
    assert code == 2 and "c.py" in table and "the migrated run exited with code 1" in table
    # a merged document merges again
    merged = tmp_path / "merged.json"
    proc = _cli("verify", "--merge", a, b, c, "--json", merged, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "3 verify(s)" in proc.stdout
    table, doc, code = merge_documents([merged, a])
    assert code == 2 and len(doc["results"]) == 4
    (tmp_path / "x.json").write_text("[]")
    proc = _cli("verify", "--merge", tmp_path / "x.json", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and "not a bf16-migrate verify --json document" in proc.stderr
    _, doc, code = merge_documents([a])
    assert code == 0 and doc["passed"] is True


def test_run_jobs_in_parallel_keeps_the_order_and_the_errors(tmp_path, monkeypatch):
    import bf16_migrate.verify as verify_pkg

    class Fake:
        def __init__(self, passed):
            self.passed = passed

    seen = []
    lock = threading.Lock()

    def fake_verify(script, **kwargs):
        with lock:
            seen.append((Path(script).name, kwargs["legacy_env"], kwargs["checkout"]))
        if Path(script).name == "c.py":
            raise RunError("the migrated run exited with code 1")
        return Fake(Path(script).name == "a.py")

    monkeypatch.setattr(verify_pkg, "verify_script", fake_verify)
    jobs = [
        Job(tmp_path / f"{n}.py", f"{n}.py", {"XLA_USE_BF16": "1"}, ["run.sh:2"], mode_named("stochastic"), "--mode")
        for n in "abc"
    ]
    outcomes = run_jobs(jobs, "CHECKOUT", steps=6, timeout=60, parallel=2)
    assert [o.job.rel for o in outcomes] == ["a.py", "b.py", "c.py"]
    assert [o.status for o in outcomes] == ["PASS", "FAIL", "ERROR"]
    assert {s[2] for s in seen} == {"CHECKOUT"}
    assert exit_code(o.status for o in outcomes) == 2
    doc = tree_dict(outcomes[2:], "git HEAD~1 (abc)")
    assert doc["exit_code"] == 2 and doc["results"][0]["error"]["message"].startswith("the migrated run")
    table = summary_table(outcomes[2:], "title")
    assert "ERROR" in table and "c.py" in table


def test_a_migration_that_broke_the_script_is_a_fail_in_the_table_and_its_documents(tmp_path):
    """A migrated run that failed where the legacy run succeeded is a failed check (exit 1), not a run that
    could not be made (exit 2): a CI job that retries or skips on 2 must not pass a broken migration."""
    job = Job(tmp_path / "t.py", "t.py", {"XLA_USE_BF16": "1"}, ["run.sh:2"], mode_named("stochastic"), "--mode")
    broke = RunError("the migrated run failed: exited with code 1 (the legacy run succeeded: the migration broke it)")
    broke.broke = True
    outcome = Outcome(job, error=broke)
    assert outcome.status == FAIL and exit_code([outcome.status]) == 1
    doc = tree_dict([outcome], "git HEAD~1")
    assert doc["exit_code"] == 1 and doc["results"][0]["error"]["broke"] is True
    assert "FAIL" in summary_table([outcome], "title")
    (tmp_path / "tree.json").write_text(json.dumps(doc))
    (tmp_path / "one.json").write_text(json.dumps({"schema": SCHEMA, "passed": False, "error": error_dict(broke)}))
    for name in ("tree.json", "one.json"):
        assert merge_documents([tmp_path / name])[2] == 1, name
    assert Outcome(job, error=RunError("the legacy run failed")).status == ERROR


def test_exit_code():
    assert exit_code([]) == 4  # nothing verified is never a pass
    assert exit_code([PASS, PASS]) == 0
    assert exit_code([PASS, FAIL]) == 1
    assert exit_code([FAIL, ERROR]) == 2
    assert exit_code([PASS, INCONCLUSIVE]) == 3
    assert exit_code([INCONCLUSIVE, FAIL]) == 1
    assert Outcome(Job(Path("x"), "x", {}, [], mode_named("amp"), "--mode")).status == "ERROR"


# -- on the XLA CPU device ---------------------------------------------------------------------


@pytest.mark.xla
def test_verify_a_migration_commit_of_three_scripts(tmp_path):
    """The second commit is bf16-migrate's own output. verify --against HEAD~1, no script, no
    --legacy-env: three scripts, one table, PASS; train.py's legacy run took XLA_DOWNCAST_BF16=1
    from run.sh at HEAD~1 and imported HEAD~1's wide_adam.py (its .double() moments are f32 on
    the device; the migrated module's .float() would be bf16 under the variable)."""
    repo = _migrated_repo(tmp_path)
    out = tmp_path / "tree.json"
    proc = _cli("verify", "--against", "HEAD~1", "--steps", STEPS, "--json", out, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert data["schema"] == TREE_SCHEMA and data["passed"] and data["exit_code"] == 0
    results = {r["script"]: r for r in data["results"]}
    assert sorted(results) == ["train.py", "train_adamw.py", "train_sgd.py"]
    assert all(r["status"] == "PASS" for r in results.values()), proc.stdout
    train = results["train.py"]["report"]
    assert train["legacy_env"] == {"XLA_DOWNCAST_BF16": "1"} and train["legacy_env_source"] == ["run.sh:4"]
    assert train["script_args"] == ["--steps", "30"] and results["train.py"]["args_source"] == [
        "run.sh:4"
    ]  # run.sh's launch line
    legacy = train["runs"]["legacy"]
    assert legacy["legacy_env"] == {"XLA_DOWNCAST_BF16": "1"}
    assert legacy["state_dtypes"]["m"] == {"float64/f32": 4}  # HEAD~1's module, .double() under the switch
    assert train["runs"]["migrated"]["state_dtypes"]["m"] == {"float32/f32": 4}
    assert train["runs"]["legacy"]["losses"] == train["runs"]["migrated"]["losses"]
    assert proc.stdout.count("VERDICT: PASS") == 4  # three reports and the table
    assert "train.py       | XLA_DOWNCAST_BF16=1 (run.sh:4)" in proc.stdout

    # one script, the same commit: the full report, the setting from run.sh
    proc = _cli("verify", "train.py", "--against", "HEAD~1", "--steps", STEPS, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "legacy run under XLA_DOWNCAST_BF16=1 (from run.sh:4)" in proc.stdout

    # the launcher, as users run it: run.sh at HEAD~1 gives the launch line and its setting
    proc = _cli("verify", "run.sh", "--against", "HEAD~1", "--steps", STEPS, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "script args: --steps 30" in proc.stdout and "VERDICT: PASS (1 passed" in proc.stdout


@pytest.mark.xla
def test_negative_control_a_commit_that_only_deletes_the_export_fails(tmp_path):
    """The "migration" deletes the launcher's export and nothing else: the migrated side
    silently trains in fp32. verify --against HEAD~1 selects train.py (its launcher changed),
    runs HEAD~1 under run.sh's setting, and fails on precision and matches."""
    repo = _legacy_repo(tmp_path, three=False)
    (repo / "run.sh").write_text(RUN_SH.replace("export XLA_DOWNCAST_BF16=1\n", ""))
    _git(repo, "commit", "-q", "-am", "drop the variable")
    out = tmp_path / "tree.json"
    proc = _cli("verify", "--against", "HEAD~1", "--steps", STEPS, "--mode", "stochastic", "--json", out, cwd=repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    (result,) = data["results"]
    assert result["script"] == "train.py" and result["status"] == "FAIL"
    parts = {p["name"]: p["status"] for p in result["report"]["parts"]}
    assert parts["precision"] == "FAIL" and parts["matches"] == "FAIL"
    assert result["report"]["runs"]["legacy"]["device_param_dtypes"] == {"bf16": 4}
    assert result["report"]["runs"]["migrated"]["device_param_dtypes"] == {"f32": 4}
    assert "VERDICT: FAIL (0 passed, 1 failed" in proc.stdout


def test_a_setting_the_migration_kept_in_a_launcher_is_noted(tmp_path):
    """Only the script was migrated; run.sh still exports the variable: the migrated run is made
    without it, and the plan says so."""
    from bf16_migrate.python import migrate_source

    repo = _legacy_repo(tmp_path, three=False)
    migrated = migrate_source(TRAIN, "stochastic", "train.py", launched_with={"XLA_DOWNCAST_BF16": "1"}).code
    (repo / "train.py").write_text(migrated)
    _git(repo, "commit", "-q", "-am", "script only")
    with Checkout(repo, "HEAD~1") as co:
        (job,) = plan_script(repo / "train.py", co)
    assert job.legacy_env == {"XLA_DOWNCAST_BF16": "1"}
    assert any(
        n.startswith("run.sh:4 in the work tree still sets XLA_DOWNCAST_BF16=1 for train.py") for n in job.notes
    ), job.notes


@pytest.mark.xla
def test_a_launcher_as_users_run_it(tmp_path):
    """verify run.sh in the legacy tree: its launch line (`python train.py --steps 30`) with
    run.sh's XLA_DOWNCAST_BF16=1, one process, stopped after --steps; train.py is migrated on
    the fly as if run.sh had been migrated with it."""
    repo = _legacy_repo(tmp_path, three=False)
    out = tmp_path / "launcher.json"
    proc = _cli("verify", "run.sh", "--steps", STEPS, "--json", out, cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (result,) = json.loads(out.read_text())["results"]
    assert result["script"] == "train.py" and result["legacy_env_source"] == ["run.sh:4"]
    report = result["report"]
    assert report["script_args"] == ["--steps", "30"] and report["runs"]["migrated"]["steps"] == int(STEPS)
    assert report["runs"]["legacy"]["legacy_env"] == {"XLA_DOWNCAST_BF16": "1"}
