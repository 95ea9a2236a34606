"""amp mode's regions: the statements from a model's forward pass to its loss, wrapped in
``with torch.autocast("xla", dtype=torch.bfloat16):`` (PyTorch's torch.amp documentation:
autocast covers the forward pass and the loss, not ``backward()`` nor ``optimizer.step()``).
"""

from __future__ import annotations

from typing import Any

import libcst as cst
import libcst.matchers as m

from .apply import EditPlan
from .bindings import definitions
from .context import FileContext, findall
from .model_site import ModelCall, describe_call
from .optimizers import changes_weights

Region = tuple[cst.Module | cst.IndentedBlock, cst.BaseStatement, cst.BaseStatement]
"""A block and its first and last statements to wrap."""
Problem = tuple[str, cst.CSTNode, str | None, dict[str, Any]]
"""A finding for a call that cannot be wrapped: (code, node, variant, template fields)."""


def autocast_regions(
    ctx: FileContext, model: cst.BaseExpression, calls: list[ModelCall], loss_statements: frozenset[int] = frozenset()
) -> tuple[list[Region], list[Problem]]:
    """Where ``model``'s forward pass and loss can go under autocast: ``(regions, problems)``,
    regions as ``(block, first, last)`` statements to wrap, problems as ``(code, node,
    variant, fields)`` of the findings for the calls that cannot be wrapped (planned nothing
    yet; the messages are the catalogue's templates). A region runs from the model call to its
    loss: the statements of the call's loss (:class:`~.model_site.ModelCall`), and the later
    statements of the block on the way from the model's output to the loss (``loss_statements``,
    ids: :attr:`.loss_reach.LossCode.statements`: ``loss = nt_xent(z1, z2, T)``) up to the first
    that steps, runs backward or changes the weights in place (:func:`.optimizers.changes_weights`)."""
    if not calls:
        return [], [("BFM021", model, None, {"model": ctx.code(model)})]
    regions: list[Region] = []
    problems: list[Problem] = []
    forward = frozenset(id(c.call) for c in calls)  # a method of the model named `step` is a forward pass
    for call in calls:
        first = call.statement
        block = ctx.block_of(first) if first is not None else None
        if first is None or block is None:
            problems.append(("BFM030", call.call, None, {}))
            continue
        body = list(block.body)
        last: cst.BaseStatement = first
        for stmt in call.loss_statements:
            if ctx.block_of(stmt) is block and ctx.index_in_block(block, stmt) > ctx.index_in_block(block, last):
                last = stmt
        bound: dict[str, cst.BaseStatement] = {}  # names the statements after the call bind, to the last binding
        for later in body[ctx.index_in_block(block, first) :]:
            if later is not first and (steps_or_backward(later, forward) or changes_weights(ctx, later)):
                # no step, and no in-place change of the weights between forward passes, in a region; the value
                # this backward runs on is the loss, computed from the forward: its statement ends the region
                # (the loss of a model whose submodules are called one by one, `q @ d.t()`, computed in bf16
                # outside autocast where the FP32 script computed it in f32: found by a hunt)
                loss = _backward_of(later)
                if (
                    loss is not None
                    and loss in bound
                    and ctx.index_in_block(block, bound[loss]) > ctx.index_in_block(block, last)
                ):
                    last = bound[loss]
                break
            for name in _bound_names(later):
                bound[name] = later
            if id(later) in loss_statements and ctx.index_in_block(block, later) > ctx.index_in_block(block, last):
                last = later
        region = body[ctx.index_in_block(block, first) : ctx.index_in_block(block, last) + 1]
        split = _backward_of_forward(last, call.call if last is first else None, forward)
        if split is not None and not any(steps_or_backward(s, forward) for s in region[:-1]):
            regions.append((block, first, last))  # `F.nll_loss(model(x), y).backward()` last: split when planned
            continue
        if any(steps_or_backward(s, forward) for s in region):
            problems.append(("BFM030", call.call, "step_between", {}))
            continue
        regions.append((block, first, last))
    return regions, problems


def through_returns(ctx: FileContext, calls: list[ModelCall]) -> list[ModelCall]:
    """``calls`` with each forward pass whose function returns its output without computing a loss from it
    (``def forward(model, batch): return {"logits": model(x), "y": y}``) replaced by the calls of that function
    in the file (``out = forward(model, batch)``), described as forward passes: their loss is computed where
    the function is called (``loss = compute_loss(out)``), and autocast covers the forward pass and the loss
    (PyTorch's torch.amp documentation); wrapping the function's body alone left the loss in bf16 outside
    autocast where autocast computes it in float32 (found by a review of our own). A function called nowhere
    in the file, or once where its result has no statement of its own (``[forward(m, b) for b in batches]``),
    keeps its own region; two levels at most."""
    return [lifted for call in calls for lifted in _lifted(ctx, call, 0)]


def _lifted(ctx: FileContext, call: ModelCall, depth: int) -> list[ModelCall]:
    if call.losses or call.loss_statements or call.through or depth >= 2 or call.statement is None:
        return [call]
    func = ctx.enclosing(call.call, cst.FunctionDef)
    if func is None or _a_module_forward(ctx, func) or not _returns_output(ctx, call, func):
        return [call]
    callers = [describe_call(ctx, c) for c in _calls_of(ctx, func)]
    if not callers or any(c.statement is None for c in callers):
        return [call]
    return [lifted for caller in callers for lifted in _lifted(ctx, caller, depth + 1)]


def _a_module_forward(ctx: FileContext, func: cst.FunctionDef) -> bool:
    """Whether ``func`` is a class's ``forward`` or ``__call__`` (a module calling its parts: its callers are the
    model's own calls)."""
    return func.name.value in ("forward", "__call__") and isinstance(ctx.parent(ctx.parent(func)), cst.ClassDef)


def _returns_output(ctx: FileContext, call: ModelCall, func: cst.FunctionDef) -> bool:
    """Whether ``func`` returns ``call``'s output as it is, alone or held in a tuple, list or dict
    (``return {"logits": model(x), "y": y}``, ``logits = model(x)`` then ``return logits, y``), and steps
    nothing itself. A value computed from the output (an accuracy, a metric) is no forward pass's output."""
    statement = call.statement
    assert statement is not None, "asked of a call in a statement line"
    if steps_or_backward(func.body):
        return False
    for small in statement.body:
        if isinstance(small, cst.Return) and small.value is not None:
            return any(value is call.call for value in _held_values(small.value))
    names = set(call.outputs)
    if not names:
        return False
    for ret in findall(func.body, m.Return(), ctx.index):
        assert isinstance(ret, cst.Return), "findall of m.Return()"
        if ret.value is not None and ctx.enclosing(ret, cst.FunctionDef) is func and ctx.pos(ret) > ctx.pos(statement):
            if any(isinstance(v, cst.Name) and v.value in names for v in _held_values(ret.value)):
                return True
    return False


def _held_values(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """``value`` and, through tuples, lists and dicts, the values it holds."""
    if isinstance(value, (cst.Tuple, cst.List)):
        return [value, *(v for e in value.elements for v in _held_values(e.value))]
    if isinstance(value, cst.Dict):
        return [value, *(v for e in value.elements for v in _held_values(e.value))]
    return [value]


def _calls_of(ctx: FileContext, func: cst.FunctionDef) -> list[cst.Call]:
    """The calls of ``func`` in the file: by its name where it is bound to it, or as ``self.<name>(...)`` in its
    own class when it is a method."""
    name = func.name.value
    cls = ctx.parent(ctx.parent(func))
    found = []
    for call in ctx.nodes_named(cst.Call, name, "func"):
        if isinstance(call.func, cst.Name):
            if any(d is func for d in definitions(ctx, call.func)):
                found.append(call)
        elif (
            isinstance(cls, cst.ClassDef)
            and m.matches(call.func, m.Attribute(value=m.Name("self")))
            and ctx.enclosing(call, cst.ClassDef) is cls
        ):
            found.append(call)
    return found


def products_after(ctx: FileContext, regions: list[Region]) -> list[Region]:
    """One-statement regions for the statements after a region in its block that compute a matrix product with
    what the region made (``sim = cosine_matrix(pred.detach(), y)`` after the step, the product in a function of
    the file it calls: ``rules/model_code.toml`` ``matmul_functions``/``matmul_methods`` and ``@``): autocast's
    bf16 output met an f32 tensor there outside autocast, a product in f32 on the XLA device (eager raises) where
    the legacy run's operands were both bf16 (found by a hunt of our own). Followed from statement to statement
    by the names bound; none that steps or runs backward."""
    out: list[Region] = []
    for block, first, last in regions:
        body = list(block.body)
        start, end = ctx.index_in_block(block, first), ctx.index_in_block(block, last)
        made = {name for statement in body[start : end + 1] for name in _bound_names(statement)}
        for statement in body[end + 1 :]:
            if not isinstance(statement, cst.SimpleStatementLine) or not made & _read_names(statement):
                continue
            made.update(_bound_names(statement))
            if not steps_or_backward(statement) and _computes_a_product(ctx, statement):
                out.append((block, statement, statement))
    return out


def _read_names(statement: cst.CSTNode) -> set[str]:
    return {n.value for n in findall(statement, m.Name()) if isinstance(n, cst.Name)}


def _computes_a_product(ctx: FileContext, statement: cst.CSTNode, depth: int = 0) -> bool:
    """Whether ``statement`` (or a function of the file it calls, two levels) computes a matrix product."""
    rules = ctx.rules.model_code
    if findall(statement, m.BinaryOperation(operator=m.MatrixMultiply())):
        return True
    for call in findall(statement, m.Call(), ctx.index):
        assert isinstance(call, cst.Call), "findall of m.Call()"
        if ctx.qualified_names(call.func) & rules.matmul_functions:
            return True
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in rules.matmul_methods:
            return True
        if depth < 2:
            for target in definitions(ctx, call.func) if isinstance(call.func, cst.Name) else ():
                if isinstance(target, cst.FunctionDef) and _computes_a_product(ctx, target.body, depth + 1):
                    return True
    return False


def plan_autocast(ctx: FileContext, plan: EditPlan, regions: list[Region]) -> None:
    """Add ``regions`` to ``plan.wraps`` (by id of the block: ``(first, last)`` statements),
    each region once however many models share it, overlapping ones as one (``z1 = model(x1)`` and
    ``z2 = model(x2)`` whose loss is the statement after both). A region that is one statement
    backpropagating the loss it computes (``F.nll_loss(model(x), y).backward()``) is split: the loss
    bound to a new name under autocast, its ``backward()`` after the block (PyTorch's torch.amp
    documentation: backward passes under autocast are not recommended)."""
    starts: dict[int, set[int]] = {}  # per block, the first statements wrapped (a block may hold thousands)
    for block, first, last in _merged(regions):
        if _backward_of_forward(last) is not None:
            _split_backward(ctx, plan, last)
        ranges = plan.wraps.setdefault(id(block), [])
        wrapped = starts.get(id(block))
        if wrapped is None:
            wrapped = starts[id(block)] = {id(a) for a, _ in ranges}
        if id(first) not in wrapped:
            wrapped.add(id(first))
            ranges.append((first, last))


def _merged(regions: list[Region]) -> list[Region]:
    """``regions`` with those of one block that overlap made one, in the order found."""
    out: list[Region] = []
    index: dict[int, dict[int, int]] = {}
    for block, first, last in regions:
        where = index.setdefault(id(block), {id(s): k for k, s in enumerate(block.body)})
        start, end = where[id(first)], where[id(last)]
        for k, (other, a, b) in enumerate(out):
            if other is block and where[id(a)] <= end and start <= where[id(b)]:
                start, end = min(start, where[id(a)]), max(end, where[id(b)])
                out[k] = (block, block.body[start], block.body[end])
                break
        else:
            out.append((block, first, last))
    return out


def _backward_of(stmt: cst.BaseStatement) -> str | None:
    """``loss`` of a statement line ``loss.backward()`` (the value backpropagated, a plain name), else None."""
    pattern = m.SimpleStatementLine(
        body=[m.Expr(value=m.Call(func=m.Attribute(value=m.Name(), attr=m.Name("backward"))))]
    )
    if not m.matches(stmt, pattern):
        return None
    assert isinstance(stmt, cst.SimpleStatementLine), "matched a statement line"
    expr = stmt.body[0]
    assert isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call), "matched a call"
    func = expr.value.func
    assert isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name), "matched a method of a name"
    return func.value.value


def _backward_of_forward(
    stmt: cst.BaseStatement, call: cst.Call | None = None, forward: frozenset[int] = frozenset()
) -> cst.Call | None:
    """The ``E.backward(...)`` call of a statement line that is that call alone, where ``E`` is no
    plain name, holds ``call`` (a forward pass) when given, and steps nothing itself; else None."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    expr = stmt.body[0]
    if not m.matches(expr, m.Expr(value=m.Call(func=m.Attribute(value=~m.Name(), attr=m.Name("backward"))))):
        return None
    assert isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call), "matched a call"
    backward = expr.value
    assert isinstance(backward.func, cst.Attribute), "matched a method"
    receiver = backward.func.value
    if steps_or_backward(receiver, forward) or steps_or_backward(
        cst.Expr(cst.Tuple([cst.Element(a.value) for a in backward.args]))
    ):
        return None
    if call is not None and not any(node is call for node in findall(receiver, m.Call())):
        return None
    return backward


def _split_backward(ctx: FileContext, plan: EditPlan, stmt: cst.BaseStatement) -> None:
    """``E.backward(args)`` -> ``name = E`` (the statement the region wraps) and ``name.backward(args)``
    after it, ``name`` a name the enclosing function (or the module) does not use."""
    scope = ctx.enclosing(stmt, cst.FunctionDef) or ctx.module
    used = {n.value for n in findall(scope, m.Name()) if isinstance(n, cst.Name)}
    name = next(n for n in ("loss", "amp_loss", *(f"loss_{k}" for k in range(2, len(used) + 3))) if n not in used)

    def assign(updated: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
        expr = updated.body[0]
        assert isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call), "planned on `E.backward(...)`"
        assert isinstance(expr.value.func, cst.Attribute), "planned on a method call"
        value = expr.value.func.value
        bound = cst.Assign(
            [cst.AssignTarget(cst.Name(name))], value.with_changes(lpar=[], rpar=[]) if _plain(value) else value
        )
        return updated.with_changes(body=[bound])

    backward = _backward_of_forward(stmt)
    assert backward is not None, "planned on `E.backward(...)`"
    plan.replace[id(stmt)] = assign
    after = cst.SimpleStatementLine(
        [cst.Expr(backward.with_changes(func=cst.Attribute(cst.Name(name), cst.Name("backward"))))]
    )
    plan.insert_after.setdefault(id(stmt), []).insert(0, after)


def _plain(value: cst.BaseExpression) -> bool:
    """Whether ``value`` needs no parentheses on the right of ``=`` (its own are dropped)."""
    return bool(value.lpar) and not isinstance(value, (cst.Tuple, cst.GeneratorExp, cst.Yield))


def _bound_names(stmt: cst.BaseStatement) -> list[str]:
    """The plain names a statement line assigns (``logits = ...``, ``a, b = ...``), or the statement lines of an
    ``if``/``try``/``with`` statement do (``if step < warmup: loss = ... else: loss = ...``: the loss is bound by
    the ``if``, which goes under autocast with the forward pass)."""
    if isinstance(stmt, (cst.If, cst.Try, cst.With)):
        lines = findall(stmt, m.SimpleStatementLine())
        nested = [d for d in findall(stmt, m.FunctionDef() | m.ClassDef())]
        return [
            name
            for line in lines
            if isinstance(line, cst.SimpleStatementLine) and not any(_within(line, d) for d in nested)
            for name in _bound_names(line)
        ]
    if not isinstance(stmt, cst.SimpleStatementLine):
        return []
    names: list[str] = []
    for small in stmt.body:
        targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else []
        if isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target]
        for target in targets:
            elements = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
            names += [e.value for e in elements if isinstance(e, cst.Name)]
    return names


def _within(node: cst.CSTNode, outer: cst.CSTNode) -> bool:
    """Whether ``node`` is ``outer`` or one of its descendants."""
    return any(n is node for n in findall(outer, m.SimpleStatementLine()))


def steps_or_backward(stmt: cst.CSTNode, forward: frozenset[int] = frozenset()) -> bool:
    """Whether ``stmt`` calls ``backward()``, ``step()`` or ``optimizer_step()``: no autocast
    region may hold one (PyTorch's torch.amp documentation). ``forward``: ids of the model's own
    calls, which are none of them (a language model's ``model.step(token)``)."""
    pattern = m.Call(func=m.Attribute(attr=m.Name("backward") | m.Name("step") | m.Name("optimizer_step")))
    return any(id(call) not in forward for call in findall(stmt, pattern))
