"""The fast path of discovery: what a run over files that name nothing does (and does not load),
the byte prefilter on large, binary and UTF-16 files, the ``os.scandir`` walk against
``os.walk``, and the per-directory ``.gitignore`` decisions against git itself."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from bf16_migrate.ignore import GitIgnore
from bf16_migrate.prefilter import mentions_legacy as _mentions_legacy
from bf16_migrate.project import Outcome
from bf16_migrate.run import _Nothing
from bf16_migrate.scan import SKIP_DIRS, SKIP_HIDDEN, scan, walk

CODEMOD_MODULES = (
    "libcst",
    "bf16_migrate.project",
    "bf16_migrate.python",
    "bf16_migrate.carriers.model",
    "bf16_migrate.rules",
    "tree_sitter",
    "ruamel",
    "pathspec",
)
"""What a run over files that name no legacy variable never imports."""


def test_a_clean_run_loads_no_codemod(tmp_path):
    """A file that names no legacy variable: no libcst, no rules read but the modes (nor the
    codemod's rule tables defined), no carriers parsed (nor their analysis' model imported)."""
    (tmp_path / "clean.py").write_text("import os\n")
    code = (
        "import sys\n"
        "from bf16_migrate.cli import main\n"
        f"MODULES = {CODEMOD_MODULES!r}\n"
        "try:\n"
        "    main(['--check', 'clean.py'])\n"
        "except SystemExit as exc:\n"
        "    loaded = [m for m in MODULES if m in sys.modules]\n"
        "    from bf16_migrate import rule_files\n"
        "    read = rule_files._diagnostics_in.cache_info().misses + rule_files._variables_in.cache_info().misses\n"
        "    print('exit', exc.code, 'loaded', loaded, 'rules read', read)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert result.stdout.strip() == "exit 0 loaded [] rules read 0", result.stdout + result.stderr
    assert "0 file(s) would change" in result.stderr


def test_a_legacy_file_still_takes_the_full_path(tmp_path):
    (tmp_path / "clean.py").write_text("import os\n")
    (tmp_path / "run.sh").write_text("export XLA_USE_BF16=1\n")
    from click.testing import CliRunner

    from bf16_migrate.cli import main

    result = CliRunner().invoke(main, [str(tmp_path), "--check"])
    assert result.exit_code == 1 and "BFM110" in result.output


def test_the_clean_outcome_has_every_field_of_the_full_one(tmp_path):
    """The fast path's outcome (``run._Nothing``) stands in for ``project.Outcome``: the summary
    and the output read the same fields from either (``nothing_to_change`` missing from it made a
    clean run's summary raise AttributeError)."""
    assert {f.name for f in fields(Outcome)} <= {f.name for f in fields(_Nothing)}
    (tmp_path / "clean.py").write_text("import os\n")
    from click.testing import CliRunner

    from bf16_migrate.cli import main

    result = CliRunner().invoke(main, [str(tmp_path), "--check"])
    assert result.exit_code == 0 and "(0 file(s) name a legacy variable)" in result.output, result.output


@pytest.mark.parametrize("offset", [0, 8190, 65530, 65536, (1 << 20) - 5, (1 << 20) + 3, 3 << 20])
def test_prefilter_finds_a_name_anywhere(tmp_path, offset):
    path = tmp_path / "big.txt"
    path.write_bytes(b"a" * offset + b"XLA_DOWNCAST_BF16=1\n" + b"b" * 1000)
    assert _mentions_legacy(path) and _mentions_legacy(str(path))
    path.write_bytes(b"a" * offset + b"XLA_DOWNCAST_BF32=1 XLA_ XLA_USE\n")
    assert not _mentions_legacy(path)


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-16"])
def test_prefilter_reads_utf16(tmp_path, codec):
    path = tmp_path / "wide.txt"
    path.write_bytes(("x" * 5000 + " XLA_USE_FP16=1\n").encode(codec))
    assert _mentions_legacy(path)
    path.write_bytes(("x" * 5000 + " XLA_USE_FP32=1\n").encode(codec))
    assert not _mentions_legacy(path)


def test_prefilter_binary_limit(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(b"\0" * 100 + b"XLA_USE_BF16")
    assert _mentions_legacy(path)
    path.write_bytes(b"\0" * (17 << 20) + b"XLA_USE_BF16")  # beyond the first 16 MiB of a binary file
    assert not _mentions_legacy(path)


def _reference_walk(root: Path, exclude=()):
    """The walk as it was written over os.walk (the order and the skips to keep)."""
    import fnmatch

    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_HIDDEN and d not in SKIP_DIRS and not d.endswith(".egg-info")
        )
        base = Path(dirpath).relative_to(root)
        dirnames[:] = [
            d
            for d in dirnames
            if not any(fnmatch.fnmatch(d, p) or fnmatch.fnmatch((base / d).as_posix(), p) for p in exclude)
        ]
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(name, p) for p in exclude):
                continue
            if os.path.isfile(path):
                yield path


def test_walk_matches_os_walk(tmp_path):
    layout = [
        "a.py",
        "b/c.sh",
        "b/d/e.yaml",
        "b/.hidden/x.py",
        ".github/workflows/ci.yml",
        ".ci/run.sh",
        ".git/config",
        ".tox/py311/lib.py",
        "node_modules/m.js",
        "venv/lib.py",
        "pkg.egg-info/PKG-INFO",
        "z/Dockerfile",
        "z/__pycache__/q.pyc",
        "B/upper.py",
        "b/d/f/g/h.env",
        "docs/skip/me.md",
        "docs/keep.md",
        ".env",
    ]
    for rel in layout:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    os.symlink(tmp_path / "b", tmp_path / "link_to_dir")  # not followed, as os.walk does not
    os.symlink(tmp_path / "a.py", tmp_path / "link.py")  # a symlink to a file is a file
    for exclude in [(), ("docs/skip",), ("*.yaml", "z")]:
        assert [p for p, _ in walk(tmp_path, exclude)] == list(_reference_walk(tmp_path, exclude))


def test_scan_reports_special_files(tmp_path):
    os.mkfifo(tmp_path / "pipe.sh")
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    (tmp_path / "ok.sh").write_text("export XLA_USE_BF16=1\n")
    found = {c.path.name: c.problem for c in scan([tmp_path])}
    assert found["ok.sh"] is None
    assert "not a regular file" in (found["pipe.sh"] or "")
    assert "dangling symlink" in (found["dangling.py"] or "")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_gitignore_agrees_with_git(tmp_path):
    repo = tmp_path / "repo"
    files = [
        "keep.py",
        "build.log",
        "logs/a.txt",
        "logs/keep.txt",
        "src/gen/x.py",
        "src/gen/y.py",
        "src/main.py",
        "src/deep/er/z.tmp",
        "src/deep/er/keep.tmp",
        "data/raw/d.csv",
        "data/raw/sub/e.csv",
        "notes/n.md",
        "top.tmp",
    ]
    for rel in files:
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    (repo / ".gitignore").write_text("*.log\nlogs/*\n!logs/keep.txt\n*.tmp\ndata/\n/notes\n")
    (repo / "src" / ".gitignore").write_text("gen/\n!gen/y.py\n")
    (repo / "src" / "deep" / ".gitignore").write_text("!keep.tmp\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("top.tmp\n")
    result = subprocess.run(["git", "check-ignore", "--no-index", *files], cwd=repo, capture_output=True, text=True)
    by_git = set(result.stdout.split())
    ignore = GitIgnore(repo)
    ours = {
        rel
        for rel in files
        if ignore(repo / rel)
        or any(ignore(repo / Path(rel).parents[i], True) for i in range(len(Path(rel).parents) - 1))
    }
    assert ours == by_git
    # and as the walk asks (directories first, str paths)
    walked = {p.relative_to(repo).as_posix() for p, _ in walk(repo, ignore=ignore)}
    assert walked == {rel for rel in files if rel not in by_git} | {
        ".gitignore",
        "src/.gitignore",
        "src/deep/.gitignore",
    }
