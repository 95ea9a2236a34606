"""What one verify run produced, and the error raised when a needed run could not be made.

No torch here: these types are built from the JSON record the child harness writes
(``bf16_migrate/verify/_child/sitecustomize.py`` documents the format), so the verdict logic
can be tested without XLA.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .graphs import GraphStats
from .trace import Trace

__all__ = ["RunError", "RunRecord", "LEGACY", "MIGRATED", "REFERENCE", "CONTROL", "AUTOCAST"]

LEGACY = "legacy"
MIGRATED = "migrated"
REFERENCE = "reference"
CONTROL = "control"
"""The plain full-bf16 run made when the legacy run cannot be made: the script as the stochastic
rewrite writes it (model cast, floating inputs cast), whose distance from the FP32 reference is
the bar for the migrated run (:mod:`.compare`, ``FALLBACK``)."""
AUTOCAST = "autocast"
"""The autocast control of amp: the FP32 reference's text run with torch's autocast state on for
the XLA device everywhere but in backward passes and optimizer steps (the harness's
``BF16_MIGRATE_AUTOCAST``): what autocast computes for this script when its forward passes and
losses are all under it, which a right amp migration computes too (:mod:`.compare`)."""


class RunError(Exception):
    """A run the verdict needs could not be made.

    Raised by :func:`bf16_migrate.verify.verify_script` when a needed child process exits
    non-zero, outlives its timeout, writes no record, or records zero optimizer steps (and, for
    the legacy run, when no fallback to the FP32 reference is possible). ``str(exc)`` is the
    message followed by the script's last output lines; the CLI maps it to exit code 2.

    Attributes: ``message`` (str), ``run`` (``"legacy"``, ``"migrated"``, ``"reference"`` or
    ``None`` when no child was involved, e.g. the migration itself failed), ``tail`` (list of
    str, the last ~20 lines of the child's stdout+stderr), ``returncode`` (int or None),
    ``hint`` (str or None: what to try), ``runs`` (name -> :class:`RunRecord` of every run
    that was made, empty when none was), ``findings`` (what the migrated run's dtype trace
    named: :class:`~bf16_migrate.verify.trace_findings.TraceFinding`, the failure's line among
    them), ``migrated_source`` and ``modules`` (the texts the migrated run ran, when one was made:
    what ``verify --fix`` repairs), ``broke`` (True when the migrated run failed where the legacy
    run of the same script succeeded: the migration broke the script, a failed check that the CLI
    and a tree's table count as FAIL, exit 1, not as a run that could not be made; also when no comparison run is
    usable but the migrated run's dtype trace, which needs none, names places the migrated run does what the legacy
    run did not), ``fail_reason`` (what that failed check is, for the verdict line).
    """

    def __init__(
        self,
        message: str,
        *,
        run: str | None = None,
        tail: Sequence[str] = (),
        returncode: int | None = None,
        hint: str | None = None,
    ):
        self.message = message
        self.run = run
        self.tail = list(tail)
        self.returncode = returncode
        self.hint = hint
        self.runs: dict[str, RunRecord] = {}
        self.findings: list[Any] = []
        self.migrated_source: str | None = None
        self.modules: dict[Any, str] = {}
        self.broke = False
        self.fail_reason = "the migrated run failed where the legacy run did not"
        super().__init__(message)

    def __str__(self) -> str:
        text = self.message
        if self.tail:
            body = "\n".join("    " + line for line in self.tail)
            text += f"\n  last output lines:\n{body}"
        if self.hint:
            text += f"\n  what to try: {self.hint}"
        for finding in self.findings:
            d = finding.diagnostic
            text += f"\n  {d.path}:{d.line}:{d.col}: {d.code} {d.message}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: message, run, returncode, hint, tail, and the records of the runs that
        were made (``runs``: name -> :meth:`RunRecord.to_dict`)."""
        return {
            "message": self.message,
            "run": self.run,
            "returncode": self.returncode,
            "hint": self.hint,
            "broke": self.broke,
            "tail": self.tail,
            "runs": {name: r.to_dict() for name, r in self.runs.items()},
            "trace_findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class RunRecord:
    """One child run: its per-step losses and what the harness saw.

    ``losses``: list of float, one per recorded optimizer step (the loss tensor(s) passed to
    ``backward`` since the previous step, summed, read back as float64 from the device at
    the end; may hold NaN/Inf). ``step_end_s``: seconds (``time.perf_counter``) from the
    harness start to the end of each step's ``optimizer.step()``; XLA is lazy, so the gap
    between two of them covers the tracing of one step and the execution of the previous
    one. ``param_dtypes`` / ``device_param_dtypes``: dtype name -> parameter count at the
    first step, as torch reports it and as the XLA device stores it (``"bf16"`` under the
    legacy switch even where torch says ``float32``). ``compile_count`` /
    ``execute_count``: XLA ``CompileTime`` / ``ExecuteTime`` metric counts at the end;
    ``compiles_at_step``: the compile count at the end of each recorded step.
    ``state_dtypes``: optimizer state name (``exp_avg``, ``momentum_buffer``, ``step``...) ->
    dtype -> count after the first step; a device tensor's dtype reads ``torch/device``
    (``float32/bf16`` under ``XLA_USE_BF16``), a host tensor's ``dtype@cpu``.
    ``graph``: :class:`~bf16_migrate.verify.graphs.GraphStats` of the training-step graph as
    torch-xla executed it (None when no graph was dumped).
    ``legacy_env``: the legacy variables present in the child's ``os.environ`` at the first
    step (name -> value), None when no step was recorded; ``legacy_env_origin``: name ->
    ``file:line`` of the code that first set it in the process (``os.environ`` or
    ``os.putenv``; a staged copy's path reads as the user's file). ``loss_dtype``: the element
    type the device held for the first loss passed to ``backward`` (``"bf16"``, ``"f32"``).
    ``error``: None when the run succeeded, else the reason it did not (then ``tail`` holds
    the last output lines); ``hint``: what to try about that error (None when there is no
    specific advice). ``backward_calls``: ``backward`` calls seen in the recording process.
    ``trace``: the dtype trace of the run (:class:`~bf16_migrate.verify.trace.Trace`; None when
    it was not traced), which may go on after the recorded steps to the script's end.
    ``steps_without_backward``: in a run whose optimizer steps were made without ``backward()``
    (gradients from ``torch.func.grad`` or ``torch.autograd.grad`` assigned to ``p.grad``), its
    steps, which have no loss: ``losses`` is then empty and the run is judged on what it hands the
    host (:attr:`on_outputs`); 0 otherwise.
    ``sdpa_upcasts``: calls of ``torch.nn.functional.scaled_dot_product_attention`` with bf16/f16
    query, key or value while torch's math kernel upcast them to f32
    (``torch.backends.cuda.fp16_bf16_reduction_math_sdp_allowed()`` False), None when the harness
    did not count them (a record of an older version).
    """

    name: str
    losses: list[float] = field(default_factory=list)
    step_end_s: list[float] = field(default_factory=list)
    backwards_per_step: list[int] = field(default_factory=list)
    backward_calls: int | None = None
    param_dtypes: dict[str, int] | None = None
    device_param_dtypes: dict[str, int] | None = None
    host_param_dtypes: dict[str, int] | None = None
    """Floating dtype -> count of the parameters on the host (CPU) of every optimizer built, at the
    first step; None when there is none. The switch never touched them (it acts on XLA tensors)."""
    state_dtypes: dict[str, dict[str, int]] | None = None
    graph: GraphStats | None = None
    optimizer: str | None = None
    legacy_env: dict[str, str] | None = None
    legacy_env_origin: dict[str, str] = field(default_factory=dict)
    rounding_env: str | None = None
    rounding_launcher: str | None = None
    """Where the legacy run's switch came from a launcher and the migrated text is the work tree's
    (``--against REV``): ``"1"`` when that launcher, as the work tree has it, sets
    ``NEURON_RT_STOCHASTIC_ROUNDING_EN``, else ``""``; None when not read (verify's own migration writes it)."""
    """``NEURON_RT_STOCHASTIC_ROUNDING_EN`` in the child's ``os.environ`` when ``legacy_env`` was read (``""``: unset;
    None: not recorded, a record written before it was)."""
    loss_dtype: str | None = None
    compile_count: int | None = None
    compiles_at_step: list[int | None] = field(default_factory=list)
    execute_count: int | None = None
    exit_reason: str | None = None
    exception: str | None = None
    returncode: int | None = None
    wall_time_s: float | None = None
    error: str | None = None
    tail: list[str] = field(default_factory=list)
    harness_errors: list[str] = field(default_factory=list)
    hint: str | None = None
    trace: Trace | None = None
    sdpa_upcasts: int | None = None
    steps_without_backward: int = 0

    @property
    def ok(self) -> bool:
        """True when the run finished and recorded at least one step, or is an inference run."""
        return self.error is None and (self.steps > 0 or self.inference)

    @property
    def inference(self) -> bool:
        """True for a run that ended on its own without calling ``backward`` and whose traced code
        took results off the device (:attr:`Trace.outputs <.trace.Trace.outputs>`): a script that
        does not train, judged on what it hands the host (:mod:`.outputs`)."""
        return (
            self.error is None
            and not self.steps
            and not self.backward_calls
            and self.trace is not None
            and bool(self.trace.outputs)
        )

    @property
    def steps(self) -> int:
        """The optimizer steps recorded (with a loss each, or all without backward)."""
        return len(self.losses) or self.steps_without_backward

    @property
    def on_outputs(self) -> bool:
        """True for a run judged on what it handed the host (:mod:`.outputs`), having no losses: an
        inference run, or a run that trained without ``backward()`` (:attr:`steps_without_backward`)."""
        return self.inference or (self.error is None and self.steps_without_backward > 0)

    @property
    def finite(self) -> bool:
        """True when every recorded loss is a finite float."""
        return all(math.isfinite(x) for x in self.losses)

    @property
    def step_times_s(self) -> list[float]:
        """Seconds between consecutive step ends (one fewer than the steps)."""
        t = self.step_end_s
        return [b - a for a, b in zip(t, t[1:])]

    @property
    def median_step_time_s(self) -> float | None:
        """Median of :attr:`step_times_s` (robust to the compile-heavy first steps), or None."""
        times = self.step_times_s
        return statistics.median(times) if times else None

    def as_error(self) -> RunError:
        """This failed run as a :class:`RunError` (its hint, if any, becomes the error's)."""
        return RunError(
            f"the {self.name} run failed: {self.error}",
            run=self.name,
            tail=self.tail,
            returncode=self.returncode,
            hint=self.hint,
        )

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any], **extra: Any) -> RunRecord:
        """Build from the harness's JSON record (a dict); ``extra`` sets the runner's fields."""
        losses = data.get("losses")
        # a step made without backward() has no loss (null): such a run is judged without losses
        without_backward = len(losses) if losses is not None and any(x is None for x in losses) else 0
        return cls(
            name=name,
            losses=[float(x) for x in losses] if losses is not None and not without_backward else [],
            steps_without_backward=without_backward,
            step_end_s=[float(x) for x in data.get("step_end_s") or []],
            backwards_per_step=[int(x) for x in data.get("backwards_per_step") or []],
            backward_calls=data.get("backward_calls"),
            param_dtypes=data.get("param_dtypes"),
            device_param_dtypes=data.get("device_param_dtypes"),
            host_param_dtypes=data.get("host_param_dtypes"),
            state_dtypes=data.get("state_dtypes"),
            optimizer=data.get("optimizer"),
            legacy_env=data.get("legacy_env"),
            legacy_env_origin=dict(data.get("legacy_env_origin") or {}),
            rounding_env=data.get("rounding_env"),
            rounding_launcher=data.get("rounding_launcher"),
            loss_dtype=data.get("loss_dtype"),
            compile_count=data.get("compile_count"),
            compiles_at_step=list(data.get("compiles_at_step") or []),
            execute_count=data.get("execute_count"),
            exit_reason=data.get("exit_reason"),
            exception=data.get("exception"),
            harness_errors=list(data.get("errors") or []),
            trace=Trace.from_json(data.get("trace")),
            sdpa_upcasts=data.get("sdpa_upcasts"),
            **extra,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (NaN/Inf losses become the strings "nan", "inf", "-inf")."""

        def num(x: float) -> float | str:
            return x if math.isfinite(x) else str(x)

        return {
            "name": self.name,
            "ok": self.ok,
            "inference": self.inference,
            "error": self.error,
            "steps": self.steps,
            "steps_without_backward": self.steps_without_backward,
            "losses": [num(x) for x in self.losses],
            "step_end_s": self.step_end_s,
            "median_step_time_s": self.median_step_time_s,
            "backwards_per_step": self.backwards_per_step,
            "backward_calls": self.backward_calls,
            "optimizer": self.optimizer,
            "legacy_env": self.legacy_env,
            "legacy_env_origin": self.legacy_env_origin,
            "rounding_env": self.rounding_env,
            "rounding_launcher": self.rounding_launcher,
            "loss_dtype": self.loss_dtype,
            "param_dtypes": self.param_dtypes,
            "device_param_dtypes": self.device_param_dtypes,
            "host_param_dtypes": self.host_param_dtypes,
            "state_dtypes": self.state_dtypes,
            "graph": self.graph.to_dict() if self.graph is not None else None,
            "compile_count": self.compile_count,
            "compiles_at_step": self.compiles_at_step,
            "execute_count": self.execute_count,
            "exit_reason": self.exit_reason,
            "exception": self.exception,
            "returncode": self.returncode,
            "wall_time_s": self.wall_time_s,
            "hint": self.hint,
            "sdpa_upcasts": self.sdpa_upcasts,
            "tail": self.tail,
            "trace": self.trace.to_dict() if self.trace is not None else None,
        }


@dataclass
class RunSpec:
    """One child process to launch.

    ``script``: file passed to the interpreter; ``cwd``: working directory; ``env``: the full
    environment (str -> str); ``args``: script arguments; ``steps``: optimizer steps after
    which the harness stops the script (0: never); ``timeout``: seconds of wall time;
    ``record`` / ``log``: where the harness writes its JSON and where stdout+stderr go.
    ``graphs``: the ``XLA_SAVE_TENSORS_FILE`` prefix of the run (None: no graph dump).
    ``progress``: the file the harness rewrites with ``"<steps> <seconds>"`` after every step.
    ``aliases``: text replacements applied to the output tail (temporary path -> a name the
    user knows; the temporary directory is gone when the tail is shown).
    """

    name: str
    script: Path
    cwd: Path
    env: dict[str, str]
    args: list[str] = field(default_factory=list)
    steps: int = 0
    timeout: float = 600.0
    record: Path = Path()
    log: Path = Path()
    graphs: Path | None = None
    progress: Path | None = None
    aliases: dict[str, str] = field(default_factory=dict)
    trace_paths: dict[str, str] = field(default_factory=dict)
    """Directories the run ran from -> the user's directories they stand for (a staged copy's,
    the checkout of ``--against``): the files of its dtype trace read as the user's files."""
    module: str | None = None
    """Run as ``python -m module`` from ``cwd`` instead of ``python script`` (a script of a
    package that imports it: :mod:`.package`)."""
