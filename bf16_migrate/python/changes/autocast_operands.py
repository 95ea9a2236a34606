"""autocast-operands: in amp, where the code that runs under autocast scatters, puts or
interpolates a source into a destination (``scatter_add``, ``masked_scatter``, ``t[index] = v``,
``lerp``), the source takes the destination's dtype: those ops neither promote nor convert, and
autocast makes some tensors bf16 and leaves others FP32 (:mod:`..autocast_operands`)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
import libcst.matchers as matchers

from ...rules import Emit
from ..autocast_operands import find_source_operands, plan_source_operands
from ..context import findall
from ..device_modules import method_names
from ..loss_reach import loss_code
from ..model_reach import model_roots, reach_from
from .migration import Migration, Planned

EMIT = Emit.AUTOCAST_OPERANDS


def plan(m: Migration, planned: Planned) -> Planned:
    """``source.to(<destination>.dtype)`` at each such op of the models' code, the other modules on
    the device, the loss code and the autocast regions (BFM035)."""
    ctx = m.ctx
    if not find_source_operands(ctx, [ctx.module]):
        return planned  # most files have none: the reach of the model's code is not read for nothing
    calls = [c for cs in m.calls.values() for c in cs] + m.on_device.calls(ctx)
    models = [*m.models, *m.on_device.exprs(ctx)]
    reached = reach_from(ctx, model_roots(ctx, models), [], loss_code(ctx, calls), method_names(ctx, models))
    scopes: list[cst.CSTNode] = [*reached.runtime, *_region_statements(m)]
    plan_source_operands(ctx, m.plan, find_source_operands(ctx, scopes))
    return planned


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
