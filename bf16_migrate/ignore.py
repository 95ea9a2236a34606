"""Which files a run skips: ``.gitignore`` (through the ``pathspec`` library) and, with
``--force-exclude``, the exclude globs for files named on the command line.

``.gitignore`` files are read as git reads them (gitignore(5), "PATTERN FORMAT"): each file's
patterns are relative to its directory, a deeper file overrides a shallower one, the last
matching pattern wins (``!pattern`` re-includes), and nothing under an ignored directory can be
re-included. ``.git/info/exclude`` is read too. The files from the repository's root (the
nearest directory upward holding ``.git``) down to the file count; outside a repository, those
from ``top`` (the project root) down. pathspec's :class:`~pathspec.GitIgnoreSpec` implements
git's matching.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pathspec


class GitIgnore:
    """A predicate ``ignored(path, is_dir)`` over the ``.gitignore`` files of the tree; the
    parsed files and the decisions for parent directories are cached."""

    def __init__(self, top: Path) -> None:
        self._top = top.absolute()
        self._specs: dict[Path, pathspec.GitIgnoreSpec | None] = {}
        self._roots: dict[Path, Path] = {}
        self._dirs: dict[Path, bool] = {}  # decisions for the parent directories

    def __call__(self, path: Path, is_dir: bool = False) -> bool:
        """Whether ``path`` (a file, or a directory when ``is_dir``) is ignored by git."""
        path = Path(os.path.abspath(path))
        root = self._root_of(path.parent)
        if path == root:
            return False
        chain = [root, *reversed([p for p in path.parents if p != root and root in p.parents])]
        # an ignored parent directory ignores everything below it
        for parent in chain[1:]:
            if parent not in self._dirs:
                self._dirs[parent] = self._decide(root, parent, True)
            if self._dirs[parent]:
                return True
        return self._decide(root, path, is_dir)

    def _decide(self, root: Path, path: Path, is_dir: bool) -> bool:
        decision = None
        for directory in [root, *[p for p in reversed(path.parents) if root in p.parents]]:
            if directory == path:
                break
            spec = self._spec(directory, root)
            if spec is None:
                continue
            rel = path.relative_to(directory).as_posix() + ("/" if is_dir else "")
            result = spec.check_file(rel)
            if result.include is not None:
                decision = result.include
        return bool(decision)

    def _spec(self, directory: Path, root: Path) -> pathspec.GitIgnoreSpec | None:
        if directory not in self._specs:
            lines: list[str] = []
            sources = [directory / ".gitignore"]
            if directory == root:
                sources.insert(0, directory / ".git" / "info" / "exclude")
            for source in sources:
                try:
                    lines.extend(source.read_text(encoding="utf-8", errors="replace").splitlines())
                except OSError:
                    continue
            self._specs[directory] = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        return self._specs[directory]

    def _root_of(self, directory: Path) -> Path:
        if directory not in self._roots:
            found = next((p for p in (directory, *directory.parents) if (p / ".git").exists()), None)
            if found is None:
                found = self._top if (directory == self._top or self._top in directory.parents) else directory
            self._roots[directory] = found
        return self._roots[directory]


def excluded(path: Path, base: Path, patterns: tuple[str, ...]) -> bool:
    """Whether a file named on the command line matches an exclude glob (``--force-exclude``):
    as the directory walk matches them, against its name, or its path relative to ``base`` (the
    project root, or the current directory)."""
    path = Path(os.path.abspath(path))
    try:
        rel = path.relative_to(Path(os.path.abspath(base))).as_posix()
    except ValueError:
        rel = path.as_posix()
    parts = Path(rel).parts
    candidates = {path.name, rel, *("/".join(parts[:i]) for i in range(1, len(parts)))}
    return any(fnmatch.fnmatch(candidate, pattern) for pattern in patterns for candidate in candidates)
