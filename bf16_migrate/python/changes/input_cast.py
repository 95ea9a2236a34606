"""input-cast: once the model is bf16, its floating inputs and floating loss targets get
``.to(torch.bfloat16)``, integer ones are left, unknown ones are cast at run time by a forward
pre-hook (BFM022). Under the legacy switch every floating tensor on the device was bf16, inputs
included (torch-xla ``torch_xla/csrc/dtype.cpp``); a bf16 model fed f32 crashes. The casts
themselves: :mod:`..inputs`."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from ...rules import Emit
from .. import snippets
from ..device_modules import method_calls
from ..inputs import InputCasts, refuse_scripted
from ..wrappers import dynamo_callers, module_of
from .migration import Migration, Planned

EMIT = Emit.INPUT_CAST


def plan(m: Migration, planned: Planned) -> Planned:
    """The input casts of each model the mode casts (none where it does not: inputs follow the
    model's cast, never alone), planned before the casts so that model-cast writes what each model
    needs right after its cast (``Planned.after_cast``); a model FSDP shards casts its floating
    inputs itself."""
    if not m.mode.casts_model:
        return planned
    ctx = m.ctx
    inputs = InputCasts(ctx, m.flow, m.plan, m.guard, round_upcasts=m.f64_was_f32, guard_at=m.guard_at)
    after: dict[int, list[cst.BaseStatement]] = {}
    for model in m.models:
        if id(model) not in m.sharded:
            module = module_of(ctx, model)
            after[id(model)] = inputs.plan_model(module, m.calls[id(model)], dynamo_callers(ctx, model))
            for call in method_calls(ctx, module):  # `model.decode(z)`: no pre-hook runs there
                inputs.plan_method(call)
    return replace(planned, inputs=inputs, after_cast=after)


def check(m: Migration) -> Migration | None:
    """Keep the switch where a model whose floating inputs the run-time pre-hook must cast is compiled by
    TorchScript (:func:`..inputs.refuse_scripted`)."""
    if not m.mode.casts_model:
        return m
    inputs = InputCasts(m.ctx, m.flow, m.plan, m.guard, round_upcasts=m.f64_was_f32, guard_at=m.guard_at)
    models = [module_of(m.ctx, model) for model in m.models if id(model) not in m.sharded]
    calls = [m.calls[id(model)] for model in m.models if id(model) not in m.sharded]
    return None if refuse_scripted(inputs, models, calls, m.anchors, snippets.BF16_INPUTS_HOOK, uncalled=True) else m
