"""float32-ops: an op the code runs on the device without a bf16 kernel there
(``torch.linalg.cholesky``, ``torch.linalg.solve``...) keeps the switch, named: a bf16 operand
raises, and run in float32 its backward computes in f32 (:mod:`..float32_ops`)."""

from __future__ import annotations

from ...rules import Emit
from ..device_modules import method_names
from ..float32_ops import candidates, find_float32_ops
from ..loss_reach import loss_code
from ..model_reach import model_roots, reach_from
from ..outcome import Refusal
from .migration import Migration, Planned

EMIT = Emit.FLOAT32_OPS


def plan(m: Migration, planned: Planned) -> Planned:
    """Nothing to write: a file with such an op does not reach the plans (:func:`check`)."""
    return planned


def check(m: Migration) -> Migration | None:
    """The ops of the code that runs on the device: the models' and the other modules' code, the
    methods of theirs the script calls, the loss code and the steps' loss paths. None where there
    is one (BFM155 at each, and ``kept`` on the writes: the switch stays)."""
    ctx = m.ctx
    if not candidates(ctx):
        return m  # most files call none of them: the reach of the model's code is not read for nothing
    calls = [c for cs in m.calls.values() for c in cs] + m.on_device.calls(ctx)
    loss = loss_code(ctx, calls)
    models = [*m.models, *m.on_device.exprs(ctx)]
    reached = reach_from(ctx, model_roots(ctx, models), [], loss, method_names(ctx, models))
    found = find_float32_ops(ctx, reached.runtime, loss.path)
    if not found:
        return m
    for call in found:
        ctx.report("BFM155", call, fixed=False, op=ctx.code(call.func))
    for variable, anchor in m.anchors:
        finding = ctx.report(
            "BFM155", anchor, fixed=False, variant="kept", variable=variable, line=ctx.pos(found[0])[0]
        )
        ctx.outcome.refuse(Refusal.FLOAT32_OP, finding)
    return None
