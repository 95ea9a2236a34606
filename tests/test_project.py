"""The fixture project: a launcher script, a Dockerfile, a Kubernetes job and a notebook that all
start ``src/train.py`` with a legacy bf16 variable, migrated by one ``bf16-migrate project/`` call
in each mode; and the launched script verified on the XLA CPU device."""

from __future__ import annotations

import difflib
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from conftest import LEGACY, MODES
from goldens import expected_dir

ROOT = Path(__file__).resolve().parent.parent
PROJECT = ROOT / "fixtures" / "project"
CARRIERS = ("run.sh", "Dockerfile", "k8s/job.yaml", "notebooks/quick_run.ipynb")


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "bf16_migrate.cli", *args], cwd=cwd, capture_output=True, text=True)


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(PROJECT, target, ignore=shutil.ignore_patterns("expected"))
    return target


def _settings(path: Path) -> str:
    text = path.read_text()
    if path.suffix == ".ipynb":  # saved outputs are history: the code cells are what runs
        return "\n".join(c.source for c in nbformat.reads(text, as_version=4).cells if c.cell_type == "code")
    return text


@pytest.mark.parametrize("mode", MODES)
def test_project_migrates_in_one_call(mode, tmp_path, goldens):
    tree = _copy(tmp_path)
    result = _cli("project", "--mode", mode, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    changed = {}
    for path in sorted(p for p in PROJECT.rglob("*") if p.is_file() and "expected" not in p.relative_to(PROJECT).parts):
        rel = path.relative_to(PROJECT)
        if (tree / rel).read_bytes() != path.read_bytes():
            changed[rel.as_posix()] = (tree / rel).read_bytes()
    goldens.check(expected_dir(PROJECT, mode), changed, result.stdout)
    # no legacy setting left; the launched script carries the change
    for carrier in CARRIERS:
        assert not any(v in _settings(tree / carrier) for v in LEGACY), carrier
    launched = (tree / "src" / "train.py").read_text()
    assert ('torch.autocast("xla"' in launched) if mode == "amp" else ("model.to(torch.bfloat16)" in launched)
    # a second run changes nothing
    again = _cli("project", "--mode", mode, "--check", cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 file(s) would change" in again.stderr


@pytest.mark.parametrize("mode", MODES)
def test_project_unrelated_bytes_unchanged(mode, tmp_path):
    """Every line of a carrier outside the edited entries is still there, byte for byte: each
    changed region is one entry (at most two lines, a Kubernetes name/value pair) naming a
    legacy variable."""
    tree = _copy(tmp_path)
    assert _cli("project", "--mode", mode, cwd=tmp_path).returncode == 0
    for rel in CARRIERS:
        old = _logical_lines((PROJECT / rel).read_text())
        new = _logical_lines((tree / rel).read_text())
        for op, i1, i2, _j1, _j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
            if op != "equal":  # each changed region is one entry: it names the variable
                region = "".join(old[i1:i2])
                assert any(v in region for v in LEGACY) and i2 - i1 <= 2, (rel, old[i1:i2])


def _logical_lines(text: str) -> list[str]:
    """Lines with their ``\\`` continuations joined (a removed pair takes the continuation
    of the line before it)."""
    out: list[str] = []
    for line in text.splitlines(keepends=True):
        if out and out[-1].endswith("\\\n"):
            out[-1] += line
        else:
            out.append(line)
    return out


def test_project_diff_writes_nothing(tmp_path):
    tree = _copy(tmp_path)
    before = {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()}
    result = _cli("project", "--diff", cwd=tmp_path)
    assert result.returncode == 1
    assert "+export NEURON_RT_STOCHASTIC_ROUNDING_EN=1" in result.stdout
    assert "+    model.to(torch.bfloat16)" in result.stdout
    assert {p: p.read_bytes() for p in tree.rglob("*") if p.is_file()} == before


@pytest.mark.xla
def test_launched_script_verifies_with_the_launchers_setting():
    """The launcher sets XLA_USE_BF16 for src/train.py; verify migrates it with that setting and
    compares the two runs on the XLA CPU device."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bf16_migrate.cli",
            "verify",
            str(PROJECT / "src" / "train.py"),
            "--legacy-env",
            "XLA_USE_BF16=1",
            "--steps",
            "10",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "VERDICT: PASS" in result.stdout
