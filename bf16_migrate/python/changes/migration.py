"""What every unit of :mod:`.changes` takes and hands back: the migration of one file as the
:class:`~bf16_migrate.python.precision.Planner` decided it before any change is planned
(:class:`Migration`), and what the units planned so far hands on to the later ones and to the
Planner (:class:`Planned`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import libcst as cst

from ...rules import Emit, Mode
from ..apply import EditPlan
from ..autocast import Region
from ..context import FileContext
from ..device_modules import OnDevice
from ..device_tensors import DeviceTensors
from ..dtype_flow import DtypeFlow
from ..env_writes import LegacyWrite
from ..inputs import InputCasts
from ..model_code import ModelCodeAudit
from ..model_reach import float64_modules
from ..model_site import ModelCall, OptimizerSite
from ..tree_facts import FactoryChange
from ..tree_types import ModelHandoff
from ..wrappers import Wrap, module_of

SHARDED_SUMMARY = (
    "XlaFullyShardedDataParallel computes in bf16 (compute_dtype=torch.bfloat16), its FP32 shards the master weights"
)
"""BFM001's summary of the change where the model is sharded by torch-xla's FSDP (:mod:`..wrappers`)."""


class GuardDoesNotTravel(Exception):
    """A plan under a guard put a cast where the guard's names do not denote what they denote at
    the writes (a loss target cast in another function than the one the switch is set in): written
    there, the migrated script would raise NameError. The file is planned again, with the guard
    refused at ``line`` (:meth:`~bf16_migrate.python.precision.Planner._guard_travels`, BFM041)."""

    def __init__(self, line: int) -> None:
        super().__init__(f"the guard cannot be evaluated at line {line}")
        self.line = line


@dataclass(frozen=True)
class Migration:
    """The migration of one file as the Planner decided it: the file (``ctx``) and the ``plan`` the
    units add to, the ``mode`` and the changes it ``emits`` for the ``variables`` switched on (by
    the file's ``writes``, or by a launcher: ``external``), the ``guard`` they were on under (None:
    always) and where it is written (``guard_at``); the optimizer ``sites``, the ``models`` they are
    built from, where each is cast (``cast_anchors``, None for a model FSDP shards), the models'
    ``calls`` (by id of the model), the FSDP wraps of the ``sharded`` models and the optimizer calls
    and wraps their FP32 shards own (``owned``), the other modules on the device (``on_device``),
    the file's dtype ``flow`` and ``--fp32-optimizer-state`` (``fp32_state``).

    The units' checks (:func:`~bf16_migrate.python.changes.check_changes`) add what they found:
    amp's ``regions``, the ``audit`` of the model's own code and the loss code the script imports
    (``loss_imports``), the script's own device ``tensors`` (None: not looked for), amp's ``handoffs`` of the
    models to functions of the tree's modules, whose forward passes those modules' migrations wrap."""

    ctx: FileContext
    plan: EditPlan
    mode: Mode
    emits: frozenset[Emit]
    variables: tuple[str, ...]
    writes: tuple[LegacyWrite, ...]
    external: tuple[str, ...]
    guard: cst.BaseExpression | None
    guard_at: tuple[cst.CSTNode, ...]
    sites: tuple[OptimizerSite, ...]
    models: tuple[cst.BaseExpression, ...]
    cast_anchors: tuple[list[cst.BaseStatement] | None, ...]
    calls: Mapping[int, list[ModelCall]]
    sharded: Mapping[int, list[Wrap]]
    owned: frozenset[int]
    on_device: OnDevice
    flow: DtypeFlow
    fp32_state: bool
    regions: tuple[Region, ...] = ()
    audit: ModelCodeAudit = field(default_factory=ModelCodeAudit)
    tensors: DeviceTensors | None = None
    loss_imports: tuple[str, ...] = ()
    handoffs: tuple[ModelHandoff, ...] = ()

    @property
    def anchors(self) -> list[tuple[str, cst.CSTNode]]:
        """Where a finding about the whole migration points: each write's key, or the module for
        each variable a launcher sets."""
        return [(w.variable, w.key) for w in self.writes] or [(v, self.ctx.module) for v in self.external]

    @property
    def summary(self) -> str:
        """What the mode put in the switch's place, as BFM001 words it: where a model-casting mode
        meets a model torch-xla's FSDP shards, FSDP's ``compute_dtype`` with its FP32 shards."""
        return SHARDED_SUMMARY if self.sharded and self.mode.casts_model else self.mode.summary

    @property
    def f64_was_f32(self) -> bool:
        """A variable switched on made f64 f32 on the device (XLA_DOWNCAST_BF16: ``f64_becomes``)."""
        return any(self.ctx.rules.variables[v].f64_becomes == "f32" for v in self.variables)

    def float64_modules(self, model: cst.BaseExpression) -> list[tuple[str, cst.Call]]:
        """Where a switch on made f64 f32 on the device: the modules the class of ``model`` (one of
        :attr:`models`, not sharded) builds in float64 on purpose, as (attribute, constructor call)
        (:func:`~..model_reach.float64_modules`); empty otherwise. They stay float64 where they are
        built (the same initial values as the legacy run's) and become float32 at the model's cast
        (model-cast's ``downcast_bf16``), or by ``.float()`` after the constructor where the model
        stays FP32 (amp) or the cast is under a guard (the module is then put back to float32 after
        the guarded cast)."""
        if not self.f64_was_f32 or id(model) in self.sharded:
            return []
        ctx = self.ctx
        return ctx.memo(("float64 modules", id(model)), lambda: float64_modules(ctx, module_of(ctx, model)))


@dataclass(frozen=True)
class Planned:
    """What the units planned so far hand on: the ``inputs`` planner of the models' input casts,
    with the statements to write right after each model's cast (``after_cast``, by id of the
    model); the factory changes the script asks of its tree's modules (``factory_changes``, FP32
    master weights); what a launcher's finding says the script got when not the mode's
    ``script_change``; the keys of the writes renamed to stochastic rounding (``renamed``) and the
    summary their BFM001 gives (``writes_summary``, None: :attr:`Migration.summary`)."""

    inputs: InputCasts | None = None
    after_cast: Mapping[int, list[cst.BaseStatement]] = field(default_factory=dict)
    factory_changes: tuple[FactoryChange, ...] = ()
    script_change: str | None = None
    renamed: frozenset[int] = frozenset()
    writes_summary: str | None = None

    @property
    def unguarded(self) -> list[cst.CSTNode]:
        """Casts planned where the guard cannot be evaluated (its names mean something else there)."""
        return list(self.inputs.unguarded) if self.inputs is not None else []


Plan = Callable[[Migration, Planned], Planned]
"""A unit's planning: adds its edits and findings to ``Migration.plan`` and ``ctx``, and returns
what it hands on (the :class:`Planned` it was given, with its own fields set)."""


Check = Callable[[Migration], Migration | None]
"""A unit's check, run before any change is planned: the :class:`Migration` with what it found
added, or None when the change cannot be made (reported, the switch kept: the migration stops)."""


@dataclass(frozen=True)
class Unit:
    """One entry of :data:`~bf16_migrate.python.changes.REGISTRY`: the change a mode ``emit`` s
    (``rules/modes.toml``), or None for a step every migration takes, its ``plan``, and the
    ``check`` that may stop the migration before any change is planned."""

    emit: Emit | None
    plan: Plan
    check: Check | None = None
