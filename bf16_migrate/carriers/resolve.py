"""Find the file a launcher starts, in the tree bf16-migrate was given.

Rules (each a fact about how the path is looked up, or a refusal to guess):

* A path holding ``$``, a backquote, ``~`` or a glob is computed: not resolved (reported).
* A relative path is looked up against the launcher's directory, the tree's root and the
  current directory (a launch script is usually run from the repository root); the candidates
  found must all be the same file.
* A container path (``/app/src/train.py``, or a relative one not found) is matched by its
  longest suffix that exists under those directories (``src/train.py``), since images copy the
  build context under their ``WORKDIR``; two different files matching the same suffix is
  ambiguous (reported).
* ``python -m pkg.train`` is ``pkg/train.py`` or ``pkg/train/__main__.py`` under the same
  directories (or ``src/``, the src layout).
* A resolved file must lie inside the tree.

:func:`uses_torch` tells whether a launched script can create an XLA tensor at all: it or a
module of the tree it imports (followed through ``import`` statements, at most 200 files) names
``torch`` or imports a framework built on it (transformers, optimum, accelerate, lightning:
``rules/frameworks.toml``). A script that does not is unaffected by the legacy variables.
"""

from __future__ import annotations

import ast
import errno
import os
import re
import stat
from pathlib import Path, PurePosixPath

from ..commit import describe_file_type
from ..rules import load_rules


def _inside(path: Path, roots: list[Path]) -> bool:
    rp = path.resolve()
    return any(rp == r.resolve() or r.resolve() in rp.parents for r in roots)


def resolve_script(
    word: str, launcher: Path, root: Path, extra: tuple[Path, ...] = ()
) -> tuple[Path | None, str | None]:
    """``(file, None)`` or ``(None, why not)`` for the script ``word`` started by ``launcher``."""
    if any(c in word for c in "$`~*?["):
        return None, f"its path is computed ({word})"
    bases = _bases(launcher, root, extra)
    p = PurePosixPath(word)
    # the path as written (relative paths only), then ever shorter suffixes of it (a container
    # path such as /workspace/src/train.py matched by src/train.py); the first that names
    # exactly one file wins, several is ambiguous
    parts = [x for x in p.parts if x not in ("/", ".")]
    tries = ([(p, "names several files")] if not p.is_absolute() else []) + [
        (PurePosixPath(*parts[k:]), "matches several files by its path") for k in range(1, len(parts))
    ]
    found: dict[Path, Path] = {}
    for relative, how in tries:
        for base in bases:
            cand = base / relative
            if os.path.isfile(cand) and _inside(cand, bases):
                found.setdefault(cand.resolve(), cand)
        if len(found) == 1:
            return _rel(next(iter(found.values()))), None
        if len(found) > 1:
            return None, f"{word} {how} ({', '.join(str(_rel(f)) for f in found.values())})"
    return None, f"{word} is not in the tree ({root})"


def resolve_module(
    module: str, launcher: Path, root: Path, extra: tuple[Path, ...] = ()
) -> tuple[Path | None, str | None]:
    """``python -m module``: ``(file, None)`` or ``(None, why not)``."""
    if any(c in module for c in "$`~*?[/"):
        return None, f"the module name is computed ({module})"
    rel = PurePosixPath(*module.split("."))
    bases = _bases(launcher, root, extra)
    bases += [b / "src" for b in bases]
    found: dict[Path, Path] = {}
    for base in bases:
        for cand in (base / rel.with_suffix(".py") if rel.name else None, base / rel / "__main__.py"):
            if cand is not None and os.path.isfile(cand):
                found.setdefault(cand.resolve(), cand)
    if len(found) == 1:
        return _rel(next(iter(found.values()))), None
    if len(found) > 1:
        return None, f"module {module} is found in several places"
    return None, f"module {module} is not in the tree ({root}); an installed package cannot be migrated here"


def _bases(launcher: Path, root: Path, extra: tuple[Path, ...]) -> list[Path]:
    bases: list[Path] = []
    cwd = Path.cwd()
    for b in (launcher.parent, *extra, root, cwd if _inside(launcher, [cwd]) else None):
        if b is not None and os.path.isdir(b) and all(b.resolve() != x.resolve() for x in bases):
            bases.append(b)
    return bases


def _rel(path: Path) -> Path:
    """``path`` as found (a launcher's directory joined with the written path), relative to
    the current directory when it lies under it (messages never name a temporary absolute
    path the user did not type)."""
    path = Path(path)
    if path.is_absolute():
        try:
            return path.relative_to(Path.cwd())
        except ValueError:
            return path
    return path


def uses_torch(path: Path, root: Path, limit: int = 200) -> bool:
    """True when ``path`` or a module of the tree it imports names ``torch`` (see the module
    docstring). A file that cannot be read or parsed counts as using torch (never guessed away)."""
    seen: set[Path] = set()
    todo = [path]
    while todo and len(seen) < limit:
        current = todo.pop()
        key = current.resolve()
        if key in seen:
            continue
        seen.add(key)
        try:
            data = current.read_bytes()
        except OSError:
            return True
        if b"torch" in data:
            return True
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            return True
        if _imports_framework(tree):
            return True
        todo.extend(tree_imports(current, tree, root, path.parent))
    return False


def _imports_framework(tree: ast.AST) -> bool:
    """Whether ``tree`` imports a framework built on torch (``rules/frameworks.toml``
    ``modules``: transformers, optimum, accelerate, lightning...)."""
    modules = set().union(*(f.modules for f in load_rules().frameworks))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(a.name.split(".")[0] in modules for a in node.names):
                return True
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] in modules:
                return True
    return False


def tree_imports(current: Path, tree: ast.AST, root: Path, script_dir: Path | None = None) -> list[Path]:
    """The files of the tree that the ``import`` statements of ``tree`` (parsed from the file
    ``current``) name, wherever they sit in it (inside functions and ``try`` blocks too):
    ``import a.b`` / ``from a.b import c`` as ``a/b.py``, ``a/b/__init__.py`` or ``a/b/c.py``
    in the directory of the script that was started (``script_dir``, default ``current``'s:
    Python puts it first on ``sys.path``), at ``root`` or under ``root/src``; relative imports
    from ``current``'s package. Modules that are not files of the tree are left out."""
    return [path for _, path in named_tree_imports(current, tree, root, script_dir)]


def named_tree_imports_of(
    current: Path, text: str, root: Path, script_dir: Path | None = None
) -> list[tuple[str, Path]]:
    """:func:`named_tree_imports` of the source ``text`` of ``current`` ([] when it does not
    parse), parsed only when its bytes could import a module of the tree: a relative import,
    or a name after ``import`` or ``from`` whose first part is a file or directory where
    :func:`named_tree_imports` looks (:func:`may_import_tree`). A script that imports only
    installed packages (``os``, ``torch``) is not parsed here: the codemod parses it once."""
    if not may_import_tree(current, text, root, script_dir):
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return named_tree_imports(current, tree, root, script_dir)


# ``from MODULE`` (with its leading dots), and what follows ``import`` to the end of the logical
# line (backslash continuations joined first): every name an import statement can start with
# is in one of them, wherever the statement is (after ``;`` or ``:``, in a function, in
# parentheses); names in strings and comments only make the check answer yes more often
_FROM = re.compile(r"\bfrom\s+(\.*)\s*([\w.]*)")
_IMPORT = re.compile(r"\bimport\b([^\n;#]*)")
_WORD = re.compile(r"[^\W\d]\w*")


def may_import_tree(current: Path, text: str, root: Path, script_dir: Path | None = None) -> bool:
    """False when no import statement of ``text`` can name a module of the tree (see
    :func:`named_tree_imports_of`): every first part of a name it imports is neither a
    ``.py`` file nor a directory in the script's directory, ``root`` or ``root/src``, and the
    first part of the module of each relative import (``from .utils.hub import x``: every file
    it can load is ``utils.py`` or under ``utils/``, in ``current``'s package or the one its dots
    climb to) is neither there. True otherwise (the statements are then parsed); always for a
    relative import of no module (``from . import x``, whose names may span lines)."""
    joined = text.replace("\\\r\n", " ").replace("\\\n", " ").replace("\\\r", " ")
    firsts: set[str] = set()
    for match in _FROM.finditer(joined):
        if match[1]:  # a relative import: from the package of ``current`` (or one its dots climb to)
            module = match[2]
            if not module or module == "import" or module.startswith("."):
                return True  # ``from . import x`` (``[\w.]*`` took the keyword), or dots apart
            base = current.parent
            for _ in range(len(match[1]) - 1):
                base = base.parent
            first = module.split(".")[0]
            if os.path.lexists(base / f"{first}.py") or os.path.isdir(base / first):
                return True
            continue
        firsts.add(match[2].split(".")[0])
    for match in _IMPORT.finditer(joined):
        firsts.update(_WORD.findall(match[1]))
    # the paths as strings: pathlib's joins were most of the check's time (two a name and folder, for every script)
    # (once each: the script's folder is often the root)
    bases = dict.fromkeys([os.fspath(script_dir or current.parent), os.fspath(root), os.path.join(root, "src")])
    join, lexists, isdir = os.path.join, os.path.lexists, os.path.isdir
    # lexists: a module that is there but cannot be read (a FIFO, a dangling symlink) must be looked at too;
    # os.path never raises (pathlib's is_dir does, under a directory without its execute bit)
    return any(
        lexists(join(base, f"{name}.py")) or isdir(join(base, name)) for name in firsts if name for base in bases
    )


def named_tree_imports(
    current: Path, tree: ast.AST, root: Path, script_dir: Path | None = None
) -> list[tuple[str, Path]]:
    """:func:`tree_imports` with the dotted name each file is imported under, as libcst's
    qualified names spell it (``optim`` for ``from optim import f``, ``.optim`` for ``from
    .optim import f`` and ``from . import optim``, ``pkg.optim`` for ``import pkg.optim``)."""
    return [(name, cand) for name, cand in _import_candidates(current, tree, root, script_dir) if os.path.isfile(cand)]


def unreadable_tree_imports(
    current: Path, tree: ast.AST, root: Path, script_dir: Path | None = None
) -> list[tuple[str, Path, str]]:
    """The files of the tree the imports of ``tree`` name (as :func:`named_tree_imports` finds
    them) that are there but cannot be read: ``(name, path, why)`` for a FIFO, a device or socket,
    a symlink loop or a dangling symlink, a file without read permission. Python cannot import
    them either (a FIFO blocks it), and what their code does under the switch cannot be told."""
    found: list[tuple[str, Path, str]] = []
    for name, cand in _import_candidates(current, tree, root, script_dir):
        why = _unreadable(cand)
        if why is not None and all(cand != path for _, path, _ in found):
            found.append((name, cand, why))
    return found


def _unreadable(path: Path) -> str | None:
    """Why the module file ``path`` cannot be read, or None when it can or is not there at all."""
    if not os.path.lexists(path):
        return None
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symlink loop"
        return f"a dangling symlink to {os.readlink(path)}" if os.path.islink(path) else exc.strerror
    if stat.S_ISDIR(info.st_mode):
        return None
    if not stat.S_ISREG(info.st_mode):
        return f"not a regular file ({describe_file_type(info.st_mode)})"
    try:
        os.close(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)))
    except OSError as exc:
        return exc.strerror
    return None


def _import_candidates(current: Path, tree: ast.AST, root: Path, script_dir: Path | None):
    """Each ``(name, path)`` an import of ``tree`` may load from the tree, in the order Python's
    search of :func:`tree_imports` tries them, whether or not a file is there."""
    bases = [script_dir or current.parent, root, root / "src"]
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = current.parent
                for _ in range(node.level - 1):
                    base = base.parent
                mod = node.module or ""
                dots = "." * node.level
                rel = PurePosixPath(*mod.split(".")) if mod else PurePosixPath(".")
                if mod:
                    yield dots + mod, base / rel.with_suffix(".py")
                yield dots + mod, base / rel / "__init__.py"
                for alias in node.names:
                    yield (f"{dots}{mod}.{alias.name}" if mod else dots + alias.name), base / rel / f"{alias.name}.py"
                continue
            names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if not name:
                continue
            rel = PurePosixPath(*name.split("."))
            for b in bases:
                yield name, b / rel.with_suffix(".py")
                yield name, b / rel / "__init__.py"
