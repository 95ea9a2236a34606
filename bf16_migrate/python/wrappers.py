"""Callables a model goes through before the loop calls it: ``torch.compile``, ``torch_xla.compile``,
DDP (transparent: a call of the wrapper is a call of the model) and torch-xla's FSDP (it owns the
model's precision through ``compute_dtype`` and takes FP32 parameters only).

The kinds are data (``rules/torch_api.toml`` ``[model_wrappers]``). A wrap is recognised as
``bound = Wrapper(inner, ...)``: ``inner`` is the module (or an expression building it), ``bound``
the name the loop calls. The wraps linked to a model (the optimizer's ``model.parameters()``), in
either direction and through several wraps (``torch.compile(DDP(net))``), give the names its
forward pass is called by (:func:`aliases`), the module to cast (:func:`module_of`: cast before
the wrap, as PyTorch's DDP documentation asks: parameters must not change after wrapping) and the
FSDP wraps that own its precision (:func:`fsdp_wraps`).

What FSDP's ``compute_dtype=torch.bfloat16`` runs with is measured, not assumed
(``[fsdp_compute_dtype]``): :func:`fsdp_blocker` reads the layers the wrapped model builds and
names the first that failed, or that cannot be told.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from .context import FileContext, findall
from .model_site import same_model

TRANSPARENT = "transparent"
DYNAMO = "dynamo"
FSDP = "fsdp"
UNMEASURED = "unmeasured"
_MODULE_BASES = {"torch.nn.Module", "torch.nn.modules.module.Module"}
_NOT_LAYERS = ("torch.nn.functional.", "torch.nn.init.", "torch.nn.utils.")
_CHAINED = {"to", "cuda", "cpu", "train", "eval", "float", "requires_grad_"}  # Net().to(device).train()


@dataclass(frozen=True)
class Wrap:
    """One ``bound = Wrapper(inner, ...)``: ``kind`` (``"transparent"``, ``"dynamo"``, ``"fsdp"`` or
    ``"unmeasured"``), the wrapper's ``call``, the ``inner`` expression it wraps, the ``bound``
    target (None when the call is not assigned to one name or attribute) and the simple
    ``statement`` holding it."""

    call: cst.Call
    kind: str
    inner: cst.BaseExpression
    bound: cst.BaseExpression | None
    statement: cst.SimpleStatementLine | None


def find_wraps(ctx: FileContext) -> list[Wrap]:
    """Every call of a ``[model_wrappers]`` callable with a first positional argument (or
    ``module=``/``model=``), in file order."""
    return list(ctx.memo(("model wraps",), lambda: _find_wraps(ctx)))


def _find_wraps(ctx: FileContext) -> list[Wrap]:
    wrappers = ctx.rules.torch_api.model_wrappers
    found = []
    for call in ctx.nodes(cst.Call):
        kinds = {wrappers[q] for q in ctx.qualified_names(call.func) if q in wrappers}
        inner = _wrapped_argument(call)
        if not kinds or inner is None:
            continue
        parent = ctx.parent(call)
        bound = None
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            target = parent.targets[0].target
            bound = target if isinstance(target, (cst.Name, cst.Attribute)) else None
        statement = ctx.statement_of(call)
        found.append(
            Wrap(
                call,
                next((kind for kind in (FSDP, UNMEASURED, DYNAMO) if kind in kinds), TRANSPARENT),
                inner,
                bound,
                statement if isinstance(statement, cst.SimpleStatementLine) else None,
            )
        )
    return found


def _wrapped_argument(call: cst.Call) -> cst.BaseExpression | None:
    for i, arg in enumerate(call.args):
        if (arg.keyword is None and i == 0 and not arg.star) or (
            arg.keyword is not None and arg.keyword.value in ("module", "model")
        ):
            return arg.value
    return None


def chain(ctx: FileContext, model: cst.BaseExpression) -> list[Wrap]:
    """The wraps linked to ``model``: those whose ``inner`` or ``bound`` is ``model`` or an
    expression already linked, followed until nothing new links (file order)."""
    known: list[cst.BaseExpression] = [model]
    linked: list[Wrap] = []
    changed = True
    while changed:
        changed = False
        for wrap in find_wraps(ctx):
            if any(wrap is w for w in linked):
                continue
            ends = [e for e in (wrap.inner, wrap.bound) if e is not None]
            if any(same_model(ctx, e, k) for e in ends for k in known):
                linked.append(wrap)
                known.extend(ends)
                changed = True
    return sorted(linked, key=lambda w: ctx.pos(w.call))


def aliases(ctx: FileContext, model: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The other names and attributes ``model``'s forward pass is called by through transparent
    wraps (``compiled = torch.compile(model)``: ``compiled``; ``model = DDP(net)``: ``net``)."""
    out: list[cst.BaseExpression] = []
    for wrap in chain(ctx, model):
        for end in (wrap.inner, wrap.bound):
            if isinstance(end, (cst.Name, cst.Attribute)) and not any(same_model(ctx, end, o) for o in [model, *out]):
                out.append(end)
    return out


def module_of(ctx: FileContext, model: cst.BaseExpression) -> cst.BaseExpression:
    """The module under ``model``'s wraps, the one to cast: follows ``bound -> inner`` while the
    inner is a name or an attribute (``model = DDP(net)``: ``net``); ``model`` itself when it
    is not a wrapper's."""
    current = model
    for _ in range(len(find_wraps(ctx)) + 1):
        step = next(
            (
                w.inner
                for w in find_wraps(ctx)
                if w.bound is not None
                and same_model(ctx, w.bound, current)
                and isinstance(w.inner, (cst.Name, cst.Attribute))
                and not same_model(ctx, w.inner, current)
            ),
            None,
        )
        if step is None:
            return current
        current = step
    return current


def wrap_statements(ctx: FileContext, model: cst.BaseExpression) -> list[cst.SimpleStatementLine]:
    """The statements of ``model``'s transparent wraps: its cast goes before them."""
    return [w.statement for w in chain(ctx, model) if w.kind != FSDP and w.statement is not None]


def dynamo_callers(ctx: FileContext, model: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The names ``model`` is called by through ``torch.compile`` (``[model_wrappers]`` "dynamo"):
    their calls run a captured graph, so their inputs are best cast at the transfer
    (:mod:`.inputs`)."""
    return [w.bound for w in chain(ctx, model) if w.kind == DYNAMO and w.bound is not None]


def fsdp_wraps(ctx: FileContext, model: cst.BaseExpression) -> list[Wrap]:
    """The FSDP wraps linked to ``model``."""
    return [w for w in chain(ctx, model) if w.kind == FSDP]


def unmeasured_wrap(ctx: FileContext) -> Wrap | None:
    """The first wrap of the file by a wrapper whose run with a bf16-cast model was not measured
    (``[model_wrappers]`` "unmeasured": FSDPv2, PyTorch's own FSDP), linked to a model or not: a
    model-casting mode keeps the switch for it (BFM057)."""
    return next((w for w in find_wraps(ctx) if w.kind == UNMEASURED), None)


def unlinked_fsdp(ctx: FileContext, models: list[cst.BaseExpression]) -> Wrap | None:
    """An FSDP wrap of the file linked to none of ``models`` (``return FSDP(m)`` in a helper):
    the model it wraps cannot be told, so no cast may be placed in the file."""
    linked = [w for model in models for w in fsdp_wraps(ctx, model)]
    return next((w for w in find_wraps(ctx) if w.kind == FSDP and not any(w is x for x in linked)), None)


# -- what FSDP's compute_dtype runs with ---------------------------------------------------------


def fsdp_blocker(ctx: FileContext, wraps: list[Wrap], master_weights: bool) -> tuple[str, dict[str, str]] | None:
    """Why ``compute_dtype=torch.bfloat16`` cannot be given to the FSDP ``wraps`` of one model,
    as ``(variant, fields)`` of BFM056, or None when it can: the script passes its own
    ``compute_dtype`` (``"own_setting"``), a layer failed under it in torch-xla 2.9
    (``"layer"``, with the error), the model's layers cannot all be told from the file
    (``"unknown_layers"``), or every layer runs but verify measured the run not equivalent to the
    legacy one (``"not_equivalent"``: ``[fsdp_compute_dtype] not_equivalent``; asked only of a mode
    with FP32 master weights, ``master_weights``, the one that would use compute_dtype)."""
    api = ctx.rules.torch_api.fsdp_compute_dtype
    assert api is not None, "rules.load_rules always reads [fsdp_compute_dtype]"
    for wrap in wraps:
        own = next((a for a in wrap.call.args if a.keyword is not None and a.keyword.value == "compute_dtype"), None)
        if own is not None:
            return "own_setting", {"value": ctx.code(own.value)}
    layers: list[tuple[str, cst.Call]] = []
    for wrap in wraps:
        found = _layers_of(ctx, wrap.inner, set())
        if isinstance(found, str):
            return "unknown_layers", {"what": found}
        layers.extend(found)
    for name, call in layers:
        without_bias = any(
            a.keyword is not None and a.keyword.value == "bias" and m.matches(a.value, m.Name("False"))
            for a in call.args
        )
        if name in api.runs or name in api.parameterless or (name in api.runs_without_bias and without_bias):
            continue
        if name in api.fails:
            return "layer", {"layer": ctx.code(call), "error": api.fails[name]}
        return "unknown_layers", {"what": f"`{ctx.code(call.func)}` (not measured)"}
    if master_weights and api.not_equivalent is not None:
        return "not_equivalent", {"measured": api.not_equivalent}
    return None


def _layers_of(ctx: FileContext, expr: cst.BaseExpression, seen: set[int]) -> list[tuple[str, cst.Call]] | str:
    """The ``torch.nn`` layers (qualified name, constructor call) the module ``expr`` builds:
    through the assignments of a name, ``Net(...).to(device)`` chains, classes and functions
    defined in the file and ``nn.Sequential`` arguments. A string saying what could not be
    followed instead, when something cannot."""
    if id(expr) in seen:
        return []
    seen.add(id(expr))
    if isinstance(expr, cst.Name):
        values = _assigned_values(ctx, expr)
        if not values:
            return f"`{expr.value}` (not built in this file)"
        layers: list[tuple[str, cst.Call]] = []
        for value in values:
            found = _layers_of(ctx, value, seen)
            if isinstance(found, str):
                return found
            layers.extend(found)
        return layers
    while isinstance(expr, cst.Call) and m.matches(expr.func, m.Attribute(value=m.Call())):
        assert isinstance(expr.func, cst.Attribute), "matched above"
        if expr.func.attr.value not in _CHAINED:
            break
        expr = expr.func.value
    if not isinstance(expr, cst.Call):
        return f"`{ctx.code(expr)}`"
    return _call_layers(ctx, expr, seen)


def _call_layers(ctx: FileContext, call: cst.Call, seen: set[int]) -> list[tuple[str, cst.Call]] | str:
    qualified = ctx.qualified_names(call.func)
    torch_nn = sorted(q for q in qualified if q.startswith("torch.nn.") and not q.startswith(_NOT_LAYERS))
    if torch_nn:
        layers = [(torch_nn[0], call)]
        for arg in call.args:  # nn.Sequential(nn.Linear(...), ...)
            if isinstance(arg.value, cst.Call):
                found = _call_layers(ctx, arg.value, seen)
                if isinstance(found, str):
                    return found
                layers.extend(found)
        return layers
    if any(q in ctx.rules.torch_api.model_wrappers for q in qualified):  # an inner FSDP(...) of the model
        inner = _wrapped_argument(call)
        return [] if inner is None else _layers_of(ctx, inner, seen)
    definition = _local_definition(ctx, call.func)
    if isinstance(definition, cst.ClassDef):
        return _class_layers(ctx, definition, seen)
    if isinstance(definition, cst.FunctionDef):
        returned = [r.value for r in findall(definition.body, m.Return(), ctx.index) if r.value is not None]
        if not returned:
            return f"`{ctx.code(call.func)}` (returns no module)"
        built: list[tuple[str, cst.Call]] = []
        for value in returned:
            found = _layers_of(ctx, value, seen)
            if isinstance(found, str):
                return found
            built.extend(found)
        return built
    return f"`{ctx.code(call.func)}` (not defined in this file)"


def _class_layers(ctx: FileContext, cls: cst.ClassDef, seen: set[int]) -> list[tuple[str, cst.Call]] | str:
    if id(cls) in seen:
        return []
    seen.add(id(cls))
    layers: list[tuple[str, cst.Call]] = []
    for base in cls.bases:
        if ctx.qualified_names(base.value) & _MODULE_BASES:
            continue
        definition = _local_definition(ctx, base.value)
        if not isinstance(definition, cst.ClassDef):
            return f"`{ctx.code(base.value)}`, a base class of `{cls.name.value}` (not defined in this file)"
        found = _class_layers(ctx, definition, seen)
        if isinstance(found, str):
            return found
        layers.extend(found)
    for call in findall(cls.body, m.Call(), ctx.index):
        qualified = ctx.qualified_names(call.func)
        is_layer = any(q.startswith("torch.nn.") and not q.startswith(_NOT_LAYERS) for q in qualified)
        if is_layer or isinstance(_local_definition(ctx, call.func), cst.ClassDef):
            found = _call_layers(ctx, call, seen)
            if isinstance(found, str):
                return found
            layers.extend(found)
        elif _callee_name(call.func)[:1].isupper() and not qualified & ctx.rules.torch_api.model_wrappers.keys():
            return f"`{ctx.code(call.func)}` in `{cls.name.value}` (not defined in this file)"
    return layers


def _callee_name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


def _assigned_values(ctx: FileContext, name: cst.Name) -> list[cst.BaseExpression]:
    """The values assigned to ``name`` in its scope, except the wraps' own calls (``model =
    FSDP(model)`` rebinds the module's name to its wrapper)."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return []
    wraps = {id(w.call) for w in find_wraps(ctx)}
    values = []
    for a in scope[name.value]:
        if not isinstance(a, Assignment) or not isinstance(a.node, cst.Name):
            continue
        target = ctx.parent(a.node)
        assign = ctx.parent(target)
        if isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign) and id(assign.value) not in wraps:
            values.append(assign.value)
    return values


def _local_definition(ctx: FileContext, func: cst.BaseExpression) -> cst.ClassDef | cst.FunctionDef | None:
    """The class or function of this file ``func`` (a name) is bound to, when it is one."""
    if not isinstance(func, cst.Name):
        return None
    scope = ctx.scopes.get(func)
    if scope is None:
        return None
    found = [a.node for a in scope[func.value] if isinstance(a, Assignment)]
    if len(found) == 1 and isinstance(found[0], (cst.ClassDef, cst.FunctionDef)):
        return found[0]
    return None
