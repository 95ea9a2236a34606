"""autocast: the forward pass and the loss go under ``torch.autocast("xla", dtype=torch.bfloat16)``
with the model kept FP32 (Neuron's migration guide: the automatic mixed precision replacement); the
regions were found, and the migration stopped where one could not be wrapped, before any change
(:func:`..autocast.autocast_regions`)."""

from __future__ import annotations

from dataclasses import replace

from ...rules import Emit
from ..autocast import Region, autocast_regions, plan_autocast
from ..device_modules import device_module_regions
from ..loss_reach import loss_code
from ..outcome import Refusal
from .migration import Migration, Planned

EMIT = Emit.AUTOCAST


def plan(m: Migration, planned: Planned) -> Planned:
    """The regions wrapped, under the guard."""
    m.plan.wrap_guard = m.guard
    plan_autocast(m.plan, list(m.regions))
    return planned


def check(m: Migration) -> Migration | None:
    """amp's autocast regions over every model's forward pass and loss, and over the forward passes
    of the other modules on the device (:mod:`..device_modules`); None when one cannot be wrapped
    (reported, with BFM033 on the writes): autocast is the whole replacement in amp, so removing
    the switch would leave that pass in FP32."""
    ctx = m.ctx
    regions: list[Region] = []
    problems = []
    loss = loss_code(ctx, [c for cs in m.calls.values() for c in cs] + m.on_device.calls(ctx))
    for model in m.models:
        found, failed = autocast_regions(ctx, model, m.calls[id(model)], loss.statements)
        regions += found
        problems += failed
    found, failed = device_module_regions(ctx, m.on_device, loss.statements)
    regions += found
    problems += failed
    if not problems:
        return replace(m, regions=tuple(regions))
    for code, node, variant, fields in problems:
        ctx.report(code, node, fixed=False, variant=variant, **fields)
    for variable, anchor in m.anchors:
        ctx.outcome.refuse(
            Refusal.OWN_PRECISION,
            ctx.report(
                "BFM033",
                anchor,
                fixed=False,
                variable=variable,
                count=len(problems),
                first_code=problems[0][0],
                first_line=ctx.pos(problems[0][1])[0],
            ),
        )
    return None
