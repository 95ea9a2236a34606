"""A release people can install, tested as they would install it.

- ``python -m build`` makes the wheel and the sdist from a clean clone of this checkout's commit
  (what is committed, nothing else), the rules inside them as package data, the licence in both;
- the wheel is installed into a fresh virtual environment (its own pip resolving the
  dependencies it declares) and run from a directory outside the checkout, with no
  ``PYTHONPATH``: ``--check``, ``explain``, ``--version``, and, with the ``xla`` extra,
  ``verify``;
- the repository as published: this checkout's history pushed as ``main`` into a bare repository,
  without tags (the published repository has none). README's install line, CI job and pre-commit
  configuration are run as written against it, at the release commit they name (pip's
  ``git+file://localhost/PATH`` URL and pre-commit's ``repo: PATH`` stand where README says
  ``https://github.com/<owner>/bf16-migrate``);
- the release is named alike everywhere (CHANGELOG's newest pinned heading, README's and the
  docs' commit, pyproject's version at that commit), before and after ``.ci/release.py`` makes a
  release in a clone.

Why the ``xla`` extra can be tested without downloading torch again (about 7 GB): the fresh
environment reaches torch, torch-xla and matplotlib, and exactly the distributions they depend on
(read from their metadata), through a ``.pth`` file naming a directory of links into the test
environment's site-packages (:func:`_xla_closure_dir`). Nothing else of the test environment is
visible there (not its bf16-migrate, not its libcst), so the wheel's own dependencies still come
from pip. pip then installs ``wheel[xla]`` with ``--no-index``: it may download nothing, so it
must find the extra's pins (``torch==2.9.0``, ``torch-xla==2.9.0``) satisfied by what it sees,
which is the check a user's ``pip install 'bf16-migrate[xla]'`` makes before it would download
them. What the test does not show is that PyPI serves those two pins, which CI's own install of
the ``xla`` extra (``.ci/run``) shows every run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
PLACEHOLDER_URL = "https://github.com/<owner>/bf16-migrate"

LEGACY_SCRIPT = (ROOT / "examples" / "showcase" / "train.py").read_text()

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _clean_env(venv: Path | None = None, **extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH or virtual environment of the test run,
    ``venv``'s bin first on PATH, no colour."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    if venv is not None:
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(venv)
    env.update(GIT_ENV, NO_COLOR="1", **extra)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _must(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"{proc.args}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _git(args: list[str], cwd: Path) -> str:
    return _must(_run(["git", *args], cwd, _clean_env())).stdout.strip()


def _clean_clone(dest: Path) -> Path:
    """A clone of this checkout's commit (no tags, nothing uncommitted, no build leftovers)."""
    _git(["clone", "-q", "--no-tags", str(ROOT), str(dest)], dest.parent)
    return dest


PINNED = re.compile(r"^## (\d+\.\d+\.\d+) - commit ([0-9a-f]{40})$", re.M)
"""A released section's heading in CHANGELOG.md: its version and its commit."""
INSTRUCTIONS = ("README.md", "docs/usage.md")


def release_named(repo: Path) -> tuple[str, str]:
    """The release the instructions of the checkout ``repo`` name, ``(version, commit)``, after
    checking it is the same everywhere and exists: CHANGELOG's newest section is pyproject's
    version; its newest pinned section (``## X.Y.Z - commit <hash>``) is what every pip line
    (``@<hash>``) and pre-commit ``rev: <hash>  # frozen: vX.Y.Z`` of README.md and docs/usage.md
    names, and no tag; that commit is an ancestor of HEAD, with ``version = "X.Y.Z"`` and its
    own ``## X.Y.Z`` section."""
    changelog = (repo / "CHANGELOG.md").read_text()
    version = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["version"]
    assert re.findall(r"^## (\d+\.\d+\.\d+)", changelog, re.M)[0] == version
    released, commit = PINNED.findall(changelog)[0]
    for name in INSTRUCTIONS:
        text = (repo / name).read_text()
        assert set(re.findall(r"bf16-migrate@(\S+?)\"", text)) == {commit}, name
        assert set(re.findall(r"^ *rev: (.*)", text, re.M)) == {f"{commit}  # frozen: v{released}"}, name
        assert "pip install bf16-migrate" not in text and "pip install 'bf16-migrate" not in text
    assert f"release {released} by its commit" in (repo / "README.md").read_text()
    assert _run(["git", "merge-base", "--is-ancestor", commit, "HEAD"], repo, _clean_env()).returncode == 0
    then = tomllib.loads(_git(["show", f"{commit}:pyproject.toml"], repo))["project"]["version"]
    assert then == released and re.search(
        rf"^## {re.escape(released)}$", _git(["show", f"{commit}:CHANGELOG.md"], repo), re.M
    )
    return released, commit


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """``python -m build`` (an sdist, then a wheel built from that sdist, each in an isolated
    build environment as PyPA's build does by default): ``{"wheel": ..., "sdist": ...}``."""
    base = tmp_path_factory.mktemp("release-build")
    source = _clean_clone(base / "src")
    out = base / "dist"
    built = _must(_run([sys.executable, "-m", "build", "--outdir", str(out), str(source)], base, _clean_env()))
    assert "Deprecat" not in built.stdout + built.stderr  # e.g. a `license` table (setuptools>=77: an SPDX string)
    wheel = out / f"bf16_migrate-{VERSION}-py3-none-any.whl"
    sdist = out / f"bf16_migrate-{VERSION}.tar.gz"
    assert wheel.is_file() and sdist.is_file(), sorted(p.name for p in out.iterdir())
    return {"wheel": wheel, "sdist": sdist}


def _new_venv(where: Path) -> Path:
    _must(_run([sys.executable, "-m", "venv", str(where)], where.parent, _clean_env()))
    return where


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed by its own pip, dependencies and all
    (what ``pip install bf16-migrate-X.whl`` gives a user); its path."""
    venv = _new_venv(tmp_path_factory.mktemp("release-venv") / "venv")
    _must(_run([str(venv / "bin" / "pip"), "install", "-q", str(dist["wheel"])], venv.parent, _clean_env(venv)))
    return venv


@pytest.fixture
def user_project(tmp_path) -> Path:
    """A user's project outside the checkout: one legacy training script."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(LEGACY_SCRIPT)
    return project


def test_the_release_is_named_alike_everywhere():
    """README's install, CI and pre-commit examples and docs/usage.md's name one commit, the
    newest release's in CHANGELOG.md, which is on this history; README says what the one
    placeholder stands for, once."""
    release_named(ROOT)
    assert (ROOT / "README.md").read_text().count("`<owner>` stands for") == 1


def test_a_release_made_by_the_script_is_named_alike_before_and_after_its_pin(tmp_path):
    """docs/release.md's two commits, made in a clone: after ``prepare`` (the release commit)
    the instructions still name the previous release, which still exists; after ``pin`` they
    name the release commit, and CHANGELOG records it under its heading."""
    repo = _clean_clone(tmp_path / "repo")
    before = release_named(repo)
    env = _clean_env()
    changelog = repo / "CHANGELOG.md"
    if "\n## Unreleased\n" not in changelog.read_text():  # right after a release: a change made since
        text = changelog.read_text()
        first = text.index("\n## ") + 1
        changelog.write_text(
            text[:first] + "## Unreleased\n\n### Fixed\n- A change after the release.\n\n" + text[first:]
        )
        _git(["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "a change after the release"], repo)
    _must(_run([sys.executable, ".ci/release.py", "prepare", "9.9.9"], repo, env))
    release = _git(["rev-parse", "HEAD"], repo)
    assert release_named(repo) == before
    assert _run([sys.executable, ".ci/release.py", "prepare", "9.9.10"], repo, env).returncode != 0  # no Unreleased
    _must(_run([sys.executable, ".ci/release.py", "pin"], repo, env))
    assert release_named(repo) == ("9.9.9", release)
    assert _git(["rev-parse", "HEAD^"], repo) == release and not _git(["status", "--porcelain"], repo)
    assert f"## 9.9.9 - commit {release}" in (repo / "CHANGELOG.md").read_text()


def test_the_wheel_and_the_sdist_carry_the_rules(dist):
    rules = sorted(p.name for p in (ROOT / "rules").glob("*.toml"))
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = wheel.namelist()
        metadata = wheel.read(f"bf16_migrate-{VERSION}.dist-info/METADATA").decode()
        entry_points = wheel.read(f"bf16_migrate-{VERSION}.dist-info/entry_points.txt").decode()
    assert sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("bf16_migrate/_rules/")) == sorted(
        [*rules, "__init__.py"] if "bf16_migrate/_rules/__init__.py" in names else rules
    )
    assert "bf16_migrate/verify/_child/sitecustomize.py" in names
    assert not [n for n in names if n.startswith(("tests/", "fixtures/", "rules/"))]
    assert f"bf16_migrate-{VERSION}.dist-info/licenses/LICENSE" in names
    assert "License-Expression: Apache-2.0" in metadata and "License-File: LICENSE" in metadata
    assert "Requires-Dist: libcst" in metadata and 'Requires-Dist: torch==2.9.0; extra == "xla"' in metadata
    assert "bf16-migrate = bf16_migrate.cli:main" in entry_points
    with tarfile.open(dist["sdist"]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    assert {f"rules/{r}" for r in rules} <= members
    assert {
        "CHANGELOG.md",
        "README.md",
        "LICENSE",
        "docs/usage.md",
        "docs/rules.md",
        ".pre-commit-hooks.yaml",
    } <= members
    assert f"Version: {VERSION}" in metadata


def test_the_installed_wheel_checks_and_explains_away_from_the_checkout(installed, user_project):
    env = _clean_env(installed)
    exe = str(installed / "bin" / "bf16-migrate")
    where = _must(
        _run(
            [
                str(installed / "bin" / "python"),
                "-c",
                "import bf16_migrate, bf16_migrate.rules as r; print(bf16_migrate.__file__); print(r.rules_dir());"
                "print(bf16_migrate.__version__); import importlib.util as u; print(u.find_spec('torch'))",
            ],
            user_project,
            env,
        )
    ).stdout.split("\n")
    package, rules_dir, version, torch = where[:4]
    assert Path(package).is_relative_to(installed) and Path(rules_dir).is_relative_to(installed), where
    assert Path(rules_dir).name == "_rules" and version == VERSION
    assert torch == "None"  # the rewrite needs no torch: the base install has none
    assert _must(_run([exe, "--version"], user_project, env)).stdout.strip().endswith(VERSION)

    check = _run([exe, "train.py", "--check"], user_project, env)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "train.py:12:12: BFM001 would replace XLA_USE_BF16" in check.stdout
    assert (user_project / "train.py").read_text() == LEGACY_SCRIPT  # --check writes nothing
    page = _must(_run([exe, "explain", "BFM001"], user_project, env)).stdout
    assert page.startswith("BFM001 legacy-bf16-switch\n") and "What to do:" in page

    _must(_run([exe, "train.py"], user_project, env))
    assert "model.to(torch.bfloat16)" in (user_project / "train.py").read_text()
    assert _run([exe, ".", "--check"], user_project, env).returncode == 0  # the showcase ends clean


def _xla_closure_dir(where: Path) -> Path:
    """A directory of links to the test environment's installs of the ``xla`` extra (torch,
    torch-xla, matplotlib) and of every distribution they require, transitively (their
    ``Requires-Dist`` whose markers hold here), each distribution's top-level files and its
    ``.dist-info``: what pip would have installed for the extra, and nothing else."""
    import importlib.metadata as metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    where.mkdir()
    seen: set[str] = set()
    todo = ["torch", "torch-xla", "matplotlib"]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        dist = metadata.distribution(name)
        for requirement in map(Requirement, dist.requires or []):
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
        site = Path(str(dist.locate_file(""))).resolve()  # the site-packages directory it is installed in
        for file in dist.files or []:
            top = file.parts[0]
            if top in ("..", "__pycache__") or top.endswith(".pth"):
                continue  # a script in bin/, byte code, a .pth of its own
            source = site / top
            if not (where / top).exists():
                (where / top).symlink_to(source)
    return where


@pytest.mark.xla
def test_the_installed_wheel_verifies_with_the_xla_extra(dist, installed, user_project, tmp_path):
    """``pip install 'wheel[xla]'`` with no index and no configuration (``--isolated``): the
    extra's pins must be satisfied by the test environment's torch and torch-xla, reached through
    a ``.pth`` file (module docstring); then ``verify`` runs from the installed copy, its child
    processes included, and the showcase passes."""
    closure = _xla_closure_dir(tmp_path / "xla-site")
    python = str(installed / "bin" / "python")
    env = _clean_env(installed, PJRT_DEVICE="CPU")
    site = Path(
        _must(
            _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path, env)
        ).stdout.strip()
    )
    pth = site / "zz-xla-extra-from-the-test-environment.pth"
    pth.write_text(f"{closure}\n")
    try:
        pip = [python, "-m", "pip", "install", "--isolated", "--no-index", f"{dist['wheel']}[xla]"]
        _must(_run(pip, tmp_path, env))
        found = _must(
            _run([python, "-c", "import torch, torch_xla; print(torch.__version__, torch_xla.__file__)"], tmp_path, env)
        )
        version, where = found.stdout.split()
        assert version.startswith("2.9.0") and Path(where).is_relative_to(closure)
        summary = user_project / "summary.md"  # a CI job summary file ($GITHUB_STEP_SUMMARY)
        proc = _run(
            [str(installed / "bin" / "bf16-migrate"), "verify", "train.py", "--steps", "6", "--markdown", str(summary)],
            user_project,
            env,
            timeout=1200,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "VERDICT: PASS" in proc.stdout
        assert "XLA device: the CPU" in proc.stderr and "accepts its arguments" in proc.stderr  # the pre-flight
        assert summary.read_text().startswith("## bf16-migrate verify `")
        assert (user_project / "train.py").read_text() == LEGACY_SCRIPT  # verify migrates a copy
    finally:
        pth.unlink()


def _readme_block(first_line: str) -> str:
    """The fenced ``yaml`` block of README.md that starts with ``first_line``."""
    for block in re.findall(r"```yaml\n(.*?)```", (ROOT / "README.md").read_text(), re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"README.md has no yaml block starting {first_line!r}")


@pytest.fixture(scope="module")
def release_remote(tmp_path_factory) -> Path:
    """The repository as published, the stand-in for ``https://github.com/<owner>/bf16-migrate``:
    a bare repository holding this checkout's history as its one branch ``main``, no tag."""
    bare = tmp_path_factory.mktemp("release-remote") / "bf16-migrate.git"
    _git(["init", "-q", "--bare", str(bare)], bare.parent)
    _git(["symbolic-ref", "HEAD", "refs/heads/main"], bare)  # the default branch, as the host serves it
    _git(["push", "-q", "--no-tags", str(bare), "HEAD:refs/heads/main"], ROOT)
    assert _git(["for-each-ref", "--format=%(refname)"], bare) == "refs/heads/main"
    return bare


def _user_repo(where: Path, script: str) -> Path:
    where.mkdir()
    (where / "train.py").write_text(script)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "user"]):
        _must(_run(["git", *args], where, _clean_env()))
    return where


def test_readmes_install_and_ci_job_run_against_the_published_release(release_remote, tmp_path):
    """README's workflow, step by step: ``actions/checkout`` is the user's repository as the
    current directory, ``actions/setup-python`` a fresh virtual environment first on PATH, and
    each ``run:`` goes to bash as GitHub runs it (``bash --noprofile --norc -eo pipefail``), with
    the release's URL pointing at the published repository (no tags). Its install step is
    README's "Install" line, word for word, and installs the release the changelog names. The job
    fails (exit 1, an annotation per finding) while a legacy switch is left, and passes once the
    script is migrated."""
    from ruamel.yaml import YAML

    workflow = YAML(typ="safe").load(_readme_block("# .github/workflows/bf16-migrate.yml"))
    steps = next(iter(workflow["jobs"].values()))["steps"]
    assert [s.get("uses", "run").split("@")[0] for s in steps] == [
        "actions/checkout",
        "actions/setup-python",
        "run",
        "run",
    ]
    # PEP 508 wants a host in a URL: file://localhost/PATH, which git reads as the path
    remote = f"git+file://localhost{release_remote}"
    runs = [s["run"].replace(f"git+{PLACEHOLDER_URL}", remote) for s in steps[2:]]
    released, commit = release_named(ROOT)
    assert f"{remote}@{commit}" in runs[0]
    readme = (ROOT / "README.md").read_text()
    install_lines = re.findall(r"^pip install .*?\"(?= )", readme, re.M)
    assert install_lines and steps[2]["run"] == install_lines[0]  # the "Install" line is the job's
    venv = _new_venv(tmp_path / "runner-python")
    env = _clean_env(venv)

    def job(repo: Path) -> list[subprocess.CompletedProcess]:
        done = []
        for script in runs:
            done.append(_run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], repo, env))
            if done[-1].returncode != 0:
                break
        return done

    legacy = _user_repo(tmp_path / "legacy", LEGACY_SCRIPT)
    install, *rest = job(legacy)
    assert install.returncode == 0, install.stdout + install.stderr
    version = _must(_run([str(venv / "bin" / "bf16-migrate"), "--version"], legacy, env)).stdout
    assert version.strip().endswith(released), version
    (check,) = rest
    assert check.returncode == 1, check.stdout + check.stderr
    assert check.stdout.startswith("::warning file=train.py,line=12,col=12,title=BFM001::would replace XLA_USE_BF16")
    _must(_run([str(venv / "bin" / "bf16-migrate"), "train.py"], legacy, env))
    assert job(legacy)[-1].returncode == 0


def test_readmes_pre_commit_configuration_runs_the_published_release(release_remote, tmp_path):
    """README's ``.pre-commit-config.yaml`` with ``repo:`` the published repository's path (no
    tags): pre-commit fetches the release's commit (``rev: <hash>  # frozen: vX.Y.Z``), installs
    it into its own environment and runs the hook, which fails the commit while a legacy switch
    is left and writes nothing."""
    config = _readme_block("# .pre-commit-config.yaml")
    released, commit = release_named(ROOT)
    assert f"repo: {PLACEHOLDER_URL}\n" in config and f"rev: {commit}  # frozen: v{released}\n" in config
    repo = _user_repo(tmp_path / "user", LEGACY_SCRIPT)
    (repo / ".pre-commit-config.yaml").write_text(config.replace(PLACEHOLDER_URL, str(release_remote)))
    env = _clean_env(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PRE_COMMIT_COLOR="never")
    proc = _run([sys.executable, "-m", "pre_commit", "run", "--all-files"], repo, env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.py:12:12: BFM001 would replace XLA_USE_BF16" in proc.stdout, proc.stdout
    assert (repo / "train.py").read_text() == LEGACY_SCRIPT
