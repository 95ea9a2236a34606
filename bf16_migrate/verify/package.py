"""A script that belongs to a package and imports it, run as the launcher runs it: ``python -m``.

``python -m tinylm.train`` (from the directory that holds ``tinylm/``) puts that directory first on
``sys.path`` and runs ``tinylm/train.py`` as the module ``tinylm.train``, so the script may import
its own package (``from tinylm.model import TinyLM``) or its siblings relatively (``from .model
import TinyLM``). Run by its path, the same script has its own directory first on ``sys.path`` and
neither import resolves (Python's docs, "The initialization of the sys.path module search path" and
``-m``). verify runs such a script as a module, each run from its own working copy of the tree that
holds the package (:func:`stage_package`, :mod:`.workcopy`), the migrated run's with the package's
migrated modules in it.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .runner import read_source, write_staged
from .workcopy import DEFAULT_BUDGET, Budget, Linked, working_copy

__all__ = ["PackageRun", "package_run", "stage_package"]


@dataclass(frozen=True)
class PackageRun:
    """How a script of a package runs: ``top``, the directory ``python -m`` is started from (the one
    that holds the outermost package), and ``module``, the script's dotted name from there
    (``tinylm.train``)."""

    top: Path
    module: str


def package_run(script: Path, source: str) -> PackageRun | None:
    """The :class:`PackageRun` of ``script`` (its text ``source``) when its directory is a package
    (holds ``__init__.py``) and the script imports that package (a relative import, or an absolute one
    of the outermost package's name); None otherwise: a script that imports its siblings by plain
    name runs by its path, as it always did."""
    script = script.resolve()
    if not (script.parent / "__init__.py").is_file():
        return None
    root = script.parent
    while (root.parent / "__init__.py").is_file() and root.parent != root:
        root = root.parent
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if not any(_imports_package(node, root.name) for node in ast.walk(tree)):
        return None
    rel = script.relative_to(root.parent).with_suffix("")
    return PackageRun(root.parent, ".".join(rel.parts))


def _imports_package(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == name
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == name for alias in node.names)
    return False


def stage_package(
    source: str | None,
    original: Path,
    package: PackageRun,
    dest_dir: Path,
    replaced: Mapping[Path, str] | None = None,
    *,
    budget: Budget = DEFAULT_BUDGET,
    linked: list[Linked] | None = None,
) -> Path:
    """A working copy of ``package.top`` in ``dest_dir`` (:func:`.workcopy.working_copy`: directories
    made again, files copied within ``budget``, the rest linked and appended to ``linked``) with
    ``source`` in place of ``original`` (None: the original file as it is) and ``replaced``
    (absolute paths under ``package.top`` -> text: the migrated modules) written in; the linked
    directories on their way are made real directories, so nothing is written through a link into
    the original tree. Returns the staged script's path. Raises ``ValueError`` for a path outside
    ``package.top``."""
    top = package.top.resolve()
    target = dest_dir / original.resolve().relative_to(top)
    made = working_copy(package.top, dest_dir, budget=budget)
    if linked is not None:
        linked.extend(made.linked)
    text = source if source is not None else read_source(original)
    write_staged(
        dest_dir, top, {original.resolve(): text, **{Path(p).resolve(): t for p, t in (replaced or {}).items()}}
    )
    if source is None:
        if target.is_symlink():
            target.unlink()
        shutil.copyfile(original, target)
    return target
