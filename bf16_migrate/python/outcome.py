"""What a migration did, as a value: the parts that act on it (the launcher plan, the project's
``--legacy-env`` targets, verify) ask the :class:`Outcome`, never the diagnostics' codes.

The codemod sets it where it decides (:class:`~bf16_migrate.python.precision.Planner` and the
modules it delegates to), beside the finding that tells the user; the finding says why in words,
the outcome says what happened in a type.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ..diagnostics import Diagnostic


class KeptF32(enum.Enum):
    """Where a migration keeps the f32 a script asks for (``Outcome.kept_f32``)."""

    LOSS = "the loss the step backpropagates is computed in f32 (`.float()` before the loss)"
    FORWARD = "part of the forward pass computes in f32 (an upcast kept, cast back where it leaves)"


class Refusal(enum.Enum):
    """Why a file did not take the mode's change (its finding is the :class:`Outcome`'s
    ``explained_by``)."""

    NO_OPTIMIZER = "no optimizer is built from a model's parameters, so there is no model to change"
    MODEL_UNKNOWN = "an optimizer is built, but which model it trains, or where to cast it, cannot be told"
    TEST = "the variable is a test's business (set or read to exercise the legacy path): reported only"
    FRAMEWORK = "a framework (Lightning, Accelerate, the HF Trainer) owns the precision setting"
    OWN_PRECISION = "the script's own precision code is another mode's, behind a flag, or cannot be wrapped"
    ALREADY_ON = "the script already turns bf16 on with code of its own beside the legacy setting"
    MASTER_WEIGHTS = "an optimizer cannot keep the FP32 master weights the mode needs (gpu-compatible)"
    MODEL_CODE_F32 = (
        "a place in the model's own code would compute in f32 without the switch: a tensor it makes that cannot "
        "follow the dtype it meets, or an f32 island that leaks or reaches a matmul"
    )
    WRAPPER = (
        "a wrapper owns the model's precision (torch-xla's FSDP) and its own setting cannot be used here, "
        "or a sharding wrapper was never measured with a bf16 model"
    )
    DEVICE_MODULE = (
        "a module reaches the device in a way the code does not show (a function of another module, a device "
        "the code cannot tell), or its cast has no place: it would stay f32 on the device"
    )
    UNREAD_IMPORT = "a module of the tree it imports cannot be read, so what its code does under the switch is unknown"
    FLOAT32_OP = (
        "an op the code runs on the device has no bf16 kernel there (its legacy run computed it in f32 on the "
        "CPU): a bf16 operand raises, and run in float32 its backward computes in f32 on the device"
    )
    DEVICE_TENSOR = (
        "a tensor the code makes on the device cannot be made bf16 (under the condition the switch was set under, "
        "or on a device the code does not tell): it would stay f32 on the device"
    )
    SCRIPTED = (
        "a model whose inputs must be cast at run time (a forward pre-hook) is compiled by TorchScript, which "
        "compiles its hooks and refuses that one"
    )
    DEFAULT_F64 = (
        "the default dtype is float64, which the switch made float32 on the device: the legacy run computed in "
        "f32, not bf16, and no mode's change keeps that"
    )


LAUNCH_REFUSALS = frozenset(
    {
        Refusal.NO_OPTIMIZER,
        Refusal.MODEL_UNKNOWN,
        Refusal.FRAMEWORK,
        Refusal.MASTER_WEIGHTS,
        Refusal.MODEL_CODE_F32,
        Refusal.WRAPPER,
        Refusal.DEVICE_MODULE,
        Refusal.UNREAD_IMPORT,
        Refusal.DEVICE_TENSOR,
        Refusal.DEFAULT_F64,
        Refusal.SCRIPTED,
    }
)
"""The refusals that mean a launcher's setting cannot be given to the script it starts: the
script has no model to change, a framework owns its precision (the launcher must pass the
framework's flag instead), an optimizer of it cannot keep FP32 master weights, its model's
own code would compute in f32 without the switch, a wrapper owns its precision, a module on the
device cannot be migrated from its code, or a module it imports cannot be read."""

SCRIPT_REFUSALS = frozenset({Refusal.NO_OPTIMIZER, Refusal.MODEL_UNKNOWN, Refusal.FRAMEWORK, Refusal.TEST})
"""The refusals that mean a file is not a training script the ``--legacy-env`` change goes to
(a test's, a framework's, or one without a model). An optimizer without master weights is a
training script's reason, shown with its own findings."""


class Edge(enum.Enum):
    """A part of the switch's contract a migration that took the change must have examined
    everywhere before its summary may say nothing is left to do by hand: under the legacy switch
    every floating tensor on the device was bf16 (torch-xla ``torch_xla/csrc/dtype.cpp``), so every
    module that reaches the device, not only the one an optimizer trains, must be too."""

    DEVICE_MODULES = "the modules that reach the device"
    DEVICE_TENSORS = "the tensors the code makes on the device"


@dataclass(frozen=True)
class NotExamined:
    """One place a migration did not examine: the ``edge`` it belongs to, its 1-based ``line``
    (0: the whole file) and ``what`` (a few words naming it: "`ema`, whose forward runs in
    `evaluate`")."""

    edge: Edge
    line: int
    what: str


@dataclass(frozen=True)
class F32Island:
    """A deliberate f32 island the migration kept as its author wrote it (an upcast cast back
    before it leaves the function, no matmul in between): lines ``first_line`` to ``last_line``
    of the migrated file's input text (1-based), and the finding that says so. verify's dtype
    trace does not count f32 computed there against the migration."""

    first_line: int
    last_line: int
    finding: Diagnostic


@dataclass(frozen=True)
class LaunchedScript:
    """A Python script the file starts in a process of its own with legacy settings in the
    environment it hands it (``subprocess.run([sys.executable, "train.py"], env={**os.environ,
    "XLA_USE_BF16": "1"})``, :mod:`.launch_env`), every launch of it in the file with the same
    settings: ``script`` as written, ``beside`` when joined to the launcher's own directory,
    ``settings`` (variable, value) pairs, ``line`` of its first launch, ``entries`` the lines of the
    settings' entries. The project migrates it under them and then the launcher's settings
    (:func:`bf16_migrate.env_modules.migrate_launched`)."""

    script: str
    beside: bool
    settings: tuple[tuple[str, str], ...]
    line: int
    entries: tuple[int, ...] = ()


@dataclass
class Outcome:
    """What the migration of one file did.

    ``switch_migrated``: a legacy write was replaced or removed together with the mode's change
    (or, for the reference mode, removed). ``already_migrated``: a launcher's setting met a
    script that carries the mode's change already, always on. ``refusals``: why the change was
    not made, in the order decided, each with the finding that words it for the user.
    ``through_flag``: the findings of a change made through the script's own autocast flag (its
    launchers pass the flag where they set the variable). ``factory_changes_made``: the findings
    of what this module's optimizer factories now do because other scripts asked it of them.
    ``no_effect``, ``kept_f32``: see the fields.
    ``host_edge_examined``: every place the file hands the host a value from the device was
    examined, and the floating ones cast back to the float32 the legacy run handed it, or
    reported (:mod:`.host_exits`).
    ``examined``: the :class:`Edge` s the migration examined in the whole file;
    ``not_examined``: the places within them it could not (each also a finding that needs a hand).
    ``f32_islands``: the deliberate f32 islands kept as written (:class:`F32Island`).
    """

    switch_migrated: bool = False
    already_migrated: bool = False
    refusals: list[tuple[Refusal, Diagnostic]] = field(default_factory=list)
    through_flag: list[Diagnostic] = field(default_factory=list)
    factory_changes_made: list[Diagnostic] = field(default_factory=list)
    no_effect: bool = False
    """The script puts no tensor on the device (:mod:`.no_tensor`): the legacy settings in force
    for it change nothing there; its own were removed, a launcher's are removed too (BFM170)."""
    kept_f32: set[KeptF32] = field(default_factory=set)
    """Where the migration keeps f32 the script asks for on purpose, which the legacy run computed
    in bf16 (:mod:`.deliberate_f32`, BFM088/BFM089): the migrated run's numbers differ from the
    legacy run's there by design (verify's matches part judges the drift alone, its precision part
    accepts an f32 loss)."""
    host_edge_examined: bool = False
    examined: set[Edge] = field(default_factory=set)
    not_examined: list[NotExamined] = field(default_factory=list)
    f32_islands: list[F32Island] = field(default_factory=list)
    sets_on_import: dict[str, str] = field(default_factory=dict)
    """For a file refused for want of a model that sets legacy variables at module level,
    unconditionally (an ``env_setup.py`` that scripts import first): those settings, which the
    project follows to the scripts that import it (:mod:`bf16_migrate.env_modules`)."""
    sets_on_call: tuple[str, ...] = ()
    """With :attr:`sets_on_import`: the module-level functions that make those settings when called
    (``setup_env``); only the importers that call one run under them. Empty: the import makes them."""
    launches: list[LaunchedScript] = field(default_factory=list)
    """The scripts the file starts in a process of its own with legacy settings it hands them, which
    the project follows (:class:`LaunchedScript`)."""

    def refuse(self, why: Refusal, finding: Diagnostic) -> None:
        """Record a refusal and the finding that explains it."""
        self.refusals.append((why, finding))

    @property
    def took(self) -> bool:
        """The file has the mode's change: made now, or there already."""
        return self.switch_migrated or self.already_migrated

    def unexamined(self) -> list[NotExamined]:
        """What a migration that took the change leaves unexamined: each place it could not
        examine, and each :class:`Edge` it never examined (line 0). Empty for a file that did not
        take the change (its refusals say why) or that carried it already."""
        if not self.switch_migrated:
            return []
        missing = [NotExamined(edge, 0, edge.value) for edge in Edge if edge not in self.examined]
        return [*missing, *self.not_examined]

    def refused(self, among: frozenset[Refusal] | None = None) -> list[tuple[Refusal, Diagnostic]]:
        """The refusals (of the kinds ``among``, or all), in the order decided."""
        return [(why, d) for why, d in self.refusals if among is None or why in among]
