"""Find the models of a training script and where they are used.

A model is an object whose ``.parameters()`` feed an optimizer (design.md). From each optimizer
construction we take the model expression (``model``, ``self.model``), the statement before which
a cast must go (the cast goes before the optimizer is built: semantics.md, "What breaks" 5), the
places the model is called, the loss computed from its output, and the loss accumulators.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from .context import FileContext

_OPTIMIZER_HINTS = ("optim", "sgd", "adam", "lamb", "lion", "adafactor", "rmsprop", "adagrad")


@dataclass
class OptimizerSite:
    """One optimizer construction ``Opt(<model>.parameters(), ...)``.

    ``model`` is the model expression (None when the parameters do not come from exactly one
    ``X.parameters()``), ``statement`` the simple statement line holding the call.
    """

    call: cst.Call
    statement: cst.SimpleStatementLine | None
    model: cst.BaseExpression | None
    qualified: set[str]


@dataclass
class ModelCall:
    """One call of a model: ``call`` is ``model(...)``; ``outputs`` the names bound to its
    result; ``losses`` the loss calls computed from those outputs (or enclosing the call);
    ``loss_names`` the names the losses are assigned to."""

    call: cst.Call
    statement: cst.SimpleStatementLine | None
    outputs: list[str] = field(default_factory=list)
    losses: list[cst.Call] = field(default_factory=list)
    loss_statements: list[cst.SimpleStatementLine] = field(default_factory=list)
    loss_names: list[str] = field(default_factory=list)


def _parameters_receivers(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    return [
        c.func.value
        for c in m.findall(expr, m.Call(func=m.Attribute(attr=m.Name("parameters"))))
    ]


def _callee_name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


def _unwrap_factory(func: cst.BaseExpression) -> cst.BaseExpression:
    """The optimizer class inside ``with_fp32_master_weights(torch.optim.AdamW)`` or
    ``(with_fp32_master_weights(SGD) if flag else SGD)``, as the codemod emits them."""
    while True:
        if isinstance(func, cst.IfExp):
            func = func.orelse
        elif isinstance(func, cst.Call) and len(func.args) == 1 and func.args[0].keyword is None:
            func = func.args[0].value
        else:
            return func


def find_optimizers(ctx: FileContext) -> list[OptimizerSite]:
    """Every call whose first argument (or ``params=``) takes ``X.parameters()``, excluding the
    calls listed as ``not_optimizers`` in ``rules/torch_api.toml`` (``clip_grad_norm_``...)."""
    sites = []
    for call in ctx.nodes(cst.Call):
        func = _unwrap_factory(call.func)
        name = _callee_name(func)
        if not name or name in ctx.rules.torch_api.not_optimizers:
            continue
        params = None
        for i, arg in enumerate(call.args):
            if (arg.keyword is None and i == 0) or (arg.keyword is not None and arg.keyword.value == "params"):
                params = arg.value
                break
        if params is None:
            continue
        receivers = _parameters_receivers(params)
        if not receivers:
            continue
        qualified = ctx.qualified_names(func)
        looks_like = bool(qualified & ctx.rules.torch_api.stock_optimizers) or any(
            h in name.lower() for h in _OPTIMIZER_HINTS
        ) or name[:1].isupper()
        if not looks_like:
            continue
        direct = m.matches(params, m.Call(func=m.Attribute(attr=m.Name("parameters")), args=[]))
        model = receivers[0] if direct and isinstance(receivers[0], (cst.Name, cst.Attribute)) else None
        stmt = ctx.statement_of(call)
        sites.append(
            OptimizerSite(call, stmt if isinstance(stmt, cst.SimpleStatementLine) else None, model, qualified)
        )
    return sites


def same_model(ctx: FileContext, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Whether two expressions denote the same model object: the same name bound by the same
    assignments (ScopeProvider), or ``self.<attr>`` inside the same class."""
    if isinstance(a, cst.Name) and isinstance(b, cst.Name):
        if a.value != b.value:
            return False
        sa, sb = ctx.scopes.get(a), ctx.scopes.get(b)
        if sa is None or sb is None:
            return False
        return {id(x) for x in sa[a.value]} == {id(x) for x in sb[b.value]}
    if isinstance(a, cst.Attribute) and isinstance(b, cst.Attribute):
        if ctx.code(a) != ctx.code(b):
            return False
        if m.matches(a, m.Attribute(value=m.Name("self"))):
            return ctx.enclosing(a, cst.ClassDef) is ctx.enclosing(b, cst.ClassDef)
        return same_model(ctx, _root(a), _root(b))
    return False


def _root(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr


def model_calls(ctx: FileContext, model: cst.BaseExpression) -> list[ModelCall]:
    """The calls of ``model`` in this file, following it one level into functions defined in
    the file that receive it as an argument (``train_one_epoch(model, loader, optimizer)``)."""
    calls = [c for c in ctx.nodes(cst.Call) if same_model(ctx, c.func, model)]
    # one level into local functions that receive the model as a positional/keyword argument
    for call in (c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Name)):
        for i, arg in enumerate(call.args):
            if not same_model(ctx, arg.value, model):
                continue
            func = _local_def(ctx, call.func)
            if func is None:
                continue
            param = _param_for(func, i, arg)
            if param is None:
                continue
            for inner in m.findall(func.body, m.Call(func=m.Name(param))):
                if ctx.enclosing(inner, cst.FunctionDef) is func:
                    calls.append(inner)
    return [_describe(ctx, c) for c in calls]


def _local_def(ctx: FileContext, name: cst.Name) -> cst.FunctionDef | None:
    scope = ctx.scopes.get(name)
    if scope is None:
        return None
    defs = [a.node for a in scope[name.value] if isinstance(a, Assignment) and isinstance(a.node, cst.FunctionDef)]
    return defs[0] if len(defs) == 1 else None


def _param_for(func: cst.FunctionDef, index: int, arg: cst.Arg) -> str | None:
    params = list(func.params.posonly_params) + list(func.params.params)
    if arg.keyword is not None:
        names = {p.name.value for p in params + list(func.params.kwonly_params)}
        return arg.keyword.value if arg.keyword.value in names else None
    return params[index].name.value if index < len(params) else None


def _is_loss_callee(ctx: FileContext, func: cst.BaseExpression) -> bool:
    """A loss: a ``torch.nn.*Loss`` instance, a ``torch.nn.functional`` loss, or a callable
    whose name says loss/criterion (``loss_fn``, ``self.criterion``)."""
    api = ctx.rules.torch_api
    for qn in ctx.qualified_names(func):
        if qn.startswith("torch.nn.functional.") and qn.rsplit(".", 1)[1] in api.functional_losses:
            return True
    name = _callee_name(func).lower()
    if name in api.functional_losses or "loss" in name or "criterion" in name:
        return True
    return False


def _describe(ctx: FileContext, call: cst.Call) -> ModelCall:
    stmt = ctx.statement_of(call)
    info = ModelCall(call, stmt if isinstance(stmt, cst.SimpleStatementLine) else None)
    # a model call nested in a loss call: loss_fn(model(x), y)
    for anc in ctx.ancestors(call):
        if isinstance(anc, cst.Call) and _is_loss_callee(ctx, anc.func):
            info.losses.append(anc)
            if info.statement is not None:
                info.loss_statements.append(info.statement)
                info.loss_names.extend(_assigned_names(info.statement))
            return info
        if isinstance(anc, cst.BaseStatement):
            break
    if info.statement is None:
        return info
    info.outputs = _assigned_names(info.statement)
    block = ctx.block_of(info.statement)
    if block is None or not info.outputs:
        return info
    body = list(block.body)
    start = body.index(info.statement)
    for later in body[start + 1 :]:
        for loss in m.findall(later, m.Call()):
            if not _is_loss_callee(ctx, loss.func):
                continue
            used = {n.value for a in loss.args for n in m.findall(a.value, m.Name())}
            if used & set(info.outputs):
                info.losses.append(loss)
                if isinstance(later, cst.SimpleStatementLine) and later not in info.loss_statements:
                    info.loss_statements.append(later)
                    info.loss_names.extend(_assigned_names(later))
        if info.losses:
            break
    return info


def _assigned_names(stmt: cst.SimpleStatementLine) -> list[str]:
    names = []
    for small in stmt.body:
        if isinstance(small, cst.Assign):
            for t in small.targets:
                names.extend(n.value for n in m.findall(t.target, m.Name()))
        elif isinstance(small, cst.AnnAssign):
            names.extend(n.value for n in m.findall(small.target, m.Name()))
    return names


def loss_accumulators(ctx: FileContext, loss_names: set[str]) -> list[cst.Call]:
    """``torch.zeros(...)`` / ``torch.tensor(0.0, ...)`` calls without ``dtype=`` that create a
    tensor the loss is summed into (``acc += loss.detach()``, ``acc = acc + loss``); Neuron's
    guide keeps such accumulators in FP32 (seed 000)."""
    found: list[cst.Call] = []
    for aug in (a for a in ctx.nodes(cst.AugAssign) if isinstance(a.operator, cst.AddAssign) and isinstance(a.target, cst.Name)):
        used = {n.value for n in m.findall(aug.value, m.Name())}
        if not used & loss_names:
            continue
        scope = ctx.scopes.get(aug.target)
        if scope is None:
            continue
        for a in scope[aug.target.value]:
            if not isinstance(a, Assignment):
                continue
            target_parent = ctx.parent(a.node)
            if not isinstance(target_parent, cst.AssignTarget):
                continue
            factory = _factory_call(ctx, ctx.parent(target_parent).value)
            if factory is not None and factory not in found:
                found.append(factory)
    return found


def _factory_call(ctx: FileContext, expr: cst.BaseExpression) -> cst.Call | None:
    """The ``torch.zeros``/``torch.tensor`` call at the root of ``expr`` (through ``.to(...)``),
    when it has no ``dtype=`` argument."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "to":
        if any(a.keyword is None and ctx.qualified_names(a.value) & {"torch.float32", "torch.float", "torch.bfloat16"} for a in expr.args):
            return None
        expr = expr.func.value
    if not isinstance(expr, cst.Call):
        return None
    if not ctx.qualified_names(expr.func) & {"torch.zeros", "torch.tensor"}:
        return None
    if any(a.keyword is not None and a.keyword.value == "dtype" for a in expr.args):
        return None
    return expr
