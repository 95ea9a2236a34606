"""The Python migrations of a run (bf16_migrate.migrations): each distinct call made once, the
answers handed out as copies, a ParseError remembered, and a batch made in worker processes with
the same results as here, a dead worker's calls made here."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from bf16_migrate import migrations, workers
from bf16_migrate.migrations import Migrations
from bf16_migrate.python import ParseError, migrate_source
from bf16_migrate.rules import Mode, mode_named

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ["mlp_regression", "cnn_trainer", "tiny_transformer", "resume_checkpoint"]


@pytest.fixture
def counted(monkeypatch):
    """migrate_source calls made in this process (a worker's are counted in its own copy)."""
    calls: list[str] = []
    parent = os.getpid()

    def counting(source, mode, path, **options):
        if os.getpid() == parent:
            calls.append(path)
        return migrate_source(source, mode, path, **options)

    monkeypatch.setattr(migrations, "migrate_source", counting)
    return calls


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(workers, "fork_workers", lambda: 2)
    monkeypatch.setattr(Migrations, "AHEAD_FROM_BYTES", 1)
    if not hasattr(os, "fork"):
        pytest.skip("worker processes are forked")
    if threading.active_count() != 1:
        pytest.skip("another thread runs in this process: the calls are made here then")


STOCHASTIC, AMP = mode_named("stochastic"), mode_named("amp")


def _source(name: str) -> str:
    return (ROOT / "fixtures" / name / "train.py").read_text()


def test_each_call_is_made_once_and_answered_with_copies(counted):
    runs = Migrations()
    first = runs(_source("mlp_regression"), STOCHASTIC, "train.py", launched_with=None)
    first.diagnostics.clear()
    first.helpers.append("mine")
    second = runs(_source("mlp_regression"), STOCHASTIC, "train.py", launched_with=None)
    assert counted == ["train.py"]
    assert second.diagnostics and second.helpers == []
    assert second.code == migrate_source(_source("mlp_regression"), STOCHASTIC, "train.py").code
    # another argument is another call
    runs(_source("mlp_regression"), AMP, "train.py", launched_with=None)
    runs(_source("mlp_regression"), STOCHASTIC, "train.py", launched_with={"XLA_USE_BF16": "1"})
    assert len(counted) == 3


def test_a_parse_error_is_remembered_and_raised_each_time(counted):
    runs = Migrations()
    for _ in range(2):
        with pytest.raises(ParseError, match=r"broken\.py:1:"):
            runs("def (:\n", STOCHASTIC, "broken.py")
    assert counted == ["broken.py"]


def test_a_batch_in_workers_gives_what_this_process_gives(counted, two_cores):
    calls: list[tuple[str, Mode, str, dict[str, Any]]] = [
        (_source(name), mode, f"{name}.py", {"launched_with": None}) for name in SCRIPTS for mode in (STOCHASTIC, AMP)
    ]
    calls.append(("def (:\n", STOCHASTIC, "broken.py", {}))
    runs = Migrations()
    runs.ahead(calls)
    assert counted == [], "the batch was made in the workers"
    for source, mode, path, options in calls[:-1]:
        got = runs(source, mode, path, **options)
        want = migrate_source(source, mode, path, **options)
        assert (got.code, got.diagnostics, got.legacy_env, got.helpers) == (
            want.code,
            want.diagnostics,
            want.legacy_env,
            want.helpers,
        )
    with pytest.raises(ParseError):
        runs("def (:\n", STOCHASTIC, "broken.py")
    assert counted == [], "every answer came from the batch"


def test_too_little_work_is_made_here(counted, two_cores, monkeypatch):
    """Two small scripts: workers would cost more than they save (AHEAD_FROM_BYTES)."""
    monkeypatch.setattr(Migrations, "AHEAD_FROM_BYTES", 32 * 1024)
    runs = Migrations()
    runs.ahead([(_source("mlp_regression"), STOCHASTIC, "a.py", {}), (_source("cnn_trainer"), STOCHASTIC, "b.py", {})])
    assert counted == []
    runs(_source("mlp_regression"), STOCHASTIC, "a.py")
    assert counted == ["a.py"]


def test_one_call_that_is_half_the_work_is_made_here(counted, two_cores):
    big = _source("tiny_transformer") * 3
    runs = Migrations()
    runs.ahead([(big, STOCHASTIC, "big.py", {}), (_source("mlp_regression"), STOCHASTIC, "small.py", {})])
    assert counted == [], "nothing made ahead: workers would not gain"
    runs(big, STOCHASTIC, "big.py")
    assert counted == ["big.py"]


def test_a_dead_worker_leaves_its_calls_to_this_process(monkeypatch, two_cores):
    parent = os.getpid()

    def dies(source, mode, path, **options):
        if os.getpid() != parent:
            os._exit(7)
        return migrate_source(source, mode, path, **options)

    monkeypatch.setattr(migrations, "migrate_source", dies)
    _ahead_then_each_call()


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible", "amp"])
def test_a_tree_run_is_the_same_with_and_without_workers(tmp_path, monkeypatch, counted, two_cores, mode):
    """Four legacy scripts and a launcher: the same diff whether the migrations are made in
    workers or here, one after the other."""
    from click.testing import CliRunner

    from bf16_migrate.cli import main

    for name in SCRIPTS:
        shutil.copytree(ROOT / "fixtures" / name, tmp_path / name, ignore=shutil.ignore_patterns("expected"))
    shutil.copytree(ROOT / "fixtures" / "project", tmp_path / "project", ignore=shutil.ignore_patterns("expected"))
    monkeypatch.chdir(tmp_path)

    def diff() -> str:
        result = CliRunner().invoke(main, [".", "--diff", "--mode", mode])
        assert result.exit_code == 1, result.output
        return result.stdout

    with_workers = diff()
    made_here = len(counted)
    monkeypatch.setattr(Migrations, "AHEAD_FROM_BYTES", 10**12)
    counted.clear()
    assert diff() == with_workers
    assert made_here < len(counted), "the first run made some migrations in workers"
    assert "+++" in with_workers


def test_a_legacy_env_script_is_migrated_once(tmp_path, monkeypatch, counted):
    """``--legacy-env``: the trial that decides whether the script takes the change is the
    script's own migration (the same call); the run makes it once and writes its code."""
    from click.testing import CliRunner

    from bf16_migrate.cli import main

    original = (ROOT / "fixtures" / "project" / "src" / "train.py").read_text()
    (tmp_path / "train.py").write_text(original)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["train.py", "--legacy-env", "XLA_USE_BF16=1"])
    assert result.exit_code == 0, result.output
    assert counted == ["train.py"]
    expected = migrate_source(original, "stochastic", "train.py", launched_with={"XLA_USE_BF16": "1"}).code
    assert expected != original and (tmp_path / "train.py").read_text() == expected


def test_no_worker_to_start_makes_the_calls_here(monkeypatch, counted, two_cores):
    """os.fork fails when the pool starts its workers: nothing is lost, the calls are made here."""

    def no_fork() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    _ahead_then_each_call()
    assert counted == [f"{name}.py" for name in SCRIPTS]


def _ahead_then_each_call() -> None:
    """The four scripts made ahead, then asked for one by one: each answer is migrate_source's."""
    runs = Migrations()
    calls: list[tuple[str, Mode, str, dict[str, Any]]] = [
        (_source(name), STOCHASTIC, f"{name}.py", {}) for name in SCRIPTS
    ]
    runs.ahead(calls)
    for source, mode, path, options in calls:
        assert runs(source, mode, path, **options).code == migrate_source(source, mode, path).code
