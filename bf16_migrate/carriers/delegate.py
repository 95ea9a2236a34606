"""A thin entry script that hands its training to a module of the tree.

``python run.py`` where ``run.py`` is ``import train; train.main(steps=30)``, or ``python -c "import
train_mlm; train_mlm.main()"`` in a launcher: the entry itself makes no tensor and builds no optimizer, so
the codemod finds no model in it (BFM010, BFM112 or BFM110 before). The launch's settings are in force
for the module it imports, which builds the model and its optimizer: the launch is read as the module's.

Told from the code alone, and only where nothing else could be at work: the entry names ``torch`` or
``torch_xla`` in its imports at most (never in a statement: a tensor made after ``main()`` returns would
stay float32 once the switch is gone), and exactly one module of the tree it imports, one level, builds
an optimizer (its bytes name ``optim`` and ``.parameters(``). Anything else keeps the launch the entry's.
"""

from __future__ import annotations

import ast
from pathlib import Path

from .resolve import named_tree_imports

__all__ = ["delegated_module"]

_TORCH_ROOTS = ("torch", "torch_xla")


def delegated_module(current: Path, text: str, root: Path) -> Path | None:
    """The one module of the tree the entry ``text`` (the file ``current``, or code run from its
    directory) hands its training to, or None (see the module docstring). Reads each imported module's
    bytes once; never raises for an unreadable module (it is no candidate)."""
    if b"optim" in text.encode("utf-8", "replace") and ".parameters(" in text:
        return None  # the entry builds an optimizer itself: its own launch
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    if _uses_torch_itself(tree):
        return None
    found: set[Path] = set()
    for _name, path in named_tree_imports(current, tree, root):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if b"optim" in data and b".parameters(" in data:
            found.add(path.resolve())
    return _as_typed(next(iter(found))) if len(found) == 1 else None


def _as_typed(path: Path) -> Path:
    """``path`` relative to the current directory when it lies under it, as a launch's script is named
    (messages name no absolute path the user did not type)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


_PROCESS_LAUNCHES = frozenset({"torch_xla.distributed.xla_multiprocessing.spawn", "torch_xla.launch"})
"""torch-xla's launches of a function in processes of its own (torch_xla/distributed/xla_multiprocessing.py
``spawn``, torch_xla/torch_xla.py ``launch``): they run the function they are handed and make no tensor
themselves, so an entry that only starts its module's ``_mp_fn`` with them hands its training over."""


def _uses_torch_itself(tree: ast.AST) -> bool:
    """Whether a statement of ``tree`` (not an import) reads a name bound to ``torch``, ``torch_xla`` or one
    of their submodules or members (``xm.xla_device()``, ``torch.ones(...)``), other than to call one of
    :data:`_PROCESS_LAUNCHES` (``xmp.spawn(_mp_fn, ...)``)."""
    bound: dict[str, str] = {}  # the name -> what it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in _TORCH_ROOTS:
                    bound[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in _TORCH_ROOTS:
            bound.update({alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names})
    launches: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in bound:
            if f"{bound[func.value.id]}.{func.attr}" in _PROCESS_LAUNCHES:
                launches.add(id(func.value))
        elif isinstance(func, ast.Name) and bound.get(func.id) in _PROCESS_LAUNCHES:
            launches.add(id(func))
    return any(isinstance(node, ast.Name) and node.id in bound and id(node) not in launches for node in ast.walk(tree))
