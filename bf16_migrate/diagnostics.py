"""Diagnostics: what the codemod found, where, and whether it fixed it; text and JSON output."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from .rules import load_rules


@dataclass(frozen=True)
class Diagnostic:
    """One finding.

    ``line`` is 1-based and ``col`` 1-based (as editors and ruff print them), pointing at the
    legacy variable's name or at the construct the message is about. ``fixed`` tells whether the
    codemod applied the change; an unfixed diagnostic makes the CLI exit 1.
    ``code`` must exist in ``rules/diagnostics.toml`` (checked when the object is made).

    A finding inside a notebook's code cell has the path ``nb.ipynb#cellN`` (the cell's 1-based
    number among all cells) with ``line`` and ``col`` within the cell's source.
    ``file_position`` is then the same place as a 1-based (line, column) of the ``.ipynb`` JSON
    text itself, when known (:func:`bf16_migrate.suppress.filter_findings` sets it, the text
    being at hand there): SARIF, GitHub annotations and the text output point there. It takes
    no part in equality and is not written in the JSON output (whose ``path``/``line``/``col``
    keep the cell's).
    """

    code: str
    path: str
    line: int
    col: int
    message: str
    fixed: bool
    file_position: tuple[int, int] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.code not in load_rules().diagnostics:
            raise ValueError(f"unknown diagnostic code {self.code!r}")

    def format_text(self) -> str:
        """``path:line:col: CODE message [fixed]``."""
        suffix = " [fixed]" if self.fixed else ""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}{suffix}"


def as_dict(d: Diagnostic) -> dict:
    """``d`` as the JSON output's object: code, path, line, col, message, fixed."""
    data = asdict(d)
    del data["file_position"]
    return data


def format_json(diagnostics: Iterable[Diagnostic], errors: Iterable[str] = (), held_back: Iterable[str] = ()) -> str:
    """All diagnostics (and per-file errors) as one JSON document: ``{"diagnostics": [...],
    "errors": [...], "held_back": [...]}``, each diagnostic an object with code, path, line,
    col, message, fixed; ``held_back`` the files not written because another one could not be."""
    return json.dumps(
        {"diagnostics": [as_dict(d) for d in diagnostics], "errors": list(errors), "held_back": list(held_back)}, indent=2
    )


def format_todo(diagnostics: Iterable[Diagnostic]) -> str:
    """The unfixed findings as a to-do list grouped by file, each with the catalogue's short
    title and what to do (``rules/diagnostics*.toml``); empty when nothing is left."""
    rules = load_rules().diagnostics
    left = [d for d in diagnostics if not d.fixed]
    if not left:
        return ""
    lines = [f"Left to do by hand ({len(left)}):"]
    by_file: dict[str, list[Diagnostic]] = {}
    for d in left:
        by_file.setdefault(d.path, []).append(d)
    for path, items in by_file.items():
        lines.append(f"  {path}")
        for d in sorted(items, key=lambda d: (d.line, d.col)):
            rule = rules[d.code]
            lines.append(f"    [ ] line {d.line}: {rule.title} ({d.code}): {rule.todo}")
    return "\n".join(lines)
