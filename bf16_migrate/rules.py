"""Load the knowledge in ``rules/*.toml`` (at the repository root) into typed, validated objects.

The rules are data so that what we know about each legacy variable (its semantics, the
diagnostics, what each mode emits) can be read and reviewed without reading code. Every file is
validated at load time: a malformed rule is a :class:`RuleError` naming the file, never a
silently wrong migration.

The rule files are the only place that names the legacy variables, the modes and the diagnostic
codes; the rest of the package derives its lists from here (:func:`variable_names` for the byte
prefilter and the verify runs, :data:`MODES`). Where they are (:func:`rules_dir`): installed
(``pip install .``) they are package data, ``bf16_migrate/_rules/`` (pyproject.toml maps the
package ``bf16_migrate._rules`` to the directory ``rules/``); in a source checkout and an
editable install they are read from ``rules/`` beside the package. ``BF16_MIGRATE_RULES_DIR``
names another directory (a copy with a rule added, to try it: see docs/architecture.md).

A rule page of ``rules/diagnostics*.toml`` holds runnable examples as data (:class:`RuleExample`,
run for every code by tests/test_rule_examples.py), each an array of tables under the page:

* ``[[BFMnnn.invalid]]``: a small tree where the code must be produced;
* ``[[BFMnnn.valid]]``: a nearby legacy or migrated tree where it must not be.

Keys of an example: ``use = "example"`` or ``use = "instead"`` (``train.py`` is
:data:`EXAMPLE_HEADER` then the page's own text of that name) or ``files`` (a table: a file's
path in the tree -> its whole text; a script, its launcher, a Dockerfile ...), exactly one of
the two; ``mode`` (a mode of modes.toml, default the first); ``options`` (a table of
:data:`EXAMPLE_OPTIONS`, passed to the migration); for an invalid example only,
``fixed`` (whether the finding is reported fixed; default: whether the page's fix is not "needs a
hand") and ``holds`` (a table: a file's path -> a line the migrated file must hold; required when
the finding is fixed). A trace code (produced by ``verify``'s run-time trace, not by the
rewrite) names instead the test that produces it: ``tested_by = "tests/<file>.py::<test>"``.
A malformed example is a :class:`RuleError` naming the file and the code.
"""

from __future__ import annotations

import functools
import os
import re
import string
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

RULES_DIR_ENV = "BF16_MIGRATE_RULES_DIR"
"""An environment variable naming a rules directory to use instead of the installed one."""

VARIABLE_GLOB = "XLA_*.toml"
"""The rule files of the legacy variables, one per variable, named after it."""


def rules_dir() -> Path:
    """The directory of the rule files: ``$BF16_MIGRATE_RULES_DIR`` when set, else the package
    data of an installed copy (``bf16_migrate/_rules``), else ``rules/`` of the source tree the
    package is imported from (a checkout, an editable install)."""
    override = os.environ.get(RULES_DIR_ENV)
    if override:
        return Path(override)
    here = Path(__file__).parent
    installed = here / "_rules"
    return installed if installed.is_dir() else here.parent / "rules"


RULES_DIR = rules_dir()


class RuleError(Exception):
    """A rule file is missing, malformed or inconsistent (the message names the file)."""


def _read(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RuleError(f"{path}: cannot read rule file: {exc}") from exc


def _need(data: dict, key: str, kind: type, path: Path):
    if key not in data:
        raise RuleError(f"{path}: missing key {key!r}")
    value = data[key]
    if not isinstance(value, kind):
        raise RuleError(f"{path}: {key!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


EMITS = frozenset(
    {
        "stochastic-rounding",
        "model-cast",
        "input-cast",
        "fp32-loss-accumulator",
        "fp32-master-weights",
        "fp32-grad-norm",
        "autocast",
        "bf16-attention-math",
        "model-code-dtypes",
        "zero1-bf16-state",
        "host-float32",
        "device-tensors",
    }
)
"""The changes a mode may emit (``rules/modes.toml`` ``emit``); what each means is written in
:mod:`bf16_migrate.python.precision`."""


@dataclass(frozen=True)
class Mode:
    """One migration mode: a table of ``rules/modes.toml`` (the replacements of AWS Neuron's
    "Migration From XLA_USE_BF16/XLA_DOWNCAST_BF16").

    ``emit`` is what the codemod writes for a variable that switches bf16 on (a subset of
    :data:`EMITS`); the questions the code asks of a mode are read from it, so no code compares
    a mode's name. ``summary`` names the change in findings, ``by_hand`` what to do where the
    model cannot be found, ``script_change`` what a launcher's finding says its script gets.
    ``removes_only``: the internal FP32-reference mode of ``verify`` (:data:`REFERENCE`), which
    removes the legacy writes and adds nothing.
    """

    name: str
    summary: str
    emit: frozenset[str]
    by_hand: str = ""
    script_change: str = ""
    removes_only: bool = False
    verify: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """The mode's ``[MODE.verify]`` table: how close ``verify`` holds a migration in this mode to
    its comparison run (read and checked by :mod:`bf16_migrate.verify.compare`)."""

    @property
    def casts_model(self) -> bool:
        """The model becomes bf16 (``model.to(torch.bfloat16)``), its floating inputs with it."""
        return "model-cast" in self.emit

    @property
    def autocast(self) -> bool:
        """The model stays FP32; its forward pass and loss run under ``torch.autocast``."""
        return "autocast" in self.emit

    @property
    def master_weights(self) -> bool:
        """The optimizer updates FP32 master weights of the bf16 parameters."""
        return "fp32-master-weights" in self.emit

    @property
    def stochastic_rounding(self) -> bool:
        """The legacy setting becomes ``NEURON_RT_STOCHASTIC_ROUNDING_EN=1``."""
        return "stochastic-rounding" in self.emit

    @property
    def marks(self) -> frozenset[str]:
        """What a migration in this mode writes that tells it apart (:data:`EMIT_MARKS` of its
        ``emit``): verify reads the mode of a migrated text the codemod did not write from them."""
        return frozenset(EMIT_MARKS[change] for change in self.emit if change in EMIT_MARKS)

    def __str__(self) -> str:
        return self.name


REFERENCE = Mode(name="reference", summary="removed (FP32 reference run)", emit=frozenset(), removes_only=True)
"""The internal mode of ``verify``'s FP32 reference run: the legacy writes removed, nothing added."""

_MODE_TEXTS = ("summary", "by_hand", "script_change")


def _read_modes(directory: Path) -> dict[str, Mode]:
    """The modes of ``directory/modes.toml``, in the file's order; :class:`RuleError` naming the
    file for a mode without its texts or with an unknown emit."""
    path = directory / "modes.toml"
    data = _read(path)
    if not data or not all(isinstance(table, dict) for table in data.values()):
        raise RuleError(f"{path}: one table per mode, e.g. [stochastic], is expected")
    modes = {}
    for name, table in data.items():
        unknown = set(table) - {"emit", "verify", *_MODE_TEXTS}
        if unknown:
            raise RuleError(f"{path}: [{name}] has unknown keys {sorted(unknown)}")
        emit = frozenset(_need(table, "emit", list, path))
        if emit - EMITS:
            raise RuleError(f"{path}: [{name}] emits unknown changes {sorted(emit - EMITS)}")
        if name == REFERENCE.name:
            raise RuleError(f"{path}: {name!r} is verify's own reference run, not a mode")
        texts = {key: _need(table, key, str, path) for key in _MODE_TEXTS}
        verify = table.get("verify", {})
        if not isinstance(verify, dict):
            raise RuleError(f"{path}: [{name}.verify] must be a table")
        modes[name] = Mode(name=name, emit=emit, **texts, verify=verify)
    return modes


_modes_in = functools.cache(_read_modes)

MODES = tuple(_modes_in(RULES_DIR))
"""The names of the migration modes, as chosen with ``--mode``, in the order offered (the first
is the default; ``rules/modes.toml``)."""

DEFAULT_MODE = MODES[0]


def all_modes(directory: Path | None = None) -> tuple[Mode, ...]:
    """The migration modes (:class:`Mode`), in the order of :data:`MODES` (the first is the
    default). Reads ``modes.toml`` alone (once), not the other rule files."""
    return tuple(_modes_in(directory or RULES_DIR).values())


def mode_named(name: str, directory: Path | None = None) -> Mode:
    """The :class:`Mode` called ``name`` (or :data:`REFERENCE`); ``ValueError`` naming the modes
    for any other name. Reads ``modes.toml`` alone (once), not the other rule files."""
    if name == REFERENCE.name:
        return REFERENCE
    modes = _modes_in(directory or RULES_DIR)
    if name not in modes:
        raise ValueError(f"unknown mode {name!r}; choose one of {', '.join(modes)}")
    return modes[name]


@functools.cache
def variable_names(directory: Path = RULES_DIR) -> tuple[str, ...]:
    """The names of the legacy variables, sorted: the stems of ``XLA_*.toml`` in ``directory``.

    Cheap (one directory listing, no file parsed), for the byte prefilter that runs before
    anything else: :func:`load_rules` checks that each file's ``name`` is its stem, so these
    are the names of ``load_rules().variables``. Raises :class:`RuleError` when there is none.
    """
    names = sorted(path.stem for path in directory.glob(VARIABLE_GLOB))
    if not names:
        raise RuleError(f"{directory}: no variable rules ({VARIABLE_GLOB}) found")
    return tuple(names)


STOCHASTIC_ROUNDING_VAR = "NEURON_RT_STOCHASTIC_ROUNDING_EN"

EMIT_MARKS = {
    "stochastic-rounding": STOCHASTIC_ROUNDING_VAR,
    "model-cast": ".to(torch.bfloat16)",
    "fp32-master-weights": "with_fp32_master_weights",
    "autocast": "torch.autocast(",
}
"""The text the codemod writes for an emitted change, found in a script only because it was
migrated with it (the names of its own snippets: :mod:`bf16_migrate.python.snippets`,
:mod:`bf16_migrate.python.autocast`); the changes that write nothing this distinct have none.
A mode's :attr:`Mode.marks` are read from them."""


@dataclass(frozen=True)
class VariableRule:
    """What a legacy precision variable does.

    ``f32_becomes`` / ``f64_becomes`` are the device dtypes an f32 / f64 tensor gets while the
    variable is on (``"bf16"``, ``"f16"``, ``"f32"``, ``"f64"``); ``effective`` is False for the
    variables torch-xla >= 2.5 ignores (the FP16 pair). What a mode emits for it:
    :meth:`emits`.
    """

    name: str
    low_precision: str
    f32_becomes: str
    f64_becomes: str
    effective: bool
    deprecated_since: str
    neuron_stochastic_rounding: bool
    source: Path

    def emits(self, mode: Mode) -> frozenset[str]:
        """The changes ``mode`` makes for this variable: the mode's, when the variable still
        takes effect (the modes replace bf16, the only low precision an effective variable has:
        checked at load); none for one torch-xla ignores."""
        return mode.emit if self.effective else frozenset()


FIX_KINDS = ("fixed automatically", "fixed automatically, review", "needs a hand")
"""A diagnostic's fix safety, as the ``fix`` key of its rule page begins (then ``": "`` and a
sentence): the change is safe, the change is made but wants a look, or nothing is changed."""

DIAGNOSTIC_KEYS = frozenset(
    {"title", "what", "why", "example", "instead", "fix", "todo", "message", "variants"}
    | {"invalid", "valid", "tested_by"}
)
"""The keys of a rule page in ``rules/diagnostics*.toml``; all but ``variants`` and the examples'
keys (``invalid``, ``valid``, ``tested_by``: see the module docstring) are required."""

EXAMPLE_KEYS = frozenset({"use", "files", "mode", "options", "fixed", "holds"})
"""The keys of one runnable example of a rule page (``[[BFMnnn.invalid]]``, ``[[BFMnnn.valid]]``)."""

EXAMPLE_OPTIONS = {
    "fp32_optimizer_state": bool,
    "helpers_module": str,
    "legacy_env": dict,
    "exclude": list,
    "extend_select": list,
}
"""The options an example may give its run (``options``), with their types: what the command
line's ``--fp32-optimizer-state``, ``--helpers-module``, ``--legacy-env`` and ``--exclude`` give
:func:`bf16_migrate.project.migrate_paths`, and ``--extend-select`` the selection of the findings
(:class:`bf16_migrate.suppress.Selection`, for the opt-in BFM900). A list is passed as a tuple."""

EXAMPLE_HEADER = "import os\nimport torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n"
"""The imports put before a page's ``example`` or ``instead`` run as ``train.py`` (``use``)."""


@dataclass(frozen=True)
class RuleExample:
    """One runnable example of a rule page: the tree ``files`` (path -> text) migrated in
    ``mode``. ``invalid``: the code must be produced (``fixed`` says whether reported fixed, and
    each migrated file of ``holds`` must hold its line); otherwise the code must not be."""

    invalid: bool
    files: Mapping[str, str]
    mode: str
    fixed: bool = False
    holds: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    """The run's options (:data:`EXAMPLE_OPTIONS`)."""


@dataclass(frozen=True)
class DiagnosticRule:
    """One diagnostic code's rule page, as ruff documents its rules: what it finds and does
    (``what``), why it matters (``why``), a legacy ``example`` and what to use ``instead``, the
    fix safety (``fix``, one of :data:`FIX_KINDS`, and ``fix_note``, its sentence), the to-do line
    of an unfixed finding, and the finding's ``message``: a ``str.format`` template with named
    fields, ``variants`` the templates of the other situations the code covers."""

    code: str
    title: str
    what: str
    why: str
    example: str
    instead: str
    fix: str
    fix_note: str
    todo: str
    message: str
    variants: Mapping[str, str] = field(default_factory=dict)
    invalid: tuple[RuleExample, ...] = ()
    """Runnable examples that produce the code (see the module docstring)."""
    valid: tuple[RuleExample, ...] = ()
    """Runnable examples near the code's situation that must not produce it."""
    tested_by: str | None = None
    """A trace code's test that produces it (``tests/<file>.py::<test>``)."""

    @property
    def fixable(self) -> bool:
        """Whether a finding of this code may be reported fixed (its fix is not "needs a hand")."""
        return self.fix != "needs a hand"

    def template(self, variant: str | None = None) -> str:
        """The message template of ``variant`` (the main ``message`` when None)."""
        if variant is None:
            return self.message
        try:
            return self.variants[variant]
        except KeyError:
            raise KeyError(f"{self.code} has no message variant {variant!r} (it has {sorted(self.variants)})") from None

    def format(self, variant: str | None = None, **fields: object) -> str:
        """The message of ``variant`` with ``fields``; a field missing from or unknown to the
        template is a ``KeyError`` (a call site and its catalogue entry disagree). A message is
        one line (one finding per line in the text output, a GitHub workflow command ends at
        the line's end): a line break inside a field's text (code quoted from a file) is
        written ``\\n``."""
        template = self.template(variant)
        wanted = template_fields(template)
        if set(fields) != wanted:
            raise KeyError(
                f"{self.code}{f' ({variant})' if variant else ''}: the template wants fields {sorted(wanted)}, got "
                f"{sorted(fields)}"
            )
        return template.format(**{name: _one_line(value) for name, value in fields.items()})


def _one_line(value: object) -> object:
    if isinstance(value, str) and ("\n" in value or "\r" in value):
        return value.replace("\r", "\\r").replace("\n", "\\n")
    return value


def template_fields(template: str) -> set[str]:
    """The named fields of a ``str.format`` template (a positional or empty field raises
    ``ValueError``)."""
    names = set()
    for _text, name, _spec, _conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not name or name.isdigit() or not name.isidentifier():
            raise ValueError(f"field {name!r} is not a name")
        names.add(name)
    return names


@dataclass(frozen=True)
class TorchApi:
    """What the codemod knows of the torch API (``rules/torch_api.toml``)."""

    stock_optimizers: frozenset[str]
    not_optimizers: frozenset[str]
    factories: Mapping[str, str]
    float_dtypes: frozenset[str]
    int_dtypes: frozenset[str]
    same_dtype_methods: frozenset[str]
    float_methods: frozenset[str]
    int_methods: frozenset[str]
    functional_losses: frozenset[str]
    attention_users: frozenset[str] = frozenset()
    attention_flag: str = ""
    batch_sources: Mapping[str, str] = field(default_factory=dict)
    autocast: frozenset[str] = frozenset()
    """qualified name -> "dataset" | "data" | "image-label" (see ``[batch_sources]``)."""
    grad_norm_clipping: frozenset[str] = frozenset()
    zero_redundancy_optimizers: frozenset[str] = frozenset()
    checkpoint_methods: frozenset[str] = frozenset()
    optimizer_owners: Mapping[str, str] = field(default_factory=dict)
    """qualified name of a wrapper that owns the optimizer -> its own master-weights setting."""
    values_indices_methods: frozenset[str] = frozenset()
    """Tensor methods that return a (values, indices) named tuple (``[methods] values_indices``)."""
    optimizer_subclasses: frozenset[str] = frozenset()
    """Optimizer classes of other libraries the FP32-master-weights subclass may wrap."""
    model_wrappers: Mapping[str, str] = field(default_factory=dict)
    """qualified name of a callable a model goes through and that is called in its place ->
    ``"transparent"``, ``"dynamo"``, ``"fsdp"`` or ``"unmeasured"`` (see ``[model_wrappers]``)."""
    fsdp_compute_dtype: FsdpLayers | None = None
    """The layers torch-xla's FSDP runs with ``compute_dtype=torch.bfloat16`` (``[fsdp_compute_dtype]``)."""
    no_tensor_calls: frozenset[str] = frozenset()
    host_only_imports: frozenset[str] = frozenset()
    """torch and torch_xla functions that make no tensor (they ask for the device or the runtime):
    a script calling nothing else puts no tensor on the device (``python/no_tensor.py``)."""


@dataclass(frozen=True)
class FsdpLayers:
    """What torch-xla's FSDP with ``compute_dtype=torch.bfloat16`` was measured to run
    (``rules/torch_api.toml`` ``[fsdp_compute_dtype]``): qualified ``torch.nn`` layer names that
    ran, ran only with ``bias=False``, hold no parameters, and that failed (-> the error).
    ``not_equivalent``: what verify measured when a model of layers that run was migrated so, if
    the run was not equivalent to the legacy one (the switch is then kept for every FSDP model);
    None when it was."""

    runs: frozenset[str]
    runs_without_bias: frozenset[str]
    parameterless: frozenset[str]
    fails: Mapping[str, str]
    not_equivalent: str | None = None
    amp_not_equivalent: str | None = None
    """What verify measured of amp's autocast around an FSDP-wrapped model, when that run was not
    equivalent to the legacy one (amp then keeps the switch for every FSDP model too); None when it was."""


@dataclass(frozen=True)
class FrameworkRule:
    """A framework that owns the precision setting (``rules/frameworks.toml``): the qualified
    names of the objects that carry the setting, the setting to use, and the caveat."""

    key: str
    name: str
    qualified: frozenset[str]
    setting: str
    advice: str
    launch_flag: str | None = None
    """The script's command-line flag for the framework's bf16 setting, when it has one."""
    modules: frozenset[str] = frozenset()
    """Top-level modules of the framework (torch underneath)."""
    owns_with: str | None = None
    """When set, the framework owns precision only where its object is built with this keyword
    (``Accelerator(mixed_precision=...)``); otherwise always."""


@dataclass(frozen=True)
class ModelCodeRules:
    """What the audit of the model's own code knows (``rules/model_code.toml``; its comments give
    the sources): the ways f32 enters a model once the legacy switch is gone, and how a tensor's
    dtype travels through the code (:mod:`bf16_migrate.python.model_code`)."""

    float_factories: frozenset[str] = frozenset()
    """``torch.X`` creation functions floating by default (short names)."""
    f32_dtypes: frozenset[str] = frozenset()
    f64_dtypes: frozenset[str] = frozenset()
    upcast_methods: Mapping[str, str] = field(default_factory=dict)
    """Tensor method -> ``"f32"`` / ``"f64"``."""
    low_casts: frozenset[str] = frozenset()
    cast_like: frozenset[str] = frozenset()
    ends: frozenset[str] = frozenset()
    host_functions: frozenset[str] = frozenset()
    integer_results: frozenset[str] = frozenset()
    """Functions whose result is an integer tensor (their ``.float()`` is a fresh tensor)."""
    matmul_functions: frozenset[str] = frozenset()
    matmul_methods: frozenset[str] = frozenset()
    weighted_layers: Mapping[str, str] = field(default_factory=dict)
    """Qualified name of a torch.nn layer -> ``"matmul"`` / ``"gather"`` / ``"elementwise"``."""
    state_layers: frozenset[str] = frozenset()
    """Qualified names of the torch.nn layers whose inputs, initial state included, must have their
    parameters' dtype (the recurrent layers)."""
    packed_sequences: frozenset[str] = frozenset()
    """Qualified names that make a recurrent layer's input a ``PackedSequence`` (no ``.dtype``)."""
    module_bases: frozenset[str] = frozenset()
    optimizer_bases: frozenset[str] = frozenset()
    module_entries: frozenset[str] = frozenset()
    optimizer_entries: frozenset[str] = frozenset()
    registers: frozenset[str] = frozenset()
    index_methods: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """Tensor method -> (position, keyword) of its index or mask argument (the receiver not counted)."""
    index_functions: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """Qualified torch function -> (position, keyword) of its index or mask argument."""
    loss_containers: frozenset[str] = frozenset()
    loss_weight_keywords: frozenset[str] = frozenset()
    loss_weight_first: frozenset[str] = frozenset()
    """``[loss]``: what makes a criterion class keep tensors of its own (BFM086)."""


HOST_HANDS = frozenset({"float32", "python", "integer", "never"})
"""What the legacy run handed the host at an exit (``rules/host_exits.toml``, its header): float32
tensors the migration must cast back to, Python numbers, integers only, or nothing (the exit
raises for a device tensor in every run)."""


@dataclass(frozen=True)
class HostExit:
    """One place a value leaves the XLA device for the host (a row of ``rules/host_exits.toml``).

    ``method``: the name of the method called (``"cpu"``), or None for a ``function`` row (its
    qualified names, ``functions``). ``argument``: (position, keyword) of the argument that
    carries the value (the receiver not counted); None when the receiver does. ``device``:
    (position, keyword) of the argument that must name the host for the row to apply
    (``t.to("cpu")``), or None. ``hands``: what the legacy run handed the host (:data:`HOST_HANDS`).
    ``saved``: the value is written or sent as it is (a checkpoint). ``measured``: the evidence.
    ``keeps_device``: see below."""

    exit: str
    hands: str
    measured: str
    method: str | None = None
    functions: frozenset[str] = frozenset()
    argument: tuple[int, str] | None = None
    device: tuple[int, str] | None = None
    saved: bool = False
    keeps_device: bool = False
    """The exit writes a device tensor as one (``torch.save``): the float32 copy goes back to the
    device it came from."""
    unknown_left: bool = False
    """A value whose dtype the code does not tell is left as it is (it is most often a Python
    number there, and a bf16 tensor costs little): only a floating tensor is cast."""


@dataclass(frozen=True)
class ArgumentAt:
    """Where a call takes an argument: by ``position`` (the receiver not counted; None when it is
    keyword-only) or by ``keyword``."""

    position: int | None
    keyword: str

    def of(self, call: Any) -> Any:
        """The argument's value in ``call`` (a libcst ``Call``), or None when not given."""
        positional = [a for a in call.args if a.keyword is None and not a.star]
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == self.keyword:
                return arg.value
        if self.position is not None and self.position < len(positional):
            return positional[self.position].value
        return None


@dataclass(frozen=True)
class DeviceEntry:
    """A way a module gets onto the device (``[[entry]]`` of ``rules/device_modules.toml``): a
    ``method`` of the module that moves it (``to``), or a ``keyword`` of its constructor
    (``device=``); ``device``: where the call names the device."""

    idiom: str
    method: str | None = None
    keyword: str | None = None
    device: ArgumentAt | None = None


@dataclass(frozen=True)
class ModuleCopy:
    """A way one module is made from another (``[[copy]]`` of ``rules/device_modules.toml``): a call
    of ``functions`` (qualified names) or, with ``form == "type"``, of the source's own class;
    ``source``: the argument copied; ``on``: ``"source"`` (on the source's device) or ``"host"``;
    ``device``: an argument that moves the copy; ``hooks``: the copy keeps its source's forward
    pre-hooks."""

    idiom: str
    source: ArgumentAt
    on: str
    functions: frozenset[str] = frozenset()
    form: str | None = None
    device: ArgumentAt | None = None
    hooks: bool = False


@dataclass(frozen=True)
class DeviceModuleRules:
    """Every module that reaches the device (``rules/device_modules.toml``; its comments give the
    sources): what denotes the device, the entries and copies, and what tells a module."""

    device_functions: frozenset[str] = frozenset()
    device_type: str = "xla"
    entries: tuple[DeviceEntry, ...] = ()
    copies: tuple[ModuleCopy, ...] = ()
    module_methods: frozenset[str] = frozenset()
    module_api: frozenset[str] = frozenset()
    """torch.nn.Module's methods that do not run the forward: any other method runs it without
    the forward pre-hook."""
    module_packages: tuple[str, ...] = ()
    module_builders: frozenset[str] = frozenset()
    module_builder_methods: frozenset[str] = frozenset()
    device_keywords: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Rules:
    """All rules: legacy variables by name, diagnostics by code, the torch API facts, the
    frameworks that own precision, and what the audit of the model's own code knows."""

    variables: Mapping[str, VariableRule]
    diagnostics: Mapping[str, DiagnosticRule]
    torch_api: TorchApi
    frameworks: tuple[FrameworkRule, ...] = ()
    modes: Mapping[str, Mode] = field(default_factory=dict)
    model_code: ModelCodeRules = field(default_factory=ModelCodeRules)
    host_exits: tuple[HostExit, ...] = ()
    """Where values leave the device for the host (``rules/host_exits.toml``)."""
    device_modules: DeviceModuleRules = field(default_factory=DeviceModuleRules)
    """Every module that reaches the device (``rules/device_modules.toml``)."""


def _load_variable(path: Path) -> VariableRule:
    data = _read(path)
    name = _need(data, "name", str, path)
    if name != path.stem:
        raise RuleError(f"{path}: name {name!r} does not match the file name")
    if "modes" in data:
        raise RuleError(f"{path}: what a mode emits is the mode's (rules/modes.toml), not the variable's")
    effective = _need(data, "effective", bool, path)
    low_precision = _need(data, "low_precision", str, path)
    if effective and low_precision != "bf16":
        raise RuleError(f"{path}: the modes replace bf16 only; an effective {low_precision} variable has no migration")
    return VariableRule(
        name=name,
        low_precision=low_precision,
        f32_becomes=_need(data, "f32_becomes", str, path),
        f64_becomes=_need(data, "f64_becomes", str, path),
        effective=effective,
        deprecated_since=_need(data, "deprecated_since", str, path),
        neuron_stochastic_rounding=_need(data, "neuron_stochastic_rounding", bool, path),
        source=path,
    )


def _load_diagnostics(path: Path) -> dict[str, DiagnosticRule]:
    data = _read(path)
    out = {}
    for code, entry in data.items():
        if not (code.startswith("BFM") and code[3:].isdigit()):
            raise RuleError(f"{path}: diagnostic code {code!r} is not of the form BFMnnn")
        if not isinstance(entry, dict):
            raise RuleError(f"{path}: [{code}] must be a table")
        unknown = set(entry) - DIAGNOSTIC_KEYS
        if unknown:
            raise RuleError(f"{path}: [{code}] has unknown keys {sorted(unknown)}")
        where = Path(f"{path} [{code}]")
        fix = _need(entry, "fix", str, where)
        kind, _, note = fix.partition(": ")
        if kind not in FIX_KINDS or not note.strip():
            raise RuleError(f"{where}: 'fix' must be one of {list(FIX_KINDS)}, then ': ' and a sentence, got {fix!r}")
        variants = entry.get("variants", {})
        if not isinstance(variants, dict) or not all(isinstance(v, str) for v in variants.values()):
            raise RuleError(f"{where}: 'variants' must be a table of message templates")
        for name, template in [
            ("message", _need(entry, "message", str, where)),
            *((f"variants.{k}", v) for k, v in variants.items()),
        ]:
            try:
                reserved = template_fields(template) & {"fixed", "variant"}
            except ValueError as e:
                raise RuleError(f"{where}: {name} is not a template with named fields: {e}") from None
            if reserved:
                raise RuleError(f"{where}: {name} uses the reserved field names {sorted(reserved)}")
        out[code] = DiagnosticRule(
            code=code,
            title=_need(entry, "title", str, where),
            what=_need(entry, "what", str, where),
            why=_need(entry, "why", str, where),
            example=_need(entry, "example", str, where),
            instead=_need(entry, "instead", str, where),
            fix=kind,
            fix_note=note.strip(),
            todo=_need(entry, "todo", str, where),
            message=entry["message"],
            variants=variants,
            invalid=_examples(entry, "invalid", where, example=entry["example"], instead=entry["instead"], kind=kind),
            valid=_examples(entry, "valid", where, example=entry["example"], instead=entry["instead"], kind=kind),
            tested_by=_tested_by(entry, where),
        )
    return out


def _tested_by(entry: dict, where: Path) -> str | None:
    value = entry.get("tested_by")
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"tests/\w+\.py::test_\w+", value):
        raise RuleError(f"{where}: 'tested_by' must be 'tests/<file>.py::test_<name>', got {value!r}")
    return value


def _examples(entry: dict, key: str, where: Path, example: str, instead: str, kind: str) -> tuple[RuleExample, ...]:
    """The page's runnable examples under ``key`` (``invalid`` or ``valid``), validated."""
    tables = entry.get(key, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise RuleError(f"{where}: '{key}' must be an array of tables ([[{where.name.strip('[]')}.{key}]])")
    out = []
    for number, table in enumerate(tables, 1):
        at = f"{where}: {key} example {number}"
        unknown = set(table) - EXAMPLE_KEYS
        if key == "valid":
            unknown |= set(table) & {"fixed", "holds"}
        if unknown:
            raise RuleError(f"{at} has unknown keys {sorted(unknown)}")
        if ("use" in table) == ("files" in table):
            raise RuleError(f"{at} needs exactly one of 'use' and 'files'")
        if "use" in table:
            if table["use"] not in ("example", "instead"):
                raise RuleError(f"{at}: 'use' must be 'example' or 'instead', got {table['use']!r}")
            files = {"train.py": EXAMPLE_HEADER + (example if table["use"] == "example" else instead) + "\n"}
        else:
            files = table["files"]
            if not files or not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
                raise RuleError(f"{at}: 'files' must be a table of file paths to their texts")
        mode = table.get("mode", DEFAULT_MODE)
        if mode not in MODES:
            raise RuleError(f"{at}: 'mode' must be one of {list(MODES)}, got {mode!r}")
        fixed = table.get("fixed", kind != "needs a hand") if key == "invalid" else False
        if not isinstance(fixed, bool):
            raise RuleError(f"{at}: 'fixed' must be true or false")
        if fixed and kind == "needs a hand":
            raise RuleError(f"{at}: 'fixed' cannot be true for a page whose fix is 'needs a hand'")
        holds = table.get("holds", {})
        if not isinstance(holds, dict) or not all(isinstance(v, str) and k in files for k, v in holds.items()):
            raise RuleError(f"{at}: 'holds' must be a table of the example's file paths to a line")
        if key == "invalid" and fixed and not holds:
            raise RuleError(f"{at}: a fixed finding needs 'holds', a line the migrated text must hold")
        options = table.get("options", {})
        if not isinstance(options, dict) or not all(
            name in EXAMPLE_OPTIONS and isinstance(value, EXAMPLE_OPTIONS[name]) for name, value in options.items()
        ):
            raise RuleError(f"{at}: 'options' must be a table of {sorted(EXAMPLE_OPTIONS)} with their types")
        out.append(
            RuleExample(
                invalid=key == "invalid",
                files=dict(files),
                mode=mode,
                fixed=fixed,
                holds=dict(holds),
                options={name: tuple(v) if isinstance(v, list) else v for name, v in options.items()},
            )
        )
    return tuple(out)


def _load_torch_api(path: Path) -> TorchApi:
    data = _read(path)
    dtypes = _need(data, "dtypes", dict, path)
    methods = _need(data, "methods", dict, path)
    factories = _need(data, "factories", dict, path)
    allowed = {"float", "int", "like", "arange", "literal", "unknown", "first"}
    for fn, kind in factories.items():
        if kind not in allowed:
            raise RuleError(f"{path}: factory {fn!r} has unknown kind {kind!r}")
    batch_sources = _need(data, "batch_sources", dict, path)
    for name, kind in batch_sources.items():
        if kind not in ("dataset", "data", "image-label"):
            raise RuleError(f"{path}: batch source {name!r} has unknown kind {kind!r}")
    return TorchApi(
        stock_optimizers=frozenset(_need(data, "stock_optimizers", list, path)),
        not_optimizers=frozenset(_need(data, "not_optimizers", list, path)),
        factories=factories,
        float_dtypes=frozenset(_need(dtypes, "float", list, path)),
        int_dtypes=frozenset(_need(dtypes, "int", list, path)),
        same_dtype_methods=frozenset(_need(methods, "same", list, path)),
        float_methods=frozenset(_need(methods, "float", list, path)),
        int_methods=frozenset(_need(methods, "int", list, path)),
        values_indices_methods=frozenset(_need(methods, "values_indices", list, path)),
        functional_losses=frozenset(_need(data, "functional_losses", list, path)),
        attention_users=frozenset(_need(data, "attention_users", list, path)),
        attention_flag=_need(data, "attention_flag", str, path),
        batch_sources=batch_sources,
        autocast=frozenset(_need(data, "autocast", list, path)),
        grad_norm_clipping=frozenset(_need(data, "grad_norm_clipping", list, path)),
        zero_redundancy_optimizers=frozenset(_need(data, "zero_redundancy_optimizers", list, path)),
        checkpoint_methods=frozenset(_need(data, "checkpoint_methods", list, path)),
        optimizer_owners=_need(data, "optimizer_owners", dict, path),
        optimizer_subclasses=frozenset(_need(data, "optimizer_subclasses", list, path)),
        model_wrappers=_model_wrappers(data, path),
        fsdp_compute_dtype=_fsdp_layers(_need(data, "fsdp_compute_dtype", dict, path), path),
        no_tensor_calls=frozenset(_need(data, "no_tensor_calls", list, path)),
        host_only_imports=frozenset(_need(data, "host_only_imports", list, path)),
    )


def _model_wrappers(data: dict, path: Path) -> dict[str, str]:
    """``[model_wrappers]``: qualified name -> ``"transparent"`` | ``"dynamo"`` | ``"fsdp"`` | ``"unmeasured"``."""
    wrappers = _need(data, "model_wrappers", dict, path)
    for name, kind in wrappers.items():
        if kind not in ("transparent", "dynamo", "fsdp", "unmeasured"):
            raise RuleError(f"{path}: model wrapper {name!r} has unknown kind {kind!r}")
    return wrappers


def _fsdp_layers(data: dict, path: Path) -> FsdpLayers:
    """``[fsdp_compute_dtype]``: the three lists and the table of failures."""
    return FsdpLayers(
        runs=frozenset(_need(data, "runs", list, path)),
        runs_without_bias=frozenset(_need(data, "runs_without_bias", list, path)),
        parameterless=frozenset(_need(data, "parameterless", list, path)),
        fails=_need(data, "fails", dict, path),
        not_equivalent=data.get("not_equivalent"),
        amp_not_equivalent=data.get("amp_not_equivalent"),
    )


_LAYER_KINDS = ("matmul", "gather", "elementwise")


def _load_model_code(path: Path) -> ModelCodeRules:
    data = _read(path)
    flow = _need(data, "flow", dict, path)
    reach = _need(data, "reach", dict, path)
    upcasts = _need(data, "upcast_methods", dict, path)
    if any(kind not in ("f32", "f64") for kind in upcasts.values()):
        raise RuleError(f"{path}: [upcast_methods] values must be 'f32' or 'f64'")
    layers = _need(flow, "weighted_layers", dict, path)
    for name, kind in layers.items():
        if kind not in _LAYER_KINDS:
            raise RuleError(f"{path}: weighted layer {name!r} has unknown kind {kind!r} (one of {list(_LAYER_KINDS)})")

    def names(table: dict, key: str) -> frozenset[str]:
        return frozenset(_need(table, key, list, path))

    def index_args(key: str) -> dict[str, tuple[int, str]]:
        table = _need(flow, key, dict, path)
        found = {}
        for name, arg in table.items():
            if not (isinstance(arg, dict) and isinstance(arg.get("at"), int) and isinstance(arg.get("keyword"), str)):
                raise RuleError(f"{path}: [flow.{key}] {name!r} must be {{ at = <position>, keyword = <name> }}")
            found[name] = (arg["at"], arg["keyword"])
        return found

    loss = _need(data, "loss", dict, path)

    return ModelCodeRules(
        float_factories=names(data, "float_factories"),
        f32_dtypes=names(data, "f32_dtypes"),
        f64_dtypes=names(data, "f64_dtypes"),
        upcast_methods=upcasts,
        low_casts=names(flow, "low_casts"),
        cast_like=names(flow, "cast_like"),
        ends=names(flow, "ends"),
        host_functions=names(flow, "host_functions"),
        integer_results=names(flow, "integer_results"),
        matmul_functions=names(flow, "matmul_functions"),
        matmul_methods=names(flow, "matmul_methods"),
        weighted_layers=layers,
        state_layers=names(flow, "state_layers"),
        packed_sequences=names(flow, "packed_sequences"),
        module_bases=names(reach, "module_bases"),
        optimizer_bases=names(reach, "optimizer_bases"),
        module_entries=names(reach, "module_entries"),
        optimizer_entries=names(reach, "optimizer_entries"),
        registers=names(reach, "registers"),
        index_methods=index_args("index_methods"),
        index_functions=index_args("index_functions"),
        loss_containers=names(loss, "containers"),
        loss_weight_keywords=names(loss, "weight_keywords"),
        loss_weight_first=names(loss, "weight_first"),
    )


def _position(entry: dict, key: str, where: Path) -> tuple[int, str] | None:
    """``{ at = N, keyword = "name" }`` as (N, name), or None when ``key`` is absent."""
    if key not in entry:
        return None
    arg = entry[key]
    if not (isinstance(arg, dict) and isinstance(arg.get("at"), int) and isinstance(arg.get("keyword"), str)):
        raise RuleError(f"{where}: {key!r} must be {{ at = <position>, keyword = <name> }}")
    return arg["at"], arg["keyword"]


def _unknown(entry: dict, where: Path) -> bool:
    """``unknown = "leave"`` (True) or ``"cast"`` (the default: False)."""
    value = entry.get("unknown", "cast")
    if value not in ("leave", "cast"):
        raise RuleError(f'{where}: unknown must be "leave" or "cast", got {value!r}')
    return value == "leave"


def _load_host_exits(path: Path) -> tuple[HostExit, ...]:
    """``[[exit]]`` rows of ``host_exits.toml``: each a method or functions, never both."""
    rows = _need(_read(path), "exit", list, path)
    known = {
        "exit",
        "method",
        "function",
        "argument",
        "device",
        "hands",
        "saved",
        "keeps_device",
        "unknown",
        "measured",
    }
    out = []
    for k, entry in enumerate(rows, 1):
        where = Path(f"{path} [[exit]] #{k}")
        if not isinstance(entry, dict) or set(entry) - known:
            raise RuleError(f"{where}: a table with keys among {sorted(known)} is expected")
        hands = _need(entry, "hands", str, where)
        if hands not in HOST_HANDS:
            raise RuleError(f"{where}: hands {hands!r} is not one of {sorted(HOST_HANDS)}")
        method = entry.get("method")
        functions = entry.get("function", [])
        if (method is None) == (not functions) or not isinstance(functions, list):
            raise RuleError(f'{where}: give either method = "<name>" or function = [<qualified names>]')
        argument = _position(entry, "argument", where)
        if functions and argument is None:
            raise RuleError(f"{where}: a function row names the argument that carries the value")
        out.append(
            HostExit(
                exit=_need(entry, "exit", str, where),
                hands=hands,
                measured=_need(entry, "measured", str, where),
                method=method,
                functions=frozenset(functions),
                argument=argument,
                device=_position(entry, "device", where),
                saved=bool(entry.get("saved", False)),
                keeps_device=bool(entry.get("keeps_device", False)),
                unknown_left=_unknown(entry, where),
            )
        )
    return tuple(out)


def _argument_at(entry: dict, key: str, where: Path) -> ArgumentAt | None:
    """``{ at = N, keyword = "name" }`` (or ``{ keyword = "name" }``, keyword-only) as an
    :class:`ArgumentAt`; None when ``key`` is absent."""
    if key not in entry:
        return None
    arg = entry[key]
    if not (
        isinstance(arg, dict)
        and isinstance(arg.get("keyword"), str)
        and set(arg) <= {"at", "keyword"}
        and isinstance(arg.get("at", 0), int)
    ):
        raise RuleError(f"{where}: {key!r} must be {{ at = <position>, keyword = <name> }} or {{ keyword = <name> }}")
    return ArgumentAt(arg.get("at"), arg["keyword"])


def _load_device_modules(path: Path) -> DeviceModuleRules:
    """``rules/device_modules.toml``: each ``[[entry]]`` a method or a constructor keyword, never
    both; each ``[[copy]]`` a function list or ``form = "type"``, never both, ``on`` "source" or
    "host"."""
    data = _read(path)
    entries = []
    for k, row in enumerate(_need(data, "entry", list, path), 1):
        where = Path(f"{path} [[entry]] #{k}")
        if not isinstance(row, dict) or set(row) - {"idiom", "method", "keyword", "device"}:
            raise RuleError(f"{where}: a table with keys among idiom, method, keyword, device is expected")
        if ("method" in row) == ("keyword" in row):
            raise RuleError(f'{where}: give either method = "<name>" or keyword = "<name>"')
        entries.append(
            DeviceEntry(
                idiom=_need(row, "idiom", str, where),
                method=row.get("method"),
                keyword=row.get("keyword"),
                device=_argument_at(row, "device", where),
            )
        )
    copies = []
    for k, row in enumerate(_need(data, "copy", list, path), 1):
        where = Path(f"{path} [[copy]] #{k}")
        if not isinstance(row, dict) or set(row) - {"idiom", "function", "form", "source", "on", "device", "hooks"}:
            raise RuleError(f"{where}: a table with keys among idiom, function, form, source, on, device, hooks")
        if ("function" in row) == ("form" in row) or row.get("form", "type") != "type":
            raise RuleError(f'{where}: give either function = [<qualified names>] or form = "type"')
        on = _need(row, "on", str, where)
        if on not in ("source", "host"):
            raise RuleError(f"{where}: on must be 'source' or 'host', not {on!r}")
        source = _argument_at(row, "source", where)
        if source is None:
            raise RuleError(f"{where}: a copy names its source argument")
        copies.append(
            ModuleCopy(
                idiom=_need(row, "idiom", str, where),
                source=source,
                on=on,
                functions=frozenset(row.get("function", ())),
                form=row.get("form"),
                device=_argument_at(row, "device", where),
                hooks=bool(row.get("hooks", False)),
            )
        )
    return DeviceModuleRules(
        device_functions=frozenset(_need(data, "device_functions", list, path)),
        device_type=_need(data, "device_type", str, path),
        entries=tuple(entries),
        copies=tuple(copies),
        module_methods=frozenset(_need(data, "module_methods", list, path)),
        module_api=frozenset(_need(data, "module_api", list, path)),
        module_packages=tuple(_need(data, "module_packages", list, path)),
        module_builders=frozenset(_need(data, "module_builders", list, path)),
        module_builder_methods=frozenset(_need(data, "module_builder_methods", list, path)),
        device_keywords=frozenset(_need(data, "device_keywords", list, path)),
    )


@functools.cache
def load_rules(directory: Path = RULES_DIR) -> Rules:
    """Load and validate every rule file in ``directory``.

    Raises :class:`RuleError` (naming the file) when a file is unreadable or inconsistent, or
    when a diagnostic code used by the code is missing from ``diagnostics.toml``.
    """
    variables: dict[str, VariableRule] = {}
    modes = _modes_in(directory)
    for path in sorted(directory.glob(VARIABLE_GLOB)):
        rule = _load_variable(path)
        variables[rule.name] = rule
    if not variables:
        raise RuleError(f"{directory}: no variable rules ({VARIABLE_GLOB}) found")
    catalogues = sorted(directory.glob("diagnostics*.toml"))  # one catalogue per concern
    defined: set[str] = set()
    for path in catalogues:  # codes first: a page's examples left under a renamed code are not its page
        for code in _read(path):
            if code in defined:
                raise RuleError(f"{path}: diagnostic code {code} is defined twice")
            defined.add(code)
    diagnostics: dict[str, DiagnosticRule] = {}
    for path in catalogues:
        diagnostics.update(_load_diagnostics(path))
    if "BFM001" not in diagnostics:
        raise RuleError(f"{directory}: no diagnostics.toml with the core codes")
    torch_api = _load_torch_api(directory / "torch_api.toml")
    frameworks_path = directory / "frameworks.toml"
    frameworks = tuple(
        FrameworkRule(
            key=key,
            name=_need(entry, "name", str, frameworks_path),
            qualified=frozenset(_need(entry, "qualified", list, frameworks_path)),
            setting=_need(entry, "setting", str, frameworks_path),
            advice=_need(entry, "advice", str, frameworks_path),
            launch_flag=entry.get("launch_flag"),
            modules=frozenset(entry.get("modules", ())),
            owns_with=entry.get("owns_with"),
        )
        for key, entry in _read(frameworks_path).items()
    )
    return Rules(
        variables=variables,
        diagnostics=diagnostics,
        torch_api=torch_api,
        frameworks=frameworks,
        modes=modes,
        model_code=_load_model_code(directory / "model_code.toml"),
        host_exits=_load_host_exits(directory / "host_exits.toml"),
        device_modules=_load_device_modules(directory / "device_modules.toml"),
    )


def is_truthy(value: str) -> bool:
    """How torch-xla parses a boolean variable: ``"true"`` is on, ``"false"`` off, otherwise
    the leading integer (C ``atoi``) is on when non-zero, so ``"1"`` is on and ``""``, ``"0"``,
    ``"yes"`` are off. Source: ``torch_xla/csrc/runtime/sys_util.cc`` ``GetEnvBool``; checked on
    the XLA CPU device with torch-xla 2.9 (measured: ``XLA_USE_BF16=<v>``, then the element type
    of a device op in its HLO)."""
    if value == "true":
        return True
    if value == "false":
        return False
    digits = value.lstrip()
    sign = 1
    if digits[:1] in "+-" and digits:
        sign = -1 if digits[0] == "-" else 1
        digits = digits[1:]
    number = ""
    for ch in digits:
        if not ch.isdigit():
            break
        number += ch
    return bool(number) and sign * int(number) != 0
