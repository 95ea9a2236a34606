"""device-tensors: a floating tensor the script's own code makes on the device without a dtype,
outside the model's code, gets ``dtype=torch.bfloat16``, as the switch made it (torch-xla
``torch_xla/csrc/dtype.cpp``); found, and refused where it cannot be decided, before any change
(:mod:`..device_tensors`)."""

from __future__ import annotations

from dataclasses import replace

from ...rules import Emit
from ..device_tensors import find_device_tensors, plan_device_tensors, refuse_device_tensors
from ..model_code import low_precision_dtypes
from .migration import Migration, Planned

EMIT = Emit.DEVICE_TENSORS


def plan(m: Migration, planned: Planned) -> Planned:
    """``dtype=torch.bfloat16`` on each tensor found, ``bf16_on_xla`` around each made where the code
    does not tell the device (BFM154), under the guard."""
    assert m.tensors is not None, "found by the check"
    plan_device_tensors(m.ctx, m.plan, m.tensors, m.guard)
    return planned


def check(m: Migration) -> Migration | None:
    """The script's own device tensors (found by model-code-dtypes' audit when it ran, here
    otherwise); None when one cannot be decided, or cannot be made bf16 under the guard
    (:func:`..device_tensors.refuse_device_tensors`: BFM154, the switch kept)."""
    doubles = "f64" in low_precision_dtypes(m.ctx, list(m.variables))
    tensors = m.tensors if m.tensors is not None else find_device_tensors(m.ctx, None, doubles=doubles)
    if refuse_device_tensors(m.ctx, tensors, m.guard, m.guard_at, m.anchors):
        return None
    return replace(m, tensors=tensors)
