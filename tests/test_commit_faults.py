"""The commit under faults: a full disk at every write (a hard-linked file included), a file edited
between the read and the commit, and paths that lead out of the tree through a symlink.

The invariant after anything: every file holds exactly its old or its new bytes (both names of a
hard-linked file the same ones), what the report says was written was written and nothing else
was, no temporary is left, and no launcher is migrated without its script.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate import commit as commit_module
from bf16_migrate import project
from bf16_migrate.commit import WriteRefused, plan_write
from bf16_migrate.project import migrate_paths

from test_commit import SCRIPT, launchers_before_scripts, snapshot

ROOT = Path(__file__).resolve().parent.parent


def make_tree(root: Path) -> tuple[dict[Path, Path], Path]:
    """Two jobs, each a launcher exporting the switch and the script it starts; the first script
    has a second name (a hard link outside the tree, as a shared checkout would have). Returns
    (launcher -> script, the other name)."""
    pairs = {}
    for i in range(2):
        job = root / f"job{i}"
        job.mkdir()
        (job / "train.py").write_text(SCRIPT)
        (job / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py\n")
        pairs[job / "run.sh"] = job / "train.py"
    other = root.parent / f"{root.name}-other-name.py"
    os.link(root / "job0" / "train.py", other)
    return pairs, other


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The tree before and after a clean run, and the calls a clean commit makes."""
    root = tmp_path_factory.mktemp("reference") / "tree"
    root.mkdir()
    _, other = make_tree(root)
    old = snapshot(root)
    outcome = migrate_paths([root], "stochastic", write=True)
    assert not outcome.errors and len(outcome.changed) == 4, outcome.errors
    assert other.read_bytes() == (root / "job0" / "train.py").read_bytes()
    return old, snapshot(root)


WRITES = ("pwrite", "fsync", "ftruncate", "replace", "link", "chmod")


class Faults:
    """Wraps every call the commit makes to write (``os.pwrite``, ``fsync``, ``ftruncate``,
    ``replace``, ``link``, ``chmod``, and the space reservation ``_fallocate``); ``fail_at`` the
    index of the call to fail with ENOSPC (a ``pwrite`` writes half its bytes first: a short
    write, then the full disk, as write(2) does), or None to count."""

    def __init__(self, monkeypatch, fail_at: int | None) -> None:
        self.calls: list[str] = []
        self.fail_at = fail_at
        for name in WRITES:
            monkeypatch.setattr(os, name, self.wrap(name, getattr(os, name)))
        monkeypatch.setattr(commit_module, "_fallocate", self.wrap("fallocate", commit_module._fallocate))

    def wrap(self, name, real):
        def call(*args, **kwargs):
            if name == "fsync" and stat.S_ISDIR(os.fstat(args[0]).st_mode):
                name_here = "fsync-dir"  # a directory's fsync: its failure is ignored (best effort)
            else:
                name_here = name
            self.calls.append(name_here)
            if len(self.calls) - 1 == self.fail_at:
                if name == "pwrite" and len(args[1]) > 1:
                    real(args[0], bytes(args[1])[: len(args[1]) // 2], args[2])
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(*args, **kwargs)

        return call


def test_the_commit_reserves_space_for_the_hard_linked_file_before_writing_anything(tmp_path, reference, monkeypatch):
    root = tmp_path / "tree"
    root.mkdir()
    make_tree(root)
    faults = Faults(monkeypatch, None)
    migrate_paths([root], "stochastic", write=True)
    assert snapshot(root) == reference[1]
    # the in-place file's space is reserved while staging, before the first rename
    assert faults.calls.index("fallocate") < faults.calls.index("replace")


def test_a_full_disk_at_any_write_of_the_commit_loses_nothing_and_the_report_is_true(tmp_path, reference, monkeypatch):
    count_root = tmp_path / "count"
    count_root.mkdir()
    make_tree(count_root)
    with monkeypatch.context() as m:
        counted = Faults(m, None)
        migrate_paths([count_root], "stochastic", write=True)
    total = len(counted.calls)
    assert total >= 12, counted.calls
    old, new = reference
    for position in range(total):
        root = tmp_path / f"at{position}"
        root.mkdir()
        pairs, other = make_tree(root)
        with monkeypatch.context() as m:
            faults = Faults(m, position)
            outcome = migrate_paths([root], "stochastic", write=True)
        where = f"ENOSPC at call {position} ({faults.calls[-1]})"
        now = snapshot(root)
        assert set(now) == set(old), f"{where}: files appeared or vanished (a temporary left behind?)"
        for name, data in now.items():
            path = root / name
            assert data in (old[name], new[name]), f"{where}: {name} is neither its old nor its new content"
            assert (data == new[name]) == (path in outcome.changed), f"{where}: the report is wrong about {name}"
        assert other.read_bytes() == (root / "job0" / "train.py").read_bytes(), where
        if faults.calls[position] == "fsync-dir":
            assert not outcome.errors and now == new, where
        else:
            assert len(outcome.errors) == 1 and "No space left on device" in outcome.errors[0], where
        launchers_before_scripts(pairs)
        for d in outcome.diagnostics:
            if d.code == "BFM001":
                assert d.fixed == (Path(d.path) in outcome.changed), (where, d)


def test_an_overwrite_in_place_that_fails_puts_the_old_bytes_back(tmp_path, monkeypatch):
    (tmp_path / "train.py").write_text(
        SCRIPT.replace("import torch\n", "import os\nimport torch\n").replace(
            "    device = xm.xla_device()\n", '    os.environ["XLA_USE_BF16"] = "1"\n    device = xm.xla_device()\n'
        )
    )
    other = tmp_path.parent / f"{tmp_path.name}-other.py"
    os.link(tmp_path / "train.py", other)
    before = other.read_bytes()
    writes = []
    real = os.pwrite

    def failing(fd, data, offset):
        writes.append(len(data))
        if len(writes) == 1:  # the overwrite: half of it, then an I/O error
            real(fd, bytes(data)[: len(data) // 2], offset)
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", failing)
    outcome = migrate_paths([tmp_path / "train.py"], "stochastic", write=True)
    assert other.read_bytes() == before and (tmp_path / "train.py").read_bytes() == before
    assert outcome.changed == []
    assert outcome.errors == [
        f"{tmp_path / 'train.py'}: cannot write: Input/output error (its old content was put back)"
    ]


# -- a real full disk: a 256 KiB tmpfs in a user and mount namespace -----------------------------------------------
TMPFS_RUN = r"""
import json, os, shutil, subprocess, sys
from pathlib import Path
mnt, source, free_pages = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
(mnt / "train.py").write_bytes(source.read_bytes())
os.link(mnt / "train.py", mnt / "other_name.py")
avail = shutil.disk_usage(mnt).free
with open(mnt / "fill", "wb") as f:
    f.write(b"\0" * (avail - free_pages * 4096))
    f.flush()
    os.fsync(f.fileno())
result = subprocess.run([sys.executable, "-m", "bf16_migrate.cli", "train.py"], cwd=mnt, capture_output=True, text=True)
print(json.dumps({
    "rc": result.returncode, "stderr": result.stderr,
    "train": (mnt / "train.py").read_text(), "other": (mnt / "other_name.py").read_text(),
    "names": sorted(os.listdir(mnt)),
}))
"""


def _tmpfs_run(tmp_path: Path, source: Path, free_pages: int) -> dict:
    mnt = tmp_path / f"mnt{free_pages}"
    mnt.mkdir()
    shell = 'mount -t tmpfs -o size=256k none "$1" && shift && exec "$@"'
    command = ["unshare", "-rm", "sh", "-c", shell, "sh", str(mnt), sys.executable, "-c", TMPFS_RUN]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*command, str(mnt), str(source), str(free_pages)], capture_output=True, text=True, env=env)
    if done.returncode != 0 and "mount" in done.stderr + done.stdout and not done.stdout.strip():
        pytest.skip(f"cannot mount a tmpfs in a user namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_hard_linked_script_on_a_full_tmpfs_is_left_whole_or_migrated_whole(tmp_path):
    """The case that lost data: a 4,090-byte script with a second name whose migration is 4,177
    bytes, on a 256 KiB tmpfs with 0-3 pages free."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here")
    text = (ROOT / "fixtures" / "mlp_regression" / "train.py").read_text()
    text += "#" + "x" * (4090 - len(text.encode()) - 2) + "\n"
    source = tmp_path / "train.py"
    source.write_text(text)
    assert source.stat().st_size == 4090
    for free in range(4):
        result = _tmpfs_run(tmp_path, source, free)
        assert result["train"] == result["other"], free  # one inode, two names
        assert not [n for n in result["names"] if n.endswith(".bf16-migrate")], result["names"]
        if free == 0:
            assert result["train"] == text
            assert result["rc"] == 2
            assert "error: train.py: cannot write: No space left on device" in result["stderr"]
            assert "0 file(s) changed" in result["stderr"]
        else:  # one page more than the file holds is enough: no temporary copy is needed
            assert "model.to(torch.bfloat16)" in result["train"] and len(result["train"].encode()) > 4096
            assert result["rc"] == 1 and "1 file(s) changed" in result["stderr"], result["stderr"]


# -- lost updates: a file edited after it was read ------------------------------------------------------------------
def edit_after_planning(monkeypatch, edit):
    """Run ``edit`` once the run has read and planned every file, before it writes."""
    real = project.migrate_imported_modules

    def planned(*args, **kwargs):
        result = real(*args, **kwargs)
        edit()
        return result

    monkeypatch.setattr(project, "migrate_imported_modules", planned)


@pytest.mark.parametrize("how", ["append", "editor-rename"])
@pytest.mark.parametrize("which", ["run.sh", "train.py"])
def test_a_file_edited_after_it_was_read_is_never_overwritten(tmp_path, reference, monkeypatch, how, which):
    root = tmp_path / "tree"
    root.mkdir()
    make_tree(root)
    target = root / "job1" / which
    edited = target.read_text() + "# the user's edit\n"

    def edit():
        if how == "append":
            with open(target, "a") as f:
                f.write("# the user's edit\n")
        else:  # an editor writes a new file and renames it over the old one
            (root / "job1" / f".{which}.swp").write_text(edited)
            os.replace(root / "job1" / f".{which}.swp", target)

    edit_after_planning(monkeypatch, edit)
    outcome = migrate_paths([root], "stochastic", write=True)
    assert target.read_text() == edited
    assert outcome.errors == [
        f"{target}: not written: it changed after bf16-migrate read it (edited meanwhile?), so its edit is kept; run "
        "again on what it holds now"
    ]
    assert outcome.changed == []  # one change: nothing is committed without it
    expected = dict(reference[0])
    expected[f"job1/{which}"] = edited.encode()
    assert snapshot(root) == expected


def test_a_file_edited_while_the_commit_runs_stops_it_there(tmp_path, reference, monkeypatch):
    root = tmp_path / "tree"
    root.mkdir()
    pairs, _ = make_tree(root)
    launcher = root / "job1" / "run.sh"
    real = os.replace
    renamed = []

    def replace_then_edit(src, dst):
        real(src, dst)
        renamed.append(dst)
        if len(renamed) == 1:  # once the first rename is done, a launcher still to come is edited
            with open(launcher, "a") as f:
                f.write("# edited\n")

    monkeypatch.setattr(os, "replace", replace_then_edit)
    outcome = migrate_paths([root], "stochastic", write=True)
    assert launcher.read_bytes() == reference[0]["job1/run.sh"] + b"# edited\n"
    assert outcome.errors == [
        f"{launcher}: not written: it changed while bf16-migrate was writing (edited meanwhile?); run again"
    ]
    assert [p.relative_to(root).as_posix() for p in outcome.changed] == [
        "job0/train.py",
        "job1/train.py",
        "job0/run.sh",
    ]
    assert outcome.held_back == []
    launchers_before_scripts(pairs)


# -- paths that lead out of the tree ------------------------------------------------------------------------------
UTIL = 'import os\n\n\ndef eps():\n    return 1e-3 if os.environ.get("XLA_USE_BF16") == "1" else 1e-8\n'


def escape_tree(tmp_path: Path) -> tuple[Path, Path]:
    """``repo/pkg`` is a symlink to ``../outside/pkg``; ``repo/train.py`` sets the switch and
    imports ``pkg.util``, which reads it."""
    (tmp_path / "outside" / "pkg").mkdir(parents=True)
    (tmp_path / "outside" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "outside" / "pkg" / "util.py").write_text(UTIL)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / "pkg").symlink_to(Path("..") / "outside" / "pkg")
    script = SCRIPT.replace("import torch\n", "import os\n\nimport torch\n\nimport pkg.util\n", 1)
    script = script.replace("def main():\n", 'def main():\n    os.environ["XLA_USE_BF16"] = "1"\n')
    (repo / "train.py").write_text(script)
    return repo, tmp_path / "outside" / "pkg" / "util.py"


def test_a_module_behind_a_symlink_out_of_the_tree_is_neither_read_nor_written(tmp_path, monkeypatch):
    repo, util = escape_tree(tmp_path)
    monkeypatch.chdir(tmp_path)  # the current directory holds both: it does not widen the tree
    reads = []
    real = project.TreeReader.read_python

    def read_python(p):
        reads.append(p)
        return real(p)

    monkeypatch.setattr(project.TreeReader, "read_python", staticmethod(read_python))
    outcome = migrate_paths([Path("repo")], "stochastic", write=True)
    assert util.read_text() == UTIL
    assert not [p for p in reads if "util" in str(p)]
    assert [p.as_posix() for p in outcome.changed] == ["repo/train.py"]
    [left] = [d for d in outcome.diagnostics if d.code == "BFM093"]
    assert left.path == "repo/pkg/util.py" and not left.fixed
    assert left.message == (
        f"repo/pkg/util.py is imported by repo/train.py, which ran under XLA_USE_BF16=1, but it is {util}, outside "
        f"the paths given (through a symlink): not read, not migrated; migrate it there (name {util} on the command "
        "line) or by hand"
    )


def test_a_launch_through_a_symlink_out_of_the_tree_keeps_its_setting(tmp_path, monkeypatch):
    repo, _ = escape_tree(tmp_path)
    outside_script = tmp_path / "outside" / "pkg" / "train.py"
    outside_script.write_text(SCRIPT)
    (repo / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython pkg/train.py\n")
    monkeypatch.chdir(tmp_path)
    outcome = migrate_paths([Path("repo")], "stochastic", write=True)
    assert outside_script.read_text() == SCRIPT
    assert (repo / "run.sh").read_text().startswith("#!/bin/bash\nexport XLA_USE_BF16=1\n")
    [kept] = [d for d in outcome.diagnostics if d.path == "repo/run.sh"]
    assert kept.code == "BFM111" and not kept.fixed
    assert f"repo/pkg/train.py is {outside_script}, outside the paths given (through a symlink)" in kept.message


def test_a_write_through_a_symlinked_directory_out_of_the_paths_is_refused(tmp_path):
    repo, util = escape_tree(tmp_path)
    with pytest.raises(WriteRefused) as refused:
        plan_write(repo / "pkg" / "util.py", "x = 1\n", "utf-8", [repo], 0)
    assert str(refused.value) == (
        f"{repo / 'pkg' / 'util.py'}: not written: it is through a symlinked directory, the file {util}, outside the "
        f"paths given; migrate {util} itself (name it on the command line)"
    )
    # named on the command line, the file is written where it really is
    assert plan_write(repo / "pkg" / "util.py", "x = 1\n", "utf-8", [repo / "pkg" / "util.py"], 0).target == util
