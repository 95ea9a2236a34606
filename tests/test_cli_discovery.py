""".gitignore respected (pathspec) unless --no-respect-gitignore; --force-exclude applies the
excludes and .gitignore to files named on the command line (pre-commit passes files)."""

from __future__ import annotations

import json
import subprocess

from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.ignore import GitIgnore, excluded

from conftest import FIXTURES

SCRIPT = (FIXTURES / "mlp_regression" / "train.py").read_text()


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def found(result) -> list[str]:
    return sorted({d["path"] for d in json.loads(result.stdout)["diagnostics"]})


def tree_with_gitignore(tmp_path):
    root = tmp_path / "repo"
    for rel in ("train.py", "build_out/train.py", "logs/old.py", "keep/notes.py", "sub/gen.py", "sub/own.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(SCRIPT)
    (root / ".gitignore").write_text("build_out/\n*.py\n!train.py\n!sub/*.py\n")
    (root / "sub" / ".gitignore").write_text("gen.py\n")
    return root


def test_gitignore_is_respected_by_default(tmp_path):
    root = tree_with_gitignore(tmp_path)
    result = invoke(root, "--check", "--json", "--select", "BFM001")
    assert found(result) == [str(root / "sub" / "own.py"), str(root / "train.py")]


def test_no_respect_gitignore(tmp_path):
    root = tree_with_gitignore(tmp_path)
    result = invoke(root, "--check", "--json", "--select", "BFM001", "--no-respect-gitignore")
    assert len(found(result)) == 6


def test_gitignore_in_a_git_repository_from_a_subdirectory(tmp_path):
    """The .gitignore files from the repository's root down count, even when a subdirectory is
    given; .git/info/exclude too."""
    root = tree_with_gitignore(tmp_path)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("sub/\n")
    result = invoke(root / "sub", "--check", "--json", "--select", "BFM001")
    assert found(result) == []
    ignored = GitIgnore(root / "sub")
    assert ignored(root / "sub" / "own.py") and ignored(root / "logs" / "old.py") and not ignored(root / "train.py")
    assert ignored(root / "build_out", True) and ignored(root / "build_out" / "x.txt")


def test_gitignore_from_the_config_root_outside_git(tmp_path):
    root = tree_with_gitignore(tmp_path)
    (root / "pyproject.toml").write_text("[tool.bf16-migrate]\nrespect-gitignore = false\n")
    assert len(found(invoke(root, "--check", "--json", "--select", "BFM001"))) == 6
    # the command line wins
    assert len(found(invoke(root, "--check", "--json", "--select", "BFM001", "--respect-gitignore"))) == 2


def test_files_named_on_the_command_line_are_taken_without_force_exclude(tmp_path):
    root = tree_with_gitignore(tmp_path)
    named = root / "logs" / "old.py"
    assert found(invoke(named, "--check", "--json", "--exclude", "logs")) == [str(named)]


def test_force_exclude_applies_exclude_and_gitignore_to_named_files(tmp_path, monkeypatch):
    root = tree_with_gitignore(tmp_path)
    monkeypatch.chdir(root)
    # exclude (relative to the project root) and gitignore both apply
    result = invoke("train.py", "logs/old.py", "sub/own.py", "--check", "--json", "--force-exclude", "--exclude", "sub")
    assert found(result) == ["train.py"]
    # all excluded: nothing to do, exit 0 (pre-commit)
    result = invoke("logs/old.py", "--check", "--force-exclude")
    assert result.exit_code == 0 and "nothing to do" in result.stderr


def test_force_exclude_from_config(tmp_path, monkeypatch):
    root = tree_with_gitignore(tmp_path)
    (root / "pyproject.toml").write_text('[tool.bf16-migrate]\nforce-exclude = true\nextend-exclude = ["train.py"]\n')
    monkeypatch.chdir(root)
    assert invoke("train.py", "--check").exit_code == 0
    assert invoke("train.py", "--check", "--no-force-exclude").exit_code == 1


def test_excluded_unit(tmp_path):
    assert excluded(tmp_path / "a" / "b" / "c.py", tmp_path, ("a",))
    assert excluded(tmp_path / "a" / "b" / "c.py", tmp_path, ("a/b/*",))
    assert excluded(tmp_path / "a" / "b" / "c.py", tmp_path, ("c.py",))
    assert not excluded(tmp_path / "a" / "b" / "c.py", tmp_path, ("b.py", "x"))


def test_exclude_names_a_directory(tmp_path):
    """--exclude DIR skips the directory's whole content during the walk, as ruff's exclude."""
    (tmp_path / "vendor" / "deep").mkdir(parents=True)
    (tmp_path / "vendor" / "deep" / "train.py").write_text(SCRIPT)
    (tmp_path / "train.py").write_text(SCRIPT)
    assert found(invoke(tmp_path, "--check", "--json", "--select", "BFM001", "--exclude", "vendor")) == [
        str(tmp_path / "train.py")
    ]
