#!/usr/bin/env python3
"""Make a release of bf16-migrate without tags: two commits on main (docs/release.md).

Only the branch main is published, so a release is named by its commit. A commit cannot name its
own hash, hence two steps:

  python .ci/release.py prepare X.Y.Z   # the release commit: CHANGELOG's "Unreleased" becomes
                                        # "X.Y.Z", pyproject's version X.Y.Z
  python .ci/release.py pin             # the commit after it: CHANGELOG records the release's
                                        # commit under its heading, and every install line of
                                        # README.md and docs/ names that commit

Each step checks the work tree is clean first and commits what it changed (git's own identity).
Run both on main itself, after the last merge: the release commit is then an ancestor of every
later main, so the commit the instructions name is always on the published branch.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PINNED = re.compile(r"^## (\d+\.\d+\.\d+) - commit ([0-9a-f]{40})$", re.M)
"""A released section of CHANGELOG.md: its version and its commit."""
INSTRUCTION_FILES = ("README.md", "docs/usage.md")
"""Where install, CI and pre-commit instructions name the release's commit."""


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def clean_or_exit() -> None:
    if git("status", "--porcelain", "--untracked-files=no"):
        sys.exit("release: the work tree has uncommitted changes; commit them first")


def prepare(version: str) -> None:
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        sys.exit(f"release: {version}: not a version X.Y.Z")
    clean_or_exit()
    changelog = ROOT / "CHANGELOG.md"
    text = changelog.read_text()
    if "\n## Unreleased\n" not in text:
        sys.exit('release: CHANGELOG.md has no "## Unreleased" section to release')
    changelog.write_text(text.replace("\n## Unreleased\n", f"\n## {version}\n", 1))
    pyproject = ROOT / "pyproject.toml"
    source = pyproject.read_text()
    new, count = re.subn(r'^version = "[^"]+"$', f'version = "{version}"', source, count=1, flags=re.M)
    if count != 1:
        sys.exit("release: pyproject.toml has no version line")
    pyproject.write_text(new)
    git("commit", "-q", "-m", f"Release {version}", "--", "CHANGELOG.md", "pyproject.toml")
    print(f"release commit {git('rev-parse', 'HEAD')}: now run `python .ci/release.py pin`")


def pin() -> None:
    clean_or_exit()
    changelog = ROOT / "CHANGELOG.md"
    text = changelog.read_text()
    newest = re.search(r"^## (\d+\.\d+\.\d+)(.*)$", text, re.M)
    if newest is None or newest.group(2):
        sys.exit("release: CHANGELOG.md's newest section is not an unpinned release (run `prepare` first)")
    version = newest.group(1)
    head = git("rev-parse", "HEAD")
    if f'version = "{version}"' not in git("show", "HEAD:pyproject.toml"):
        sys.exit(f"release: HEAD is not the release commit of {version} (pyproject.toml's version differs)")
    old = PINNED.search(text)
    if old is None:
        sys.exit("release: CHANGELOG.md names no released commit to replace in the instructions")
    old_version, old_commit = old.groups()
    changelog.write_text(text.replace(newest.group(0), f"## {version} - commit {head}", 1))
    for name in INSTRUCTION_FILES:
        path = ROOT / name
        doc = path.read_text()
        doc = doc.replace(old_commit, head).replace(f"frozen: v{old_version}", f"frozen: v{version}")
        doc = doc.replace(f"release {old_version}", f"release {version}")
        path.write_text(doc)
    git("commit", "-q", "-m", f"Install lines name release {version}'s commit {head}", "--", "CHANGELOG.md",
        *INSTRUCTION_FILES)  # fmt: skip
    print(f"pinned {version} at {head}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["prepare"] and len(argv) == 2:
        prepare(argv[1])
    elif argv == ["pin"]:
        pin()
    else:
        sys.exit("usage: python .ci/release.py prepare X.Y.Z | pin")


if __name__ == "__main__":
    main(sys.argv[1:])
