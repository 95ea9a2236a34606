"""A run is one change: every write staged, then committed Python-first; a failure anywhere never
leaves a launcher migrated without its script, and the report says exactly what was written.

The tree: launchers that ``export XLA_USE_BF16=1`` and start a script of the tree with no legacy
setting of its own (so the launcher's setting is the script's only precision). A launcher is
"migrated" when it no longer names the variable; a script when it casts its model to bf16. The
invariant after anything: every file holds exactly its old or its new bytes, and no migrated
launcher starts a script that is not migrated.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from bf16_migrate import commit as commit_module
from bf16_migrate.cli import main
from bf16_migrate.project import migrate_paths

SCRIPT = '''"""Trains a small regression model on the XLA device."""
import torch
import torch_xla.core.xla_model as xm


def main():
    device = xm.xla_device()
    model = torch.nn.Linear(8, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(5):
        x = torch.randn(4, 8, device=device)
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        xm.mark_step()


if __name__ == "__main__":
    main()
'''


def make_tree(root: Path, scripts: int, launchers_per_script: int = 1) -> dict[Path, Path]:
    """Writes the tree; returns launcher -> the script it starts."""
    pairs = {}
    for i in range(scripts):
        script = root / f"job{i:03d}" / "train.py"
        script.parent.mkdir(parents=True)
        script.write_text(SCRIPT)
        for j in range(launchers_per_script):
            launcher = script.parent / f"run{j:02d}.sh"
            launcher.write_text(f"#!/bin/bash\nset -e\nexport XLA_USE_BF16=1\npython train.py --seed {j}\n")
            pairs[launcher] = script
    return pairs


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def check_invariant(
    root: Path, pairs: dict[Path, Path], old: dict[str, bytes], new: dict[str, bytes]
) -> tuple[int, int]:
    """Every file old or new; no migrated launcher before its script. Returns (launchers,
    scripts) migrated."""
    now = snapshot(root)
    assert set(now) == set(old), "files appeared or vanished (a temporary left behind?)"
    for name, data in now.items():
        assert data in (old[name], new[name]), f"{name} is neither its old nor its new content"
    return launchers_before_scripts(pairs)


def launchers_before_scripts(pairs: dict[Path, Path]) -> tuple[int, int]:
    """Asserts no launcher is migrated while its script is not; returns (launchers, scripts)
    migrated."""
    launchers = 0
    for launcher, script in pairs.items():
        launcher_done = b"XLA_USE_BF16" not in launcher.read_bytes()
        script_done = b"torch.bfloat16" in script.read_bytes()
        assert script_done or not launcher_done, f"{launcher} is migrated but {script} is not: it would train in FP32"
        launchers += launcher_done
    return launchers, sum(b"torch.bfloat16" in s.read_bytes() for s in set(pairs.values()))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The tree before and after a clean run (4 scripts, 2 launchers each)."""
    root = tmp_path_factory.mktemp("reference")
    make_tree(root, 4, 2)
    old = snapshot(root)
    outcome = migrate_paths([root], "stochastic", write=True)
    assert not outcome.errors and len(outcome.changed) == 12, outcome.errors
    return old, snapshot(root)


def fresh(tmp_path, reference):
    pairs = make_tree(tmp_path, 4, 2)
    assert snapshot(tmp_path) == reference[0]
    return pairs


# -- fault injection: a write that fails at every position of the commit order ------------------------
def test_the_commit_order_is_python_first(tmp_path, reference, monkeypatch):
    fresh(tmp_path, reference)
    order: list[str] = []
    real = os.replace

    def replace(src, dst):
        order.append(Path(dst).name)
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    migrate_paths([tmp_path], "stochastic", write=True)
    assert order == ["train.py"] * 4 + ["run00.sh", "run01.sh"] * 4


@pytest.mark.parametrize("position", range(12))
def test_a_rename_failing_at_any_position_never_leaves_a_launcher_without_its_script(
    tmp_path, reference, monkeypatch, position
):
    pairs = fresh(tmp_path, reference)
    calls = []
    real = os.replace

    def failing(src, dst):
        calls.append(dst)
        if len(calls) - 1 == position:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", failing)
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    launchers, scripts = check_invariant(tmp_path, pairs, *reference)
    # what was renamed before the failure is written, and reported as such; nothing after it
    assert len(outcome.changed) == position == scripts + launchers
    failed = Path(calls[-1])
    assert outcome.errors == [f"{failed}: cannot write: No space left on device"]
    assert failed not in outcome.changed and failed not in outcome.held_back
    assert len(outcome.held_back) == 12 - position - 1
    # "[fixed]" only for what was written
    for d in outcome.diagnostics:
        if d.code == "BFM001":
            assert d.fixed == (Path(d.path) in outcome.changed), d
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".bf16-migrate")]


@pytest.mark.parametrize("position", [0, 3, 4, 11])
def test_a_staging_failure_writes_nothing(tmp_path, reference, monkeypatch, position):
    pairs = fresh(tmp_path, reference)
    staged = []
    real = commit_module._stage

    def failing(write):
        staged.append(write.path)
        if len(staged) - 1 == position:
            raise OSError(5, "Input/output error")
        return real(write)

    monkeypatch.setattr(commit_module, "_stage", failing)
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert snapshot(tmp_path) == reference[0]  # exactly as before, no temporary left
    assert outcome.changed == [] and len(outcome.held_back) == 11
    assert outcome.errors == [f"{staged[-1]}: cannot write: Input/output error"]
    assert not any(d.fixed for d in outcome.diagnostics if d.code == "BFM001")
    check_invariant(tmp_path, pairs, *reference)


def test_a_read_only_script_holds_back_its_launchers_and_the_cli_says_so(tmp_path, reference, monkeypatch):
    fresh(tmp_path, reference)
    script = tmp_path / "job002" / "train.py"
    script.chmod(0o444)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["."])
    assert result.exit_code == 2, result.output
    assert snapshot(tmp_path) == reference[0]
    assert "error: job002/train.py: not written: the file is read-only" in result.output
    assert "error: not written, so that no launcher is migrated without its script: job000/run00.sh" in result.output
    assert "(nothing was written); fix the error above and run again" in result.output
    assert "bf16-migrate: 0 file(s) changed, 0 finding(s) fixed" in result.output
    assert "11 file(s) held back" in result.output
    assert "[fixed]" not in result.output
    script.chmod(0o644)
    result = CliRunner().invoke(main, ["."])  # fixed: the next run does it all
    assert result.exit_code == 0, result.output
    assert snapshot(tmp_path) == reference[1]


# -- signals --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_the_commit_is_held_until_it_is_complete(tmp_path, reference, monkeypatch, signum):
    fresh(tmp_path, reference)
    real = commit_module._stage
    sent: list[int] = []

    def stage_and_signal(write):
        if not sent:
            os.kill(os.getpid(), signum)  # pending: blocked while the commit runs
            sent.append(signum)
        return real(write)

    monkeypatch.setattr(commit_module, "_stage", stage_and_signal)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["."])
    assert result.exit_code == 130, result.output
    assert snapshot(tmp_path) == reference[1]  # the commit was finished
    name = signal.Signals(signum).name
    assert f"bf16-migrate: {name} arrived while writing; the change was completed first" in result.output
    assert "12 file(s) changed" in result.output


def test_sigint_before_the_commit_writes_nothing(tmp_path, reference, monkeypatch):
    fresh(tmp_path, reference)
    from bf16_migrate import project

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(project, "migrate_imported_modules", interrupted)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["."])
    assert result.exit_code == 130
    assert "interrupted before anything was written; no file was changed" in result.output
    assert snapshot(tmp_path) == reference[0]


# -- temporaries of a killed run ---------------------------------------------------------------------------
def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_are_removed_and_a_live_runs_are_kept(tmp_path, reference):
    fresh(tmp_path, reference)
    job = tmp_path / "job001"
    stale = job / f".train.py.{dead_pid()}.0123abcd.bf16-migrate"
    stale.write_text("half")
    live = job / f".run00.sh.{os.getppid()}.0123abcd.bf16-migrate"
    live.write_text("another run's")
    old_style = job / ".train.py.k2j_9xq1.bf16-migrate"  # bf16-migrate 0.1: no PID, removed when old
    old_style.write_text("old")
    hour_ago = time.time() - 7200
    os.utime(old_style, (hour_ago, hour_ago))
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert sorted(outcome.removed) == sorted([stale, old_style])
    assert live.exists() and not stale.exists() and not old_style.exists()
    assert live.read_text() == "another run's"  # never read as a candidate either
    assert len(outcome.changed) == 12


def test_check_and_diff_remove_nothing(tmp_path, reference):
    fresh(tmp_path, reference)
    stale = tmp_path / "job000" / f".train.py.{dead_pid()}.0123abcd.bf16-migrate"
    stale.write_text("half")
    outcome = migrate_paths([tmp_path], "stochastic", write=False)
    assert outcome.removed == [] and stale.exists()


# -- kill -9 over a few hundred files ---------------------------------------------------------------------
KILLER = """
import os, signal, sys
from bf16_migrate.cli import main
what, k = sys.argv.pop(1), int(sys.argv.pop(1))
real = getattr(os, what)
calls = [0]
def killing(*args):
    calls[0] += 1
    if calls[0] == k:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*args)
setattr(os, what, killing)
main()
"""


@pytest.mark.parametrize(
    "what, k",
    [
        ("fsync", 150),  # while staging: nothing renamed yet
        ("replace", 1),  # before the first rename
        ("replace", 12),  # after 11 of the 12 scripts
        ("replace", 13),  # every script committed, no launcher yet
        ("replace", 200),  # in the middle of the launchers
    ],
)
def test_kill_9_inside_the_commit_never_leaves_a_launcher_without_its_script(tmp_path, what, k):
    """12 scripts, 24 launchers each (300 files). The run is SIGKILLed from inside itself at the
    k-th fsync/rename (a real kill -9 at an exact point of the commit); then run again."""
    pairs = make_tree(tmp_path, 12, 24)
    old = snapshot(tmp_path)
    killed = subprocess.run([sys.executable, "-c", KILLER, what, str(k), str(tmp_path)], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    temporaries = sorted(p for p in tmp_path.rglob("*") if p.name.endswith(".bf16-migrate"))
    now = {
        p.relative_to(tmp_path).as_posix(): p.read_bytes()
        for p in sorted(tmp_path.rglob("*"))
        if p.is_file() and p not in temporaries
    }
    assert set(now) == set(old)
    changed = [name for name in now if now[name] != old[name]]
    assert len(changed) == (k - 1 if what == "replace" else 0)
    launchers, scripts = launchers_before_scripts(pairs)
    assert launchers + scripts == len(changed)
    assert temporaries, "the killed run's staged temporaries are still there"
    rerun = subprocess.run([sys.executable, "-m", "bf16_migrate.cli", str(tmp_path)], capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"removed {len(temporaries)} temporary file(s) left by an interrupted run" in rerun.stderr
    after = snapshot(tmp_path)
    assert not [name for name in after if name.endswith(".bf16-migrate")]
    assert all(b"torch.bfloat16" in script.read_bytes() for script in pairs.values())
    assert all(b"XLA_USE_BF16" not in launcher.read_bytes() for launcher in pairs)
    assert sum(after[name] != old[name] for name in old) == 300


SIGTERM_WHILE_PLANNING = """
import os, signal, sys
from bf16_migrate import project
from bf16_migrate.cli import main
real = project.migrate_imported_modules
def terminated(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)  # as `kill PID` would, in the middle of planning
    return real(*args, **kwargs)
project.migrate_imported_modules = terminated
main()
"""


def test_sigterm_while_planning_says_nothing_was_written(tmp_path):
    make_tree(tmp_path, 2, 2)
    old = snapshot(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", SIGTERM_WHILE_PLANNING, str(tmp_path)], capture_output=True, text=True
    )
    assert result.returncode == 130, result.stderr
    assert result.stderr.strip() == "bf16-migrate: interrupted before anything was written; no file was changed"
    assert snapshot(tmp_path) == old
