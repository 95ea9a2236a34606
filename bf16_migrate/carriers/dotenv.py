"""``.env`` files (and env-file heredocs in shell scripts): one ``KEY=VALUE`` per line.

Syntax read, line by line (the common ground of docker compose's ``.env``, ``docker run
--env-file`` and python-dotenv): blank lines and ``#`` comment lines; an optional ``export``
before the key; the value unquoted (up to a `` #`` comment, blanks trimmed), in single quotes
(verbatim) or in double quotes (``\\"`` and ``\\\\`` unescaped). A value holding ``$`` is
computed (compose and python-dotenv expand it) and is reported, not guessed; a quoted value
that runs over several lines is reported too. Nothing is ever re-serialised: a removed entry
takes its whole line, a replaced one has its key and the inside of its value rewritten.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..command_lines import NAME_VALUE  # noqa: F401  (documents that keys follow the same rule)
from .model import KEEP, REMOVE, REPLACE, SET, STOCHASTIC, Analysis, Blocker, Decision, Edit, LineIndex, apply_edits
from .text import legacy_names

if TYPE_CHECKING:
    from pathlib import Path

    from ..diagnostics import Diagnostic

# the Carrier protocol (bf16_migrate.carriers): its kind and how the planner treats its files
KIND = "dotenv"
INCLUDES = False
INCLUDED_ONLY = True
OWN_COVERAGE = False


@dataclass
class Item:
    """One ``KEY=VALUE`` line: character spans (relative to the parsed text) of the key, of the
    value as written (quotes included) and of the whole line (its newline included)."""

    name: str
    value: str | None
    name_span: tuple[int, int]
    value_span: tuple[int, int]
    line_span: tuple[int, int]
    quote: str = ""
    problem: str | None = None
    computed: bool = False  # the problem is a computed value (BFM130)


@dataclass
class Parsed:
    items: list[Item] = field(default_factory=list)


def _is_name(s: str) -> bool:
    return bool(s) and (s[0].isalpha() or s[0] == "_") and all(c.isalnum() or c == "_" for c in s)


def parse(text: str, path: str, pos: Callable[[int], tuple[int, int]] | None = None, expand: bool = True) -> Parsed:
    """Read ``text`` as an env file. Never raises: a line that is not ``KEY=VALUE`` is skipped
    (and reported only if it names a legacy variable, by the caller's coverage check)."""
    out = Parsed()
    offset = 0
    for raw in text.splitlines(keepends=True):
        item = _item(raw.rstrip("\r\n"), offset, offset + len(raw), expand)
        if item is not None:
            out.items.append(item)
        offset += len(raw)
    return out


def _item(body: str, line_start: int, line_end: int, expand: bool) -> Item | None:
    """The ``KEY=VALUE`` item of one line (``body``, its newline cut off; ``line_start`` and
    ``line_end`` its offsets in the text, newline included), or None for a blank or comment line
    or one that is not ``KEY=VALUE``. A quoted value not closed on its line, and a value holding
    ``$`` (unless single-quoted, or ``expand`` is False), is the item's ``problem``, its value None
    (docker compose's "Env file" syntax: ``$`` is interpolated, not in single quotes)."""
    i = _key_start(body)
    if i is None:
        return None
    eq = body.find("=", i)
    name = body[i:eq].rstrip()
    if eq < 0 or not _is_name(name):
        return None
    j = _skip_blanks(body, eq + 1)
    rest = body[j:]
    quote = rest[:1] if rest[:1] in ("'", '"') else ""
    value, written = _quoted_value(rest) if quote else _unquoted_value(rest)
    problem = None
    computed = False
    if value is None:
        problem = f"the quoted value of {name} runs over several lines: edit it by hand"
    elif expand and quote != "'" and "$" in value:
        problem = f"the value of {name} is computed ({value}): edit it by hand"
        value, computed = None, True
    return Item(
        name,
        value,
        (line_start + i, line_start + i + len(name)),
        (line_start + j, line_start + j + written),
        (line_start, line_end),
        quote,
        problem,
        computed=computed,
    )


def _skip_blanks(body: str, i: int) -> int:
    """The index of the first character from ``i`` that is not a space or a tab."""
    while i < len(body) and body[i] in " \t":
        i += 1
    return i


def _key_start(body: str) -> int | None:
    """Where the key of a line starts: after leading blanks and an optional ``export`` and its
    blanks (python-dotenv and docker compose both accept ``export KEY=VALUE``); None for a blank
    line or a ``#`` comment line."""
    i = _skip_blanks(body, 0)
    if i >= len(body) or body[i] == "#":
        return None
    if body.startswith("export", i) and len(body) > i + 6 and body[i + 6] in " \t":
        i = _skip_blanks(body, i + 6)
    return i


def _quoted_value(rest: str) -> tuple[str | None, int]:
    """A value that starts with a quote (``rest[0]``): its text, and how many characters it takes as
    written, closing quote included. Single quotes keep it verbatim; in double quotes a backslash
    escapes the next character (python-dotenv). (None, ``len(rest)``) when the quote is not closed on
    this line."""
    quote = rest[0]
    k, chars = 1, []
    while k < len(rest):
        c = rest[k]
        if quote == '"' and c == "\\" and k + 1 < len(rest):
            chars.append(rest[k + 1])
            k += 2
            continue
        if c == quote:
            return "".join(chars), k + 1
        chars.append(c)
        k += 1
    return None, len(rest)


def _unquoted_value(rest: str) -> tuple[str, int]:
    """An unquoted value: the text up to a ``#`` that starts the line's rest or follows a blank (an
    inline comment, as docker compose reads it), trailing blanks trimmed; and its length."""
    k = 0
    while k < len(rest) and not (rest[k] == "#" and (k == 0 or rest[k - 1] in " \t")):
        k += 1
    value = rest[:k].rstrip()
    return value, len(value)


def item_edits(item: Item, decision: str) -> list[Edit]:
    """Edits (relative to the parsed text) carrying out ``decision`` for ``item``."""
    if decision == REMOVE:
        return [Edit(item.line_span[0], item.line_span[1], "")]
    if decision == REPLACE:
        q = item.quote
        return [Edit(*item.name_span, STOCHASTIC), Edit(item.value_span[0], item.value_span[1], f"{q}1{q}")]
    return []


def analyze(text: str, path: str) -> Analysis:
    """Analyse a ``.env`` file: every legacy ``KEY=VALUE`` line is an entry (its launches come
    from the files that load it: ``source``, ``--env-file``, compose ``env_file:``)."""
    analysis = Analysis(KIND, text)
    index = LineIndex(text)
    parsed = parse(text, path)
    legacy = legacy_names()
    items: dict[int, Item] = {}
    present = False
    for item in parsed.items:
        if item.name == STOCHASTIC:
            present = True
        if item.name not in legacy:
            continue
        line, col = index.pos(item.name_span[0])
        entry = analysis.new_entry(
            variable=item.name,
            action=SET,
            value=item.value,
            line=line,
            col=col,
            sr_scope=("file",),
            problem=item.problem,
            blocker=Blocker.COMPUTED_VALUE if item.computed else Blocker.UNREWRITTEN_FORM,
        )
        entry.group = ("dotenv", path)
        items[entry.id] = item
        analysis.handled.append(item.name_span)
    if present:
        analysis.sr_present.add(("file",))
    analysis.sr_covered = lambda scope: scope in analysis.sr_present

    def render(decisions: Mapping[int, Decision], python: str | None = None) -> str:
        edits = []
        for eid, item in items.items():
            edits.extend(item_edits(item, decisions.get(eid, KEEP)))
        return apply_edits(text, edits)

    analysis.render = render
    return analysis


def reported_text(path: Path, text: str) -> list[Diagnostic]:
    """Findings for the parts of the file read but never rewritten: none, every mention in a
    dotenv file is an entry, a note or the planner's coverage check."""
    return []
