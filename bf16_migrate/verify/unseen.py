"""The migration's changes the traced migrated run never executed: the statements a migration changed (lines of the
migrated text that the legacy text does not have) that call something and that no frame of the user's code on the
stack of a traced torch call was at (:attr:`.trace.Trace.lines_run`). A wrong dtype on a path the run did not take
(an evaluation every 5000 steps, a phase after a warm-up longer than the trace's time) was verified by nothing: the
trace part says which lines, and is not a PASS when the trace's time ran out before them. No torch."""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..python.snippets import EMITTED_MARK
from .trace import Trace, TraceEnd

__all__ = ["Unseen", "texts_run", "unseen_changes", "unseen_note"]

_MARK = EMITTED_MARK.split(" (", 1)[0].lower()
"""The mark of the helpers the codemod writes, in any case (bf16_migrate/python/snippets.py: ``Added by bf16-migrate
(...)``, a hook's ``... added by bf16-migrate: ...``): their lines are the codemod's own code, whose branches a run need
not take (a closure passed to ``step``) and whose lines reach torch only when there is something to cast."""

_PRECISION = re.compile(r"torch|\.to\(|\.float\(|\.double\(|\.half\(|bfloat16|float32|float64|bf16|fp32|autocast")
"""What a statement the trace could judge names: torch, a cast, a dtype, a helper of the codemod's (``bf16_on_xla``,
``host_float32``): a change elsewhere (an option's default) reaches no dtype the trace sees."""


@dataclass(frozen=True)
class Unseen:
    """A statement of the migrated text at ``path`` the migration changed (its ``line``, 1-based, in the migrated
    text) that the traced run never executed; ``code``: its first line, stripped."""

    path: str
    line: int
    code: str


def unseen_changes(trace: Trace, texts: Iterable[tuple[str, str, str]]) -> list[Unseen]:
    """For ``texts`` as (the user's path, the legacy text, the migrated text the run ran there), the changed
    statements the run never executed (:class:`Unseen`, in file and line order). A file the run never reached
    at all counts all of its changed statements; a text that does not parse gives none (nothing to place)."""
    out: list[Unseen] = []
    for path, legacy, migrated in texts:
        if legacy == migrated:
            continue
        ran = trace.lines_run.get(path, frozenset())
        out.extend(Unseen(path, line, code) for line, code in _changed_statements(legacy, migrated, ran))
    return out


def _changed_statements(legacy: str, migrated: str, ran: frozenset[int]) -> list[tuple[int, str]]:
    """The changed statements of ``migrated`` that call something, in a block no line of which ``ran``."""
    try:
        tree = ast.parse(migrated)
    except SyntaxError:
        return []
    rows = migrated.splitlines()
    changed = _changed_lines(legacy.splitlines(), rows)
    helpers = _helper_spans(tree)
    found: dict[int, str] = {}
    for block in _blocks(tree):
        entered = any(line in ran for line in range(block[0].lineno, (block[-1].end_lineno or 0) + 1))
        if entered:
            continue
        for stmt in block:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            first, last, calls = _header(stmt)
            if not calls or any(a <= first <= b for a, b in helpers):
                continue
            if not _PRECISION.search("\n".join(rows[first - 1 : last])):
                continue  # no precision in it (an option's parsing): not what the trace could have judged
            if any(first <= line <= last for line in changed):
                found.setdefault(first, rows[first - 1].strip())
    return sorted(found.items())


def _changed_lines(legacy: list[str], migrated: list[str]) -> set[int]:
    """The 1-based lines of ``migrated`` that replace or add to ``legacy``'s (blank lines and comments left out)."""
    matcher = difflib.SequenceMatcher(None, [r.strip() for r in legacy], [r.strip() for r in migrated], autojunk=False)
    lines: set[int] = set()
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            lines.update(
                j + 1 for j in range(j1, j2) if migrated[j].strip() and not migrated[j].lstrip().startswith("#")
            )
    return lines


def _blocks(tree: ast.Module) -> list[list[ast.stmt]]:
    """Every block of statements (a body, an ``else``, a ``finally``, a handler's body): straight-line code, run
    whole once entered, so a block one line of which ran was entered (early exits aside)."""
    out: list[list[ast.stmt]] = [tree.body] if tree.body else []
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if node is not tree and isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                out.append(block)
        for handler in getattr(node, "handlers", []):
            out.append(handler.body)
    return out


def _header(stmt: ast.stmt) -> tuple[int, int, bool]:
    """A statement's own lines (a compound statement's header: ``with torch.autocast(...):``) and whether they
    call something."""
    body = getattr(stmt, "body", None)
    if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
        parts: list[ast.AST] = [getattr(stmt, name) for name in ("test", "iter") if getattr(stmt, name, None)]
        parts += [item.context_expr for item in getattr(stmt, "items", [])]
        calls = any(isinstance(n, ast.Call) for part in parts for n in ast.walk(part))
        return stmt.lineno, body[0].lineno - 1, calls
    return stmt.lineno, stmt.end_lineno or stmt.lineno, any(isinstance(n, ast.Call) for n in ast.walk(stmt))


def _helper_spans(tree: ast.Module) -> list[tuple[int, int]]:
    """The line spans of the functions and classes the codemod wrote (their docstrings carry its mark)."""
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = ast.get_docstring(node) or ""
            if _MARK in doc.lower():
                spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans


def texts_run(migrated: Mapping[str, str], legacy_text: Callable[[str], str | None]) -> list[tuple[str, str, str]]:
    """(path, legacy text, migrated text) for each of the migrated run's texts (the user's path -> the text it
    ran there) whose legacy text ``legacy_text(path)`` reads."""
    out = []
    for path, text in migrated.items():
        legacy = legacy_text(path)
        if legacy is not None:
            out.append((path, legacy, text))
    return out


def unseen_note(unseen: list[Unseen], end: TraceEnd) -> str:
    """One line naming the changes no traced run executed, and why, by how the trace ended (``end``): the script's
    own end (a path this run does not take), an exception before them, or the trace stopped before them."""
    names = ", ".join(f"{Path(u.path).name}:{u.line} `{u.code[:40]}`" for u in unseen[:5])
    more = f" and {len(unseen) - 5} more" if len(unseen) > 5 else ""
    if end == TraceEnd.SCRIPT_EXIT:
        why = "on a path this run does not take (other arguments, another branch)"
    elif end == TraceEnd.EXCEPTION:
        why = "before the run ended on an exception"
    else:
        why = "after the trace stopped: verify again with a longer --trace-time (or arguments that reach them sooner)"
    return f"{len(unseen)} of the migration's changes never ran in the traced migrated run, {why}: {names}{more}"
