"""A progress display for a rewrite's walk over a tree, on stderr: only on a terminal, and only
once the walk has taken more than a second (a run on a few files shows nothing).

rich draws it (``rich.progress``), without its refresh thread (``auto_refresh=False``): the
display is redrawn when the walk reports, so the process stays single-threaded and may still
fork its worker processes (:mod:`bf16_migrate.workers` forks only without other threads). rich
is imported only once the display is due.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

from .console import is_terminal

DELAY_S = 1.0
"""A walk shorter than this shows no display."""


class WalkProgress:
    """Reports of a walk (:meth:`phase`, :meth:`advance`) drawn on ``stream`` once the walk has
    run :data:`DELAY_S` seconds, when ``enabled`` (a terminal; not ``--quiet``). Use as a
    context manager: the display is removed on every path."""

    def __init__(self, stream: TextIO, enabled: bool | None = None, color: bool | None = None) -> None:
        self.stream = stream
        self.enabled = is_terminal(stream) if enabled is None else enabled
        self.color = color
        self.started = time.monotonic()
        self.bar: Any = None
        self.task: Any = None
        self.phases = 0  # phases begun; the display shows the last one (a task of its own)
        self.shown = 0
        self.text, self.done = "looking for the legacy variables", 0
        self.total: int | None = None

    def __enter__(self) -> WalkProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def phase(self, text: str, total: int | None = None) -> None:
        """A new phase of the walk: ``text`` (what it does), ``total`` steps (None: unknown)."""
        self.text, self.done, self.total = text, 0, total
        self.phases += 1
        self._draw()

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        self._draw()

    def set_total(self, total: int) -> None:
        """The current phase's total, known or grown since the phase began."""
        self.total = total
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, total=total)
        self._draw()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def _draw(self) -> None:
        if not self.enabled or time.monotonic() - self.started < DELAY_S:
            return
        if self.bar is None:
            self._open()
        if self.shown != self.phases:  # a new phase: a new task, so that an unknown total shows as one
            if self.task is not None:
                self.bar.remove_task(self.task)
            self.task = self.bar.add_task(self.text, total=self.total, text="", count="", elapsed="")
            self.shown = self.phases
        # the time since the walk began (rich's elapsed column would restart at every phase)
        elapsed = f"{time.monotonic() - self.started:.0f} s"
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        text, self._bar_column.bar_width = fit(self.text, self.bar.console.width, count, elapsed)
        self.bar.update(self.task, completed=self.done, text=text, count=count, elapsed=elapsed)
        self.bar.refresh()

    def _open(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn
        from rich.table import Column

        console = Console(file=self.stream, force_terminal=True if self.color else None, no_color=self.color is False)
        self._bar_column = BarColumn(bar_width=BAR_WIDTH)
        whole = Column(no_wrap=True)
        self.bar = Progress(
            TextColumn(PREFIX + "{task.fields[text]}", table_column=Column(no_wrap=True)),
            self._bar_column,
            TextColumn("{task.fields[count]}", table_column=whole),
            TextColumn("{task.fields[elapsed]}", table_column=Column(no_wrap=True)),
            console=console,
            transient=True,
            auto_refresh=False,
        )
        self.bar.start()


PREFIX = "bf16-migrate: "
BAR_WIDTH = 40
"""The bar's widest; it narrows (then goes) before the phase's words do."""


def fit(text: str, width: int, count: str, elapsed: str) -> tuple[str, int]:
    """The phase's ``text`` and the bar's width for a line of ``width`` columns that keeps
    ``count`` and ``elapsed`` whole: the bar gives way first (down to one column), then the text is
    cut with an ellipsis. One column is left free (a terminal may wrap at its last column)."""
    room = width - 1 - len(PREFIX) - len(count) - len(elapsed) - 3  # rich's one space between the 4 columns
    bar = max(1, min(BAR_WIDTH, room - len(text)))  # rich draws at least one column of it
    left = room - bar
    if len(text) > left:
        text = text[: max(0, left - 1)] + "…" if left > 0 else ""
    return text, bar
