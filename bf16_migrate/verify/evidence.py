"""The evidence of precision a verdict reads besides the losses: the dtypes the runs recorded
and the executed training-step graph (:mod:`.graphs`). Two parts of the verdict
(:func:`bf16_migrate.verify.compare.judge`) come from here:

precision (:func:`precision_part`)
    the legacy switch was in effect in the legacy run and lower precision is in effect in the
    migrated one: its environment, its optimizer's parameters and state, the matmuls of its
    step graph (rules and measurements in the docstrings of :func:`_precision_from_graphs` and
    :func:`_state_precision`).
graph (:func:`graph_part`)
    no bf16->f32->bf16 round trip that computes nothing, no more XLA compilations than the
    comparison run plus :func:`mode_compile_allowance` (figures from
    :class:`~bf16_migrate.verify.graphs.GraphStats`; the rules and measurements are in
    :mod:`bf16_migrate.verify.compare`'s docstring, "graph").

Pure Python over :class:`~bf16_migrate.verify.records.RunRecord` (no torch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..rules import Mode, load_rules
from .allowance import Allowance, first_step_recompiles
from .parts import FAIL, INCONCLUSIVE, PASS, Part, dtypes_text, has_bf16, steps_text, usable
from .records import RunRecord

__all__ = [
    "MODEL_CAST_COMPILES",
    "mode_compile_allowance",
    "SDPA_HINT",
    "precision_part",
    "rounding_problem",
    "graph_part",
    "separates",
]


def _parameter_problem(
    mode: Mode, migrated: RunRecord, reference: RunRecord | None, legacy: RunRecord | None = None
) -> str | None:
    """What is wrong with the migrated optimizer's parameter dtypes for ``mode``, or None: a mode
    that casts the model needs bfloat16 ones; amp keeps the model's parameters FP32, autocast
    choosing each op's precision (Neuron's migration guide, "automatic mixed precision"), so bf16
    ones the FP32 script (``reference``) does not have are a full-bf16 model under autocast. In
    every mode, float64 parameters on the device where the ``legacy`` run had none (a parameter made
    from a NumPy scalar, ``torch.tensor(np.log(0.2))``): the switch made them bf16 (or float32, the
    downcasting switch) (torch_xla/csrc/dtype.cpp), and autocast casts no float64."""
    params = migrated.param_dtypes
    if params is None:
        return None
    wide = (migrated.device_param_dtypes or {}).get("f64")
    if wide and legacy is not None and legacy.ok and not (legacy.device_param_dtypes or {}).get("f64"):
        return (
            f"the migrated run's parameters are {dtypes_text(migrated.device_param_dtypes)} on the device, the legacy "
            f"run's {dtypes_text(legacy.device_param_dtypes)}: {wide} float64 parameter(s) the switch made bf16 (or "
            "float32, where it only downcast); make them float32 (`.float()` on the module before its cast)"
        )
    if mode.casts_model:
        mixed = _left_float32(migrated, legacy)
        if mixed:
            return mixed
        if has_bf16(params):
            return None
        if (
            legacy is not None
            and _narrowed_to_f32(legacy)
            and migrated.device_param_dtypes == legacy.device_param_dtypes
        ):
            return None  # XLA_DOWNCAST_BF16's float64 model was float32 on the device, as the migrated one is
        return f"the migrated optimizer holds no bfloat16 parameters ({dtypes_text(params)})"
    theirs = reference.param_dtypes if reference is not None else None
    if mode.autocast and has_bf16(params) and theirs is not None and not has_bf16(theirs):
        return (
            f"the migrated optimizer holds bfloat16 parameters ({dtypes_text(params)}), the FP32 script's are "
            f"{dtypes_text(theirs)}: amp keeps the model in FP32"
        )
    return None


def _left_float32(migrated: RunRecord, legacy: RunRecord | None) -> str | None:
    """A mode that casts the model: the migrated run's device parameters are bf16 and float32 both, with more float32
    ones than the legacy run had (a wrapped module cast where its wrapper was not, a part built after the cast): the
    switch made every one bf16 (float32 only for XLA_DOWNCAST_BF16's float64), so those compute in f32 where the
    legacy run computed in bf16 (a hunt's: bf16 x5, f32 x1 passed this part; only the trace told). None otherwise."""
    mine = migrated.device_param_dtypes or {}
    theirs = (legacy.device_param_dtypes or {}) if legacy is not None and legacy.ok else {}
    extra = mine.get("f32", 0) - theirs.get("f32", 0)
    if extra <= 0 or not mine.get("bf16") or not theirs.get("bf16"):
        return None
    return (
        f"the migrated run's parameters are {dtypes_text(mine)} on the device, the legacy run's {dtypes_text(theirs)}: "
        f"{extra} parameter(s) the switch made bf16 stay float32 and compute in f32 (a module the cast does not reach: "
        "the trace names where it is made)"
    )


def _narrowed_to_f32(legacy: RunRecord | None) -> bool:
    """Whether the switch acted on the legacy run's parameters without making any bf16: float64 ones were float32 on
    the device (XLA_DOWNCAST_BF16 on a model built in float64, torch_xla/csrc/dtype.cpp), none was bf16 there."""
    if legacy is None or not legacy.ok or not legacy.param_dtypes or not legacy.device_param_dtypes:
        return False
    device = legacy.device_param_dtypes
    return not has_bf16(device) and device.get("f64", 0) < legacy.param_dtypes.get("float64", 0)


def _host_problem(migrated: RunRecord, other: RunRecord | None) -> str | None:
    """bf16 parameters on the host in the migrated run where the other run (the legacy one, else the
    FP32 reference) has none there: the legacy switch acts on XLA tensors only (torch-xla's
    torch_xla/csrc/dtype.cpp), so a module kept on the CPU stayed float32 under it, and its optimizer's
    state with it; cast, it trains in bf16 on the host (found by a hunt: a CPU embedding table)."""
    mine = migrated.host_param_dtypes or {}
    if other is None or not mine.get("bfloat16") or (other.host_param_dtypes or {}).get("bfloat16"):
        return None
    return (
        f"the migrated run's parameters on the host are {dtypes_text(mine)}, the {other.name} run's "
        f"{dtypes_text(other.host_param_dtypes) if other.host_param_dtypes else 'none'}: the switch left host "
        "tensors float32"
    )


def precision_part(
    mode: Mode,
    migrated: RunRecord,
    legacy: RunRecord | None,
    reference: RunRecord | None,
    base: RunRecord,
    notes: list[str],
    control: RunRecord | None = None,
    loss_f32: bool = False,
    autocast: RunRecord | None = None,
) -> Part:
    """The precision part for ``mode``: FAIL with every problem found, else PASS with the facts
    (dtypes, step-graph matmuls, optimizer state, the loss's dtype). ``base`` is the comparison
    run; ``control``, the plain full-bf16 run made when the legacy run is unusable; what is worth
    saying but is no failure (the legacy switch not in effect in a run that is not the
    comparison run, :data:`SDPA_HINT`) is appended to ``notes``. ``loss_f32``: the script computes
    its loss in f32 on purpose and the migration kept it so (BFM089): an f32 loss is a fact.
    ``autocast``: amp's autocast control (:data:`~.records.AUTOCAST`), whose step graph tells the
    matmuls autocast itself leaves in f32 (:func:`_precision_from_graphs`)."""
    problems: list[str] = []
    facts: list[str] = []
    if legacy is not None and legacy_did_nothing(legacy):
        return _fp32_legacy_part(migrated, legacy)
    if legacy is not None and trains_on_the_host(legacy) and trains_on_the_host(migrated):
        return _host_training_part(migrated, legacy)
    still = _effective(migrated.legacy_env)
    if still:
        problems.append(
            "the migrated run still sees " + ", ".join(_where_set(migrated, k, v) for k, v in still.items())
        )
    rounding = rounding_problem(mode, migrated, legacy)
    if rounding:
        problems.append(rounding)
    wrong_params = _parameter_problem(mode, migrated, reference, legacy)
    if wrong_params:
        problems.append(wrong_params)
    else:
        facts.append(f"migrated parameters {dtypes_text(migrated.param_dtypes)}")
    host = _host_problem(migrated, legacy if legacy is not None and legacy.ok else reference)
    if host:
        problems.append(host)
    if usable(reference) and reference is not migrated:
        common = min(len(migrated.losses), len(reference.losses))  # none for steps made without backward()
        if common and migrated.losses[:common] == reference.losses[:common]:
            problems.append(
                f"the migrated losses equal the FP32 reference's at all {common} steps: no reduced precision in effect"
            )
    _switch_in_effect(legacy, base, problems, facts, notes)
    graph_problems, graph_facts, graph_figs = _precision_from_graphs(mode, migrated, legacy, autocast)
    problems.extend(graph_problems)
    facts.extend(graph_facts)
    state_problem, state_fact = _state_precision(mode, migrated, reference)
    if state_problem:
        problems.append(state_problem)
    elif state_fact:
        facts.append(state_fact)
    loss_problem = _loss_precision(
        mode, migrated, legacy if legacy is not None and legacy.ok else control, reference, autocast
    )
    if loss_problem and loss_f32:
        facts.append("the loss is f32 on the device, as the script computes it (kept as written, BFM089)")
    elif loss_problem:
        problems.append(loss_problem)
    differs = _state_differs(mode, migrated, legacy)
    if differs:
        facts.append(differs)
        notes.append(differs[0].upper() + differs[1:] + ".")
    if graph_problems and any("f32 where" in p for p in graph_problems):
        notes.append(SDPA_HINT)
    return Part(
        "precision", FAIL if problems else PASS, "; ".join(problems or facts), {"problems": problems, **graph_figs}
    )


def _switch_in_effect(
    legacy: RunRecord | None, base: RunRecord, problems: list[str], facts: list[str], notes: list[str]
) -> None:
    """Whether the legacy run had bf16 on the device: a fact when it had; when it had not, a problem
    if it is the comparison run (``base``), else a note."""
    if legacy is None or not legacy.ok or legacy.device_param_dtypes is None:
        return
    if has_bf16(legacy.device_param_dtypes) or _narrowed_to_f32(legacy):
        facts.append(f"legacy device parameters {dtypes_text(legacy.device_param_dtypes)} (switch in effect)")
        return
    msg = (
        f"the legacy run had no bf16 on the device ({dtypes_text(legacy.device_param_dtypes)}): the switch "
        "was not in effect there; if a launcher sets it, pass --legacy-env XLA_USE_BF16=1"
    )
    if base is legacy:
        problems.append(msg)
    else:
        notes.append(msg[0].upper() + msg[1:] + ".")


def rounding_problem(mode: Mode, migrated: RunRecord, legacy: RunRecord | None) -> str | None:
    """In a mode that switches stochastic rounding on (``stochastic``, Neuron's migration guide: ``model.to(
    torch.bfloat16)`` with ``NEURON_RT_STOCHASTIC_ROUNDING_EN=1``), where the legacy script set its switch
    itself (a write in its process: ``legacy_env_origin``), or a launcher whose work-tree text was read
    (``rounding_launcher``: ``--against``) sets none now: the migrated run's ``NEURON_RT_STOCHASTIC_ROUNDING_EN``
    when its first step ran, if it is not ``1``. On
    Neuron the legacy switch had stochastic rounding on; the XLA CPU device has none, so nothing else shows
    a migration that dropped it. None when there is no such problem."""
    if not mode.stochastic_rounding or legacy is None or not legacy.ok or migrated.rounding_env is None:
        return None  # no such mode, nothing to compare with, or a record that did not read it
    set_here = [name for name in _effective(legacy.legacy_env) if name in legacy.legacy_env_origin]
    if migrated.rounding_env == "1":
        return None
    value = "unset" if migrated.rounding_env == "" else f"{migrated.rounding_env!r}"
    if not set_here:
        launched = list(_effective(legacy.legacy_env))
        if not launched or migrated.rounding_launcher != "":
            return None  # no switch, or its launcher not read (verify's own migration writes the variable there)
        return (
            f"stochastic rounding is off in the migrated run (NEURON_RT_STOCHASTIC_ROUNDING_EN {value} in the script, "
            f"and the launcher that set {launched[0]} for the legacy run sets none now): on Neuron the legacy switch "
            "had it on; the stochastic mode sets NEURON_RT_STOCHASTIC_ROUNDING_EN=1 where the switch was"
        )
    return (
        f"stochastic rounding is off in the migrated run (NEURON_RT_STOCHASTIC_ROUNDING_EN {value} there): "
        f"the legacy script switched it on with {set_here[0]} on Neuron; the stochastic mode sets "
        "NEURON_RT_STOCHASTIC_ROUNDING_EN=1 where the switch was"
    )


def _effective(env: Mapping[str, str] | None) -> dict[str, str]:
    """The variables of ``env`` set to a true value that torch-xla acts on (``effective`` in
    ``rules/XLA_*.toml``: the bf16 pair; the fp16 pair has done nothing since torch-xla 2.5)."""
    variables = load_rules().variables
    return {k: v for k, v in _truthy_env(env).items() if k not in variables or variables[k].effective}


def legacy_did_nothing(legacy: RunRecord) -> bool:
    """Whether the legacy run was an FP32 run: it ran (``ok``) under legacy variables set to a true
    value, none of which torch-xla acts on (the fp16 pair, :func:`_effective`)."""
    return legacy.ok and bool(_truthy_env(legacy.legacy_env)) and not _effective(legacy.legacy_env)


def every_float_bf16(legacy: RunRecord) -> bool:
    """Whether the legacy run's switch makes every f32 and f64 device tensor bf16: a variable torch-xla acts on
    whose float64 becomes bf16 (``f64_becomes = "bf16"`` in ``rules/XLA_*.toml``: ``XLA_USE_BF16``) set to a
    true value (``XLA_DOWNCAST_BF16`` makes f64 f32 on purpose, so an f32 tensor made on the device is its rule
    there, not an exception to it)."""
    variables = load_rules().variables
    return any(k in variables and variables[k].f64_becomes == "bf16" for k in _effective(legacy.legacy_env))


def trains_on_the_host(run: RunRecord) -> bool:
    """Whether every parameter of the run's optimizers is on the host (none on the XLA device)."""
    return run.ok and not run.device_param_dtypes and bool(run.host_param_dtypes)


def _host_training_part(migrated: RunRecord, legacy: RunRecord) -> Part:
    """The precision part where both runs train on the host only (a script that fits its models on
    the CPU and evaluates them on the device): the switch acts on XLA tensors only (torch-xla's
    torch_xla/csrc/dtype.cpp), so the host training was float32 in the legacy run and must stay so;
    its losses equal the FP32 reference's by design. FAIL on bf16 host parameters the legacy run did not
    have; what the device computes is the graph's, the trace's and the outputs' to judge."""
    problem = _host_problem(migrated, legacy)
    fact = (
        f"the optimizers train on the host in both runs (migrated {dtypes_text(migrated.host_param_dtypes)}, legacy "
        f"{dtypes_text(legacy.host_param_dtypes)}): the switch acts on XLA tensors only, so the host training was "
        "float32 under it and its losses cannot tell the precisions apart"
    )
    return Part("precision", FAIL if problem else PASS, problem or fact, {"problems": [problem] if problem else []})


def _fp32_legacy_part(migrated: RunRecord, legacy: RunRecord) -> Part:
    """The precision part where every legacy variable in force did nothing (``XLA_USE_FP16``,
    ``XLA_DOWNCAST_FP16``: torch-xla >= 2.5 only warns about them, torch_xla/__init__.py): the legacy
    run was FP32, so the right migration is FP32 too, and the matches part compares it with that run.
    FAIL when the migrated run holds bf16 where the legacy run held none."""
    names = ", ".join(f"{k}={v}" for k, v in _truthy_env(legacy.legacy_env).items())
    fact = (
        f"the legacy switch ({names}) has done nothing since torch-xla 2.5: the legacy run was FP32"
        f" (device parameters {dtypes_text(legacy.device_param_dtypes)}), the migrated run's parameters are "
        f"{dtypes_text(migrated.param_dtypes)}"
    )
    low = has_bf16(migrated.device_param_dtypes) or has_bf16(migrated.param_dtypes)
    problem = f"the migrated run holds bf16 where the legacy run was FP32: {fact}" if low else None
    return Part("precision", FAIL if problem else PASS, problem or fact, {"problems": [problem] if problem else []})


def _where_set(run: RunRecord, name: str, value: str) -> str:
    """``NAME=VALUE`` and where the run set it (the harness's ``legacy_env_origin``): the
    migrated script's own line (the rewrite kept the setting), another file's, or neither (the
    process got it from outside Python's ``os.environ``)."""
    origin = run.legacy_env_origin.get(name)
    if origin is None:
        return (
            f"{name}={value}, set outside the Python code of the run (verify removes it from the environment it "
            "starts the run with: a C extension, or a process that started this one?)"
        )
    if " [migrated copy]" in origin:
        where = origin.replace(" [migrated copy]", "")
        return (
            f"{name}={value}, set by the migrated script itself at {where} (the rewrite kept that setting: its "
            "findings say why)"
        )
    return f"{name}={value}, set at {origin} (imported by the migrated script)"


def _truthy_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The variables of ``env`` set to a true value (``XLA_USE_BF16=0`` is off)."""
    return {k: v for k, v in (env or {}).items() if v.strip().lower() not in ("", "0", "false", "no", "off")}


SDPA_HINT = (
    "f32 in the migrated step graph where the legacy run had bf16 is, in the measured cases, PyTorch's math "
    "scaled_dot_product_attention (nn.MultiheadAttention, nn.TransformerEncoderLayer): since PyTorch 2.5 it upcasts "
    "bf16 query/key/value to f32 (under the legacy switch the tensors said float32, so it did not), which makes the "
    "attention matmuls f32, or, under autocast, bf16->f32->bf16 round trips. "
    "torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True) near the top of the script keeps it in bf16 "
    "(measured on fixtures/tiny_transformer: 21 of 21 matmuls bf16, no round trip, losses still matching). "
    "Otherwise look for tensors created in f32 inside the model, or .float() on activations."
)
"""Shown when the graph shows f32 matmuls a bf16 mode should not have, or layout round trips."""

MODEL_CAST_COMPILES = 1
"""Compilations the migrated run may have beyond its comparison run when its mode casts the
model (:attr:`bf16_migrate.rules.Mode.casts_model`; :func:`mode_compile_allowance`). Such a
mode adds ``model.to(torch.bfloat16)``: when the model is already on the device, that cast is a pending
graph of its own, first synced together with whatever else is pending (measured on
fixtures/tiny_transformer, 12 steps: legacy 3 compilations, migrated 4, because the cast joins
the first ``MpDeviceLoader`` sync, whose graph the legacy run meets again, cached, at the
``running_loss.zero_()`` of step 10). amp adds no graph (measured: equal counts on the four
fixtures)."""


def mode_compile_allowance(mode: Mode) -> int:
    """The compilations a migration in ``mode`` (a mode's name) may add when nothing itemized
    them: :data:`MODEL_CAST_COMPILES` when the mode casts the model, else 0 (autocast adds no
    graph of its own). Raises ValueError for an unknown mode."""
    return MODEL_CAST_COMPILES if mode.casts_model else 0


def _device_dtype_counts(state_dtypes: Mapping[str, Mapping[str, int]] | None) -> dict[str, int]:
    """Optimizer state device element types (``bf16``/``f32``) -> count, device tensors only."""
    out: dict[str, int] = {}
    for per in (state_dtypes or {}).values():
        for key, n in per.items():
            if "/" in key:
                dev = key.split("/", 1)[1]
                out[dev] = out.get(dev, 0) + n
    return out


def _state_precision(
    mode: Mode, migrated: RunRecord, reference: RunRecord | None = None
) -> tuple[str | None, str | None]:
    """(problem, fact) about the optimizer state on the device. gpu-compatible promises FP32
    master weights, so its state (exp_avg, momentum_buffer...) is created from them in f32
    (measured: float32/f32 on the four fixtures; stochastic: bfloat16/bf16). amp keeps the model and
    its optimizer FP32 (torch-xla's AMP docs: autocast computes in bf16 inside the forward only), so
    bf16 state where the FP32 script's (``reference``) has none is a hand's cast (a momentum buffer
    made ``zeros_like(p, dtype=torch.bfloat16)``: bench/unseen/hunt27 SWA2 PASSed, its report saying
    "optimizer state bf16 x6")."""
    counts = _device_dtype_counts(migrated.state_dtypes)
    if not counts:
        return None, None
    text = ", ".join(f"{k} x{v}" for k, v in sorted(counts.items()))
    if mode.master_weights and "bf16" in counts:
        return (
            f"the optimizer state is bf16 on the device ({text}): the FP32 master weights of gpu-compatible mode are "
            "not in effect (an optimizer that is not a stock torch.optim class? see BFM060)"
        ), None
    low = {"bf16", "f16"} & set(counts)
    if mode.autocast and low and usable(reference) and reference is not None:
        theirs = _device_dtype_counts(reference.state_dtypes)
        if theirs and not low & set(theirs):
            return (
                f"the optimizer state is {'/'.join(sorted(low))} on the device ({text}) where the FP32 script's is "
                f"{dtypes_text(theirs)}: amp keeps the model and its optimizer in FP32 and autocast computes in bf16 "
                "inside the forward only; make the state as the script makes it (a buffer cast down by hand?)"
            ), None
    return None, f"optimizer state {text}"


def _loss_precision(
    mode: Mode,
    migrated: RunRecord,
    bf16_run: RunRecord | None,
    reference: RunRecord | None = None,
    autocast: RunRecord | None = None,
) -> str | None:
    """A problem with the dtype of the loss the migrated run backpropagates, or None.

    Every mode: f64 where the full-bf16 run's (the legacy run, or the control when it is unusable;
    else the FP32 ``reference``) is not: a float64 tensor (NumPy data, a float64 target or sample
    weight) reaches the loss on the device, where the switch made it bf16 (or float32, the
    downcasting switch) (torch_xla/csrc/dtype.cpp), and autocast casts no float64.

    A bf16 mode: f32 where the full-bf16 run's was bf16: an f32 tensor met the bf16 output on its
    way to the loss (an uncast target, a sample weight, a baseline added to the output) and
    promoted the loss computation to f32 (measured: bench/calibration/weighted_loss, legacy bf16,
    the migration with the weights left f32 f32).

    amp: bf16 where the FP32 script's loss is f32 and where the ``autocast`` control (the FP32 script
    with its forward passes and losses under autocast) computes it in f32 too: the loss is computed
    outside autocast on the bf16 output, or on a target or weight cast down to bf16 "to match" it
    (bench/unseen/hunt21 A5, A6: such a loss ran farther from FP32 than the full-bf16 legacy run).
    Autocast itself leaves some losses bf16 (a mean of the output): where the control's is bf16 too
    it is autocast's own. Before the control is made (``autocast`` None) the bf16 loss is a problem,
    so that the control is made; a control that recorded no step excuses it, one that failed after its
    steps (in the script's tail) does not."""
    theirs = bf16_run if bf16_run is not None else reference
    if migrated.loss_dtype == "f64" and theirs is not None and theirs.loss_dtype not in (None, "f64"):
        return (
            f"the loss the migrated run backpropagates is f64 on the device where the {theirs.name} run's is "
            f"{theirs.loss_dtype}: a float64 tensor (NumPy data, a float64 target or weight) reaches the loss, where "
            "the switch made it bf16 (or float32, where it only downcast); make it float32 where it enters the device"
        )
    if mode.autocast:
        return _autocast_loss(migrated, reference, autocast)
    if bf16_run is None or migrated.loss_dtype is None:
        return None
    if migrated.loss_dtype == "f32" and bf16_run.loss_dtype == "bf16":
        wide = (migrated.device_param_dtypes or {}).get("f32")
        if wide and not (bf16_run.device_param_dtypes or {}).get("f32"):
            # the cause is in the parameters, not in what meets the output (bench/unseen/hunt27 PW3)
            return (
                f"the loss the migrated run backpropagates is f32 on the device where the {bf16_run.name} run's is "
                f"bf16, and {wide} of its parameters are f32 on the device ({dtypes_text(migrated.device_param_dtypes)}"
                f"; the {bf16_run.name} run's {dtypes_text(bf16_run.device_param_dtypes)}): a parameter made f32 again "
                "after the model cast (`p.data = p.data.float()`), or one the cast did not reach"
            )
        return (
            f"the loss the migrated run backpropagates is f32 on the device where the {bf16_run.name} run's is bf16: "
            "an f32 tensor reaches the loss (an uncast target, sample weight or offset added to the output) and the "
            "loss is computed in f32; cast it with .to(torch.bfloat16)"
        )
    return None


def _autocast_loss(migrated: RunRecord, reference: RunRecord | None, autocast: RunRecord | None) -> str | None:
    """amp's bf16 loss problem (:func:`_loss_precision`), or None."""
    if migrated.loss_dtype != "bf16" or reference is None or reference.loss_dtype != "f32":
        return None
    if autocast is None:
        return (
            "the loss the migrated run backpropagates is bf16 on the device where the FP32 script's is f32 (the "
            "autocast control tells whether autocast itself computes it so)"
        )
    # a control that recorded steps tells its loss's dtype even when the script's tail then failed under its
    # autocast (a forward result handed to NumPy, which the migration routes through host_float32:
    # bench/unseen/hunt27 CA2 PASSed so); one that recorded none excuses the bf16 loss
    if not autocast.steps or autocast.loss_dtype != "f32":
        return None
    return (
        "the loss the migrated run backpropagates is bf16 on the device where the FP32 script's is f32, and f32 under "
        "autocast too (the autocast control): it is computed outside autocast on the bf16 output, or on a target or "
        "weight cast down to bf16; compute the loss inside the autocast block, on the FP32 target"
    )


def _state_differs(mode: Mode, migrated: RunRecord, legacy: RunRecord | None) -> str | None:
    """Said when the migrated optimizer state is held in another precision on the device than
    the legacy run's, in a mode that promises the legacy precision (stochastic: parameters and
    state bf16, as under the switch). Measured: torch-xla's ZeroRedundancyOptimizer keeps its
    shards and their state in ``optimizer_dtype`` (FP32) after ``model.to(torch.bfloat16)``
    (fixtures/zero1_sharded, 12 steps: migrated f32 x12 where the legacy run had bf16 x12).
    Not a failure: the migrated optimizer computes in more precision than the legacy one did,
    and the losses are judged by matches; but its state takes twice the memory."""
    if not mode.stochastic_rounding or legacy is None or not legacy.ok:
        return None
    mine, theirs = _device_dtype_counts(migrated.state_dtypes), _device_dtype_counts(legacy.state_dtypes)
    if not mine or not theirs or set(mine) == set(theirs):
        return None
    return (
        f"the migrated optimizer state is {dtypes_text(mine)} on the device where the legacy run had "
        f"{dtypes_text(theirs)}: the update computes in another precision and its state takes "
        f"{'twice' if 'f32' in mine and 'f32' not in theirs else 'a different amount of'} the memory (torch-xla's "
        "ZeroRedundancyOptimizer: optimizer_dtype=torch.bfloat16 keeps the legacy precision, FP32 is gpu-compatible "
        "mode's)"
    )


def _precision_from_graphs(
    mode: Mode, migrated: RunRecord, legacy: RunRecord | None, autocast: RunRecord | None = None
) -> tuple[list[str], list[str], dict]:
    """Problems, facts and figures about the matmuls of the migrated training-step graph.

    Rules: every mode needs bf16 matmuls (an FP32 run has none: 0 of 8/9/21/8 on the four
    fixtures' reference runs); amp needs all of them in bf16 (autocast lowers matmul, linear,
    bmm, einsum and conv, forward and backward: 8/8, 9/9, 21/21, 8/8 measured);
    stochastic / gpu-compatible may not run more matmuls with an f32 operand
    (:attr:`~.graphs.GraphStats.f32_matmuls`) than the legacy run did
    (the switch made everything bf16, so the legacy count is 0 unless XLA_DOWNCAST_BF16 kept f64
    code in f32; a dot of f32 and bf16 computes in f32, so it counts). amp's matmuls that are not
    bf16 pass when the ``autocast`` control's step graph, as many matmuls, has at least as many:
    they are ops autocast itself leaves in f32 (a spectral norm's power iteration, ``torch.mv``
    under ``no_grad``: bench/unseen/hunt8 sn_ckpt_dockerarg), not a forward outside autocast. In every
    mode a matmul with an f64 operand the legacy step graph did not have fails, never excused by the
    control: no switch left f64 on the device, and autocast lowers no float64 (a hunt's ALiBi slopes
    from NumPy, a float64 buffer, made 33 of 39 matmuls f64 in an autocast control too)."""
    g = migrated.graph
    if g is None or not g.matmuls:
        return [], [], {}
    figs: dict[str, int | None] = {"matmuls": g.matmuls, "matmuls_bf16": g.matmuls_bf16, "matmuls_f32": g.matmuls_f32}
    problems: list[str] = []
    fact = f"step graph {g.matmuls_bf16} of {g.matmuls} matmuls bf16"
    lg64 = legacy.graph if legacy is not None and legacy.ok else None
    allowed64 = lg64.matmuls_with_f64 if lg64 is not None else 0
    figs["matmuls_f64"] = g.matmuls_with_f64
    if g.matmuls_with_f64 > allowed64:
        problems.append(
            f"{g.matmuls_with_f64} of {g.matmuls} matmuls of the step graph compute in f64 where the legacy run had "
            f"{allowed64} (the switch left no float64 on the device; autocast casts no float64)"
        )
    if g.matmuls_bf16 == 0 and not mode.autocast:
        problems.append(f"no matmul of the migrated step graph is bf16 ({g.matmuls_f32} of {g.matmuls} f32)")
    elif mode.autocast:
        if g.matmuls_bf16 < g.matmuls:
            not_bf16 = g.matmuls - g.matmuls_bf16
            ag = autocast.graph if autocast is not None and autocast.ok else None
            theirs = ag.matmuls - ag.matmuls_bf16 if ag is not None and ag.matmuls == g.matmuls else None
            figs["autocast_control_not_bf16"] = theirs
            if ag is not None and theirs is not None and not_bf16 <= theirs:
                # none bf16 in either: the step runs no forward pass (an L-BFGS fit of a temperature over logits
                # computed before it: its dot products are the optimizer's, f32 in amp; bench/unseen/hunt35)
                fact += (
                    f"; the {not_bf16} others are autocast's own: the autocast control (the FP32 script under "
                    f"autocast) runs {theirs} of its {ag.matmuls} outside bf16 too"
                )
            elif g.matmuls_bf16 == 0:
                seen = f"; the autocast control has {theirs}" if theirs is not None else ""
                problems.append(
                    f"no matmul of the migrated step graph is bf16 ({g.matmuls_f32} of {g.matmuls} f32){seen}"
                )
            else:
                seen = f"; the autocast control has {theirs}" if theirs is not None else ""
                problems.append(
                    f"{not_bf16} of {g.matmuls} matmuls of the step graph are not bf16 under autocast "
                    f"(a forward pass outside the autocast block?){seen}"
                )
    else:
        lg = legacy.graph if legacy is not None and legacy.ok else None
        allowed = lg.f32_matmuls if lg is not None else 0
        figs["legacy_matmuls_f32"] = lg.matmuls_f32 if lg is not None else None
        figs["f32_matmuls"] = g.f32_matmuls
        figs["legacy_f32_matmuls"] = lg.f32_matmuls if lg is not None else None
        if g.f32_matmuls > allowed:
            where = f"the legacy run had {allowed}" if lg is not None else "the switch made every matmul bf16"
            problems.append(f"{g.f32_matmuls} of {g.matmuls} matmuls of the step graph run in f32 where {where}")
    return problems, [fact], figs


def separates(mode: Mode, migrated: RunRecord, legacy: RunRecord, reference: RunRecord) -> str | None:
    """How the executed step graphs and device dtypes tell the migrated run's precision from
    the control's, or None when they do not (a graph or a dtype missing, or no difference).

    stochastic / gpu-compatible: the migrated step graph has bf16 matmuls and no more f32 ones
    than the legacy graph, the legacy graph has bf16 matmuls, the FP32 control's graph none,
    and the migrated parameters are bf16 on the device: the migrated run computes in bf16
    where the legacy run did, which the FP32 control does not. amp: every migrated matmul is
    bf16 (autocast in effect) while its parameters are f32 on the device, where the full-bf16
    legacy run's are bf16: mixed precision, not full bf16 (measured on the fixtures: legacy
    graphs 8/8, 9/9, 8/8, 21/21 bf16 matmuls, FP32 references 0; amp all bf16 with f32
    parameters)."""
    g, lg, rg = migrated.graph, legacy.graph, reference.graph
    if g is None or lg is None or rg is None or not (g.matmuls and lg.matmuls and rg.matmuls):
        return None
    if mode.autocast:
        if g.matmuls_bf16 == g.matmuls and not has_bf16(migrated.device_param_dtypes):
            if has_bf16(legacy.device_param_dtypes):
                return (
                    f"the migrated run's {g.matmuls} matmuls are bf16 under autocast while its parameters are "
                    f"{dtypes_text(migrated.device_param_dtypes)} on the device, where the full-bf16 legacy run's are "
                    f"{dtypes_text(legacy.device_param_dtypes)}: mixed precision, not full bf16"
                )
        return None
    if (
        g.matmuls_bf16
        and g.matmuls_f32 <= lg.matmuls_f32
        and lg.matmuls_bf16
        and rg.matmuls_bf16 == 0
        and has_bf16(migrated.device_param_dtypes)
        and not has_bf16(reference.device_param_dtypes)
    ):
        return (
            f"the migrated step graph runs {g.matmuls_bf16} of {g.matmuls} matmuls in bf16 as the legacy run's "
            f"({lg.matmuls_bf16} of {lg.matmuls}), the FP32 control's {rg.matmuls_bf16} of {rg.matmuls}, and its "
            f"parameters are {dtypes_text(migrated.device_param_dtypes)} on the device: it computes in bf16 where the "
            "legacy run did"
        )
    return None


def graph_part(
    mode: Mode,
    migrated: RunRecord,
    base: RunRecord,
    legacy: RunRecord | None,
    allowance: Sequence[Allowance] | None = None,
) -> Part:
    """The graph part: no f32 round trip that computes nothing, no more compilations than the
    comparison run plus the ``allowance`` (the items :func:`.allowance.compile_allowance` found
    in what the migration added; None: :func:`mode_compile_allowance` of the mode, for callers that
    do not have the texts). Figures from :class:`~bf16_migrate.verify.graphs.GraphStats`; rules
    and measurements in the module docstring ("graph")."""
    g = migrated.graph
    figs: dict = {}
    if g is None:
        return Part(
            "graph",
            INCONCLUSIVE,
            "no graph of the migrated run was executed before the stop: does the script run on the XLA device and "
            "sync each step (torch_xla.sync(), xm.mark_step(), MpDeviceLoader)?",
            figs,
        )
    problems: list[str] = []
    facts: list[str] = []
    layout = g.round_trips.get("bf16->f32->bf16 (layout)", 0)
    figs.update(
        layout_round_trips=layout,
        round_trips=dict(g.round_trips),
        converts=dict(g.converts),
        step=g.step,
        graph_hash=g.graph_hash,
        instructions=g.instructions,
    )
    if layout:
        key = "bf16->f32->bf16 (layout)"
        example = (g.round_trip_examples.get(key) or [""])[0]
        if autocasts_own_round_trips(mode, migrated):
            facts.append(
                f"{layout} bf16->f32->bf16 round trip(s) that compute nothing, torch's own under autocast (no "
                f"attention upcast counted, and amp writes no convert on the device), e.g. {example}"
            )
            figs["layout_round_trips"] = 0
            figs["autocast_round_trips"] = layout
        else:
            problems.append(
                f"{layout} bf16->f32->bf16 round trip(s) that compute nothing in the step graph (the mode needs none, "
                f"e.g. {example})"
            )
    up = g.converts.get("bf16->f32", 0)
    down = g.converts.get("f32->bf16", 0)
    elementwise = g.round_trip_count("elementwise")
    conv_text = f"f32<->bf16 tensor converts {up} up / {down} down"
    if mode.autocast:
        params = sum((migrated.param_dtypes or {}).values())
        conv_text += f" ({params} parameters: one f32 convert per parameter gradient is expected under autocast)"
    elif mode.master_weights:
        params = sum((migrated.param_dtypes or {}).values())
        conv_text += f" ({params} parameters: FP32 master weights take one each way per parameter)"
    if elementwise:
        conv_text += (
            f", {elementwise} bf16->f32->bf16 round trip(s) doing f32 arithmetic with Python scalars (torch-xla's "
            "opmath, expected)"
        )
    facts.append(conv_text)
    # compilations, less each run's leftover graphs (timing's, not the code's: graphs.leftover_graphs), counted
    # to the end of the steps when a run went on past them (_counted_through)
    against = legacy if usable(legacy) else base
    through = _counted_through([migrated, against, base if mode.autocast and usable(base) else None])
    comp = _compiles(migrated, through)
    if allowance is None:
        extra = mode_compile_allowance(mode)
        items = [f"+{extra} for the model cast"] if extra else []
    if allowance is not None:
        again = first_step_recompiles(allowance, migrated.compiles_at_step, against.compiles_at_step if against else [])
        allowance = [*allowance, again] if again is not None else allowance
        extra = sum(item.count for item in allowance)
        items = [f"+{item.count} for {item.what}" for item in allowance]
    # the bar stays the comparison run's own count: a leftover graph excuses the migrated run's compilations
    # and never tightens its bar (a script syncing many times a step has supersets of its own: hunt9's
    # REINFORCE, fixtures/contract/numpy_returns, legacy 3 of them against the migrated run's 1)
    baseline = _counted(against, through) if against is not None else None
    if comp is not None and against is not None and baseline is not None:
        figs.update(
            compiles=comp,
            compiles_baseline=baseline,
            compile_allowance=extra,
            compile_allowance_items=items,
            compiles_at_step=list(migrated.compiles_at_step),
            leftover_graphs=_leftovers(migrated, through),
            compiles_through_step=through,
        )
        limit = baseline + extra
        by = f" by the end of step {through}" if through is not None else ""
        head = f"{comp} XLA compilations{by}"
        text = f"{head} ({against.name} run {baseline}"
        base_count = _counted(base, through) if usable(base) else None
        if mode.autocast and base is not against and base_count is not None and base_count > baseline:
            # amp's model runs in FP32, as the FP32 reference's does: a graph that run compiles more than the
            # legacy one is no graph of the migration's (bench/unseen/hunt10 proto_conda: 24 against 23)
            limit = base_count + extra
            text += f", {base.name} run {base_count}"
        text += f", allowed {', '.join(items)})" if items else ", nothing added allowed)"
        left = _leftovers(migrated, through)
        if left:
            text += (
                f", not counted: {left} of the migrated run's, the step's graph compiled again with tensors an earlier "
                "step left pending (which step they join is timing)"
            )
        later = _late_compiles(migrated.compiles_at_step, against.compiles_at_step)
        if len(later) > left:
            text += f", new graphs compiled after step(s) {steps_text(later)}"
        text += _after_steps_text(figs, migrated, against, through)
        if comp > limit:
            problems.append(text.replace(head, f"{head}, more than allowed", 1))
        else:
            facts.append(text)
    elif comp is not None:
        facts.append(f"{comp} XLA compilations" + (f" by the end of step {through}" if through is not None else ""))
    facts.insert(
        0,
        f"step {g.step} graph: {g.matmuls_bf16} of {g.matmuls} matmuls bf16, no round trip computing nothing"
        if not layout
        else f"step {g.step} graph: {g.matmuls_bf16} of {g.matmuls} matmuls bf16",
    )
    return Part("graph", FAIL if problems else PASS, "; ".join(problems + facts if problems else facts), figs)


def _leftovers(run: RunRecord, through: int | None = None) -> int:
    """The run's compilations of a recurring graph with tensors an earlier step left pending
    (:func:`.graphs.leftover_graphs`), those first synced before the end of step ``through`` when
    given (a graph statistic without their windows: all of them); 0 without a graph dump."""
    g = run.graph
    if g is None:
        return 0
    if through is None or len(g.leftover_windows) != g.leftover_graphs:
        return g.leftover_graphs
    return sum(1 for k in g.leftover_windows if k < through)


def _counted(run: RunRecord, through: int | None) -> int | None:
    """The run's XLA compilations (``CompileTime`` samples) by the end of step ``through``
    (``RunRecord.compiles_at_step``), or over the whole record (None); None when not counted."""
    if through is None:
        return run.compile_count
    marks = run.compiles_at_step
    return marks[through - 1] if len(marks) >= through else None


def _compiles(run: RunRecord, through: int | None = None) -> int | None:
    """The run's XLA compilations (:func:`_counted`) less its leftover graphs; None when not counted."""
    count = _counted(run, through)
    return None if count is None else count - _leftovers(run, through)


def _after_steps(run: RunRecord, through: int) -> int | None:
    """The compilations of ``run`` after the end of step ``through`` (its own last step's sync included)."""
    count = _counted(run, through)
    return None if count is None or run.compile_count is None else run.compile_count - count


def _after_steps_text(figs: dict, migrated: RunRecord, against: RunRecord, through: int | None) -> str:
    """The clause of the graph part's compile count that names what it left out (:func:`_counted_through`),
    its figures added to ``figs``; empty when the whole records were counted."""
    if through is None:
        return ""
    figs["compiles_after_steps"] = {run.name: _after_steps(run, through) for run in (migrated, against)}
    return (
        f", not counted: what compiled after the end of step {through} (its sync, then the script's code after the "
        f"recorded steps: evaluation, export, copies to the host), {_after_steps(migrated, through)} in the migrated "
        f"run and {_after_steps(against, through)} in the {against.name} run"
    )


#: ``RunRecord.exit_reason`` of a run whose record was written when the script ended on its own,
#: after whatever it runs past its training loop (the record of a run stopped at the steps asked
#: for, ``steps_reached``, is taken at the stop: bf16_migrate/verify/_child/sitecustomize.py)
_WENT_ON = ("script_exit", "exception")


def _counted_through(runs: Sequence[RunRecord | None]) -> int | None:
    """The step by whose end the graph part counts compilations, or None for the whole records.

    The contract of the part is training's: whether the migrated run's steps compile more than
    the comparison run's (a recompilation every step is the cost). A script that ends on its own
    runs its code after the loop (evaluation, an export, host copies of the weights) before the
    record is written, and there the migration writes its deliberate conversions for the host: a
    cast on the device before ``.cpu()`` (``v.float().cpu()``) is a small graph of its own per shape
    (bench/unseen/hunt33 GR1, torch-xla 2.9 on the XLA CPU device: 7 tensors of a checkpoint and
    an accumulator, 6 graphs after the steps where the legacy run's ``.cpu()`` compiled 1, the counts
    at every step the same; the same text with ``.cpu().float()`` converts on the host: 1 graph after
    the steps, as the legacy run). So when a run with a count
    went on past its steps, every run is counted by the end of the last step they all recorded
    (the count the child reads at each optimizer step, before that step's own sync: the same
    point in each run). None when no run went on, or a run has no count at that step."""
    counted = [r for r in runs if r is not None and r.compile_count is not None]
    if not any(r.exit_reason in _WENT_ON for r in counted):
        return None
    steps = min((len(r.compiles_at_step) for r in counted), default=0)
    if not steps or any(r.compiles_at_step[steps - 1] is None for r in counted):
        return None
    return steps


def autocasts_own_round_trips(mode: Mode, migrated: RunRecord) -> bool:
    """Whether the layout round trips of ``migrated``'s step graph are autocast's own, not the
    migration's: in a mode that keeps the model FP32 under autocast, the migration writes no convert
    on the device, and the run counted no call of the math attention that upcasts bf16 q/k/v
    (``RunRecord.sdpa_upcasts`` 0; the one such source the migration can remove, :data:`SDPA_HINT`).
    torch's recurrent ops under autocast make them (measured with torch-xla 2.9 on the XLA CPU
    device: a bidirectional ``nn.GRU`` and an ``nn.GRUCell`` loop, their outputs converted to f32,
    sliced and converted back). A record that did not count (None) keeps them the migration's."""
    return mode.autocast and migrated.sdpa_upcasts == 0


def _late_compiles(marks: Sequence[int | None], baseline: Sequence[int | None] = ()) -> list[int]:
    """Steps ``k >= 3`` after whose end (and before the end of step ``k + 1``) the compile count
    grew more than the ``baseline`` run's did over the same steps: graphs first compiled in the
    steady state, a recompilation every step being the classic XLA slowdown. ``marks[k - 1]`` is
    the count at the end of step ``k``, before the script's own sync of step ``k``; step 1
    (initialisation) and step 2 (the first step with optimizer state) are expected to compile.
    Growth the baseline (the legacy run) shows too is the script's own (a loss printed every 5
    steps is a graph of its own the first time), not the migration's; a step the baseline did not
    record counts as no growth there."""
    out = []
    for i in range(3, len(marks)):
        a, b = marks[i - 1], marks[i]
        if a is None or b is None:
            continue
        before = baseline[i - 1] if i < len(baseline) else None
        after = baseline[i] if i < len(baseline) else None
        grown = after - before if before is not None and after is not None else 0
        if b - a > grown:
            out.append(i)
    return out
