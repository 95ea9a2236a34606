"""The ``grouped`` output format, for people at a terminal: findings under their file, repeated
ones folded, messages wrapped to the terminal's width.

ruff's ``grouped`` format is the model (ruff's documentation, "--output-format"): the file's
path on a line of its own, then one indented ``line:col CODE message`` per finding, ``[*]``
marking what the tool fixes itself. Here, in addition:

- a finding repeated in one file (same code, same message: the same ``!`` line of a notebook
  in fifteen cells) is shown once, ``BFM133 x15``, with the other places after it;
- a notebook's findings are under the ``.ipynb`` file, each at ``cell2:1:6`` (the cell, the line
  and column within it; docs/usage.md, "Output formats");
- in a run that wrote its changes, the findings it fixed are not listed (ruff lists only what
  is left): the summary counts them and ``--show-fixes`` enumerates them
  (:func:`fixes_lines`); a run that writes nothing lists them all, marked ``[*]``.

The one-line format (``text``: ``path:line:col: CODE message``) stays the format of pipes and
editors; :mod:`bf16_migrate.output` has it.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .diagnostics import Diagnostic

_CELL = re.compile(r"^(?P<file>.+\.ipynb)#(?P<cell>cell\d+)$")
OTHERS_SHOWN = 3
"""How many other places of a folded finding are named (the rest are counted)."""

Style = Callable[..., str]


def _plain(text: str, **_: object) -> str:
    return text


def file_and_place(d: Diagnostic) -> tuple[str, str]:
    """The file a finding is grouped under and its place there: ``("nb.ipynb", "cell2:1:6")``
    for a notebook cell, ``("train.py", "12:4")`` otherwise."""
    match = _CELL.match(d.path)
    if match is None:
        return d.path, f"{d.line}:{d.col}"
    return match.group("file"), f"{match.group('cell')}:{d.line}:{d.col}"


@dataclass
class Folded:
    """One finding as shown: the first of its repeats (``first``), and the places of the others
    in the same file (``others``, in the order found)."""

    first: Diagnostic
    others: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return 1 + len(self.others)


def fold(diagnostics: Iterable[Diagnostic]) -> dict[str, list[Folded]]:
    """The findings by file (in the order first seen), each file's repeats (same code, message
    and fix state) folded into their first occurrence."""
    by_file: dict[str, dict[tuple[str, str, bool], Folded]] = {}
    for d in diagnostics:
        file, place = file_and_place(d)
        key = (d.code, d.message, d.fixed)
        seen = by_file.setdefault(file, {})
        if key in seen:
            seen[key].others.append(place)
        else:
            seen[key] = Folded(d)
    return {file: list(entries.values()) for file, entries in by_file.items()}


def _others(entry: Folded) -> str:
    if not entry.others:
        return ""
    named = ", ".join(entry.others[:OTHERS_SHOWN])
    more = len(entry.others) - OTHERS_SHOWN
    return f" (also at {named}{f' and {more} more' if more > 0 else ''})"


def wrap(text: str, width: int | None, indent: int, first: int | None = None) -> list[str]:
    """``text`` wrapped to ``width`` columns (None: one line), the first line starting at
    column ``first`` (default ``indent``), the others indented by ``indent`` spaces. Words are
    never broken (a long path or code span goes over the width rather than in two)."""
    if width is None:
        return [text]
    start = indent if first is None else first
    lines = textwrap.wrap(
        text,
        width=max(20, width),
        initial_indent=" " * start,
        subsequent_indent=" " * indent,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [lines[0][start:], *lines[1:]] if lines else [""]


def grouped_lines(
    diagnostics: Iterable[Diagnostic],
    message_of: Callable[[Diagnostic], str],
    dry_run: bool,
    width: int | None = None,
    style: Style | None = None,
) -> list[str]:
    """The findings in the ``grouped`` format (module docstring). ``message_of`` words a
    finding (the "would" of a dry run); ``style`` is :func:`click.style` to colour (None:
    plain); ``width`` the terminal's columns to wrap to (None: no wrapping). In a run that
    wrote, fixed findings are left out (see :func:`fixes_lines`)."""
    style = style or _plain
    shown = [d for d in diagnostics if dry_run or not d.fixed]
    lines: list[str] = []
    for file, entries in fold(shown).items():
        if lines:
            lines.append("")
        lines.append(style(f"{file}:", bold=True))
        for entry in entries:
            d = entry.first
            place = file_and_place(d)[1]
            mark = " [*]" if d.fixed else ""
            count = f" x{entry.count}" if entry.count > 1 else ""
            head = f"  {place} {d.code}{count}{mark} "
            body = wrap(message_of(d) + _others(entry), width, indent=6, first=len(head))
            code = style(d.code, fg="green" if d.fixed else "red", bold=True)
            lines.append(f"  {style(place, bold=True)} {code}{count}{mark} {body[0]}")
            lines.extend(body[1:])
    return lines


def fixes_lines(diagnostics: Iterable[Diagnostic], titles: dict[str, str], dry_run: bool) -> list[str]:
    """``--show-fixes``: the findings fixed (in a dry run: fixable), counted per file and code,
    as ruff enumerates its fixes (``Fixed 3 findings:``, then ``- file:`` and ``N x CODE
    (title)`` lines); empty when there are none."""
    fixed = [d for d in diagnostics if d.fixed]
    if not fixed:
        return []
    counts: dict[str, dict[str, int]] = {}
    for d in fixed:
        per_file = counts.setdefault(file_and_place(d)[0], {})
        per_file[d.code] = per_file.get(d.code, 0) + 1
    lines = [f"{'Would fix' if dry_run else 'Fixed'} {len(fixed)} finding(s):"]
    for file, codes in counts.items():
        lines.append(f"- {file}:")
        lines.extend(f"    {n} x {code} ({titles.get(code, '')})" for code, n in sorted(codes.items()))
    return lines


def todo_lines(diagnostics: Iterable[Diagnostic], titles: dict[str, str], todos: dict[str, str], width: int | None):
    """The findings that need a hand as a to-do list grouped by file, repeats folded, each
    with its rule's title and what to do (``rules/diagnostics*.toml``); wrapped to ``width``
    when given. Empty when nothing is left."""
    left = [d for d in diagnostics if not d.fixed]
    if not left:
        return []
    lines = [f"Left to do by hand ({len(left)}):"]
    for file, entries in fold(left).items():
        lines.append(f"  {file}")
        for entry in entries:
            d = entry.first
            where = _lines_of(entry)
            body = wrap(f"[ ] {where}: {titles[d.code]} ({d.code}): {todos[d.code]}", width, indent=8, first=4)
            lines.append("    " + body[0])
            lines.extend(body[1:])
    return lines


def _lines_of(entry: Folded) -> str:
    """Where a to-do item is: ``line 4``, ``lines 4, 9 and 12`` for a folded one, ``cell 2, line
    1`` in a notebook."""
    places = [file_and_place(entry.first)[1], *entry.others]
    named = []
    for place in places:
        parts = place.split(":")
        named.append(f"{parts[0].replace('cell', 'cell ')}, line {parts[1]}" if len(parts) == 3 else parts[0])
    cells = len(places[0].split(":")) == 3
    if len(named) == 1:
        return named[0] if cells else f"line {named[0]}"
    listed = ", ".join(named[:-1]) + f" and {named[-1]}"
    return listed if cells else f"lines {listed}"
