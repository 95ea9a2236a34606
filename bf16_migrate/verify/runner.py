"""Build the verify runs (legacy, migrated, FP32 reference) and run them as child processes.

Each run is one ``python SCRIPT ARGS...`` process, because torch-xla reads the legacy
variables once per process, at the first device tensor (semantics.md, "The variables"). The
recording harness (``_child/sitecustomize.py``) is loaded into each child by putting its
directory first on ``PYTHONPATH``; it writes one JSON record per run.

Environment of every child (built by :func:`child_env`):

* ``PJRT_DEVICE=CPU`` unless the caller's environment already names a device;
* ``PYTHONUNBUFFERED=1`` unless set (so the output tail survives a timeout kill);
* ``PYTHONPATH`` = harness directory, the ORIGINAL script's directory (so sibling modules
  import the same way from the temporary copies), then the caller's ``PYTHONPATH``;
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
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

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
]

HARNESS_DIR = Path(__file__).resolve().with_name("_child")
"""Directory holding the child harness ``sitecustomize.py``."""

LEGACY_VARIABLES = ("XLA_USE_BF16", "XLA_DOWNCAST_BF16", "XLA_USE_FP16", "XLA_DOWNCAST_FP16")
"""Removed from the environment of the migrated and reference runs (semantics.md, table)."""

RECORD_ENV = "BF16_MIGRATE_RECORD"
STEPS_ENV = "BF16_MIGRATE_STEPS"
ROOT_ENV = "BF16_MIGRATE_ROOT_PID"
TAIL_LINES = 20
_POLL_S = 0.05


@dataclass
class RunSpec:
    """One child process to launch.

    ``script``: file passed to the interpreter; ``cwd``: working directory; ``env``: the full
    environment (str -> str); ``args``: script arguments; ``steps``: optimizer steps after
    which the harness stops the script (0: never); ``timeout``: seconds of wall time;
    ``record`` / ``log``: where the harness writes its JSON and where stdout+stderr go.
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
) -> dict[str, str]:
    """The environment of one child: ``base`` minus ``drop``, plus ``add``, plus the harness.

    ``PJRT_DEVICE`` defaults to ``CPU`` (kept when ``base`` or ``add`` sets it). Harness
    variables left in ``base`` by an enclosing verify are replaced, never inherited.
    """
    env = {k: v for k, v in base.items() if k not in set(drop)}
    for key in (RECORD_ENV, STEPS_ENV, ROOT_ENV):
        env.pop(key, None)
    env.update(add or {})
    env.setdefault("PJRT_DEVICE", "CPU")
    env.setdefault("PYTHONUNBUFFERED", "1")  # the output tail survives a kill
    paths = [str(HARNESS_DIR), str(script_dir)]
    if base.get("PYTHONPATH"):
        paths.append(base["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[RECORD_ENV] = str(record)
    env[STEPS_ENV] = str(int(steps))
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
    extra = dict(returncode=returncode, wall_time_s=wall, tail=tail)
    try:
        data = _read_record(spec)
    except (OSError, ValueError) as exc:
        data = None
        extra_error = f"its record could not be read ({exc})"
    else:
        extra_error = None
    rec = RunRecord.from_json(spec.name, data, **extra) if data else RunRecord(spec.name, **extra)
    stopped = rec.exit_reason == "steps_reached"
    if timed_out:
        rec.error = f"timed out after {spec.timeout:g} s (recorded {rec.steps} steps)"
    elif returncode is not None and returncode < 0:
        rec.error = f"was killed by signal {-returncode}"
    elif returncode and not stopped:
        first = (rec.exception or "").strip().splitlines()
        why = f": {first[0]}" if first else ""
        rec.error = f"exited with code {returncode}{why}"
    elif extra_error:
        rec.error = extra_error
    elif data is None:
        rec.error = "wrote no record (did the script end through os._exit, or never start Python?)"
    elif rec.steps == 0:
        rec.error = "recorded no optimizer step (no loss.backward() followed by optimizer.step())"
    elif data.get("losses") is None:
        rec.error = "its loss values could not be read back: " + "; ".join(rec.harness_errors)
    if returncode and stopped and rec.error is None:
        rec.harness_errors.append(f"exit code {returncode} after the harness stopped the script")
    return rec


def run_specs(specs: Sequence[RunSpec], python: str = sys.executable, jobs: int = 2) -> dict[str, RunRecord]:
    """Launch the runs, at most ``jobs`` at once, and return name -> :class:`RunRecord`.

    Never raises for a failing child: the record's ``error`` says what went wrong. Runs past
    their ``timeout`` (seconds) are killed. On KeyboardInterrupt, SIGTERM (raised as
    ``SystemExit(143)`` while the children run, main thread only) or any other exception every
    running child is killed and the exception propagates.
    """
    jobs = max(1, int(jobs))
    queue = list(specs)
    running: list[tuple[RunSpec, subprocess.Popen, float, object]] = []
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
            time.sleep(_POLL_S)
            still = []
            for spec, proc, start, log in running:
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
                results[spec.name] = _collect(spec, None if timed_out else rc, elapsed, timed_out)
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

    def __enter__(self) -> "Workspace":
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
    ) -> RunSpec:
        """A :class:`RunSpec` whose record and log live in this workspace; a ``script`` staged
        in the workspace is shown as ``original [name copy]`` in the output tail."""
        record = self.root / f"{name}.json"
        env = child_env(base_env, original.parent, record=record, steps=steps, drop=drop, add=add)
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
            aliases={str(script): f"{original} [{name} copy]"} if script != original else {},
        )
