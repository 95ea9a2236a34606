"""What a name of a file is bound to, read through libcst's scopes: the classes and functions of
the file a name denotes (:func:`definitions`), the values of the plain assignments that bind it
(:func:`assigned_values`) and those assigned to ``self.<attr>`` in a class (:func:`self_assigned`).

A floor below the readings of a model's and a loss's code (:mod:`.model_reach`,
:mod:`.loss_reach`, :mod:`.tensor_flow`, :mod:`.submodule_inputs`, :mod:`.device_modules`), which
all ask it and import none of each other for it.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from .context import FileContext, findall


def definitions(ctx: FileContext, expr: cst.BaseExpression) -> list[cst.ClassDef | cst.FunctionDef]:
    """The classes and functions of the file the name ``expr`` is bound to (none for anything else)."""
    if not isinstance(expr, cst.Name):
        return []
    scope = ctx.scopes.get(expr)
    if scope is None:
        return []
    bindings = scope[expr.value]
    if not bindings:
        return []
    # once per set of bindings (a name bound many times, ``import torch`` in each script of a
    # file of many, is asked about at each of its uses); the set is kept alive with the answer
    _, found = ctx.memo(
        ("definitions", id(bindings), len(bindings)),
        lambda: (
            bindings,
            [
                a.node
                for a in bindings
                if isinstance(a, Assignment) and isinstance(a.node, (cst.ClassDef, cst.FunctionDef))
            ],
        ),
    )
    return list(found)


def self_assigned(ctx: FileContext, cls: cst.ClassDef, attr: str) -> list[cst.BaseExpression]:
    """The values assigned to ``self.<attr>`` anywhere in ``cls`` (its methods)."""
    assigns = ctx.memo(("assignments in", cls), lambda: findall(cls, m.Assign(), ctx.index))
    pattern = m.Attribute(value=m.Name("self"), attr=m.Name(attr))
    return [a.value for a in assigns if any(m.matches(t.target, pattern) for t in a.targets)]


def assigned_values(ctx: FileContext, name: cst.Name) -> list[cst.BaseExpression]:
    """The values of the plain assignments ``name = value`` that bind ``name`` where it is read."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return []
    values: list[cst.BaseExpression] = []
    for a in scope[name.value]:
        if not isinstance(a, Assignment):
            continue
        target = ctx.parent(a.node)
        assign = ctx.parent(target)
        if isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign):
            values.append(assign.value)
    return values


def assigned_value(ctx: FileContext, target: cst.CSTNode) -> cst.BaseExpression | None:
    """The value assigned to the name ``target`` (a binding's node): the whole value of
    ``target = value``, or the matching element of ``a, target = x, y`` (as many names as values,
    none starred); None for any other binding."""
    parent = ctx.parent(target)
    if isinstance(parent, cst.AssignTarget):
        assign = ctx.parent(parent)
        return assign.value if isinstance(assign, cst.Assign) and len(assign.targets) == 1 else None
    element = parent
    names = ctx.parent(element) if isinstance(element, cst.Element) else None
    holder = ctx.parent(names) if isinstance(names, cst.Tuple) else None
    assign = ctx.parent(holder) if isinstance(holder, cst.AssignTarget) else None
    if not (
        isinstance(names, cst.Tuple)
        and isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.value, cst.Tuple)
        and len(assign.value.elements) == len(names.elements)
    ):
        return None
    index = next(i for i, e in enumerate(names.elements) if e is element)
    value = assign.value.elements[index]
    return None if isinstance(value, cst.StarredElement) else value.value


def unpacked_value(ctx: FileContext, target: cst.CSTNode) -> cst.BaseExpression | None:
    """The whole value a name is unpacked from, ``a, target = value`` (one target, ``value`` not a
    tuple display, no starred name): a model's outputs (``logits, labels = model(x)``), a batch's
    parts; None for any other binding."""
    element = ctx.parent(target)
    names = ctx.parent(element) if isinstance(element, cst.Element) else None
    holder = ctx.parent(names) if isinstance(names, (cst.Tuple, cst.List)) else None
    assign = ctx.parent(holder) if isinstance(holder, cst.AssignTarget) else None
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(names, (cst.Tuple, cst.List))):
        return None
    if isinstance(assign.value, cst.Tuple) or any(isinstance(e, cst.StarredElement) for e in names.elements):
        return None
    return assign.value


_DEFAULT_DTYPE = "torch.get_default_dtype"
_SET_DEFAULT_DTYPE = "torch.set_default_dtype"


def dtype_names(ctx: FileContext, expr: cst.BaseExpression, depth: int = 0) -> frozenset[str]:
    """The qualified names of the dtype ``expr`` names: its own (``torch.float32``); for
    ``torch.get_default_dtype()``, ``torch.float32`` (torch's default: torch 2.9 docs,
    "torch.get_default_dtype"), or the dtype the file's ``torch.set_default_dtype(...)`` calls all
    set; for a name bound only to such expressions (``DT = torch.float32`` at module level), theirs.
    Empty when it cannot be told. Found by a hunt: both spellings were f32 the rewrite did not see."""
    if isinstance(expr, cst.Call):
        if expr.args or _DEFAULT_DTYPE not in ctx.qualified_names(expr.func):
            return frozenset()
        set_to = [
            call.args[0].value
            for call in ctx.nodes(cst.Call)
            if len(call.args) == 1 and _SET_DEFAULT_DTYPE in ctx.qualified_names(call.func)
        ]
        if not set_to:
            return frozenset({"torch.float32"})
        found = {frozenset(ctx.qualified_names(value)) for value in set_to}
        return next(iter(found)) if len(found) == 1 else frozenset()
    names = ctx.qualified_names(expr)
    if any(name.startswith("torch.") for name in names):
        return frozenset(names)
    if isinstance(expr, cst.Name) and depth < 3:
        values = assigned_values(ctx, expr)
        found = {dtype_names(ctx, value, depth + 1) for value in values}
        if len(found) == 1:
            return next(iter(found))
    return frozenset()
