"""Procfiles (Heroku's ``Procfile``, read by foreman, honcho and overmind): one process per line,
``<process type>: <command>``, the command a shell command line.

**Syntax read** (Heroku Dev Center, "The Procfile": "Each line declares a process type ... with
the format ``<process type>: <command>``"; foreman and honcho start each command with ``sh -c``):
a line whose first word, up to a colon, is a process type (letters, digits, ``_`` and ``-``) holds
its command after the colon and its blanks; blank lines and ``#`` comment lines are skipped (foreman
and honcho skip every line that is not a process). Each command is read by the shell reader (a
prefix ``XLA_USE_BF16=1 python train.py``, an ``env`` command, ``export X=1 && python ...``), its
settings reaching the launches of that line only: each process is its own shell.

The process-type line is a line split, written here: the libraries that read Procfiles (honcho's
``honcho.environ.parse_procfile``, foreman's Ruby) are process managers, and their parsers are this
same one regular split; the command itself goes to the real shell parser (:mod:`.shell`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING

from .model import Analysis, Decision, Edit, LineIndex, apply_edits
from .shell.fragment import ShellFragment

if TYPE_CHECKING:
    from pathlib import Path

    from ..diagnostics import Diagnostic

# the Carrier protocol (bf16_migrate.carriers): its kind and how the planner treats its files
KIND = "procfile"
INCLUDES = False
INCLUDED_ONLY = False
OWN_COVERAGE = False

_PROCESS = re.compile(r"^([A-Za-z0-9_-]+):[ \t]*")


def commands(text: str) -> list[tuple[str, int, int]]:
    """Each process of a Procfile's ``text``: (process type, start, end) of its command as
    character offsets of ``text`` (the line's end, its newline excluded); comment, blank and other
    lines are not processes."""
    out: list[tuple[str, int, int]] = []
    offset = 0
    for raw in text.splitlines(keepends=True):
        body = raw.rstrip("\r\n")
        match = _PROCESS.match(body)
        if match is not None and body[match.end() :].strip():
            out.append((match[1], offset + match.end(), offset + len(body)))
        offset += len(raw)
    return out


def analyze(text: str, path: str) -> Analysis:
    """Analyse a Procfile: every command line read as one shell fragment (its settings, its
    launches), whose ``render(decisions)`` returns the new text with only the changed commands
    edited, byte for byte elsewhere. A command the shell reader cannot parse is reported as a
    finding of its line (an embedded fragment), not raised."""
    analysis = Analysis(KIND, text)
    index = LineIndex(text)
    fragments: list[tuple[int, int, ShellFragment]] = []

    def at(start: int) -> Callable[[int], tuple[int, int]]:
        return lambda off: index.pos(start + off)

    for _, start, end in commands(text):
        frag = ShellFragment(
            text[start:end],
            path,
            analysis,
            pos=at(start),
            embedded=True,
            base=start,
            one_line=True,
        )
        fragments.append((start, end, frag))

    def sr_covered(scope: Hashable) -> bool:
        return any(frag.sr_covered(scope) for _, _, frag in fragments)

    def render(decisions: Mapping[int, Decision], python: str | None = None) -> str:
        edits: list[Edit] = []
        for start, end, frag in fragments:
            changed = frag.edits(decisions)
            if changed:
                edits.append(Edit(start, end, apply_edits(frag.text, changed)))
        return apply_edits(text, edits)

    analysis.sr_covered = sr_covered
    analysis.render = render
    return analysis


def reported_text(path: Path, text: str) -> list[Diagnostic]:
    """Findings for the parts of the file read but never rewritten: none (a comment line naming a
    variable is left to the planner's coverage check)."""
    return []
