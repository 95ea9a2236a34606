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
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when first needed (a clean run never loads it)
    import pathspec


class GitIgnore:
    """A predicate ``ignored(path, is_dir)`` over the ``.gitignore`` files of the tree; the
    parsed files and, per directory, what its files share (:meth:`_state`) are cached. Paths
    are handled as strings (``os.path``): a walk asks about every file of a large tree."""

    def __init__(self, top: Path) -> None:
        self._top = os.path.abspath(top)
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {}
        self._states: dict[str, tuple[str, bool, list]] = {}  # per directory: see _state
        self._git: dict[str, str | None] = {}
        self._listed: tuple[str, Collection[str] | None] | None = None  # see applies

    def __call__(self, path, is_dir: bool = False) -> bool:
        """Whether ``path`` (a file, or a directory when ``is_dir``; a str or a Path) is
        ignored by git."""
        absolute = os.path.abspath(path)
        root, parent_ignored, specs = self._state_of(os.path.dirname(absolute))
        if absolute == root:
            return False
        if parent_ignored:  # an ignored parent directory ignores everything below it
            return True
        return _decision(specs, absolute, is_dir)

    def applies(self, directory, names: Collection[str] | None = None, parent_applies: bool | None = None) -> bool:
        """Whether any file or subdirectory directly in ``directory`` can be ignored: the
        directory is ignored, or a ``.gitignore`` (or ``.git/info/exclude``) applies to it.
        When not, a walk need not ask about each of its entries. ``names``, the names in
        ``directory`` when the caller has listed it, spares a look for its ``.git`` and
        ``.gitignore``; with ``parent_applies`` False too (this method's answer for the parent
        directory), a directory that holds neither is answered at once: nothing above reaches
        it and nothing starts in it."""
        if parent_applies is False and names is not None and ".gitignore" not in names and ".git" not in names:
            return False
        absolute = os.path.abspath(directory)
        self._listed = (absolute, names)
        try:
            _root, ignored, specs = self._state_of(absolute)
        finally:
            self._listed = None
        return ignored or bool(specs)

    def _lacks(self, directory: str, name: str) -> bool:
        """Whether ``directory`` is known (from the listing given to :meth:`applies`) to hold no ``name``."""
        listed = self._listed
        return listed is not None and listed[0] == directory and listed[1] is not None and name not in listed[1]

    def _state_of(self, directory: str) -> tuple[str, bool, list]:
        state = self._states.get(directory)
        if state is None:
            state = self._states[directory] = self._state(directory)
        return state

    def _state(self, parent: str) -> tuple[str, bool, list[tuple[str, pathspec.GitIgnoreSpec]]]:
        """What every file of the directory ``parent`` (absolute) shares, computed once per
        directory from its parent directory's: the repository root, whether ``parent`` or a
        directory between it and the root is ignored (nothing under an ignored directory can
        be re-included), and the ``.gitignore`` specs that apply, from the root down to
        ``parent`` (a deeper file overrides a shallower one)."""
        root = self._root_of(parent)
        if parent == root:
            spec = self._spec(root, root)
            return root, False, ([(root, spec)] if spec is not None else [])
        above = self._state_of(os.path.dirname(parent))
        if above[0] != root:  # outside a repository and above ``top``: its own root
            spec = self._spec(root, root)
            return root, False, ([(root, spec)] if spec is not None else [])
        ignored = above[1] or _decision(above[2], parent, True)
        spec = self._spec(parent, root)
        specs = above[2] + [(parent, spec)] if spec is not None else above[2]
        return root, ignored, specs

    def _spec(self, directory: str, root: str) -> pathspec.GitIgnoreSpec | None:
        if directory not in self._specs:
            lines: list[str] = []
            sources = [os.path.join(directory, ".gitignore")]
            if directory == root:
                sources.insert(0, os.path.join(directory, ".git", "info", "exclude"))
            if self._lacks(directory, ".gitignore"):
                sources.remove(os.path.join(directory, ".gitignore"))
            for source in sources:
                try:
                    with open(source, encoding="utf-8", errors="replace") as f:
                        lines.extend(f.read().splitlines())
                except OSError:
                    continue
            if lines:  # pathspec is imported only where a .gitignore is found (_spec_of)
                self._specs[directory] = _spec_of(lines)
            else:
                self._specs[directory] = None
        return self._specs[directory]

    def _git_root(self, directory: str) -> str | None:
        """The nearest directory at or above ``directory`` holding ``.git`` (cached: one
        ``stat`` per directory of the tree)."""
        if directory in self._git:
            return self._git[directory]
        up = os.path.dirname(directory)
        if not self._lacks(directory, ".git") and os.path.exists(os.path.join(directory, ".git")):
            found = directory
        elif up == directory:
            found = None
        else:
            found = self._git_root(up)
        self._git[directory] = found
        return found

    def _root_of(self, directory: str) -> str:
        """The repository root of ``directory``; outside a repository, ``top`` when it is at or
        above ``directory``, else ``directory`` itself."""
        found = self._git_root(directory)
        if found is not None:
            return found
        top = self._top
        if directory == top or directory.startswith(top.rstrip(os.sep) + os.sep):
            return top
        return directory


def _spec_of(lines: list[str]):
    """The :class:`pathspec.GitIgnoreSpec` of ``lines``; a line pathspec refuses (a lone ``!``)
    is left out, as git passes over a pattern it cannot use (``git check-ignore`` and ``git
    status`` take the rest of the file), instead of ending the run with a traceback."""
    import pathspec

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except ValueError:  # GitIgnorePatternError is a ValueError
        usable = []
        for line in lines:
            try:
                pathspec.GitIgnoreSpec.from_lines([line])
            except ValueError:
                continue
            usable.append(line)
        return pathspec.GitIgnoreSpec.from_lines(usable)


def _decision(specs, path: str, is_dir: bool) -> bool:
    """git's answer for ``path`` from the specs of the directories above it, root first: the
    last pattern that matches wins (``!pattern`` re-includes)."""
    decision = None
    for directory, spec in specs:
        rel = os.path.relpath(path, directory).replace(os.sep, "/") + ("/" if is_dir else "")
        result = spec.check_file(rel)
        if result.include is not None:
            decision = result.include
    return bool(decision)


def excluded(path: Path, base: Path, patterns: tuple[str, ...]) -> bool:
    """Whether a file named on the command line matches an exclude glob (``--force-exclude``):
    as the directory walk matches them, against its name, or its path relative to ``base`` (the
    project root, or the current directory)."""
    return matching_exclude(path, base, patterns) is not None


def matching_exclude(path: Path, base: Path, patterns: tuple[str, ...]) -> str | None:
    """The first exclude glob ``path`` matches, as :func:`excluded` matches them, or None."""
    path = Path(os.path.abspath(path))
    try:
        rel = path.relative_to(Path(os.path.abspath(base))).as_posix()
    except ValueError:
        rel = path.as_posix()
    parts = Path(rel).parts
    candidates = {path.name, rel, *("/".join(parts[:i]) for i in range(1, len(parts)))}
    return next(
        (pattern for pattern in patterns for candidate in candidates if fnmatch.fnmatch(candidate, pattern)), None
    )
