"""autocast-operands: in amp, where the code that runs under autocast scatters, puts or
interpolates a source into a destination (``scatter_add``, ``masked_scatter``, ``t[index] = v``,
``lerp``), the source takes the destination's dtype: those ops neither promote nor convert, and
autocast makes some tensors bf16 and leaves others FP32 (:mod:`..autocast_operands`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import libcst as cst
import libcst.matchers as matchers

from ...rules import Emit
from ..autocast_operands import find_source_operands, plan_source_operands
from ..bindings import definitions, python_number
from ..context import FileContext, findall
from ..device_modules import method_names
from ..loss_reach import imported_callees, loss_code
from ..model_code import ModelCodeAudit, audit_model_code, low_precision_dtypes, plan_model_code
from ..model_reach import model_roots, reach_from
from .migration import Migration, Planned

EMIT = Emit.AUTOCAST_OPERANDS


def check(m: Migration) -> Migration:
    """The functions and classes imported from the tree's modules that the autocast regions call
    (``acc = knn_accuracy(encoder(bank_x), ...)`` with ``knn_accuracy`` from ``losses.py``): their
    code runs under autocast, and the module's migration looks for these ops in them
    (``Migration.loss_imports``, :mod:`bf16_migrate.tree_modules`)."""
    ctx = m.ctx
    names = set(m.loss_imports)
    for statement in _region_statements(m):
        for call in findall(statement, matchers.Call(), ctx.index):
            assert isinstance(call, cst.Call), "matched a Call"
            names.update(imported_callees(ctx, call.func))
    return replace(m, loss_imports=tuple(sorted(names)))


def plan(m: Migration, planned: Planned) -> Planned:
    """``source.to(<destination>.dtype)`` at each such op of the models' code, the other modules on
    the device, the loss code and the autocast regions (BFM035)."""
    ctx = m.ctx
    scalars = _host_scalars(ctx)
    if not scalars and not find_source_operands(ctx, [ctx.module]):
        return planned  # most files have none: the reach of the model's code is not read for nothing
    calls = [c for cs in m.calls.values() for c in cs] + m.on_device.calls(ctx)
    models = [*m.models, *m.on_device.exprs(ctx)]
    regions = list(_region_statements(m))
    loss = loss_code(ctx, calls)
    for function in _functions_called(ctx, regions):
        if not any(function is f for f in loss.functions):
            loss.functions.append(function)
    reached = reach_from(ctx, model_roots(ctx, models), [], loss, method_names(ctx, models))
    scopes: list[cst.CSTNode] = [*reached.runtime, *regions]
    plan_source_operands(ctx, m.plan, find_source_operands(ctx, scopes))
    if scalars:
        # a host 0-dim tensor (`torch.log(torch.tensor(float(W)))`) meeting autocast's bf16 in the model's code:
        # XLA's step graph then mixes f32 and bf16 and its HLO verifier refuses it (a hunt's log-mean-exp
        # pooling, where the legacy run, its scalar bf16 on the device, trained); it follows the dtype it meets
        # there, as the modes that cast the model make it (model_code's BFM080)
        audit = audit_model_code(ctx, reached, low_precision_dtypes(ctx, list(m.variables)))
        follows = [(site, code) for site, code in audit.follows if id(site.node) in scalars]
        plan_model_code(ctx, m.plan, ModelCodeAudit(follows=follows))
    return planned


def _host_scalars(ctx: FileContext) -> frozenset[int]:
    """The ids of the file's ``torch.tensor(<a Python number>)`` calls that name neither a device nor a dtype: a
    0-dim float32 host tensor (:func:`..bindings.python_number`)."""
    found = set()
    for call in ctx.nodes_named(cst.Call, "tensor", "func"):
        if "torch.tensor" not in ctx.qualified_names(call.func) or len(call.args) != 1:
            continue
        if call.args[0].keyword is None and python_number(ctx, call.args[0].value):
            found.add(id(call))
    return frozenset(found)


def _region_statements(m: Migration) -> Iterator[cst.BaseStatement]:
    """The statements the autocast regions wrap, first to last of each, and the simple statements
    after a region in its function that compute with what it made (the names it binds, followed
    from statement to statement): autocast's bf16 outputs meet the script's f32 tensors there (a
    kNN vote ``zeros(...).scatter_add_(1, idx, w)`` of weights from bf16 embeddings, where the
    legacy run had both bf16)."""
    ctx = m.ctx
    seen: set[int] = set()
    for block, first, last in m.regions:
        body = list(block.body)
        start = next(i for i, s in enumerate(body) if s is first)
        end = next(i for i, s in enumerate(body) if s is last)
        yield from body[start : end + 1]
        made = {name for statement in body[start : end + 1] for name in _bound_names(statement)}
        function = ctx.enclosing(last, cst.FunctionDef)
        after = [s for s in ctx.nodes_in(cst.SimpleStatementLine, function) if ctx.pos(s) > ctx.pos(last)]
        for statement in sorted(after, key=ctx.pos):
            if made & _read_names(statement):
                made |= _bound_names(statement)
                if id(statement) not in seen:
                    seen.add(id(statement))
                    yield statement


def _functions_called(ctx: FileContext, statements: list[cst.BaseStatement]) -> list[cst.FunctionDef]:
    """The file's functions that ``statements`` call (``acc = knn(encoder(bank_x), ...)`` in an
    autocast region): their code runs under autocast too, and :func:`.model_reach.reach_from`
    follows what they call as it does a loss function's."""
    found: list[cst.FunctionDef] = []
    for statement in statements:
        for call in findall(statement, matchers.Call(), ctx.index):
            assert isinstance(call, cst.Call), "matched a Call"
            for target in definitions(ctx, call.func):
                if isinstance(target, cst.FunctionDef) and not any(target is f for f in found):
                    found.append(target)
    return found


def _bound_names(statement: cst.CSTNode) -> set[str]:
    """The plain names ``statement`` assigns (``a, b = ...``, ``a = ...``, ``a += ...``)."""
    targets: list[cst.CSTNode] = []
    for node in findall(statement, matchers.Assign() | matchers.AugAssign() | matchers.AnnAssign()):
        if isinstance(node, cst.Assign):
            targets += [t.target for t in node.targets]
        elif isinstance(node, cst.AugAssign | cst.AnnAssign):
            targets.append(node.target)
    return {n.value for t in targets for n in findall(t, matchers.Name()) if isinstance(n, cst.Name)}


def _read_names(statement: cst.CSTNode) -> set[str]:
    """Every name ``statement`` mentions."""
    return {n.value for n in findall(statement, matchers.Name()) if isinstance(n, cst.Name)}
