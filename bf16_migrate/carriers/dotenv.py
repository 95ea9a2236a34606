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
        line_start = offset
        offset += len(raw)
        body = raw.rstrip("\r\n")
        i = 0
        while i < len(body) and body[i] in " \t":
            i += 1
        if i >= len(body) or body[i] == "#":
            continue
        if body.startswith("export", i) and len(body) > i + 6 and body[i + 6] in " \t":
            i += 6
            while i < len(body) and body[i] in " \t":
                i += 1
        eq = body.find("=", i)
        if eq < 0:
            continue
        name = body[i:eq].rstrip()
        if not _is_name(name):
            continue
        name_span = (line_start + i, line_start + i + len(name))
        j = eq + 1
        while j < len(body) and body[j] in " \t":
            j += 1
        rest = body[j:]
        problem = None
        computed = False
        quote = ""
        if rest[:1] in ("'", '"'):
            quote = rest[0]
            k, chars = 1, []
            closed = False
            while k < len(rest):
                c = rest[k]
                if quote == '"' and c == "\\" and k + 1 < len(rest):
                    chars.append(rest[k + 1])
                    k += 2
                    continue
                if c == quote:
                    closed = True
                    break
                chars.append(c)
                k += 1
            value: str | None = "".join(chars)
            vend = j + k + 1 if closed else len(body)
            if not closed:
                problem = f"the quoted value of {name} runs over several lines: edit it by hand"
                value = None
        else:
            k = 0
            while k < len(rest) and not (rest[k] == "#" and (k == 0 or rest[k - 1] in " \t")):
                k += 1
            value = rest[:k].rstrip()
            vend = j + len(value)
        if value is not None and expand and quote != "'" and "$" in value:
            problem = f"the value of {name} is computed ({value}): edit it by hand"
            value, computed = None, True
        out.items.append(
            Item(
                name,
                value,
                name_span,
                (line_start + j, line_start + vend),
                (line_start, offset),
                quote,
                problem,
                computed=computed,
            )
        )
    return out


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
