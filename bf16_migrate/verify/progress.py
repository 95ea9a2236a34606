"""Live progress of the verify runs, on stderr: a rich display on a terminal, plain lines
otherwise (a CI log, a pipe).  Both implement :class:`~bf16_migrate.verify.runner.Progress`.

rich is imported only when stderr is a TTY and only by :func:`make_progress`, never on the
rewrite path.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from .records import RunRecord
from .runner import Progress

__all__ = ["PlainProgress", "PrefixedProgress", "RichProgress", "make_progress"]

_TITLES = {"legacy": "legacy", "migrated": "migrated", "reference": "fp32-ref"}


def _outcome(record: RunRecord) -> str:
    if record.error:
        return f"FAILED: {record.error}"
    wall = f" in {record.wall_time_s:.1f} s" if record.wall_time_s is not None else ""
    return f"done, {record.steps} steps{wall}"


class PlainProgress(Progress):
    """One line per event worth a line: a run starts, makes its first step (the first step
    includes the first XLA compilations), passes each quarter of ``steps``, ends."""

    def __init__(self, stream: TextIO, steps: int) -> None:
        self.stream = stream
        self.steps = max(1, int(steps))
        self.every = max(1, self.steps // 4)
        self.started: dict[str, float] = {}

    def _line(self, text: str) -> None:
        self.stream.write(f"verify: {text}\n")
        self.stream.flush()

    def start(self, name: str) -> None:
        self.started[name] = time.monotonic()
        self._line(f"{_TITLES.get(name, name)} run started")

    def step(self, name: str, steps: int, seconds: float) -> None:
        if steps == 1 or steps % self.every == 0 or steps == self.steps:
            self._line(f"{_TITLES.get(name, name)} step {steps}/{self.steps} ({seconds:.1f} s)")

    def end(self, name: str, record: RunRecord) -> None:
        self._line(f"{_TITLES.get(name, name)} run {_outcome(record)}")

    def again(self, steps: int, why: str) -> None:
        self.steps = max(1, int(steps))
        self.every = max(1, self.steps // 4)
        self._line(f"{why}: the runs again, {self.steps} steps")


class RichProgress(Progress):
    """A rich ``Progress`` with one bar per run (steps of ``steps``, elapsed time, state), on
    ``stream``. Use as a context manager so the display is closed on every path."""

    def __init__(self, stream: TextIO, steps: int, names: list[str]) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as _Bar

        self.steps = max(1, int(steps))
        self.bar = _Bar(
            TextColumn("{task.fields[title]:<9}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[state]}"),
            console=Console(file=stream),
            transient=False,
        )
        self.tasks = {
            n: self.bar.add_task("", total=self.steps, start=False, title=_TITLES.get(n, n), state="queued")
            for n in names
        }

    def __enter__(self) -> RichProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def start(self, name: str) -> None:
        task = self.tasks.get(name)
        if task is not None:
            self.bar.start_task(task)
            self.bar.update(task, state="compiling / first step")

    def step(self, name: str, steps: int, seconds: float) -> None:
        task = self.tasks.get(name)
        if task is not None:
            self.bar.update(task, completed=min(steps, self.steps), state="running")

    def end(self, name: str, record: RunRecord) -> None:
        task = self.tasks.get(name)
        if task is not None:
            self.bar.update(task, completed=min(record.steps, self.steps), state=_outcome(record))
            self.bar.stop_task(task)

    def again(self, steps: int, why: str) -> None:
        self.steps = max(1, int(steps))
        self.bar.console.print(f"verify: {why}: the runs again, {self.steps} steps")
        for task in self.tasks.values():
            self.bar.reset(task, total=self.steps, start=False, state="queued")


class _Closing:
    """Context-manager wrapper for :class:`PlainProgress` (nothing to close)."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def __enter__(self) -> Progress:
        return self.progress

    def __exit__(self, *exc: object) -> None:
        return None


def make_progress(steps: int, names: list[str], stream: TextIO | None = None, rich: bool | None = None):
    """A context manager giving a :class:`Progress` for ``names`` (run names) at ``steps``
    steps each, writing to ``stream`` (default ``sys.stderr``): :class:`RichProgress` when
    ``rich`` is True, or None and the stream is a TTY and rich imports; else
    :class:`PlainProgress`."""
    stream = stream if stream is not None else sys.stderr
    if rich is None:
        rich = bool(getattr(stream, "isatty", lambda: False)())
    if rich:
        try:
            return RichProgress(stream, steps, names)
        except ImportError:
            pass
    return _Closing(PlainProgress(stream, steps))


class PrefixedProgress(Progress):
    """Plain lines for one of several verifies going at once (``verify --against REV --jobs
    N``): each line names the script, ``verify: train.py: legacy step 3/6 (9.1 s)``; the lines
    of the threads never interleave within a line."""

    _lock = None

    def __init__(self, stream: TextIO, steps: int, prefix: str) -> None:
        if PrefixedProgress._lock is None:
            PrefixedProgress._lock = threading.Lock()
        self.inner = PlainProgress(stream, steps)
        self.prefix = prefix
        self.inner._line = self._line  # type: ignore[method-assign]
        self.stream = stream

    def _line(self, text: str) -> None:
        assert PrefixedProgress._lock is not None
        with PrefixedProgress._lock:
            self.stream.write(f"verify: {self.prefix}: {text}\n")
            self.stream.flush()

    def __enter__(self) -> PrefixedProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def start(self, name: str) -> None:
        self.inner.start(name)

    def step(self, name: str, steps: int, seconds: float) -> None:
        self.inner.step(name, steps, seconds)

    def end(self, name: str, record: RunRecord) -> None:
        self.inner.end(name, record)

    def again(self, steps: int, why: str) -> None:
        self.inner.again(steps, why)
