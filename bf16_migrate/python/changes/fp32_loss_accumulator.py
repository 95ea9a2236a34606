"""fp32-loss-accumulator: ``dtype=torch.float32`` on the ``torch.zeros``/``torch.tensor`` the loss is
summed into (Neuron's migration guide: loss accumulators in FP32), found from the names the
model's calls bind their loss to and those ``.backward()`` is called on (:mod:`..model_site`)."""

from __future__ import annotations

from ...rules import Emit
from ..model_site import backward_names, loss_accumulators
from ..optimizers import add_float32_dtype
from .migration import Migration, Planned

EMIT = Emit.FP32_LOSS_ACCUMULATOR


def plan(m: Migration, planned: Planned) -> Planned:
    """Each loss accumulator made FP32."""
    names = {n for cs in m.calls.values() for c in cs for n in c.loss_names} | backward_names(m.ctx)
    for factory in loss_accumulators(m.ctx, names):
        m.plan.replace[id(factory)] = add_float32_dtype
    return planned
