"""Build the verify runs (legacy, migrated, FP32 reference) and run them as child processes.

Each run is one ``python SCRIPT ARGS...`` process, because torch-xla reads the legacy
variables once per process, at the first device tensor (``torch_xla/csrc/dtype.cpp`` caches
them in function-local statics; ``torch_xla/__init__.py`` checks the fp16 ones at import). The
recording harness (``_child/sitecustomize.py``) is loaded into each child by putting its
directory first on ``PYTHONPATH``; it writes one JSON record per run.

Environment of every child (built by :func:`child_env`):

* ``PJRT_DEVICE=CPU`` unless the caller's environment already names a device;
* ``PYTHONUNBUFFERED=1`` unless set (so the output tail survives a timeout kill);
* ``PYTHONPATH`` = harness directory, the ORIGINAL script's directory (so sibling modules
  import the same way from the temporary copies), then the caller's ``PYTHONPATH``;
* ``BF16_MIGRATE_LEGACY_VARIABLES``: the legacy variables' names from the rules, comma-separated
  (the harness records their values and never imports bf16_migrate);
* every run runs from its own working copy of the script's directory (:func:`stage_script`,
  :mod:`.workcopy`; the package's top for a script run as ``python -m``, :mod:`.package`), which is
  its working directory: what it writes with a relative path or beside ``__file__`` lands in its
  copy, never in the user's tree nor in another run's copy (but for the files too large to copy,
  which are linked and reported);
* legacy run: the original file, unchanged (copied), plus the ``legacy_env`` pairs;
* migrated and reference runs: the rewritten source in their copies, with the legacy variables
  removed from the environment.

No git, no network. The temporary directory is removed on every path, including Ctrl-C. Each
run is started under its own supervisor (:mod:`.reaper`: a child subreaper in a session of its
own), which kills everything the run started, whatever session it moved to, when the run ends,
on timeout, on Ctrl-C, and when verify itself dies.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from io import BufferedWriter
from pathlib import Path

from ..rules import variable_names
from .collect import _argparse_error as _argparse_error  # re-exported: the tests read them here
from .collect import _crash_hint as _crash_hint
from .collect import _read_progress, collect
from .records import RunRecord, RunSpec
from .scratch import scratch_dir
from .workcopy import DEFAULT_BUDGET, Budget, Linked, working_copy

__all__ = [
    "HARNESS_DIR",
    "LEGACY_VARIABLES",
    "RunSpec",
    "TraceSpec",
    "child_env",
    "deadline",
    "run_specs",
    "stage_script",
    "read_source",
    "Workspace",
    "Progress",
    "stop_all",
]

stop_all = threading.Event()
"""Set by a caller running several verifies in threads (``verify --against REV --jobs N``) to
stop them all: :func:`run_specs` then raises KeyboardInterrupt in its thread, which kills its
children and lets the workspace be removed."""

HARNESS_DIR = Path(__file__).resolve().with_name("_child")
"""Directory holding the child harness ``sitecustomize.py``."""

REAPER = Path(__file__).resolve().with_name("reaper.py")
"""The supervisor every run is started under (:mod:`.reaper`)."""
_STOP_GRACE_S = 10.0

LEGACY_VARIABLES = variable_names()
"""Removed from the environment of the migrated and reference runs (``rules/XLA_*.toml``): the two
bf16 switches read by ``torch_xla/csrc/dtype.cpp`` and the two fp16 ones that torch-xla 2.9 only
warns about (``torch_xla/__init__.py``). The harness, which never imports bf16_migrate, gets them
in ``BF16_MIGRATE_LEGACY_VARIABLES`` (:func:`child_env`)."""

GRAPHS_ENV = "XLA_SAVE_TENSORS_FILE"
GRAPHS_FMT_ENV = "XLA_SAVE_TENSORS_FMT"
PROGRESS_ENV = "BF16_MIGRATE_PROGRESS"
RECORD_ENV = "BF16_MIGRATE_RECORD"
STEPS_ENV = "BF16_MIGRATE_STEPS"
ROOT_ENV = "BF16_MIGRATE_ROOT_PID"
LEGACY_VARIABLES_ENV = "BF16_MIGRATE_LEGACY_VARIABLES"
TRACE_ENV = "BF16_MIGRATE_TRACE"
TRACE_ROOTS_ENV = "BF16_MIGRATE_TRACE_ROOTS"
CONTINUE_ENV = "BF16_MIGRATE_CONTINUE"
DEADLINE_ENV = "BF16_MIGRATE_DEADLINE"
AUTOCAST_ENV = "BF16_MIGRATE_AUTOCAST"  # the autocast control's dtype (records.AUTOCAST)
FP32_ENV = "BF16_MIGRATE_FP32"  # the FP32 reference: the script's own autocast regions run disabled
_HARNESS_ENV = (
    RECORD_ENV,
    STEPS_ENV,
    ROOT_ENV,
    GRAPHS_ENV,
    GRAPHS_FMT_ENV,
    PROGRESS_ENV,
    LEGACY_VARIABLES_ENV,
    TRACE_ENV,
    TRACE_ROOTS_ENV,
    CONTINUE_ENV,
    DEADLINE_ENV,
    AUTOCAST_ENV,
    FP32_ENV,
)
_POLL_S = 0.05


@dataclass(frozen=True)
class TraceSpec:
    """What the dtype trace of one run records (:mod:`bf16_migrate.verify._child.dtype_trace`):
    ``f32``: f32 on the device too (else only bf16 leaving it, failed operations and the
    exception: amp's model is f32 on purpose); ``roots``: the directories of the user's code;
    ``after_s``: seconds the run may go on after the recorded steps, so that the trace sees the
    code after the training loop (evaluation, EMA, checkpoints; 0: it stops at the steps);
    ``f64``: with ``f32`` off, float64 on the device is recorded (amp: no switch left float64
    there, and autocast casts none)."""

    f32: bool
    roots: tuple[Path, ...]
    after_s: float = 0.0
    step_f32: bool = False
    """The optimizer's step computes in f32 by the mode (FP32 master weights): f32 inside
    ``Optimizer.step`` is not recorded (torch's global optimizer step hooks,
    ``torch.optim.optimizer.register_optimizer_step_pre_hook``)."""
    f64: bool = False


def deadline(timeout: float) -> float:
    """Seconds after its start at which a run going on for the trace writes its record and ends
    (a timer in the child): a margin before the runner's ``timeout`` would kill it and count it
    failed (a tenth of it, at least 5 s and at most 60 s)."""
    return max(1.0, timeout - min(60.0, max(5.0, timeout / 10)))


def read_source(path: Path) -> str:
    """The text of a Python file, decoded per its coding cookie / BOM (as Python would)."""
    with tokenize.open(path) as fh:
        return fh.read()


def child_env(
    base: Mapping[str, str],
    script_dir: Path,
    *,
    record: Path,
    steps: int,
    drop: Iterable[str] = (),
    add: Mapping[str, str] | None = None,
    graphs: Path | None = None,
    progress: Path | None = None,
    trace: TraceSpec | None = None,
    timeout: float = 600.0,
) -> dict[str, str]:
    """The environment of one child: ``base`` minus ``drop``, plus ``add``, plus the harness
    (its directory first on ``PYTHONPATH``, the record, the steps, and the names of the legacy
    variables, comma-separated, whose values it records). ``trace``: what its dtype trace
    records (None: no trace); a run going on after the recorded steps ends itself at
    :func:`deadline` of ``timeout``.

    ``PJRT_DEVICE`` defaults to ``CPU`` (kept when ``base`` or ``add`` sets it). Harness
    variables left in ``base`` by an enclosing verify are replaced, never inherited.
    ``graphs``: when given, ``XLA_SAVE_TENSORS_FILE=graphs`` and ``XLA_SAVE_TENSORS_FMT=hlo``
    (torch-xla dumps every graph it executes; measured not to change losses nor compile
    counts, see :mod:`.graphs`); a dump the user asked for in ``base`` is replaced.
    """
    env = {k: v for k, v in base.items() if k not in set(drop)}
    for key in _HARNESS_ENV:
        env.pop(key, None)
    env.update(add or {})
    if graphs is not None:
        env[GRAPHS_ENV] = str(graphs)
        env[GRAPHS_FMT_ENV] = "hlo"
    env.setdefault("PJRT_DEVICE", "CPU")
    env.setdefault("PYTHONUNBUFFERED", "1")  # the output tail survives a kill
    paths = [str(HARNESS_DIR), str(script_dir)]
    if base.get("PYTHONPATH"):
        paths.append(base["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[RECORD_ENV] = str(record)
    env[STEPS_ENV] = str(int(steps))
    env[LEGACY_VARIABLES_ENV] = ",".join(LEGACY_VARIABLES)
    if progress is not None:
        env[PROGRESS_ENV] = str(progress)
    if trace is not None:
        env[TRACE_ENV] = ("f32-but-step" if trace.step_f32 else "f32") if trace.f32 else "f64" if trace.f64 else "exits"
        env[TRACE_ROOTS_ENV] = os.pathsep.join(str(r) for r in trace.roots)
        if trace.after_s > 0:
            env[CONTINUE_ENV] = f"{trace.after_s:g}"
            env[DEADLINE_ENV] = f"{deadline(timeout):g}"
    return env


def stage_script(
    source: str | None,
    original: Path,
    dest_dir: Path,
    replaced: Mapping[Path, str] | None = None,
    *,
    budget: Budget = DEFAULT_BUDGET,
    linked: list[Linked] | None = None,
) -> Path:
    """Make ``dest_dir`` a working copy of the original's directory (:func:`.workcopy.working_copy`:
    directories made again, files copied within ``budget``, the rest linked) with ``source`` as
    ``dest_dir/<original name>`` (None: the original file as it is, copied byte for byte); returns
    the new script path. What the copy links instead of copying is appended to ``linked``.

    ``replaced``: files under the original's directory (absolute paths) -> the text to run instead
    (the migrated modules of the tree the script imports): each is written into the copy, the
    linked directories on its way made real directories, so nothing is ever written through a link
    into the original tree. A path outside the original's directory raises ``ValueError``; a
    directory that cannot be listed, ``OSError``."""
    made = working_copy(original.parent, dest_dir, skip={original.name}, budget=budget)
    if linked is not None:
        linked.extend(made.linked)
    target = dest_dir / original.name
    if source is None:
        shutil.copyfile(original, target)
    else:
        with open(target, "w", encoding="utf-8", newline="") as fh:
            fh.write(source)
    write_staged(dest_dir, original.parent.resolve(), replaced or {})
    return target


def write_staged(dest_dir: Path, base: Path, files: Mapping[Path, str]) -> None:
    """Write ``files`` (absolute paths under ``base`` -> text) at their places in ``dest_dir``, a
    working copy of ``base`` (:mod:`.workcopy`): the linked directories on their way become real
    directories (:func:`real_directory`), a linked file is replaced, so nothing is ever written
    through a link into the original tree. A path outside ``base`` raises ``ValueError``."""
    for path, text in files.items():
        rel = Path(path).resolve().relative_to(base)
        where = dest_dir
        for part in rel.parts[:-1]:
            where = real_directory(where / part)
        leaf = where / rel.parts[-1]
        if leaf.is_symlink():
            leaf.unlink()
        with open(leaf, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)


def _link_entries(source: Path, dest: Path) -> None:
    """Symlinks in ``dest`` to the entries of ``source``; those that cannot be made are skipped."""
    try:
        entries = list(source.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        try:
            os.symlink(entry, dest / entry.name)
        except OSError:
            pass


def real_directory(path: Path) -> Path:
    """``path`` as a real directory of the copy: a symlink to a directory (one the working copy
    linked whole, :mod:`.workcopy`) is replaced by a directory of symlinks to its entries, so that a
    migrated module can be written in it without writing into the original tree."""
    if path.is_symlink():
        linked = path.resolve()
        path.unlink()
        path.mkdir()
        _link_entries(linked, path)
    elif not path.exists():
        path.mkdir()
    return path


def _kill(proc: subprocess.Popen) -> None:
    """Stop a run: its supervisor (:mod:`.reaper`) is told to (SIGTERM) and kills everything
    below it; if it has not ended within a few seconds, its whole process group is killed."""
    if proc.poll() is not None:
        _kill_group(proc)
        return
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=_STOP_GRACE_S)
    except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
        pass
    _kill_group(proc)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill what is left of an ended child's process group (started with start_new_session,
    so the group id is the child's pid); nothing happens when the group is empty."""
    if not hasattr(os, "killpg"):  # pragma: no cover
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Progress:
    """Receives the runs' progress from :func:`run_specs` (all methods optional no-ops).

    ``start(name)`` when a run's process starts; ``step(name, steps, seconds)`` when its
    harness reports ``steps`` finished optimizer steps, ``seconds`` after it loaded;
    ``end(name, record)`` with the run's :class:`RunRecord`; ``again(steps, why)`` when the
    runs are made again with ``steps`` steps (more evidence for a verdict that could not decide)."""

    def start(self, name: str) -> None:  # pragma: no cover - interface
        pass

    def step(self, name: str, steps: int, seconds: float) -> None:  # pragma: no cover - interface
        pass

    def end(self, name: str, record: RunRecord) -> None:  # pragma: no cover - interface
        pass

    def again(self, steps: int, why: str) -> None:  # pragma: no cover - interface
        pass


def run_specs(
    specs: Sequence[RunSpec],
    python: str = sys.executable,
    jobs: int = 2,
    progress: Progress | None = None,
) -> dict[str, RunRecord]:
    """Launch the runs, at most ``jobs`` at once, and return name -> :class:`RunRecord`.

    Never raises for a failing child: the record's ``error`` says what went wrong. Runs past
    their ``timeout`` (seconds) are killed. On KeyboardInterrupt, SIGTERM (raised as
    ``SystemExit(143)`` while the children run, main thread only) or any other exception every
    running child is killed and the exception propagates. A child's process group (its
    DataLoader workers, ``xmp.spawn`` processes) is killed when the child ends, too.
    ``progress``: a :class:`Progress` told about starts, steps (polled every 50 ms from the
    harness's progress file) and ends.
    """
    jobs = max(1, int(jobs))
    seen_steps: dict[str, int] = {}
    queue = list(specs)
    running: list[tuple[RunSpec, subprocess.Popen[bytes], float, BufferedWriter]] = []
    results: dict[str, RunRecord] = {}
    previous_term = _raise_on_sigterm()
    try:
        while queue or running:
            while queue and len(running) < jobs:
                spec = queue.pop(0)
                log = open(spec.log, "wb")
                try:
                    program = ["-m", spec.module] if spec.module else [str(spec.script)]
                    proc = subprocess.Popen(
                        [python, "-E", "-S", str(REAPER), "--", python, *program, *spec.args],
                        cwd=str(spec.cwd),
                        env=spec.env,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                except OSError as exc:
                    log.close()
                    results[spec.name] = RunRecord(spec.name, error=f"could not start {python}: {exc}")
                    continue
                running.append((spec, proc, time.monotonic(), log))
                if progress is not None:
                    progress.start(spec.name)
            time.sleep(_POLL_S)
            if stop_all.is_set():
                raise KeyboardInterrupt
            still = []
            for spec, proc, start, log in running:
                if progress is not None and spec.progress is not None:
                    steps_done, seconds = _read_progress(spec.progress)
                    if steps_done is not None and steps_done != seen_steps.get(spec.name):
                        seen_steps[spec.name] = steps_done
                        progress.step(spec.name, steps_done, seconds or 0.0)
                rc = proc.poll()
                elapsed = time.monotonic() - start
                timed_out = rc is None and elapsed > spec.timeout
                if timed_out:
                    _kill(proc)
                    rc = proc.returncode
                if rc is None:
                    still.append((spec, proc, start, log))
                    continue
                log.close()
                _kill_group(proc)
                results[spec.name] = collect(spec, None if timed_out else rc, elapsed, timed_out)
                if progress is not None:
                    progress.end(spec.name, results[spec.name])
            running = still
    finally:
        for _spec, proc, _start, log in running:
            _kill(proc)
            log.close()
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)
    return results


def _raise_on_sigterm():
    """Make SIGTERM unwind like Ctrl-C while children run (so they are killed and the
    temporary directory removed); returns the previous handler, or None if not installed."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        return None  # the caller has its own handler: leave it alone

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    return previous


class Workspace:
    """A temporary directory for staged scripts, records and logs; a context manager.

    Removed on exit, whatever the exit (``tempfile.TemporaryDirectory``); one left by a verify
    killed with ``kill -9`` is removed by the next (:mod:`.scratch`).
    """

    def __init__(self) -> None:
        self._tmp = scratch_dir("verify")
        self.root = Path(self._tmp.name)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()

    def spec(
        self,
        name: str,
        script: Path,
        original: Path,
        *,
        base_env: Mapping[str, str],
        args: Sequence[str],
        steps: int,
        timeout: float,
        drop: Iterable[str] = (),
        add: Mapping[str, str] | None = None,
        graphs: bool = True,
        trace: TraceSpec | None = None,
        module: str | None = None,
        cwd: Path | None = None,
    ) -> RunSpec:
        """A :class:`RunSpec` whose record and log live in this workspace; a ``script`` staged
        in the workspace is shown as ``original [name copy]`` in the output tail. ``module``: run as
        ``python -m module`` (a script of a package: :mod:`.package`), else by its path; from
        ``cwd`` (by default ``original``'s directory)."""
        record = self.root / f"{name}.json"
        dump = self.root / f"{name}.graphs" if graphs else None
        progress = self.root / f"{name}.progress"
        env = child_env(
            base_env,
            original.parent,
            record=record,
            steps=steps,
            drop=drop,
            add=add,
            graphs=dump,
            progress=progress,
            trace=trace,
            timeout=timeout,
        )
        return RunSpec(
            name=name,
            script=script,
            cwd=cwd if cwd is not None else original.parent,
            module=module,
            env=env,
            args=list(args),
            steps=steps,
            timeout=timeout,
            record=record,
            log=self.root / f"{name}.log",
            graphs=dump,
            progress=progress,
            aliases={str(script): f"{original} [{name} copy]"} if script != original else {},
        )
