"""Load the knowledge in ``rules/*.toml`` (at the repository root) into typed, validated objects.

The rules are data so that what we know about each legacy variable (its semantics, the
diagnostics, what each mode emits) can be read and reviewed without reading code. Every file is
validated at load time: a malformed rule is a :class:`RuleError` naming the file, never a
silently wrong migration.

This module holds the codemod's tables (the torch API, the frameworks that own precision, the
model code, the host exits, the device modules) and :func:`load_rules`, which gathers every rule
file into one :class:`Rules`. The files any run may read (where they are, the modes, the
variables, the diagnostics catalogue) are :mod:`bf16_migrate.rule_files`'s, each read the first
time it is asked for, and re-exported here: the command line, the output and the suppressions
import them from there, so that a run over files that name no legacy variable never defines the
tables below (bench/RESULTS.md, the clean path).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .rule_files import DEFAULT_MODE as DEFAULT_MODE
from .rule_files import DIAGNOSTIC_KEYS as DIAGNOSTIC_KEYS
from .rule_files import EMIT_MARKS as EMIT_MARKS
from .rule_files import EMITS as EMITS
from .rule_files import EXAMPLE_HEADER as EXAMPLE_HEADER
from .rule_files import EXAMPLE_KEYS as EXAMPLE_KEYS
from .rule_files import EXAMPLE_OPTIONS as EXAMPLE_OPTIONS
from .rule_files import FIX_KINDS as FIX_KINDS
from .rule_files import MODES as MODES
from .rule_files import REFERENCE as REFERENCE
from .rule_files import RULES_DIR as RULES_DIR
from .rule_files import RULES_DIR_ENV as RULES_DIR_ENV
from .rule_files import STOCHASTIC_ROUNDING_VAR as STOCHASTIC_ROUNDING_VAR
from .rule_files import VARIABLE_GLOB as VARIABLE_GLOB
from .rule_files import DiagnosticRule as DiagnosticRule
from .rule_files import Emit as Emit
from .rule_files import Mode as Mode
from .rule_files import RuleError as RuleError
from .rule_files import RuleExample as RuleExample
from .rule_files import VariableRule as VariableRule
from .rule_files import Word as Word
from .rule_files import _modes_in, _need, _read
from .rule_files import all_modes as all_modes
from .rule_files import diagnostic_rules as diagnostic_rules
from .rule_files import is_truthy as is_truthy
from .rule_files import mode_named as mode_named
from .rule_files import rules_dir as rules_dir
from .rule_files import template_fields as template_fields
from .rule_files import variable_names as variable_names
from .rule_files import variable_rules as variable_rules


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
    model_callers: frozenset[str] = frozenset()
    """Functions that run the forward pass of the model handed to them first (``[model_callers]``)."""
    model_tracers: frozenset[str] = frozenset()
    """Functions that run the model handed to them first once to record its forward (``[model_callers] tracers``)."""
    model_scripters: frozenset[str] = frozenset()
    """Functions that compile the model handed to them first with its hooks (``[model_callers] scripters``)."""
    python_launchers: frozenset[str] = frozenset()
    """Functions that run another script or module in this interpreter (``[python_launchers]``)."""
    process_launchers: frozenset[str] = frozenset()
    """Functions that start another process from an argument list (``[process_launchers]``)."""
    job_launchers: JobLaunchers | None = None
    """Functions that start a training job elsewhere, running a script with an environment (``[job_launchers]``)."""
    closure_optimizers: frozenset[str] = frozenset()
    """torch.optim's optimizers whose step evaluates its closure several times (``closure_optimizers``)."""
    gradient_functions: frozenset[str] = frozenset()
    """Functions that hand back a loss's gradients, as ``backward()`` leaves them (``[gradient_functions]``)."""
    numpy_integer_methods: frozenset[str] = frozenset()
    """Methods of NumPy's random generators that give integer arrays (``[numpy_integers] methods``)."""
    numpy_integer_functions: frozenset[str] = frozenset()
    """NumPy functions (qualified) that give integer arrays (``[numpy_integers] functions``)."""
    no_tensor_calls: frozenset[str] = frozenset()
    host_only_imports: frozenset[str] = frozenset()
    """torch and torch_xla functions that make no tensor (they ask for the device or the runtime):
    a script calling nothing else puts no tensor on the device (``python/no_tensor.py``)."""


@dataclass(frozen=True)
class JobLaunchers:
    """Functions that start a training job on a machine of its own (``rules/torch_api.toml`` ``[job_launchers]``:
    the SageMaker Python SDK's framework estimators) and the keywords they are given: ``script``, the Python
    script the job runs (``entry_point``); ``folder``, the folder it is in (``source_dir``); ``environment``,
    the job's environment variables (a mapping)."""

    functions: frozenset[str]
    script: str
    folder: str
    environment: str


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
class KeywordPath:
    """A keyword that makes an op of ``[flow.float32_ops]`` run in bf16 on the device
    (``compute_mode="use_mm_for_euclid_dist"`` for ``torch.cdist``): ``keyword`` and its ``value``
    (source text), valid only while the argument ``argument`` (its name and position) is absent or
    one of ``values`` (source texts)."""

    keyword: str
    value: str
    argument: str
    at: int
    values: frozenset[str]


@dataclass(frozen=True)
class ArgumentValues:
    """An argument of a call, by ``name`` (as a keyword) or position ``at``, and the ``values`` (source texts)
    that matter (``ord=2`` of ``torch.linalg.matrix_norm``: ``[flow.float32_ops.when]``)."""

    name: str
    at: int
    values: frozenset[str]

    def given(self, call_args: Sequence[tuple[str | None, str]]) -> bool:
        """Whether the call whose arguments are ``call_args`` ((keyword or None, source text) pairs, in order,
        starred ones left out) passes this argument with one of ``values``."""
        keywords = {k: v for k, v in call_args if k is not None}
        positional = [v for k, v in call_args if k is None]
        text = keywords.get(self.name, positional[self.at] if len(positional) > self.at else None)
        return text is not None and text in self.values


@dataclass(frozen=True)
class ModelCodeRules:
    """What the audit of the model's own code knows (``rules/model_code.toml``; its comments give
    the sources): the ways f32 enters a model once the legacy switch is gone, and how a tensor's
    dtype travels through the code (:mod:`bf16_migrate.python.model_code`)."""

    float_factories: frozenset[str] = frozenset()
    """``torch.X`` creation functions floating by default (short names)."""
    cast_after_factories: frozenset[str] = frozenset()
    """Those given a dtype by ``.to(dtype)`` after them rather than ``dtype=`` (short names)."""
    library_factories: frozenset[str] = frozenset()
    """Qualified names of library functions that make a floating tensor f32 unless given ``dtype=``
    (``torch.nn.Transformer.generate_square_subsequent_mask``)."""
    f32_dtypes: frozenset[str] = frozenset()
    f64_dtypes: frozenset[str] = frozenset()
    upcast_methods: Mapping[str, str] = field(default_factory=dict)
    """Tensor method -> ``"f32"`` / ``"f64"``."""
    low_casts: frozenset[str] = frozenset()
    cast_like: frozenset[str] = frozenset()
    ends: frozenset[str] = frozenset()
    dtype_methods: frozenset[str] = frozenset()
    """Tensor methods whose result has their receiver's floating dtype (``[flow] dtype_methods``)."""
    host_functions: frozenset[str] = frozenset()
    records: frozenset[str] = frozenset()
    """Calls (qualified names) that make a record of settings: ``types.SimpleNamespace``, ``argparse.Namespace``."""
    record_decorators: frozenset[str] = frozenset()
    """Decorators (qualified names) of the file's classes whose instances are records (``dataclasses.dataclass``)."""
    record_scalars: frozenset[str] = frozenset()
    """Annotations of a record's fields that hold no tensor (``int``, ``float``, ``bool``, ``str``)."""
    label_constants: frozenset[str] = frozenset()
    """``torch.finfo`` attributes read from a tensor's label that become float32's (``eps``, ``tiny``)."""
    option_parsers: frozenset[str] = frozenset()
    """Methods whose result holds command-line options, numbers or strings (``parse_args``)."""
    integer_results: frozenset[str] = frozenset()
    """Functions whose result is an integer tensor (their ``.float()`` is a fresh tensor)."""
    matmul_functions: frozenset[str] = frozenset()
    matmul_methods: frozenset[str] = frozenset()
    weighted_layers: Mapping[str, str] = field(default_factory=dict)
    """Qualified name of a torch.nn layer -> ``"matmul"`` / ``"gather"`` / ``"elementwise"``."""
    state_layers: frozenset[str] = frozenset()
    """Qualified names of the torch.nn layers whose inputs, initial state included, must have their
    parameters' dtype (the recurrent layers)."""
    parameter_layers: frozenset[str] = frozenset()
    """Qualified names of torch.nn layers that always hold parameters and whose tensor arguments meet
    them (the attention layers: a float mask is added to their scores)."""
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
    source_methods: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """Tensor method that neither promotes nor converts -> (position, keyword) of its source, which
    must have the receiver's dtype (``[flow.source_methods]``)."""
    source_functions: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """Qualified torch function of the same kind -> its source; the destination is its first argument."""
    float32_losses: frozenset[str] = frozenset()
    """``[flow] float32_losses``: losses of ``source_functions`` computed in FP32 (both operands
    ``.float()``) where autocast leaves the input's dtype unnamed."""
    float32_ops: frozenset[str] = frozenset()
    """``[flow.float32_ops]``: qualified torch functions without a bf16 kernel on the device (the
    switch is kept where the code runs one there)."""
    float32_op_methods: frozenset[str] = frozenset()
    """``[flow.float32_ops] methods``: the Tensor methods that run those ops (``wave.stft(...)``)."""
    float32_parametrizations: frozenset[str] = frozenset()
    """``[flow.float32_parametrizations]``: parametrizations a model's ``__init__`` registers whose map
    bf16 cannot carry (the switch is kept, as for ``float32_ops``)."""
    float32_ops_by_keyword: Mapping[str, KeywordPath] = field(default_factory=dict)
    """``[flow.float32_ops.by_keyword]``: those of them that run in bf16 given a keyword."""
    float32_ops_autocast: frozenset[str] = frozenset()
    """``[flow.float32_ops] autocast_float32``: those of them autocast runs in float32 (its fp32 policy)."""
    float32_ops_integer: frozenset[str] = frozenset()
    """``[flow.float32_ops] integer_results``: those of them whose result is an integer tensor (a rank)."""
    float32_ops_sampled: frozenset[str] = frozenset()
    """``[flow.float32_ops] sampled``: those of them (distributions) whose only kernel without bf16 is their
    sampler: an op only where an instance is sampled, or goes where it cannot be followed."""
    float32_ops_when: Mapping[str, ArgumentValues] = field(default_factory=dict)
    """``[flow.float32_ops.when]``: functions without a bf16 kernel only when an argument has one of some values
    (``torch.linalg.matrix_norm(A, ord=2)``)."""
    float32_ops_cast_to: Mapping[str, str] = field(default_factory=dict)
    """``[flow.float32_ops.cast_to]``: qualified function -> the keyword of the operand whose dtype
    its result is cast back to (``torch.bincount`` -> ``weights``)."""
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
    when_true: tuple[int, str] | None = None
    """(position, keyword) of an argument that must be ``True`` for the row to apply
    (``t.numpy(force=True)``), or None."""
    copies: bool = False
    """The method copies its receiver to the host and gives no tensor back (a NumPy array): the
    cast goes on the receiver (``t.cpu().float().numpy(force=True)``), not after the call."""


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
    returns_self: frozenset[str] = frozenset()
    """The methods among ``module_api`` that return the module itself (``model.to(device).eval()``)."""
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


def _job_launchers(data: dict, path: Path) -> JobLaunchers:
    return JobLaunchers(
        functions=frozenset(_need(data, "functions", list, path)),
        script=_need(data, "script", str, path),
        folder=_need(data, "folder", str, path),
        environment=_need(data, "environment", str, path),
    )


def _load_torch_api(path: Path) -> TorchApi:
    data = _read(path)
    dtypes = _need(data, "dtypes", dict, path)
    methods = _need(data, "methods", dict, path)
    factories = _need(data, "factories", dict, path)
    numpy_integers = _need(data, "numpy_integers", dict, path)
    allowed = {"float", "int", "like", "arange", "literal", "unknown", "first", "counts", "fill"}
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
        model_callers=frozenset(_need(_need(data, "model_callers", dict, path), "functions", list, path)),
        model_tracers=frozenset(_need(_need(data, "model_callers", dict, path), "tracers", list, path)),
        model_scripters=frozenset(_need(_need(data, "model_callers", dict, path), "scripters", list, path)),
        closure_optimizers=frozenset(_need(data, "closure_optimizers", list, path)),
        python_launchers=frozenset(_need(_need(data, "python_launchers", dict, path), "functions", list, path)),
        process_launchers=frozenset(_need(_need(data, "process_launchers", dict, path), "functions", list, path)),
        job_launchers=_job_launchers(_need(data, "job_launchers", dict, path), path),
        gradient_functions=frozenset(_need(_need(data, "gradient_functions", dict, path), "functions", list, path)),
        numpy_integer_methods=frozenset(_need(numpy_integers, "methods", list, path)),
        numpy_integer_functions=frozenset(_need(numpy_integers, "functions", list, path)),
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
        cast_after_factories=names(data, "cast_after_factories"),
        library_factories=names(data, "library_factories"),
        f32_dtypes=names(data, "f32_dtypes"),
        f64_dtypes=names(data, "f64_dtypes"),
        upcast_methods=upcasts,
        low_casts=names(flow, "low_casts"),
        cast_like=names(flow, "cast_like"),
        ends=names(flow, "ends"),
        dtype_methods=names(flow, "dtype_methods"),
        host_functions=names(flow, "host_functions"),
        records=names(flow, "records"),
        record_decorators=names(flow, "record_decorators"),
        record_scalars=names(flow, "record_scalars"),
        option_parsers=names(flow, "option_parsers"),
        label_constants=names(flow, "label_constants"),
        integer_results=names(flow, "integer_results"),
        matmul_functions=names(flow, "matmul_functions"),
        matmul_methods=names(flow, "matmul_methods"),
        weighted_layers=layers,
        state_layers=names(flow, "state_layers"),
        parameter_layers=names(flow, "parameter_layers"),
        packed_sequences=names(flow, "packed_sequences"),
        module_bases=names(reach, "module_bases"),
        optimizer_bases=names(reach, "optimizer_bases"),
        module_entries=names(reach, "module_entries"),
        optimizer_entries=names(reach, "optimizer_entries"),
        registers=names(reach, "registers"),
        index_methods=index_args("index_methods"),
        index_functions=index_args("index_functions"),
        source_methods=index_args("source_methods"),
        source_functions=index_args("source_functions"),
        float32_losses=names(flow, "float32_losses"),
        float32_ops=names(_need(flow, "float32_ops", dict, path), "functions"),
        float32_op_methods=names(_need(flow, "float32_ops", dict, path), "methods"),
        float32_parametrizations=names(_need(flow, "float32_parametrizations", dict, path), "functions"),
        float32_ops_by_keyword=_keyword_paths(_need(flow, "float32_ops", dict, path).get("by_keyword", {}), path),
        float32_ops_cast_to=_string_table(_need(flow, "float32_ops", dict, path).get("cast_to", {}), path),
        float32_ops_integer=names(_need(flow, "float32_ops", dict, path), "integer_results"),
        float32_ops_autocast=names(_need(flow, "float32_ops", dict, path), "autocast_float32"),
        float32_ops_sampled=names(_need(flow, "float32_ops", dict, path), "sampled"),
        float32_ops_when=_argument_values(_need(flow, "float32_ops", dict, path).get("when", {}), path),
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
        "when_true",
        "copies",
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
                when_true=_position(entry, "when_true", where),
                copies=bool(entry.get("copies", False)),
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
        returns_self=frozenset(_need(data, "returns_self", list, path)),
        module_packages=tuple(_need(data, "module_packages", list, path)),
        module_builders=frozenset(_need(data, "module_builders", list, path)),
        module_builder_methods=frozenset(_need(data, "module_builder_methods", list, path)),
        device_keywords=frozenset(_need(data, "device_keywords", list, path)),
    )


def _string_table(table: object, path: Path) -> dict[str, str]:
    """``[flow.float32_ops.cast_to]``: name -> string; anything else raises :class:`RuleError`."""
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise RuleError(f"{path}: [flow.float32_ops.cast_to] must map names to strings")
    return dict(table)


def _argument_values(table: object, path: Path) -> dict[str, ArgumentValues]:
    """``[flow.float32_ops.when]``: function -> its :class:`ArgumentValues`; a malformed entry raises
    :class:`RuleError` naming the file."""
    if not isinstance(table, dict):
        raise RuleError(f"{path}: [flow.float32_ops.when] must be a table")
    found: dict[str, ArgumentValues] = {}
    for name, entry in table.items():
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("name"), str)
            and isinstance(entry.get("at"), int)
            and isinstance(entry.get("values"), list)
        ):
            raise RuleError(f"{path}: [flow.float32_ops.when] {name!r} must be {{ name, at, values }}")
        found[name] = ArgumentValues(entry["name"], entry["at"], frozenset(entry["values"]))
    return found


def _keyword_paths(table: object, path: Path) -> dict[str, KeywordPath]:
    """``[flow.float32_ops.by_keyword]``: function -> its :class:`KeywordPath`; a malformed entry
    raises :class:`RuleError` naming the file."""
    if not isinstance(table, dict):
        raise RuleError(f"{path}: [flow.float32_ops.by_keyword] must be a table")
    found: dict[str, KeywordPath] = {}
    for name, entry in table.items():
        argument = entry.get("argument") if isinstance(entry, dict) else None
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("keyword"), str)
            and isinstance(entry.get("value"), str)
            and isinstance(argument, dict)
            and isinstance(argument.get("name"), str)
            and isinstance(argument.get("at"), int)
            and isinstance(argument.get("values"), list)
        ):
            raise RuleError(
                f"{path}: [flow.float32_ops.by_keyword] {name!r} must have keyword, value and "
                "argument = {{ name, at, values }}"
            )
        found[name] = KeywordPath(
            entry["keyword"], entry["value"], argument["name"], argument["at"], frozenset(argument["values"])
        )
    return found


@functools.cache
def load_rules(directory: Path = RULES_DIR) -> Rules:
    """Load and validate every rule file in ``directory`` (the variables, the modes and the
    diagnostics through :mod:`bf16_migrate.rule_files`, read once per directory).

    Raises :class:`RuleError` (naming the file) when a file is unreadable or inconsistent, or
    when a diagnostic code used by the code is missing from ``diagnostics.toml``.
    """
    variables = variable_rules(directory)
    modes = _modes_in(directory)
    diagnostics = diagnostic_rules(directory)
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
