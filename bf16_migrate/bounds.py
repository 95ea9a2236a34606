"""Where a run may read a module to migrate and write a file: inside the paths it was given.

A path is judged by where it really is, every symlink resolved (``os.path.realpath``), never by
how it is spelt: ``pkg/util.py`` under the tree, where ``pkg`` is a symlink to
``../outside/pkg``, is a file outside the tree, and a pull request must not be able to make the
tool rewrite files outside the checkout it runs in.

The area of a run is, for each path given, the directory given (or the directory of a file
given) and the project it belongs to (:func:`project_dir`: the nearest
directory up holding ``.git``, ``pyproject.toml``, ``setup.py`` or ``setup.cfg``), since a
launcher and the script it starts are looked up across their project; plus each file named on
the command line itself, wherever its symlink points (naming it is consent).
"""

from __future__ import annotations

import os
from pathlib import Path


class Bounds:
    """The area of a run over ``paths`` (the paths given on the command line; see the module
    docstring). :meth:`outside` tells whether a path lies outside it."""

    def __init__(self, paths: list[Path]) -> None:
        self.files: set[str] = set()
        areas: set[str] = set()
        for given in paths:
            given = Path(given)
            if os.path.isdir(given):
                base = given
            else:
                self.files.add(os.path.realpath(given))
                base = given.parent
            areas.add(os.path.realpath(base))
            areas.add(os.path.realpath(project_dir(base)))
        self.areas = sorted(areas)

    def outside(self, path: Path) -> Path | None:
        """None when ``path`` really lies inside the area (or is a file named on the command
        line), else the path it resolves to (every symlink followed; a path that does not exist
        is resolved as far as it exists)."""
        real = os.path.realpath(path)
        if real in self.files:
            return None
        for area in self.areas:
            if real == area or real.startswith(area.rstrip(os.sep) + os.sep):
                return None
        return Path(real)


PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")


def project_dir(path: Path) -> Path:
    """The project ``path`` belongs to: the nearest directory at or above it that holds
    ``.git``, ``pyproject.toml``, ``setup.py`` or ``setup.cfg``; else the file's own directory."""
    start = (path if os.path.isdir(path) else path.parent).resolve()
    return project_root(path) or start


def project_root(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` (its directory, for a file) that holds
    ``.git``, ``pyproject.toml``, ``setup.py`` or ``setup.cfg``: the root its version control
    or its configuration gives; None when none does."""
    start = (path if os.path.isdir(path) else path.parent).resolve()
    for directory in (start, *start.parents):
        if any(os.path.exists(directory / marker) for marker in PROJECT_MARKERS):
            return directory
    return None


__all__ = ["PROJECT_MARKERS", "Bounds", "project_dir", "project_root"]
