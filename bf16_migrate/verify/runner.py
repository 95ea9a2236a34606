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
* the working directory is the original script's directory for every run;
* legacy run: the original file, unchanged, plus the ``legacy_env`` pairs;
* migrated and reference runs: a copy of the rewritten source in a temporary directory that
  also holds a symlink to every other entry of the script's directory (so paths built from
  ``__file__`` still resolve), with the legacy variables removed from the environment.

No git, no network. The temporary directory is removed on every path, including Ctrl-C, and
children (each in its own process group) are killed on Ctrl-C and on timeout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from io import BufferedWriter
from pathlib import Path
from typing import Any

from ..rules import variable_names
from .graphs import dump_files_for, read_step_graph
from .records import RunRecord

__all__ = [
    "HARNESS_DIR",
    "LEGACY_VARIABLES",
    "RunSpec",
    "child_env",
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
TAIL_LINES = 20
_POLL_S = 0.05


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


def read_source(path: Path) -> str:
    """The text of a Python file, decoded per its coding cookie / BOM (as Python would)."""
    import tokenize

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
) -> dict[str, str]:
    """The environment of one child: ``base`` minus ``drop``, plus ``add``, plus the harness
    (its directory first on ``PYTHONPATH``, the record, the steps, and the names of the legacy
    variables, comma-separated, whose values it records).

    ``PJRT_DEVICE`` defaults to ``CPU`` (kept when ``base`` or ``add`` sets it). Harness
    variables left in ``base`` by an enclosing verify are replaced, never inherited.
    ``graphs``: when given, ``XLA_SAVE_TENSORS_FILE=graphs`` and ``XLA_SAVE_TENSORS_FMT=hlo``
    (torch-xla dumps every graph it executes; measured not to change losses nor compile
    counts, see :mod:`.graphs`); a dump the user asked for in ``base`` is replaced.
    """
    env = {k: v for k, v in base.items() if k not in set(drop)}
    for key in (RECORD_ENV, STEPS_ENV, ROOT_ENV, GRAPHS_ENV, GRAPHS_FMT_ENV, PROGRESS_ENV, LEGACY_VARIABLES_ENV):
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
    return env


def stage_script(source: str, original: Path, dest_dir: Path) -> Path:
    """Write ``source`` as ``dest_dir/<original name>`` beside symlinks to the original's
    siblings; returns the new script path. Symlinks that cannot be made are skipped."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / original.name
    with open(target, "w", encoding="utf-8", newline="") as fh:
        fh.write(source)
    try:
        entries = list(original.parent.iterdir())
    except OSError:
        entries = []
    for entry in entries:
        if entry.name == original.name:
            continue
        try:
            os.symlink(entry, dest_dir / entry.name)
        except OSError:
            pass
    return target


def _tail(log: Path, n: int = TAIL_LINES) -> list[str]:
    try:
        with open(log, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    return lines[-n:]


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)  # the child's own group (start_new_session)
        else:  # pragma: no cover - not a platform torch-xla runs on
            proc.kill()
    except (ProcessLookupError, PermissionError):
        pass
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


def _read_record(spec: RunSpec) -> dict | None:
    if spec.record.exists():
        with open(spec.record, encoding="utf-8") as fh:
            data = json.load(fh)
        if data.get("steps"):
            return data
    else:
        data = None
    # A launcher-style script trains in a process it starts: use the record with most steps.
    best = data
    for extra in spec.record.parent.glob(spec.record.name + ".*"):
        if extra.name.split(".")[-1].isdigit():
            with open(extra, encoding="utf-8") as fh:
                cand = json.load(fh)
            if best is None or cand.get("steps", 0) > best.get("steps", 0):
                best = cand
    return best


def _collect(spec: RunSpec, returncode: int | None, wall: float, timed_out: bool) -> RunRecord:
    tail = _tail(spec.log)
    for old, new in spec.aliases.items():
        tail = [line.replace(old, new) for line in tail]
    extra: dict[str, Any] = dict(returncode=returncode, wall_time_s=wall, tail=tail)
    extra_error: str | None = None
    try:
        data = _read_record(spec)
    except (OSError, ValueError) as exc:
        data = None
        extra_error = f"its record could not be read ({exc})"
    rec = RunRecord.from_json(spec.name, data, **extra) if data else RunRecord(spec.name, **extra)
    if data and spec.graphs is not None:
        try:
            rec.graph = read_step_graph(dump_files_for(spec.graphs), data.get("graph_marks"), data.get("graph_end"))
            if rec.graph is not None:
                for old, new in spec.aliases.items():
                    rec.graph.frames = [f.replace(old, new) for f in rec.graph.frames]
        except Exception as exc:  # evidence is best effort: a parse failure must not lose the run
            rec.harness_errors.append(f"the graph dump could not be read: {exc!r}")
    stopped = rec.exit_reason == "steps_reached"
    progress_steps = _read_progress(spec.progress)[0] if spec.progress is not None else None
    if timed_out:
        made = max(rec.steps, progress_steps or 0)
        rec.error = f"timed out after {spec.timeout:g} s ({made} optimizer steps made)"
        if made == 0:
            rec.hint = (
                "it finished no optimizer step: if its first XLA compilation is slow, raise --timeout; otherwise it "
                "waits for something (a download, a distributed rendezvous, input on stdin, which verify closes)"
            )
        else:
            rec.hint = (
                f"it made {made} of the {spec.steps} steps asked for: raise --timeout (each run needs compilation plus "
                "--steps steps) or lower --steps; if it stopped making progress, it waits for something"
            )
    elif returncode is not None and returncode < 0:
        rec.error = f"was killed by signal {-returncode}"
        if -returncode == signal.SIGKILL:
            rec.hint = "SIGKILL from outside is often the kernel's out-of-memory killer: lower the batch size with script arguments after --"
    elif returncode and not stopped:
        usage = _argparse_error(tail) if returncode == 2 else None
        if usage is not None:
            rec.error = f"the script rejected its arguments: {usage}"
            rec.hint = (
                "pass the script's own arguments after `--`, e.g. bf16-migrate verify SCRIPT --steps 20 -- --data-dir DIR "
                "(they go to every run)"
            )
        else:
            first = (rec.exception or "").strip().splitlines()
            why = f": {first[0]}" if first else ""
            rec.error = f"exited with code {returncode}{why}"
            rec.hint = _crash_hint(tail)
    elif extra_error:
        rec.error = extra_error
    elif data is None:
        rec.error = "wrote no record (did the script end through os._exit, or never start Python?)"
    elif rec.steps == 0:
        calls = rec.backward_calls or 0
        if calls == 0:
            rec.error = "ran to its end without calling backward(): 0 optimizer steps"
            rec.hint = (
                "with these arguments it does not train (a step or epoch count of 0, an empty dataset, a --do-train "
                "flag?): pass its arguments after `--`"
            )
        else:
            rec.error = f"called backward() {calls} time(s) but no torch.optim optimizer step followed"
            rec.hint = (
                "verify counts steps through torch.optim.Optimizer's step hooks: an optimizer that does not subclass "
                "torch.optim.Optimizer is not seen"
            )
    elif data.get("losses") is None:
        rec.error = "its loss values could not be read back: " + "; ".join(rec.harness_errors)
    if returncode and stopped and rec.error is None:
        rec.harness_errors.append(f"exit code {returncode} after the harness stopped the script")
    return rec


_USAGE_ERROR = re.compile(r"^\S+: error: (.+)$")


def _argparse_error(tail: Sequence[str]) -> str | None:
    """The message of an argparse usage error (``usage: ...`` then ``prog: error: msg``, exit
    code 2, as ``ArgumentParser.error`` prints it), or None."""
    if not any(line.startswith("usage:") for line in tail):
        return None
    for line in reversed(tail):
        m = _USAGE_ERROR.match(line.strip())
        if m:
            return m.group(1)
    return None


_CRASH_HINTS = (
    (
        ("mixed precision is disallowed", "Seen floating point types of different precisions"),
        "the XLA verifier met f32 and bf16 in one op: a floating tensor reaches the bf16 model uncast (inputs, "
        "targets, a tensor created inside the model); cast it with .to(torch.bfloat16) (under the legacy "
        "switch it was bf16 on the device too)",
    ),
    (
        ("Input type (", "should be the same"),
        "an input and the weights differ in dtype: cast the floating inputs to the model's dtype",
    ),
    (
        ("expected scalar type", "mat1 and mat2 must have the same dtype"),
        "two operands differ in dtype: cast the floating inputs to the model's dtype",
    ),
)


def _crash_hint(tail: Sequence[str]) -> str | None:
    text = "\n".join(tail)
    for needles, hint in _CRASH_HINTS:
        if any(n in text for n in needles):
            return hint
    return None


def _read_progress(path: Path | None) -> tuple[int | None, float | None]:
    """(steps, seconds) from a progress file, (None, None) when absent or unreadable."""
    if path is None:
        return None, None
    try:
        with open(path, encoding="utf-8") as fh:
            parts = fh.read().split()
        return int(parts[0]), float(parts[1])
    except (OSError, ValueError, IndexError):
        return None, None


class Progress:
    """Receives the runs' progress from :func:`run_specs` (all methods optional no-ops).

    ``start(name)`` when a run's process starts; ``step(name, steps, seconds)`` when its
    harness reports ``steps`` finished optimizer steps, ``seconds`` after it loaded;
    ``end(name, record)`` with the run's :class:`RunRecord`."""

    def start(self, name: str) -> None:  # pragma: no cover - interface
        pass

    def step(self, name: str, steps: int, seconds: float) -> None:  # pragma: no cover - interface
        pass

    def end(self, name: str, record: RunRecord) -> None:  # pragma: no cover - interface
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
                    proc = subprocess.Popen(
                        [python, str(spec.script), *spec.args],
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
                results[spec.name] = _collect(spec, None if timed_out else rc, elapsed, timed_out)
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
    import threading

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

    Removed on exit, whatever the exit (``tempfile.TemporaryDirectory``).
    """

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="bf16-migrate-verify-")
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
    ) -> RunSpec:
        """A :class:`RunSpec` whose record and log live in this workspace; a ``script`` staged
        in the workspace is shown as ``original [name copy]`` in the output tail."""
        record = self.root / f"{name}.json"
        dump = self.root / f"{name}.graphs" if graphs else None
        progress = self.root / f"{name}.progress"
        env = child_env(
            base_env, original.parent, record=record, steps=steps, drop=drop, add=add, graphs=dump, progress=progress
        )
        return RunSpec(
            name=name,
            script=script,
            cwd=original.parent,
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
