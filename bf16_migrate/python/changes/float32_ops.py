"""float32-ops: an op the code runs on the device without a bf16 kernel there
(``torch.linalg.cholesky``, ``torch.linalg.solve``...) runs in float32 and its result is cast
back, as the legacy run computed it (:mod:`..float32_ops`); one returning several tensors keeps
the switch, named, before any change."""

from __future__ import annotations

from dataclasses import replace

from ...rules import Emit
from ..device_modules import method_names
from ..float32_ops import Float32Ops, candidates, find_float32_ops, plan_float32_ops
from ..loss_reach import loss_code
from ..model_reach import model_roots, reach_from
from ..outcome import Refusal
from .migration import Migration, Planned

EMIT = Emit.FLOAT32_OPS


def plan(m: Migration, planned: Planned) -> Planned:
    """Each op that returns one tensor in float32, cast back (BFM155)."""
    if m.float32_ops is not None:
        plan_float32_ops(m.ctx, m.plan, m.float32_ops.single, m.guard)
    return planned


def check(m: Migration) -> Migration | None:
    """The ops of the code that runs on the device: the models' and the other modules' code, the
    loss code and the steps' loss paths. None where one returns several tensors
    (BFM155 ``several``, the switch kept: removed, the op would raise on a bf16 operand)."""
    ctx = m.ctx
    if not candidates(ctx):
        return m  # most files call none of them: the reach of the model's code is not read for nothing
    calls = [c for cs in m.calls.values() for c in cs] + m.on_device.calls(ctx)
    loss = loss_code(ctx, calls)
    models = [*m.models, *m.on_device.exprs(ctx)]
    reached = reach_from(ctx, model_roots(ctx, models), [], loss, method_names(ctx, models))
    found = find_float32_ops(ctx, reached.runtime, loss.path)
    if not found.several:
        return replace(m, float32_ops=found)
    for call in found.several:
        ctx.report("BFM155", call, fixed=False, variant="several", op=ctx.code(call.func))
    for variable, anchor in m.anchors:
        finding = ctx.report(
            "BFM155", anchor, fixed=False, variant="kept", variable=variable, line=ctx.pos(found.several[0])[0]
        )
        ctx.outcome.refuse(Refusal.FLOAT32_OP, finding)
    return None


__all__ = ["EMIT", "Float32Ops", "check", "plan"]
