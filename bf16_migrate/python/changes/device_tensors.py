"""device-tensors: a floating tensor the script's own code makes on the device without a dtype,
outside the model's code, gets ``dtype=torch.bfloat16``, as the switch made it (torch-xla
``torch_xla/csrc/dtype.cpp``); found, and refused where it cannot be decided, before any change
(:mod:`..device_tensors`)."""

from __future__ import annotations

from ...rules import Emit
from ..device_tensors import plan_device_tensors
from .migration import Migration, Planned

EMIT = Emit.DEVICE_TENSORS


def plan(m: Migration, planned: Planned) -> Planned:
    """``dtype=torch.bfloat16`` on each tensor found (BFM154), under the guard."""
    plan_device_tensors(m.ctx, m.plan, m.tensors.found, m.guard)
    return planned
