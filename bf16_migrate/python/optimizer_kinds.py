"""How an optimizer class written in a file takes FP32 master weights (gpu-compatible mode):
through ``with_fp32_master_weights`` (:data:`.tree_types.SUBCLASS`: torch.optim's classes, the
known library subclasses of ``rules/torch_api.toml``, a subclass defined in the file or in its
tree), through torch-xla's ZeRO-1 own ``optimizer_dtype`` (:data:`.tree_types.ZERO1`,
``torch_xla/distributed/zero_redundancy_optimizer.py``), or not at all (``""``).

Asked by the optimizer side of the migration (:mod:`.optimizers`) and by the reading of a tree
module's factories (:mod:`.tree_facts`), a floor below both.
"""

from __future__ import annotations

import libcst as cst

from .context import FileContext
from .tree_types import SUBCLASS, ZERO1


def local_optimizer_classes(ctx: FileContext) -> set[str]:
    """Classes defined in this file that subclass ``torch.optim.Optimizer`` (or a stock
    optimizer): the master-weights subclass wraps their ``step`` as it does a stock one's."""
    names: set[str] = set()
    bases_ok = ctx.rules.torch_api.stock_optimizers | {"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"}
    for cls in ctx.nodes(cst.ClassDef):
        if any(ctx.qualified_names(b.value) & bases_ok for b in cls.bases):
            names.add(cls.name.value)
    return names


def optimizer_kind(ctx: FileContext, func: cst.BaseExpression, local: set[str]) -> str:
    """:data:`SUBCLASS` for a class ``with_fp32_master_weights`` can subclass, :data:`ZERO1` for
    torch-xla's ZeRO-1, ``""`` otherwise (also for anything that is no optimizer class);
    ``local``: the file's own optimizer classes (:func:`local_optimizer_classes`)."""
    api = ctx.rules.torch_api
    qualified = ctx.qualified_names(func)
    if qualified & (api.stock_optimizers | api.optimizer_subclasses):
        return SUBCLASS
    if isinstance(func, cst.Name) and func.value in local:
        return SUBCLASS
    if ctx.tree is not None and ctx.tree.optimizer_class(qualified) is not None:
        return SUBCLASS
    if qualified & api.zero_redundancy_optimizers:
        return ZERO1
    return ""


def master_weights_kind(ctx: FileContext, func: cst.BaseExpression) -> str:
    """How an optimizer class written ``func`` in this file takes FP32 master weights
    (:data:`SUBCLASS`, :data:`ZERO1`, ``""``): torch.optim's and the known library subclasses,
    classes defined in the file, and the tree's own (:class:`.tree_types.TreeFacts`)."""
    return optimizer_kind(ctx, func, local_optimizer_classes(ctx))
