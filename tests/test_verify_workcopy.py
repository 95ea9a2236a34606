"""Each verify run starts from its own working copy of the script's directory (bf16_migrate.verify.workcopy):
what a run writes lands in its copy, never in the user's tree nor in another run's copy. Before, the runs ran
in the user's directory (the legacy run the original file in place, the others from directories of symlinks
to its entries): a run's checkpoint overwrote the user's, and the FP32 reference resumed from the checkpoint
the legacy run had just written (bench/unseen/hunt9 FINDINGS.md, G14)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate import verify as verify_module
from bf16_migrate.rules import mode_named
from bf16_migrate.verify import _run, _stage
from bf16_migrate.verify.package import package_run, stage_package
from bf16_migrate.verify.runner import stage_script
from bf16_migrate.verify.workcopy import Budget, Linked, linked_note, working_copy

from conftest import FIXTURES

RESUME = FIXTURES / "contract" / "resume_ckpt"
SMALL = Budget(file_bytes=100, total_bytes=1000, dir_entries=20, entries=100)


def _tree(tmp_path: Path) -> Path:
    """A script's directory: the script, a small file, a subdirectory with a checkpoint, a big file,
    a .git directory and a __pycache__."""
    home = tmp_path / "home"
    (home / "ckpt").mkdir(parents=True)
    (home / "train.py").write_text("print('legacy')\n")
    (home / "config.yaml").write_text("lr: 0.1\n")
    (home / "ckpt" / "last.pt").write_bytes(b"users checkpoint")
    (home / "data.bin").write_bytes(b"x" * 500)
    (home / ".git").mkdir()
    (home / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (home / "__pycache__").mkdir()
    (home / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"pyc")
    return home


def _snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` -> its bytes (None for a directory)."""
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        out[str(path.relative_to(root))] = None if path.is_dir() else path.read_bytes()
    return out


def test_small_files_are_copies_new_files_land_in_the_copy_big_ones_are_linked_and_listed(tmp_path):
    home = _tree(tmp_path)
    before = _snapshot(home)
    copy = tmp_path / "copy"
    made = working_copy(home, copy, budget=SMALL)
    for name in ("train.py", "config.yaml", "ckpt/last.pt"):
        assert (copy / name).is_file() and not (copy / name).is_symlink(), name
    assert (copy / "ckpt").is_dir() and not (copy / "ckpt").is_symlink()
    assert made.copied == 3
    # a run writes its copy: the small files, a new file in a copied directory, a new directory
    (copy / "ckpt" / "last.pt").write_bytes(b"a run's checkpoint")
    (copy / "config.yaml").write_text("lr: 9\n")
    (copy / "ckpt" / "step2.pt").write_bytes(b"new")
    (copy / "out").mkdir()
    (copy / "out" / "pred.npy").write_bytes(b"new")
    assert _snapshot(home) == before  # nothing written outside the copy
    # the big file and the .git directory are links, listed as such; __pycache__ is left out
    assert (copy / "data.bin").is_symlink() and (copy / ".git").is_symlink()
    assert not (copy / "__pycache__").exists()
    assert [(item.path.name, item.size) for item in made.linked] == [(".git", None), ("data.bin", 500)]
    note = linked_note(made.linked)
    assert note is not None
    assert "1 file (500 bytes) and 1 directory" in note and str(home / "data.bin") in note


def test_the_budget_in_total_and_in_entries_links_what_is_left(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    for i in range(5):
        (home / f"f{i}.txt").write_bytes(b"y" * 80)
    many = home / "images"
    many.mkdir()
    for i in range(25):
        (many / f"{i}.png").write_bytes(b"p")
    made = working_copy(home, tmp_path / "copy", budget=Budget(file_bytes=100, total_bytes=250, dir_entries=20))
    assert made.copied == 3 and made.copied_bytes == 240
    assert sorted(item.path.name for item in made.linked) == ["f3.txt", "f4.txt", "images"]
    assert (tmp_path / "copy" / "images").is_symlink()
    few = working_copy(home, tmp_path / "few", budget=Budget(entries=2))
    assert few.copied == 2 and {item.path.name for item in few.linked} == {"f2.txt", "f3.txt", "f4.txt", "images"}


def test_a_symlink_of_the_users_is_followed_and_a_loop_is_linked(tmp_path):
    home = tmp_path / "home"
    (home / "sub").mkdir(parents=True)
    elsewhere = tmp_path / "shared"
    elsewhere.mkdir()
    (elsewhere / "vocab.txt").write_text("a b c\n")
    os.symlink(elsewhere, home / "shared")
    os.symlink(home, home / "sub" / "up")  # leads back
    os.symlink(tmp_path / "gone", home / "dangling")
    made = working_copy(home, tmp_path / "copy", budget=SMALL)
    copied = tmp_path / "copy" / "shared" / "vocab.txt"
    assert copied.read_text() == "a b c\n" and not copied.is_symlink()
    assert (tmp_path / "copy" / "sub" / "up").is_symlink()
    assert not os.path.lexists(tmp_path / "copy" / "dangling")
    assert [item.why for item in made.linked] == ["it leads back into a directory of the copy"]


def test_the_workspace_inside_the_directory_is_not_copied_into_itself(tmp_path):
    """A script in the temporary directory, or TMPDIR inside the script's directory (a test of faults,
    test_faults_round2): verify's own temporary directories and the copy itself are left out."""
    home = _tree(tmp_path)
    workspace = home / "tmp" / "bf16-migrate-verify-1-abc"
    (workspace / "legacy").mkdir(parents=True)
    (workspace / "legacy" / "train.py").write_text("x\n")
    made = working_copy(home, workspace / "migrated", budget=SMALL)
    assert (workspace / "migrated" / "tmp").is_dir()
    assert list((workspace / "migrated" / "tmp").iterdir()) == [] and made.copied == 3
    inside = home / "copy"
    working_copy(home, inside, budget=SMALL)
    assert not (inside / "copy").exists()


def test_a_budget_below_zero_is_refused():
    with pytest.raises(ValueError, match="file_bytes"):
        Budget(file_bytes=-1)


def test_the_note_merges_the_runs_copies_and_names_the_first_paths():
    links = [Linked(Path(f"/home/u/d{i}.bin"), 3 << 20, "larger") for i in range(7)]
    note = linked_note(links + links[:2])
    assert note is not None and "7 files (21.0 MB)" in note and "and 2 more" in note
    assert linked_note([]) is None


def test_a_staged_script_is_a_working_copy_and_the_legacy_file_is_copied_as_it_is(tmp_path):
    home = _tree(tmp_path)
    script = home / "train.py"
    script.write_bytes(b"# -*- coding: latin-1 -*-\nprint('\xe9')\r\n")
    before = _snapshot(home)
    linked: list[Linked] = []
    staged = stage_script(None, script, tmp_path / "legacy", linked=linked)
    assert staged.read_bytes() == script.read_bytes() and not staged.is_symlink()
    migrated = stage_script("print('migrated')\n", script, tmp_path / "migrated", {home / "helpers.py": "x = 1\n"})
    assert migrated.read_text() == "print('migrated')\n"
    assert (tmp_path / "migrated" / "helpers.py").read_text() == "x = 1\n"
    (tmp_path / "migrated" / "ckpt" / "last.pt").write_bytes(b"run")
    assert _snapshot(home) == before
    assert [item.path.name for item in linked] == [".git"]


def test_every_run_is_staged_in_its_own_directory_and_runs_from_it(tmp_path):
    """The working directory of each run is its copy (it was the user's directory)."""
    home = _tree(tmp_path)
    script = home / "train.py"
    run = _stage(None, script, tmp_path / "ws" / "legacy")
    assert run.cwd == tmp_path / "ws" / "legacy" and run.script == run.cwd / "train.py" and run.home == home
    assert run.module is None


def test_a_package_copy_writes_nothing_into_the_tree(tmp_path):
    top = tmp_path / "repo"
    pkg = top / "proj"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text("from proj import model\n")
    (pkg / "model.py").write_text("A = 1\n")
    (top / "runs").mkdir()
    (top / "runs" / "best.pt").write_bytes(b"users")
    script = pkg / "train.py"
    package = package_run(script, script.read_text())
    assert package is not None
    before = _snapshot(top)
    staged = stage_package(None, script, package, tmp_path / "ws")
    assert staged.read_text() == "from proj import model\n" and not staged.is_symlink()
    (tmp_path / "ws" / "runs" / "best.pt").write_bytes(b"run")
    (tmp_path / "ws" / "proj" / "model.py").write_text("A = 2\n")
    assert _snapshot(top) == before


def test_the_runs_of_a_verify_have_their_own_working_directories(tmp_path, monkeypatch):
    """The legacy, migrated and reference runs each start in their own copy (none in the user's
    directory), and the legacy one runs a copy of the script, not the script in place."""
    home = _tree(tmp_path)
    script = home / "train.py"
    seen = {}

    def fake_run_specs(specs, **kwargs):
        for spec in specs:
            seen[spec.name] = spec
        return {}

    monkeypatch.setattr(verify_module, "run_specs", fake_run_specs)
    legacy = verify_module._Legacy(None, None, None, {})
    texts = verify_module._Texts("print('migrated')\n", "print('reference')\n", [])
    common = dict(base_env={}, args=[], steps=2, timeout=60.0, graphs=False)
    linked: list[Linked] = []
    _run(
        script,
        mode_named("stochastic"),
        legacy,
        texts,
        {},
        common,
        python="python",
        jobs=1,
        progress=None,
        linked=linked,
    )
    assert set(seen) == {"legacy", "migrated", "reference"}
    cwds = {spec.cwd for spec in seen.values()}
    assert len(cwds) == 3 and home not in cwds
    for spec in seen.values():
        assert spec.script.parent == spec.cwd and spec.script != script
    assert {item.path.name for item in linked} == {".git"}


@pytest.mark.xla
def test_verify_leaves_the_scripts_directory_as_it_was_and_no_run_resumes_from_another(tmp_path):
    """fixtures/contract/resume_ckpt resumes from ckpt/last.pt when it is there and saves it every step, appends
    to train.log and writes preds.npy. Before, the runs wrote them into the script's directory and the FP32
    reference, started after the legacy run, resumed from its checkpoint: its first loss was the trained one,
    and the matches limit scaled with that gap let any migration pass (hunt9 G14)."""
    case = tmp_path / "case"
    shutil.copytree(RESUME, case)
    before = _snapshot(case)
    out = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", "verify", "train.py", "--steps", "6", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=case,
        env={**os.environ, "PJRT_DEVICE": "CPU"},
    )
    assert _snapshot(case) == before, proc.stdout + proc.stderr  # no new file, none changed
    data = json.loads(out.read_text())
    runs = data["runs"]
    assert set(runs) >= {"legacy", "migrated", "reference"}, proc.stdout + proc.stderr
    first = {name: runs[name]["losses"][0] for name in ("legacy", "migrated", "reference")}
    # every run started afresh: the FP32 reference's first loss is the untrained model's, as the legacy run's
    assert abs(first["reference"] - first["legacy"]) <= 0.05 * first["legacy"], first
    assert abs(first["migrated"] - first["legacy"]) <= 0.05 * first["legacy"], first
    assert not any("resumed from" in line for run in runs.values() for line in run.get("tail") or []), runs
    # the matches limit scales with the precision gap of two fresh runs (it was 1.8 with the resumed reference)
    matches = next(part for part in data["parts"] if part["name"] == "matches")
    assert matches["figures"]["drift_limit"] < 0.1, matches
    assert proc.returncode == 0, proc.stdout + proc.stderr
