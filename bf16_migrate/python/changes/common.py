"""The steps every migration that takes the change makes, whatever its mode emits: the launchers'
findings, the optimizers whose model cannot be told, ``import torch``, the optimizer factories of
the tree, the legacy writes themselves, ``--fp32-optimizer-state``, the ``.double()`` idiom of
XLA_DOWNCAST_BF16, the guard's reach, and the edge of the script's own device tensors marked
examined."""

from __future__ import annotations

from ...rules import STOCHASTIC_ROUNDING_VAR, Emit
from ..bindings import module_binds
from ..device_tensors import float64_on_device
from ..double_idiom import plan_double_meant_fp32, plan_float64_meant_low
from ..dtype_guards import plan_dtype_guards, plan_label_constants
from ..model_reach import float64_state_names
from ..optimizers import fp32_optimizer_state
from ..outcome import Edge, Refusal
from ..write_edits import switch_writes
from .migration import GuardDoesNotTravel, Migration, Planned


def announce(m: Migration, planned: Planned) -> Planned:
    """BFM001 for each variable a launcher sets (the summary without the stochastic-rounding
    setting, which the launcher's own line carries), BFM011 for each optimizer whose model cannot
    be told, and ``import torch`` where the module does not bind it."""
    ctx = m.ctx
    for variable in m.external:
        ctx.report(
            "BFM001",
            ctx.module,
            fixed=True,
            variant="launcher",
            variable=variable,
            summary=m.summary.replace(f", {STOCHASTIC_ROUNDING_VAR}=1", ""),
        )
        ctx.outcome.switch_migrated = True
    for site in m.sites:
        if not site.all_models():
            ctx.outcome.refuse(
                Refusal.MODEL_UNKNOWN, ctx.report("BFM011", site.call, fixed=False, variant="other_optimizer")
            )
    if not module_binds(ctx, "torch"):
        # AddImportsVisitor only sees the leading import block, which a legacy write often
        # splits (`import os; os.environ[...]; import torch`): ask the scope instead.
        m.plan.imports.append("torch")
    return planned


def report_factories(m: Migration, planned: Planned) -> Planned:
    """BFM016 at each optimizer factory of the tree the script calls: what became of the model it
    builds the optimizer over, here and in the module."""
    ctx = m.ctx
    for site in m.sites:
        if site.factory is None or site.model is None:
            continue
        module, factory = site.factory
        if m.mode.autocast:
            change = "its forward pass and loss here go under torch.autocast"
        else:
            change = "it is cast to torch.bfloat16 right before this call"
            if m.guard is not None:
                change += f" (under `{ctx.code(m.guard)}`)"
            if m.mode.master_weights:
                change += f", and {module.path} builds the optimizer with FP32 master weights"
        ctx.report(
            "BFM016",
            site.call,
            fixed=True,
            model=ctx.code(site.model),
            function=factory.name,
            module=module.path,
            change=change,
        )
    return planned


def writes(m: Migration, planned: Planned) -> Planned:
    """The legacy writes: those stochastic rounding renamed kept, the others removed, each
    reported (BFM001, :func:`..write_edits.switch_writes`)."""
    summary = planned.writes_summary if planned.writes_summary is not None else m.summary
    switch_writes(m.ctx, m.plan, m.guard, list(m.writes), planned.renamed, summary)
    return planned


def optimizer_state(m: Migration, planned: Planned) -> Planned:
    """``--fp32-optimizer-state`` in a mode that casts the model (Neuron's migration guide from
    XLA_DOWNCAST_BF16: gradients converted to FP32 before the optimizer's computations)."""
    if m.fp32_state and m.mode.casts_model:
        fp32_optimizer_state(m.ctx, m.plan, m.mode)
    return planned


def double_meant_fp32(m: Migration, planned: Planned) -> Planned:
    """Under XLA_DOWNCAST_BF16 the ``.double()`` idiom meant FP32 (:mod:`..double_idiom`)."""
    if m.f64_was_f32:
        cast = Emit.MODEL_CAST in m.emits
        models = [model for model, anchors in zip(m.models, m.cast_anchors) if anchors is not None or not cast]
        modules = [call for model in models for _, call in m.float64_modules(model)]
        downcast = cast and m.guard is None
        # the model cast by the switch's rule (downcast_bf16) where its state is registered from float64 data
        state = float64_state_names(m.ctx) if downcast and models else []
        plan_double_meant_fp32(m.ctx, m.plan, modules, model_cast=downcast, state=state)
    return planned


def float64_meant_low(m: Migration, planned: Planned) -> Planned:
    """Under XLA_USE_BF16 a float64 the code names on the device was bf16 (:mod:`..double_idiom`): it
    becomes the mode's low precision (amp: float32). Only where the switch was on unconditionally: under
    a guard the path without it keeps its float64."""
    if m.guard is not None or not any(m.ctx.rules.variables[v].f64_becomes == "bf16" for v in m.variables):
        return planned
    model_calls = frozenset(id(c.call) for cs in m.calls.values() for c in cs)
    dtype = "torch.bfloat16" if m.mode.casts_model else "torch.float32"
    plan_float64_meant_low(m.ctx, m.plan, float64_on_device(m.ctx, model_calls), dtype)
    return planned


def dtype_guards(m: Migration, planned: Planned) -> Planned:
    """A guard on a tensor's dtype that names float32 accepts bf16 too, and a dtype's resolution constant
    read from a tensor's label is float32's (:mod:`..dtype_guards`): under the switch a device tensor said
    float32 while it held bf16, in every mode."""
    plan_dtype_guards(m.ctx, m.plan)
    plan_label_constants(m.ctx, m.plan)
    return planned


def guard_reaches(m: Migration, planned: Planned) -> Planned:
    """Stops the plan (:class:`.migration.GuardDoesNotTravel`) where an input cast was planned under
    the guard in a function where its names mean something else: the file is planned again with the
    guard refused (BFM041)."""
    if planned.unguarded:
        raise GuardDoesNotTravel(m.ctx.pos(planned.unguarded[0])[0])
    return planned


def tensors_examined(m: Migration, planned: Planned) -> Planned:
    """The tensors the script makes on the device are examined: made bf16 by device-tensors, or
    kept as the script makes them in a mode that keeps FP32 where the script asks for it (amp,
    which keeps the model FP32 too: nothing to find)."""
    m.ctx.outcome.examined.add(Edge.DEVICE_TENSORS)
    return planned
