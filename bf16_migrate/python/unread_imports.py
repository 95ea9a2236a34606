"""A script that imports a module of its tree that cannot be read keeps its switch (BFM113).

Under the legacy switch every floating tensor on the device was bf16, in the script and in the
modules it imports. The codemod reads those modules' code (:mod:`bf16_migrate.tree_modules`:
optimizer factories and classes, the model's own code and its loss) to give the script the
switch's meaning without it. A module that is there but cannot be read (a FIFO, a device, a
symlink loop, a file without read permission) hides what its code does: migrating the script
anyway could remove the switch while the model computes in f32 in that module. So the switch
is kept, and each unreadable module is named (the project finds them:
:func:`bf16_migrate.carriers.resolve.unreadable_tree_imports`, handed in as
:attr:`.tree_facts.TreeFacts.unread`).

VALID (migrated)::

    from model import Net   # model.py is a regular file the run can read

INVALID (kept, BFM113)::

    from model import Net   # model.py is a FIFO, or has no read permission
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from .context import FileContext
from .outcome import Refusal


def refuse_unread_imports(ctx: FileContext, anchors: Sequence[tuple[str, cst.CSTNode]]) -> bool:
    """Whether the script imports a module of its tree that cannot be read
    (``ctx.tree.unread``); if so, a refusal (:attr:`Refusal.UNREAD_IMPORT`) with a BFM113 finding
    at each anchor (a write's key, or the module for a launcher's variable: ``(variable, node)``),
    naming the first such module and why it cannot be read."""
    unread = ctx.tree.unread if ctx.tree is not None else ()
    if not unread:
        return False
    name, path, why = unread[0]
    more = f" (and {len(unread) - 1} more)" if len(unread) > 1 else ""
    for variable, anchor in anchors:
        ctx.outcome.refuse(
            Refusal.UNREAD_IMPORT,
            ctx.report("BFM113", anchor, fixed=False, variable=variable, module=name, path=path, why=why, more=more),
        )
    return True
