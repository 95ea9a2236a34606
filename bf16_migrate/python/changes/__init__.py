"""The changes a mode emits (``rules/modes.toml`` ``emit``, :class:`~bf16_migrate.rules.Emit`), one
unit per change: a module named after the emit word holding its ``EMIT`` and its ``plan``, which
takes the :class:`~.migration.Migration` the Planner decided and the :class:`~.migration.Planned`
the earlier units hand on, adds its edits and findings, and returns what it hands on.

:data:`REGISTRY` is the order the changes are planned in, with the steps every migration takes
(``emit`` None) between them. A unit may have a ``check`` too, which may stop the migration before
any change is planned (amp's regions that cannot be wrapped, an optimizer that cannot keep master
weights...): :func:`check_changes` runs them, :func:`plan_changes` the plans; the Planner runs the
one, then the other. Every :class:`~bf16_migrate.rules.Emit` has exactly one unit
(:func:`check_registry`, at import): a change added to the rules without its unit fails there,
naming it. How to add one: docs/architecture.md, "Adding an emitted change".
"""

from __future__ import annotations

from collections.abc import Iterable

from ...rules import Emit
from . import (
    autocast,
    autocast_operands,
    bf16_attention_math,
    common,
    device_tensors,
    float32_inputs,
    float32_ops,
    fp32_grad_norm,
    fp32_loss_accumulator,
    fp32_master_weights,
    host_float32,
    input_cast,
    model_cast,
    model_code_dtypes,
    stochastic_rounding,
    zero1_bf16_state,
)
from .migration import GuardDoesNotTravel, Migration, Planned, Unit


class UnitMissing(Exception):
    """An emitted change without a unit in :data:`REGISTRY`, or with more than one."""


REGISTRY: tuple[Unit, ...] = (
    Unit(None, common.announce),
    Unit(input_cast.EMIT, input_cast.plan, input_cast.check),  # before the casts: what each model needs after it
    Unit(float32_inputs.EMIT, float32_inputs.plan, float32_inputs.check),  # where the bf16 modes cast the model
    Unit(model_cast.EMIT, model_cast.plan),
    Unit(bf16_attention_math.EMIT, bf16_attention_math.plan),  # after the cast: its flag goes in ahead of it
    Unit(fp32_loss_accumulator.EMIT, fp32_loss_accumulator.plan),
    Unit(fp32_master_weights.EMIT, fp32_master_weights.plan, fp32_master_weights.check),
    Unit(zero1_bf16_state.EMIT, zero1_bf16_state.plan),
    Unit(None, common.report_factories),
    Unit(fp32_grad_norm.EMIT, fp32_grad_norm.plan),
    Unit(autocast.EMIT, autocast.plan, autocast.check),
    Unit(
        autocast_operands.EMIT, autocast_operands.plan, autocast_operands.check
    ),  # after the regions: what runs under autocast
    Unit(stochastic_rounding.EMIT, stochastic_rounding.plan),  # before the writes' own step
    Unit(None, common.writes),
    Unit(None, common.optimizer_state),
    Unit(None, common.double_meant_fp32),
    Unit(None, common.float64_meant_low),
    Unit(None, common.dtype_guards),
    Unit(host_float32.EMIT, host_float32.plan),
    Unit(None, common.guard_reaches),  # the casts under the guard checked before the model code's edits
    Unit(
        model_code_dtypes.EMIT, model_code_dtypes.plan, model_code_dtypes.check
    ),  # after the changes: a tensor they change is theirs
    Unit(device_tensors.EMIT, device_tensors.plan, device_tensors.check),
    Unit(float32_ops.EMIT, float32_ops.plan, float32_ops.check),
    Unit(None, common.tensors_examined),
)
"""The units in the order they are planned: the order of the edits (a list of statements inserted
before one node keeps it), and so of every migrated file."""


def check_registry(registry: Iterable[Unit] = REGISTRY, emits: Iterable[Emit] = Emit) -> None:
    """:class:`UnitMissing` naming each of ``emits`` without exactly one unit in ``registry``."""
    units = [unit.emit for unit in registry if unit.emit is not None]
    wrong = [(emit, units.count(emit)) for emit in emits if units.count(emit) != 1]
    if wrong:
        raise UnitMissing(
            "; ".join(
                f"the emitted change {str(emit)!r} has {count or 'no'} unit{'s' if count > 1 else ''} in "
                "bf16_migrate.python.changes.REGISTRY"
                for emit, count in wrong
            )
            + " (one module per change, registered once: docs/architecture.md, 'Adding an emitted change')"
        )


check_registry()


def check_changes(m: Migration) -> Migration | None:
    """Run the checks of the changes ``m`` emits, in :data:`REGISTRY`'s order, before any change is
    planned: ``m`` with what they found, or None when one stops the migration (its findings
    reported, the switch kept)."""
    check_registry(REGISTRY, m.emits)
    for unit in REGISTRY:
        if unit.check is not None and unit.emit in m.emits:
            checked = unit.check(m)
            if checked is None:
                return None
            m = checked
    return m


def plan_changes(m: Migration) -> Planned:
    """Plan every change ``m`` emits, and the steps every migration takes, in :data:`REGISTRY`'s order;
    returns what the units hand back (:class:`~.migration.Planned`)."""
    check_registry(REGISTRY, m.emits)
    planned = Planned()
    for unit in REGISTRY:
        if unit.emit is None or unit.emit in m.emits:
            planned = unit.plan(m, planned)
    return planned


__all__ = [
    "REGISTRY",
    "GuardDoesNotTravel",
    "Migration",
    "Planned",
    "Unit",
    "UnitMissing",
    "check_changes",
    "check_registry",
    "plan_changes",
]
