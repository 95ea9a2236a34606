"""The pre-commit hooks (``.pre-commit-hooks.yaml``) run by the real ``pre-commit`` tool.

``pre-commit try-repo REPO HOOK --all-files`` (https://pre-commit.com/#pre-commit-try-repo)
installs the hook's environment with pip from REPO, as a user's ``.pre-commit-config.yaml``
would, and runs it in the current git repository. try-repo takes the repository at a commit
(uncommitted changes of tracked files only), so the package as it is in this work tree is
copied into a temporary repository and committed there first; the install is done once per
session (``PRE_COMMIT_HOME`` is a temporary directory of the session) and needs the package's
dependencies from PyPI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

pre_commit = pytest.importorskip("pre_commit", reason="pre-commit is not installed (pip install -e '.[test]')")

TRAIN = """\
import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm


def main():
    device = xm.xla_device()
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(10):
        x = torch.randn(8, 4, device=device)
        optimizer.zero_grad()
        loss = model(x).sum()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
"""
LEGACY_TRAIN = 'import os\nos.environ["XLA_USE_BF16"] = "1"\n' + TRAIN
RUN_SH = "#!/usr/bin/env bash\nexport XLA_USE_BF16=1\npython train.py\n"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory) -> Path:
    """This work tree's package, its rules and the hook manifest, committed in a repository of their own."""
    repo = tmp_path_factory.mktemp("hook-repo")
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(ROOT / name, repo / name)
    shutil.copytree(ROOT / "bf16_migrate", repo / "bf16_migrate", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copytree(ROOT / "rules", repo / "rules")  # installed as bf16_migrate/_rules (pyproject.toml)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "hooks")
    return repo


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def _try_repo(hook_repo: Path, home: Path, cwd: Path, hook: str, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never", "NO_COLOR": "1"}
    env.pop("VIRTUAL_ENV", None)
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), hook, "--all-files", *extra],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def _user_repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "user"
    repo.mkdir()
    for name, text in files.items():
        (repo / name).write_text(text)
        if text.startswith("#!"):
            (repo / name).chmod(0o755)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    return repo


def test_check_hook_python_only(tmp_path, hook_repo, pre_commit_home):
    repo = _user_repo(tmp_path, {"train.py": LEGACY_TRAIN, "model.py": "import torch\n"})
    result = _try_repo(hook_repo, pre_commit_home, repo, "bf16-migrate-check")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "train.py:2:12: BFM001" in result.stdout and "[fixable]" in result.stdout
    assert (repo / "train.py").read_text() == LEGACY_TRAIN  # --check writes nothing


def test_rewrite_hook_python_only(tmp_path, hook_repo, pre_commit_home):
    repo = _user_repo(tmp_path, {"train.py": LEGACY_TRAIN, "model.py": "import torch\n"})
    result = _try_repo(hook_repo, pre_commit_home, repo, "bf16-migrate")
    # the hook rewrote a file: pre-commit fails the run ("files were modified by this hook")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "files were modified by this hook" in result.stdout
    train = (repo / "train.py").read_text()
    assert 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"' in train and "model.to(torch.bfloat16)" in train
    assert (repo / "model.py").read_text() == "import torch\n"
    _git(repo, "add", "-A")
    again = _try_repo(hook_repo, pre_commit_home, repo, "bf16-migrate-check")
    assert again.returncode == 0, again.stdout + again.stderr


def test_hooks_shell_launcher(tmp_path, hook_repo, pre_commit_home):
    """A shell-only switch: run.sh exports it, train.py names nothing; the check fails, the
    rewrite migrates both together, then the check passes."""
    repo = _user_repo(tmp_path, {"run.sh": RUN_SH, "train.py": TRAIN})
    check = _try_repo(hook_repo, pre_commit_home, repo, "bf16-migrate-check")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "run.sh:2:8: BFM001" in check.stdout
    assert (repo / "run.sh").read_text() == RUN_SH and (repo / "train.py").read_text() == TRAIN
    rewrite = _try_repo(hook_repo, pre_commit_home, repo, "bf16-migrate")
    assert rewrite.returncode == 1 and "files were modified by this hook" in rewrite.stdout, (
        rewrite.stdout + rewrite.stderr
    )
    assert (
        repo / "run.sh"
    ).read_text() == "#!/usr/bin/env bash\nexport NEURON_RT_STOCHASTIC_ROUNDING_EN=1\npython train.py\n"
    assert "model.to(torch.bfloat16)" in (repo / "train.py").read_text()
    _git(repo, "add", "-A")
    again = _try_repo(hook_repo, pre_commit_home, repo, "bf16-migrate-check")
    assert again.returncode == 0, again.stdout + again.stderr


def test_manifest_is_valid():
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
