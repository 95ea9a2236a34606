"""The tensors an optimizer is built over that are no module's parameters: a script's own leaves.

``img = content.clone().requires_grad_(True)`` then ``torch.optim.Adam([img])`` (an image optimized
through a frozen network), ``z = torch.nn.Parameter(z0.to(device))`` (a latent code), ``log_alpha =
torch.zeros(()).to(device).requires_grad_()`` (a learned temperature): under ``XLA_USE_BF16`` the
tensor the leaf is copied from was bf16 on the device (torch-xla ``torch_xla/csrc/dtype.cpp``,
``MaybeDowncastToXlaDeviceType``), so the leaf, its gradient and the optimizer's state were bf16.
``model.to(torch.bfloat16)`` casts no such leaf, and a leaf left f32 is updated in f32 where the
legacy run updated it in bf16 (verify's trace: BFM201 at the optimizer's step). A tensor whose
copies (:data:`_COPIES`, ``torch.nn.Parameter``) an optimizer is built over is therefore made where
it comes to the device, as the switch made it (:mod:`.device_tensors`), and gpu-compatible's FP32
master weights wrap that optimizer too (:func:`.optimizers.leaf_optimizers`).

Only what the file writes: an optimizer of ``rules/torch_api.toml`` (``stock_optimizers``,
``closure_optimizers``, ``optimizer_subclasses``) built over a list or tuple written in the call,
whose items are names.
"""

from __future__ import annotations

import libcst as cst

from .bindings import assigned_values
from .context import FileContext

__all__ = ["leaf_source", "optimized_leaf_names", "becomes_optimized_leaf"]

_COPIES = frozenset({"clone", "detach", "requires_grad_", "contiguous", "detach_"})
"""Tensor methods whose result is the tensor itself or a copy of it in its dtype: the leaf keeps the
dtype of what it is copied from (as a scale by a number literal does, ``t * 0.1``)."""
_PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})


def leaf_source(ctx: FileContext, expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` without the copies around it: ``t`` of ``t.clone().requires_grad_(True)``, of
    ``torch.nn.Parameter(t)``, of ``t.detach().clone()``; ``expr`` itself when it is none."""
    inner = _copied(ctx, expr)
    while inner is not None:
        expr, inner = inner, _copied(ctx, inner)
    return expr


def _copied(ctx: FileContext, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """What one copy (:data:`_COPIES`, ``torch.nn.Parameter``) ``expr`` is copies; None if it is none."""
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in _COPIES:
        return func.value
    if expr.args and expr.args[0].keyword is None and ctx.qualified_names(func) & _PARAMETER:
        return expr.args[0].value
    return None


def optimized_leaf_names(ctx: FileContext) -> frozenset[int]:
    """Ids of the names (their nodes, where they are read) written as items of the parameter list of
    an optimizer call of the file (``torch.optim.Adam([img, z], lr=...)``, ``params=(a, b)``),
    indexed once per file."""

    def index() -> frozenset[int]:
        api = ctx.rules.torch_api
        optimizers = frozenset(api.stock_optimizers) | frozenset(api.closure_optimizers)
        optimizers |= frozenset(api.optimizer_subclasses)
        found: set[int] = set()
        for call in ctx.nodes(cst.Call):
            if not call.args or not ctx.qualified_names(call.func) & optimizers:
                continue
            first = call.args[0]
            params = first.value if first.keyword is None or first.keyword.value == "params" else None
            if isinstance(params, (cst.List, cst.Tuple)):
                found.update(id(e.value) for e in params.elements if isinstance(e.value, cst.Name))
        return frozenset(found)

    return ctx.memo(("optimized leaf names",), index)


def becomes_optimized_leaf(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """Whether the tensor ``node`` gives becomes, through copies only (:data:`_COPIES`,
    ``torch.nn.Parameter``), the value of a name bound by a plain assignment that an optimizer of
    the file is built over (:func:`optimized_leaf_names`), directly (``img = t.requires_grad_()``)
    or through a name it is bound to first (``content = t``, then ``img = content.clone()...``)."""
    listed = optimized_leaf_names(ctx)
    if not listed:
        return False
    for name in _bound_names(ctx, node):
        if _listed(ctx, name, listed):
            return True
        for read in _reads(ctx, name):
            if any(_listed(ctx, leaf, listed) for leaf in _bound_names(ctx, read)):
                return True
    return False


def _bound_names(ctx: FileContext, node: cst.BaseExpression) -> list[cst.Name]:
    """The names a plain assignment binds to ``node`` or to a copy of it (``x = node.clone()``)."""
    while True:
        parent = ctx.parent(node)
        if isinstance(parent, cst.BinaryOperation) and _scaling(parent, node):
            node = parent  # `t.to(device) * 0.1`: an initial scale keeps the dtype
            continue
        call = ctx.parent(parent) if isinstance(parent, (cst.Attribute, cst.Arg)) else None
        if not isinstance(call, cst.Call) or _copied(ctx, call) is not node:
            break
        node = call
    assign = ctx.parent(node)
    if not isinstance(assign, cst.Assign) or assign.value is not node:
        return []
    return [t.target for t in assign.targets if isinstance(t.target, cst.Name)]


def _scaling(parent: cst.CSTNode | None, node: cst.CSTNode) -> bool:
    """Whether ``parent`` multiplies or divides ``node`` by a number literal (its result keeps the
    tensor's dtype)."""
    if not isinstance(parent, cst.BinaryOperation) or not isinstance(parent.operator, (cst.Multiply, cst.Divide)):
        return False
    other = parent.right if parent.left is node else parent.left
    return isinstance(other, (cst.Integer, cst.Float)) and (
        parent.left is node or isinstance(parent.operator, cst.Multiply)
    )


def _reads(ctx: FileContext, name: cst.Name) -> list[cst.Name]:
    scope = ctx.scopes.get(name)
    reads: list[cst.Name] = []
    for binding in scope[name.value] if scope is not None else ():
        if getattr(binding, "node", None) is name:
            reads += [a.node for a in getattr(binding, "references", ()) if isinstance(a.node, cst.Name)]
    return reads


def _listed(ctx: FileContext, name: cst.Name, listed: frozenset[int]) -> bool:
    """Whether a read of the name ``name`` binds is an item of an optimizer's parameter list, every
    binding of it reaching that read being a plain assignment (:func:`.bindings.assigned_values`)."""
    return any(id(read) in listed and assigned_values(ctx, read) for read in _reads(ctx, name))
