"""``bf16-migrate PATHS --verify [--revert-failed]``: the rewrite, then every rewritten script
run on the XLA device against its bytes before the rewrite (with its legacy launchers'
settings), one table, and the files of a script whose verdict failed put back.

The tree (no git needed): ``run.sh`` exports XLA_DOWNCAST_BF16=1 and starts ``train.py``,
which imports ``wide_adam.py`` (an optimizer reading that variable); ``train_sgd.py`` and
``train_bad.py`` set XLA_USE_BF16 themselves. In the failing case the codemod is made to
"migrate" ``train_bad.py`` by only deleting its write (no cast): it trains in fp32, which the
verify must catch and ``--revert-failed`` must undo, byte for byte, leaving the others migrated.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.rules import mode_named
from bf16_migrate.verify.after_rewrite import PreRewriteTree, mirror_root, revert_failed, revert_groups
from bf16_migrate.verify.tree import Job, Outcome, plan_tree

from test_verify_tree import RUN_SH, SELF_SET, TRAIN, WIDE_ADAM

STEPS = "6"
SGD = SELF_SET.replace("OPTIMIZER", "torch.optim.SGD(model.parameters(), lr=5e-2, momentum=0.9)")
BAD = SELF_SET.replace("OPTIMIZER", "torch.optim.AdamW(model.parameters(), lr=1e-2)").replace(
    "torch.manual_seed(1)", "torch.manual_seed(2)"
)


def _tree(where: Path, bad: bool = True) -> Path:
    repo = where / "proj"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[project]\nname = 'proj'\nversion = '0'\n")
    (repo / "run.sh").write_text(RUN_SH)
    (repo / "wide_adam.py").write_text(WIDE_ADAM)
    (repo / "train.py").write_text(TRAIN)
    (repo / "train_sgd.py").write_text(SGD)
    if bad:
        # CRLF and a BOM: what is put back must be these bytes, not a re-encoding of the text
        (repo / "train_bad.py").write_bytes(b"\xef\xbb\xbf" + BAD.replace("\n", "\r\n").encode())
    (repo / "data").mkdir()
    (repo / "data" / "set.bin").write_bytes(b"\x00\x01")
    (repo / ".gitignore").write_text("data/\n")
    return repo


def _break_train_bad(monkeypatch) -> None:
    """The codemod "migrates" train_bad.py by deleting its legacy write and nothing else."""
    import bf16_migrate.migrations as migrations

    real = migrations.migrate_source

    def only_delete(text, mode, path, *args, **kwargs):
        result = real(text, mode, path, *args, **kwargs)
        if Path(path).name != "train_bad.py":
            return result
        code = "".join(line for line in text.splitlines(keepends=True) if "XLA_USE_BF16" not in line)
        return dataclasses.replace(result, code=code)

    monkeypatch.setattr(migrations, "migrate_source", only_delete)  # forked workers inherit it


# -- the tree before the rewrite -------------------------------------------------------------------


def test_the_mirror_holds_the_bytes_before_the_rewrite(tmp_path):
    repo = _tree(tmp_path)
    (repo / "_helpers.py").write_text("# created by the rewrite\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "job.yaml").write_text("env: []\n")
    before = {repo / "train.py": b"legacy train\n", repo / "_helpers.py": None}
    assert mirror_root(before) == repo.resolve()
    with PreRewriteTree(repo, before, ignore=lambda p, d: Path(p).name == "data") as tree:
        mirror = tree.tree
        assert (mirror / "train.py").read_bytes() == b"legacy train\n"  # put back
        assert not (mirror / "_helpers.py").exists()  # created by the rewrite: not there before
        assert (mirror / "wide_adam.py").read_text() == WIDE_ADAM and not (
            mirror / "wide_adam.py"
        ).is_symlink()  # copied
        assert (mirror / "sub" / "job.yaml").is_file() and not (mirror / "sub" / "job.yaml").is_symlink()
        assert (mirror / "data").is_symlink() and (mirror / "data" / "set.bin").read_bytes() == b"\x00\x01"
        assert tree.changed() == {"train.py", "_helpers.py"}
        assert tree.path_for(repo / "train.py") == mirror / "train.py"
        assert tree.relative(mirror / "train.py") == "train.py"
    assert not mirror.exists()
    assert (repo / "train.py").read_text() == TRAIN  # the work tree is only read
    with pytest.raises(ValueError, match="is not under"):
        PreRewriteTree(repo / "sub", {repo / "train.py": b""})


def test_plan_over_the_mirror_selects_the_rewritten_scripts(tmp_path):
    """plan_tree over the mirror: train.py under run.sh's setting (run.sh and wide_adam.py are
    among the files its verdict speaks for), train_sgd.py under its own writes."""
    repo = _tree(tmp_path, bad=False)
    legacy = {
        p: p.read_bytes() for p in (repo / "run.sh", repo / "train.py", repo / "wide_adam.py", repo / "train_sgd.py")
    }
    result = CliRunner().invoke(main, [str(repo), "--mode", "stochastic"])
    assert result.exit_code == 0, result.output
    with PreRewriteTree(repo, legacy) as tree:
        jobs = {job.rel: job for job in plan_tree(tree, mode_named("stochastic"))}
    assert sorted(jobs) == ["train.py", "train_sgd.py"]
    assert jobs["train.py"].legacy_env == {"XLA_DOWNCAST_BF16": "1"} and jobs["train.py"].source == ["run.sh:4"]
    assert jobs["train.py"].depends == ["run.sh", "train.py", "wide_adam.py"]
    assert jobs["train_sgd.py"].depends == ["train_sgd.py"] and jobs["train_sgd.py"].legacy_env == {}


# -- what is put back -------------------------------------------------------------------------------


def _outcome(rel: str, depends: list[str], passed: bool) -> Outcome:
    job = Job(Path(rel), rel, {}, [], mode_named("stochastic"), "--mode", depends=depends)
    report = type("R", (), {"passed": passed})()
    return Outcome(job, report=report)


def test_jobs_sharing_a_file_stand_or_fall_together():
    outcomes = [
        _outcome("a.py", ["a.py", "run.sh", "common.py"], True),
        _outcome("b.py", ["b.py", "common.py"], False),  # shares common.py with a.py
        _outcome("c.py", ["c.py"], True),
        _outcome("d.py", ["d.py", "d.sh"], False),
    ]
    files, jobs = revert_groups(outcomes)
    assert files == {"a.py", "run.sh", "common.py", "b.py", "d.py", "d.sh"}
    assert [j.rel for j in jobs] == ["a.py", "b.py", "d.py"]
    assert revert_groups([_outcome("c.py", ["c.py"], True)]) == (set(), [])


def test_revert_puts_the_bytes_back_and_removes_what_the_rewrite_created(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    for name, text in (
        ("a.py", "new a\n"),
        ("run.sh", "new run\n"),
        ("b.py", "new b\n"),
        ("_helpers.py", "def f(): ...\n"),
        ("notes.yaml", "x: 1\n"),
    ):
        (tmp_path / name).write_text(text)
    os.chmod(tmp_path / "run.sh", 0o755)
    snapshot = {
        tmp_path / "a.py": b"\xef\xbb\xbfold a\r\n",
        tmp_path / "run.sh": b"export XLA_USE_BF16=1\npython a.py\n",
        tmp_path / "b.py": b"old b\n",
        tmp_path / "_helpers.py": None,
        tmp_path / "notes.yaml": b"x: 0\n",
    }
    outcomes = [_outcome("a.py", ["a.py", "run.sh"], False), _outcome("b.py", ["b.py"], True)]
    done = revert_failed(outcomes, snapshot, tmp_path, [tmp_path])
    assert not done.failed
    assert sorted(p.name for p in done.restored) == ["a.py", "run.sh"]
    assert [p.name for p in done.restored] == [
        "run.sh",
        "a.py",
    ]  # the launcher first: never a launcher without its switch before an uncast script
    assert (tmp_path / "a.py").read_bytes() == b"\xef\xbb\xbfold a\r\n"
    assert (tmp_path / "run.sh").read_bytes() == b"export XLA_USE_BF16=1\npython a.py\n"
    assert os.stat(tmp_path / "run.sh").st_mode & 0o777 == 0o755
    assert (tmp_path / "b.py").read_text() == "new b\n"  # proven: stays migrated
    assert (tmp_path / "_helpers.py").exists() and not done.removed  # b.py, migrated, may import it
    assert [p.name for p in done.kept] == ["notes.yaml"]  # no verdict speaks for it
    # b.py fails too: now every Python file of the directory is back, so the created module goes
    outcomes = [_outcome("a.py", ["a.py", "run.sh"], False), _outcome("b.py", ["b.py"], False)]
    done = revert_failed(outcomes, snapshot, tmp_path, [tmp_path])
    assert (tmp_path / "b.py").read_bytes() == b"old b\n"
    assert not (tmp_path / "_helpers.py").exists() and [p.name for p in done.removed] == ["_helpers.py"]


def test_a_file_that_cannot_be_put_back_puts_nothing_back(tmp_path):
    (tmp_path / "a.py").write_text("new a\n")
    (tmp_path / "run.sh").write_text("new run\n")
    os.chmod(tmp_path / "run.sh", 0o444)
    snapshot = {tmp_path / "a.py": b"old a\n", tmp_path / "run.sh": b"old run\n"}
    try:
        done = revert_failed([_outcome("a.py", ["a.py", "run.sh"], False)], snapshot, tmp_path, [tmp_path])
    finally:
        os.chmod(tmp_path / "run.sh", 0o644)
    assert "read-only" in done.failed[tmp_path / "run.sh"] and not done.restored
    assert (tmp_path / "a.py").read_text() == "new a\n"


# -- the command line ---------------------------------------------------------------------------------


def test_verify_needs_a_rewrite_that_writes(tmp_path):
    repo = _tree(tmp_path, bad=False)
    for extra in (["--check"], ["--diff"]):
        result = CliRunner().invoke(main, [str(repo), "--verify", *extra])
        assert result.exit_code == 2 and "--verify proves what the rewrite writes" in result.output
    result = CliRunner().invoke(main, [str(repo), "--revert-failed", "--check"])
    assert result.exit_code == 2  # --revert-failed is --verify and more
    assert (repo / "train.py").read_text() == TRAIN


def test_nothing_written_nothing_verified(tmp_path):
    (tmp_path / "clean.py").write_text("print('fp32 all along')\n")
    result = CliRunner().invoke(main, [str(tmp_path), "--verify"])
    assert result.exit_code == 0, result.output
    assert "nothing was written, nothing to verify" in result.output


@pytest.mark.xla
def test_verify_and_revert_failed_on_a_tree_where_one_migration_fails(tmp_path, monkeypatch):
    repo = _tree(tmp_path)
    legacy_bad = (repo / "train_bad.py").read_bytes()
    _break_train_bad(monkeypatch)
    result = CliRunner().invoke(
        main, [str(repo), "--mode", "stochastic", "--verify", "--revert-failed", "--verify-steps", STEPS]
    )
    out = result.output
    assert result.exit_code == 1, out
    rows = {line.split("|")[0].strip(): line for line in out.splitlines() if line.count("|") >= 6}
    assert "PASS" in rows["train.py"] and "XLA_DOWNCAST_BF16=1 (run.sh:4)" in rows["train.py"]
    assert "PASS" in rows["train_sgd.py"]
    assert "FAIL" in rows["train_bad.py"] and "precision" in rows["train_bad.py"]
    assert "VERDICT: FAIL (2 passed, 1 failed, 0 could not be made)" in out
    assert "put back 1 file(s) as they were before the rewrite" in out
    # the failed script is back, byte for byte; what was proven stays migrated
    assert (repo / "train_bad.py").read_bytes() == legacy_bad
    assert "XLA_USE_BF16" not in (repo / "train_sgd.py").read_text()
    assert "XLA_DOWNCAST_BF16" not in (repo / "run.sh").read_text()
    assert "torch.bfloat16" in (repo / "train.py").read_text()
    # the legacy side of train.py ran the legacy optimizer module, under run.sh's setting
    assert "legacy run under XLA_DOWNCAST_BF16=1 (from run.sh:4)" in out
    assert "legacy version: before the rewrite" in out


def test_arguments_after_the_double_dash_go_to_every_script_of_a_commit(tmp_path):
    """`verify --against REV -- --steps 5`: no SCRIPT, the arguments are every script's."""
    import json

    from test_verify_tree import _cli, _migrated_repo

    repo = _migrated_repo(tmp_path)
    proc = _cli("verify", "--against", "HEAD~1", "--list", "--", "--steps", "5", cwd=repo, timeout=300)
    assert proc.returncode == 0, proc.stderr
    entries = {e["script"]: e for e in json.loads(proc.stdout)["scripts"]}
    assert sorted(entries) == ["train.py", "train_adamw.py", "train_sgd.py"]
    assert all(e["args"] == ["--steps", "5"] and e["command"][-3:] == ["--", "--steps", "5"] for e in entries.values())
    proc = _cli("verify", "missing.py", "--against", "HEAD~1", cwd=repo, timeout=60)
    assert proc.returncode == 2 and "SCRIPT missing.py: no such file" in proc.stderr
    proc = _cli("verify", "--", "--steps", "5", cwd=repo, timeout=60)
    assert proc.returncode == 2 and "verify needs SCRIPT" in proc.stderr
