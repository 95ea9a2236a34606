"""Convergence: however the files of a project are split across runs (one script alone, the
launcher alone, both, the whole tree, or pre-commit's batches of one file each in any order),
the migration ends in one and the same tree, and a final ``--check`` passes.

A launcher's setting is only ever removed together with its script's code change (the project's
rule: never a switch without its replacement); a run on a script that names a legacy variable
brings in the launchers of its project that start it (:func:`bf16_migrate.scan.launchers_of`), so
a script can never be migrated under its own condition while a launcher still sets the switch
unconditionally.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.scan import launchers_of, project_dir

from conftest import MODES

PLAIN = """\
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def main():
    device = xm.xla_device()
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    for _ in range(10):
        x = torch.randn(8, 4, device=device)
        y = torch.randn(8, 2, device=device)
        optimizer.zero_grad()
        out = model(x)
        loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
        xm.mark_step()


if __name__ == "__main__":
    main()
"""

# the script switches bf16 on itself, under its own flag; the launcher switches it on always
GUARDED = """\
import argparse
import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--bf16", action="store_true")
    args = parser.parse_args(argv)
    if args.bf16:
        os.environ["XLA_USE_BF16"] = "1"
    device = xm.xla_device()
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    for _ in range(10):
        x = torch.randn(8, 4, device=device)
        y = torch.randn(8, 2, device=device)
        optimizer.zero_grad()
        out = model(x)
        loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
        xm.mark_step()


if __name__ == "__main__":
    main()
"""

RUN_SH = '#!/usr/bin/env bash\nset -e\nexport XLA_USE_BF16=1\npython train.py "$@"\n'
DOCKERFILE = (
    'FROM python:3.11\nWORKDIR /app\nCOPY train.py /app/train.py\nENV XLA_USE_BF16=1\nCMD ["python", "/app/train.py"]\n'
)


def _project(root: Path, script: str, docker: bool) -> list[str]:
    root.mkdir()
    (root / "train.py").write_text(script)
    (root / "run.sh").write_text(RUN_SH)
    files = ["train.py", "run.sh"]
    if docker:
        (root / "Dockerfile").write_text(DOCKERFILE)
        files.append("Dockerfile")
    (root / "README.md").write_text("Run `./run.sh` (it sets XLA_USE_BF16=1).\n")  # documentation: BFM091
    return files


def _run(root: Path, monkeypatch, *args: str):
    monkeypatch.chdir(root)
    return CliRunner().invoke(main, list(args))


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _splits(files: list[str]) -> dict[str, list[list[str]]]:
    """Each way of running the migration: the paths of each run, in order."""
    launchers = [f for f in files if f != "train.py"]
    splits = {
        "tree": [["."]],
        "script first, then the tree": [["train.py"], ["."]],
        "launcher first, then the tree": [["run.sh"], ["."]],
        "script and launcher at once, then the tree": [["train.py", "run.sh"], ["."]],
        "every file named at once": [files],
    }
    if "Dockerfile" in launchers:
        splits["Dockerfile first, then the tree"] = [["Dockerfile"], ["."]]
    for order in itertools.permutations(files):  # pre-commit: batches of one file, any order
        splits["batches " + " | ".join(order)] = [[f] for f in order]
    return splits


def _expect_migrated(tree: dict[str, bytes], mode: str, docker: bool) -> None:
    train = tree["train.py"].decode()
    assert "XLA_USE_BF16" not in tree["run.sh"].decode()
    if docker:
        assert "XLA_USE_BF16" not in tree["Dockerfile"].decode()
    if mode == "amp":
        assert 'torch.autocast("xla", dtype=torch.bfloat16)' in train
        assert "model.to(torch.bfloat16)" not in train
    else:
        assert "model.to(torch.bfloat16)" in train
        assert ("with_fp32_master_weights" in train) == (mode == "gpu-compatible")
    if mode == "stochastic":
        assert "export NEURON_RT_STOCHASTIC_ROUNDING_EN=1" in tree["run.sh"].decode()
    # the script's own flag no longer decides: the launcher switched bf16 on for every run
    assert "enabled=bool(args.bf16)" not in train and "if args.bf16:\n        model.to" not in train


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("script", ["plain", "guarded"])
@pytest.mark.parametrize("docker", [False, True], ids=["shell", "shell+Dockerfile"])
def test_every_split_ends_in_one_tree(tmp_path, monkeypatch, mode, script, docker):
    source = PLAIN if script == "plain" else GUARDED
    finals: dict[str, dict[str, bytes]] = {}
    for n, (name, runs) in enumerate(_splits(["train.py", "run.sh", *(["Dockerfile"] if docker else [])]).items()):
        root = tmp_path / f"split{n}"
        _project(root, source, docker)
        for paths in runs:
            result = _run(root, monkeypatch, *paths, "--mode", mode, "--ignore", "BFM091")
            assert result.exit_code == 0, f"{name}: bf16-migrate {' '.join(paths)}\n{result.output}"
            assert "BFM112" not in result.output, f"{name}: {result.output}"
        check = _run(root, monkeypatch, ".", "--mode", mode, "--check", "--ignore", "BFM091")
        assert check.exit_code == 0, f"{name}: final --check\n{check.output}"
        assert "0 file(s) would change" in check.output
        # documentation is reported, never fixed: without --ignore BFM091 the check says so
        docs = _run(root, monkeypatch, ".", "--mode", mode, "--check")
        assert docs.exit_code == 1 and "BFM091" in docs.output and "0 file(s) would change" in docs.output
        finals[name] = _tree(root)
    reference = finals["tree"]
    _expect_migrated(reference, mode, docker)
    for name, tree in finals.items():
        assert tree == reference, f"{name} ends in another tree than the whole-tree run: " + ", ".join(
            f for f in reference if tree.get(f) != reference[f]
        )


def test_kept_setting_names_the_scripts_own_condition(tmp_path, monkeypatch):
    """A script migrated under its own flag before its launcher existed (or with the launcher
    excluded): the launcher's unconditional setting is kept (removing it would leave the runs
    without the flag in fp32), and the reason is the script's, not "the codemod made no change"."""
    root = tmp_path / "p"
    root.mkdir()
    (root / "train.py").write_text(GUARDED)
    assert _run(root, monkeypatch, "train.py", "--mode", "amp").exit_code == 0
    assert "enabled=bool(args.bf16)" in (root / "train.py").read_text()
    (root / "run.sh").write_text(RUN_SH)
    result = _run(root, monkeypatch, ".", "--mode", "amp", "--check")
    assert result.exit_code == 1
    assert "BFM112" in result.output and "BFM032" in result.output
    assert "the codemod made no change" not in result.output
    assert "XLA_USE_BF16" in (root / "run.sh").read_text()


def test_a_launcher_excluded_is_not_brought_in(tmp_path, monkeypatch):
    root = tmp_path / "p"
    _project(root, GUARDED, docker=False)
    result = _run(root, monkeypatch, "train.py", "--exclude", "run.sh")
    assert result.exit_code == 0, result.output
    assert (root / "run.sh").read_text() == RUN_SH
    assert "run.sh" not in result.output


def test_a_clean_script_brings_in_nothing(tmp_path, monkeypatch):
    root = tmp_path / "p"
    _project(root, PLAIN, docker=True)
    result = _run(root, monkeypatch, "train.py", "--check")
    assert result.exit_code == 0, result.output
    assert "run.sh" not in result.output and "Dockerfile" not in result.output


def test_launchers_of_follows_names(tmp_path):
    (tmp_path / "pkg").mkdir()
    script = tmp_path / "pkg" / "train.py"
    script.write_text(GUARDED)
    (tmp_path / "launch.sh").write_text("python -m pkg.train --bf16\n")  # names the script, no variable
    (tmp_path / "run.sh").write_text("export XLA_USE_BF16=1\nbash launch.sh\n")  # names launch.sh
    (tmp_path / "bf16.env").write_text("XLA_DOWNCAST_BF16=1\n")
    (tmp_path / "job.sh").write_text("source bf16.env\n./run.sh\n")
    (tmp_path / "other.sh").write_text("export XLA_USE_BF16=1\npython pretrain.py\npython my_train.py\n")
    (tmp_path / "k8s.yaml").write_text("env:\n- name: XLA_USE_BF16\n  value: '1'\ncommand: [python, pkg/train.py]\n")
    found = [p.name for p in launchers_of([script], tmp_path)]
    # launch.sh and job.sh name no variable (the planner follows them); other.sh runs other scripts
    assert found == ["bf16.env", "k8s.yaml", "run.sh"]
    assert [p.name for p in launchers_of([script], tmp_path, exclude=("*.yaml",))] == ["bf16.env", "run.sh"]


def test_project_dir(tmp_path):
    (tmp_path / "repo" / "src").mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    script = tmp_path / "repo" / "src" / "train.py"
    script.write_text("")
    assert project_dir(script) == (tmp_path / "repo").resolve()
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "t.py").write_text("")
    assert project_dir(tmp_path / "loose" / "t.py") in (
        (tmp_path / "loose").resolve(),
        *(tmp_path / "loose").resolve().parents,
    )


def test_another_script_of_the_same_name_brings_nothing_in(tmp_path, monkeypatch):
    """Launchers are kept only when one of their launches resolves to the script named: the
    launcher of another train.py in the repository is left alone."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "a").mkdir()
    (root / "b").mkdir()
    (root / "a" / "train.py").write_text(GUARDED)
    (root / "b" / "train.py").write_text(PLAIN)
    (root / "b" / "run.sh").write_text(RUN_SH)
    assert [p.name for p in launchers_of([root / "a" / "train.py"], root)] == []
    assert [p.relative_to(root).as_posix() for p in launchers_of([root / "b" / "train.py"], root)] == ["b/run.sh"]
    result = _run(root, monkeypatch, "a/train.py")
    assert result.exit_code == 0, result.output
    assert (root / "b" / "run.sh").read_text() == RUN_SH and (root / "b" / "train.py").read_text() == PLAIN
    assert "b/" not in result.output
