"""model-code-dtypes: the tensors the model's own code and the file's optimizer classes make in f32
follow the dtype of what they meet, deliberate f32 islands are kept (``rules/model_code.toml``;
under the legacy switch every f32 tensor on the device was bf16: torch-xla
``torch_xla/csrc/dtype.cpp``). The audit ran, and stopped the migration where a place cannot
follow, before any change (:mod:`..model_code`); here its edits are written."""

from __future__ import annotations

from dataclasses import replace

from ...rules import Emit
from ..device_modules import method_names
from ..device_tensors import find_device_tensors
from ..loss_reach import imported_callees, loss_code
from ..model_code import audit_model_code, low_precision_dtypes, plan_model_code, report_blocked
from ..model_reach import model_roots, optimizer_classes, reach_from
from ..outcome import Refusal
from .migration import Migration, Planned

EMIT = Emit.MODEL_CODE_DTYPES


def plan(m: Migration, planned: Planned) -> Planned:
    """The audit's follows, casts and kept islands (BFM080, BFM082, BFM087, BFM088)."""
    plan_model_code(m.ctx, m.plan, m.audit)
    return planned


def check(m: Migration) -> Migration | None:
    """The audit of the code the models, the other modules on the device, the file's optimizer
    classes and the loss applied to the models' output run in a step (:mod:`..model_code`,
    :mod:`..loss_reach`). Where the mode emits device-tensors too, a step's tensor that cannot
    follow the model's output it meets is left to that rule (``ModelCodeAudit.hand_over``: the
    tensors it finds are found here, once). None when a place cannot be made to follow the dtype it
    meets: reported with BFM085 on the writes and the switch kept, since removing it would leave
    the model computing in f32 there."""
    ctx = m.ctx
    models = [*m.models, *m.on_device.exprs(ctx)]
    calls = [c for cs in m.calls.values() for c in cs] + m.on_device.calls(ctx)
    loss = loss_code(ctx, calls)
    optimizers = optimizer_classes(ctx, [s.call.func for s in m.sites])
    reached = reach_from(ctx, model_roots(ctx, models), optimizers, loss, method_names(ctx, models))
    low = low_precision_dtypes(ctx, list(m.variables))
    audit = audit_model_code(ctx, reached, low)
    tensors = None
    if Emit.DEVICE_TENSORS in m.emits:
        model_calls = frozenset(id(c.call) for c in calls)
        tensors = find_device_tensors(ctx, reached, audit.decided, model_calls, doubles="f64" in low)
        audit.hand_over(frozenset(id(c) for c in tensors.found))
    if audit.clean:
        # an imported module class whose instance here is a module on the device the mode casts (`dec` of
        # `F.mse_loss(dec(enc(x)), x)`, moved and cast with BFM150) is no criterion left FP32: its module's audit
        # would say its layers stay f32 (BFM086, a hunt's false "left to do")
        cast = {n for e in m.on_device.exprs(ctx) for n in imported_callees(ctx, e)} if m.mode.casts_model else set()
        imported = (loss.imported | set(m.loss_imports)) - cast
        return replace(m, audit=audit, tensors=tensors, loss_imports=tuple(sorted(imported)))
    report_blocked(ctx, audit)
    first = audit.blocked[0]
    for variable, anchor in m.anchors:
        ctx.outcome.refuse(
            Refusal.MODEL_CODE_F32,
            ctx.report(
                "BFM085",
                anchor,
                fixed=False,
                variable=variable,
                count=len(audit.blocked),
                first_code=first.code,
                first_line=ctx.pos(first.site.node)[0],
            ),
        )
    return None
