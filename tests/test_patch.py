"""``--diff`` is a patch: stdout holds the patch and nothing else, paths relative to the current
directory whatever the form of PATHS, and ``git apply`` takes it, giving the tree a write run
gives (files without a final newline, CRLF, a BOM, a Latin-1 coding cookie, a file the run
creates included)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate.patch import file_patch

from conftest import FIXTURES

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
SWITCH = 'import os\nos.environ["XLA_USE_BF16"] = "1"\n'
BODY = (
    "import torch\nimport torch_xla\n\ndevice = torch_xla.device()\nmodel = torch.nn.Linear(4, 2).to(device)\n"
    "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nx = torch.randn(8, 4).to(device)\n"
    "model(x).sum().backward()\nopt.step()"
)
PATCH_LINE = re.compile(
    r"^(--- (a/|/dev/null)|\+\+\+ b/|@@ -\d+(,\d+)? \+\d+(,\d+)? @@|[ +-]|\\ No newline at end of file$)"
)


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, env={**os.environ, **GIT_ENV}, check=check, timeout=120
    )


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR",)}
    return subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", *args], cwd=cwd, capture_output=True, env=env, timeout=300
    )


def _tree(root: Path) -> Path:
    """A repository holding the project fixture (launchers, a notebook, src/train.py) and
    scripts whose bytes a patch must match exactly."""
    repo = root / "repo"
    shutil.copytree(FIXTURES / "project", repo, ignore=shutil.ignore_patterns("expected"))
    jobs = repo / "jobs"
    jobs.mkdir()
    (jobs / "no_newline.py").write_bytes((SWITCH + BODY).encode())
    (jobs / "crlf.py").write_bytes((SWITCH + BODY + "\n").replace("\n", "\r\n").encode())
    (jobs / "bom.py").write_bytes(b"\xef\xbb\xbf" + (SWITCH + BODY + "\n").encode())
    latin = "# -*- coding: latin-1 -*-\n# donn\xe9es d'entra\xeenement\n" + SWITCH + BODY + "\n"
    (jobs / "latin.py").write_bytes(latin.encode("latin-1"))
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "legacy")
    return repo


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if ".git" not in p.parts and p.is_file()
    }


@pytest.mark.parametrize("form", ["relative", "absolute", "dot"])
def test_git_apply_takes_the_diff_and_gives_the_written_tree(tmp_path, form):
    repo = _tree(tmp_path)
    written = tmp_path / "written"
    shutil.copytree(repo, written, ignore=shutil.ignore_patterns(".git"))
    path = {"relative": "jobs", "absolute": str(repo / "jobs"), "dot": "."}[form]
    options = ["--mode", "gpu-compatible", "--helpers-module", "bf16_helpers"]
    diff = _cli(repo, path, "--diff", *options)
    assert diff.returncode == 1, diff.stderr.decode()
    patch = diff.stdout
    assert patch, diff.stderr.decode()
    # stdout is the patch alone: every line a patch line; the findings and the summary on stderr
    lines = patch.split(b"\n")[:-1]
    assert all(PATCH_LINE.match(line.decode("latin-1")) for line in lines), [
        line for line in lines if not PATCH_LINE.match(line.decode("latin-1"))
    ][:3]
    assert b"BFM001" in diff.stderr and b"would change" in diff.stderr and b"BFM001" not in patch
    assert not re.search(rb"^(---|\+\+\+) [ab]//", patch, re.M)  # never a/ + an absolute path
    assert b"--- /dev/null\n+++ b/jobs/bf16_helpers.py\n" in patch  # the module the change creates
    before = _files(repo)
    (tmp_path / "change.patch").write_bytes(patch)
    applied = _git(repo, "apply", "--whitespace=nowarn", str(tmp_path / "change.patch"), check=False)
    assert applied.returncode == 0, applied.stderr.decode()
    write_path = {"relative": "jobs", "absolute": str(written / "jobs"), "dot": "."}[form]
    assert _cli(written, write_path, *options).returncode in (0, 1)  # the same run, writing
    assert _files(repo) == _files(written)
    assert _files(repo) != before
    again = _cli(repo, path, "--diff", *options)
    assert again.stdout == b"" and b"0 file(s) would change" in again.stderr


def test_the_patch_names_paths_from_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    inside = file_patch(tmp_path / "sub" / "a.py", "x\n", "y\n")
    assert inside.startswith(b"--- a/sub/a.py\n+++ b/sub/a.py\n@@ -1 +1 @@\n-x\n+y\n")
    assert file_patch(Path("sub/a.py"), "x\n", "y\n") == inside
    assert file_patch("sub/./a.py", "x\n", "y\n") == inside


def test_line_ends_and_encodings_are_the_files_bytes():
    no_newline = b"\\ No newline at end of file\n"
    assert file_patch("a.py", "x\ny", "x\nz") == (
        b"--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n x\n-y\n" + no_newline + b"+z\n" + no_newline
    )
    # a form feed is no line end for a patch tool (str.splitlines would split there)
    assert file_patch("a.py", "a\x0cb\nc\n", "a\x0cb\nd\n").count(b"\n@@") == 1
    assert b" a\x0cb\n-c\n+d\n" in file_patch("a.py", "a\x0cb\nc\n", "a\x0cb\nd\n")
    assert file_patch("a.py", "x\r\n", "y\r\n").endswith(b"-x\r\n+y\r\n")
    assert file_patch("a.py", "x\n", "y\n", "utf-8-sig").endswith(b"-\xef\xbb\xbfx\n+\xef\xbb\xbfy\n")
    assert file_patch("a.py", "\xe9\n", "\xe8\n", "latin-1").endswith(b"-\xe9\n+\xe8\n")
    # a removed line that starts with "--" is a hunk line, not a header
    assert file_patch("a.yaml", "---\nx: 1\n", "x: 1\n").endswith(b"@@ -1,2 +1 @@\n----\n x: 1\n")
    assert file_patch("new.py", "", "x\n", created=True).startswith(b"--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@")
    assert file_patch("a.py", "same\n", "same\n") == b""


def test_a_long_file_of_repeated_code_gets_a_patch_git_applies(tmp_path, monkeypatch):
    """From ``patch.ANCHORED_FROM`` lines the hunks come from an anchored matcher (difflib's
    costs the lines times the copies of each line: 25 s for 20k lines of pasted scripts): on
    a file of 30 pasted training scripts with a line changed in each, and on random edits of a
    long text, the patch ``git apply`` takes gives the new text byte for byte."""
    import random

    from bf16_migrate import patch

    script = (FIXTURES / "tiny_transformer" / "train.py").read_text()
    old = "".join(script.replace("def main(", f"def main_{k}(") for k in range(40))
    assert len(patch._lines(old)) >= patch.ANCHORED_FROM // 2
    new = old.replace('os.environ.setdefault("XLA_USE_BF16", "1")\n', "")
    rng = random.Random(0)
    lines = patch._lines(old)
    for _ in range(200):  # random edits: lines removed, added, changed
        k = rng.randrange(len(lines))
        lines[k : k + rng.randrange(3)] = [f"edited_{rng.randrange(10)} = {k}\n"] * rng.randrange(3)
    for target in (new, "".join(lines)):
        repo = tmp_path / f"repo_{len(target)}"
        repo.mkdir()
        (repo / "train.py").write_text(old)
        _git(repo, "init", "-q")
        monkeypatch.chdir(repo)
        diff = file_patch("train.py", old, target)
        assert len(patch._lines(old)) + len(patch._lines(target)) >= patch.ANCHORED_FROM
        assert all(PATCH_LINE.match(line) for line in diff.decode().splitlines()), "not a unified diff"
        (repo / "change.patch").write_bytes(diff)
        _git(repo, "apply", "change.patch")
        assert (repo / "train.py").read_text() == target
