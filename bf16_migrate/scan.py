"""Paths -> the files to look at, each with its kind.

Directories are walked recursively (hidden directories other than CI configuration ones such as
``.github``, virtual environments, ``__pycache__`` and ``node_modules`` are skipped; ``--exclude`` globs apply to paths relative to the argument).
A byte prefilter keeps only files that name a legacy variable, so large trees scan fast; a
file with a NUL byte in its first 8 KiB is binary and skipped. Kinds come from the name
(``*.py``, ``*.sh``/``*.bash``, ``Dockerfile*``, ``*.yaml``/``*.yml``, ``.env``/``*.env``,
``*.ipynb``) or, for an extensionless file, from its ``#!`` line.
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path

LEGACY_MARKERS = (b"XLA_USE_BF16", b"XLA_DOWNCAST_BF16", b"XLA_USE_FP16", b"XLA_DOWNCAST_FP16")
SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", ".venv", "build", "dist"}


class ScanError(Exception):
    """A path given on the command line does not exist (the message names it)."""


@dataclass(frozen=True)
class Candidate:
    """A file to process: ``kind`` is ``"python"``, a carrier kind (``"shell"``,
    ``"dockerfile"``, ``"yaml"``, ``"dotenv"``, ``"notebook"``: see :mod:`bf16_migrate.carriers`)
    or ``"unsupported"`` (a file that names a legacy variable but whose kind bf16-migrate does
    not rewrite, e.g. a Makefile or a TOML file: reported, BFM090)."""

    path: Path
    kind: str


SHELL_SUFFIXES = {".sh", ".bash", ".zsh", ".slurm", ".sbatch"}
# Files that can carry an environment setting but that bf16-migrate does not parse: reported.
UNSUPPORTED_SUFFIXES = {".cfg", ".ini", ".toml", ".json", ".mk"}
UNSUPPORTED_NAMES = ("Makefile", "makefile", "GNUmakefile")
SHELL_INTERPRETERS = {"sh", "bash", "zsh", "dash", "ksh"}
# Hidden directories that hold CI configuration (walked; other hidden directories are not).
CONFIG_DIRS = {".github", ".gitlab", ".circleci", ".buildkite", ".devcontainer"}


def _shebang_kind(path: Path) -> str | None:
    """The kind of an extensionless script from its ``#!`` line (``#!/bin/bash``,
    ``#!/usr/bin/env -S python3 -u``), or None when it has none."""
    try:
        with path.open("rb") as f:
            head = f.readline(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].decode("utf-8", "replace").split()
    words = [w.rsplit("/", 1)[-1] for w in words if not w.startswith("-")]
    if words and words[0] == "env":
        words = words[1:]
    if not words:
        return "unsupported"
    name = words[0]
    if name in SHELL_INTERPRETERS:
        return "shell"
    if name.startswith("python"):
        return "python"
    return "unsupported"


def kind_of(path: Path) -> str | None:
    """The kind of ``path`` by its name, extension or shebang; None for a file that cannot
    carry a setting (documentation, data)."""
    name, suffix = path.name, path.suffix
    if suffix in (".py", ".pyi"):
        return "python"
    if suffix in SHELL_SUFFIXES:
        return "shell"
    if suffix == ".ipynb":
        return "notebook"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix in (".md", ".rst", ".txt", ".html"):
        return None  # documentation that names a variable (Dockerfile.md) carries nothing
    if name.startswith(("Dockerfile", "Containerfile")) or name.endswith((".dockerfile", ".Dockerfile", ".containerfile")):
        return "dockerfile"
    if name == ".env" or name.endswith(".env") or name.startswith(".env."):
        return "dotenv"
    if suffix in UNSUPPORTED_SUFFIXES or name.startswith(UNSUPPORTED_NAMES):
        return "unsupported"
    if not suffix:
        return _shebang_kind(path)
    return None


_kind = kind_of


def _mentions_legacy(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return True  # let the reader report it with its reason
    if b"\0" in data[:8192]:
        return False  # binary file
    return any(marker in data for marker in LEGACY_MARKERS)


def walk(root: Path, exclude: tuple[str, ...] = ()):
    """Every file under the directory ``root`` that discovery would look at (same skips and
    excludes as :func:`scan`), with its kind (None when it carries nothing)."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if (not d.startswith(".") or d in CONFIG_DIRS) and d not in SKIP_DIRS)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if any(fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(name, pattern) for pattern in exclude):
                continue
            yield path, kind_of(path)


def scan(paths: list[Path], exclude: tuple[str, ...] = ()) -> list[Candidate]:
    """The candidate files under ``paths``, sorted, each once. Raises :class:`ScanError` for a
    path that does not exist. An explicitly named file is always a candidate (if it names a
    legacy variable); files found in directories pass the same prefilter."""
    found: dict[Path, Candidate] = {}
    for root in paths:
        if not root.exists():
            raise ScanError(f"{root}: no such file or directory")
        if root.is_file():
            if _mentions_legacy(root):
                found.setdefault(root, Candidate(root, kind_of(root) or "unsupported"))
            continue
        for path, kind in walk(root, exclude):
            if kind is not None and _mentions_legacy(path):
                found.setdefault(path, Candidate(path, kind))
    return [found[p] for p in sorted(found)]


def first_mention(text: str) -> tuple[int, int, str] | None:
    """1-based (line, column, variable) of the first legacy variable named in ``text``."""
    for number, line in enumerate(text.splitlines(), start=1):
        for marker in LEGACY_MARKERS:
            col = line.find(marker.decode())
            if col >= 0:
                return number, col + 1, marker.decode()
    return None
