"""What an ended verify child left behind, read into a :class:`~.records.RunRecord`.

:func:`collect` reads the harness's JSON record (``_child/sitecustomize.py`` writes it), the
executed step graph from torch-xla's graph dump (:mod:`.graphs`; ``XLA_SAVE_TENSORS_FILE``,
see torch-xla's docs/source/learn/troubleshoot.md) and the tail of the child's output, and
says what went wrong in words a user can act on: a timeout, a signal (SIGKILL: often the
out-of-memory killer), an argparse usage error (``ArgumentParser.error`` exits with code 2,
Python's argparse documentation), a known dtype crash, no optimizer step.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .graphs import dump_files_for, read_step_graph
from .records import RunRecord

if TYPE_CHECKING:
    from .records import RunSpec

__all__ = ["TAIL_LINES", "collect"]

TAIL_LINES = 20
"""Lines of a child's output kept in its record (shown when it failed)."""


def _tail(log: Path, n: int = TAIL_LINES) -> list[str]:
    """The last ``n`` lines of the child's output (none when the log cannot be read)."""
    try:
        with open(log, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    return lines[-n:]


def _read_record(spec: RunSpec) -> dict | None:
    """The harness's JSON record of the run; when it made no step, the record with the most
    steps among those of processes the script started (``<record>.<pid>``). Raises OSError or
    ValueError for a record that cannot be read."""
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


def collect(spec: RunSpec, returncode: int | None, wall: float, timed_out: bool) -> RunRecord:
    """The :class:`RunRecord` of the ended child of ``spec`` (``returncode`` None after a
    timeout kill; ``wall`` in seconds): its record (:func:`_read_record`), its step graph
    (:func:`.graphs.read_step_graph`, best effort), the tail of its output, and what went wrong
    (:func:`_diagnose`). Paths in the output and graph frames read through ``spec.aliases``."""
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
    for old, new in spec.aliases.items():
        rec.legacy_env_origin = {k: v.replace(old, new) for k, v in rec.legacy_env_origin.items()}
    if rec.trace is not None and spec.trace_paths:
        rec.trace = rec.trace.with_paths(spec.trace_paths)
    if data and spec.graphs is not None:
        try:
            rec.graph = read_step_graph(dump_files_for(spec.graphs), data.get("graph_marks"), data.get("graph_end"))
            if rec.graph is not None:
                for old, new in spec.aliases.items():
                    rec.graph.frames = [f.replace(old, new) for f in rec.graph.frames]
        except Exception as exc:  # evidence is best effort: a parse failure must not lose the run
            rec.harness_errors.append(f"the graph dump could not be read: {exc!r}")
    _diagnose(rec, spec, returncode, timed_out, tail, data, extra_error)
    return rec


def _diagnose(
    rec: RunRecord,
    spec: RunSpec,
    returncode: int | None,
    timed_out: bool,
    tail: list[str],
    data: dict | None,
    extra_error: str | None,
) -> None:
    """Set ``rec.error`` and ``rec.hint`` from how the child ended: a timeout, a signal, a
    non-zero exit (an argparse usage error, a known crash), a missing or unreadable record,
    no optimizer step, losses that could not be read back; None when the run worked."""
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
            rec.hint = (
                "SIGKILL from outside is often the kernel's out-of-memory killer: lower the batch size with script "
                "arguments after --"
            )
    elif returncode and not stopped:
        usage = _argparse_error(tail) if returncode == 2 else None
        if usage is not None:
            rec.error = f"the script rejected its arguments: {usage}"
            rec.hint = (
                "pass the script's own arguments after `--`, e.g. bf16-migrate verify SCRIPT --steps 20 -- --data-dir "
                "DIR (they go to every run)"
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
        if calls == 0 and not returncode and rec.trace is not None and rec.trace.outputs:
            pass  # an inference run: it ended on its own and handed the host results from the device
        elif calls == 0:
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
    """What to try for a crash whose output names a known dtype mismatch, or None."""
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
