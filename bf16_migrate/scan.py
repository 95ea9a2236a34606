"""Paths -> the files to look at, each with its kind.

Directories are walked recursively (hidden directories, virtual environments, ``__pycache__``
and ``node_modules`` are skipped; ``--exclude`` globs apply to paths relative to the argument).
A byte prefilter keeps only files that name a legacy variable, so large trees scan fast.
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
    """A file to process: ``kind`` is ``"python"`` or ``"unsupported"`` (a file that names a
    legacy variable but whose carrier, e.g. shell or YAML, is not migrated yet)."""

    path: Path
    kind: str


# Files that can carry an environment setting (issue 4 lists them). Documentation (.md, .rst,
# .txt) that merely names a variable is not a carrier and is not reported.
CARRIER_SUFFIXES = {".sh", ".bash", ".zsh", ".yaml", ".yml", ".ipynb", ".env", ".cfg", ".ini", ".toml", ".json", ".slurm", ".sbatch", ".mk"}
CARRIER_NAMES = ("Dockerfile", "Containerfile", "Makefile", ".env")


def _kind(path: Path) -> str | None:
    if path.suffix in (".py", ".pyi"):
        return "python"
    if path.suffix in CARRIER_SUFFIXES or path.name.startswith(CARRIER_NAMES):
        return "unsupported"
    if not path.suffix:
        try:
            with path.open("rb") as f:
                head = f.read(2)
        except OSError:
            return None
        if head == b"#!":  # an extensionless script (shell or python: both carry settings)
            return "unsupported"
    return None


def _mentions_legacy(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return True  # let the reader report it with its reason
    if b"\0" in data[:8192]:
        return False  # binary file
    return any(marker in data for marker in LEGACY_MARKERS)


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
                found.setdefault(root, Candidate(root, _kind(root) or "unsupported"))
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in SKIP_DIRS)
            for name in sorted(filenames):
                path = Path(dirpath) / name
                rel = path.relative_to(root).as_posix()
                if any(fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(name, pattern) for pattern in exclude):
                    continue
                kind = _kind(path)
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
