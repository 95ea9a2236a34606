"""Diagnostics: what the codemod found, where, and whether it fixed it; text and JSON output."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from .rule_files import DiagnosticRule, diagnostic_rules


@dataclass(frozen=True)
class Diagnostic:
    """One finding.

    ``line`` is 1-based and ``col`` 1-based (as editors and ruff print them), pointing at the
    legacy variable's name or at the construct the message is about. ``fixed`` tells whether the
    codemod applied the change; an unfixed diagnostic makes the CLI exit 1.
    ``code`` must exist in ``rules/diagnostics*.toml``, and a finding reported ``fixed`` must be
    of a code whose rule page says it can be fixed (both checked when the object is made: a
    fixed finding of a "needs a hand" code means the catalogue or the call site is wrong).
    Make one with :func:`report`, which words the message from the catalogue's template.

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
        rule = diagnostic_rules().get(self.code)
        if rule is None:
            raise ValueError(f"unknown diagnostic code {self.code!r}")
        if self.fixed and not rule.fixable:
            raise ValueError(
                f"{self.code} is reported fixed, but its rule page says {rule.fix!r} (rules/diagnostics*.toml)"
            )

    def format_text(self) -> str:
        """``path:line:col: CODE message [fixed]``."""
        suffix = " [fixed]" if self.fixed else ""
        return f"{self.path}:{self.line}:{self.col}: {self.code} {self.message}{suffix}"


def message(code: str, variant: str | None = None, /, **fields: object) -> str:
    """The message of ``code``: the catalogue's template (``message``, or
    ``variants.<variant>``) formatted with ``fields``. A field missing from or unknown to the
    template is a ``KeyError``; an unknown code a ``ValueError``."""
    rule = diagnostic_rules().get(code)
    if rule is None:
        raise ValueError(f"unknown diagnostic code {code!r}")
    return rule.format(variant, **fields)


KEPT_LEAD, KEPT_ALSO = "{lead}: ", "{also}"
"""How the template of a kept carrier setting begins and ends (``{lead}: <reason>{also}``,
``rules/diagnostics.toml``)."""


def headline(d: Diagnostic) -> str:
    """The lead of ``d``'s message, before its first colon (the finding in a few words, as a
    launcher's message quotes its script's)."""
    return d.message.split(":")[0]


def cited(d: Diagnostic) -> str:
    """``d`` cited inside another finding: ``CODE at line N: <the message after its lead>``."""
    return f"{d.code} at line {d.line}: {d.message.split(': ', 1)[-1]}"


def kept_reason(code: str, variant: str | None = None, /, **fields: object) -> str:
    """The ``<reason>`` of a kept carrier setting's template ``{lead}: <reason>{also}``,
    formatted with ``fields`` (the other reasons a message lists after ``also:`` are worded
    so); a template not of that shape is a ``ValueError``."""
    rule = diagnostic_rules().get(code)
    if rule is None:
        raise ValueError(f"unknown diagnostic code {code!r}")
    template = rule.template(variant)
    if not (template.startswith(KEPT_LEAD) and template.endswith(KEPT_ALSO)):
        raise ValueError(
            f"{code}{f' ({variant})' if variant else ''}: the template is not {KEPT_LEAD}<reason>{KEPT_ALSO}: "
            f"{template!r}"
        )
    return template[len(KEPT_LEAD) : -len(KEPT_ALSO)].format(**fields)


def report(
    code: str, path: str, line: int, col: int, fixed: bool, variant: str | None = None, /, **fields: object
) -> Diagnostic:
    """The finding ``code`` at ``path:line:col``, its message the catalogue's template
    (``message``, or ``variants.<variant>``) formatted with ``fields`` (:func:`message`): the
    one emitter outside the codemod (:meth:`bf16_migrate.python.context.FileContext.report` is
    the codemod's). A field missing from or unknown to the template is a ``KeyError``."""
    return Diagnostic(code, path, line, col, message(code, variant, **fields), fixed)


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
        {"diagnostics": [as_dict(d) for d in diagnostics], "errors": list(errors), "held_back": list(held_back)},
        indent=2,
    )


def format_todo(diagnostics: Iterable[Diagnostic]) -> str:
    """The unfixed findings as a to-do list grouped by file, each with the catalogue's short
    title and what to do (``rules/diagnostics*.toml``); empty when nothing is left."""
    rules = diagnostic_rules()
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


def rule_page(rule: DiagnosticRule) -> str:
    """A diagnostic's rule page as ``bf16-migrate explain CODE`` prints it, in the sections of
    ruff's rule pages: what it does, why it matters, an example, what to use instead, the fix
    safety, and the to-do line an unfixed finding gets."""

    def indented(text: str) -> str:
        return "\n".join(f"    {line}" if line else "" for line in text.splitlines())

    return (
        f"{rule.code} {rule.title}\n\n"
        f"What it does\n{rule.what}\n\n"
        f"Why it matters\n{rule.why}\n\n"
        f"Example\n{indented(rule.example)}\n\n"
        f"Instead\n{indented(rule.instead)}\n\n"
        f"Fix: {rule.fix}. {rule.fix_note[:1].upper()}{rule.fix_note[1:]}\n\n"
        f"What to do: {rule.todo}\n"
    )


README_BEGIN = (
    "<!-- diagnostics-table: generated from rules/diagnostics*.toml by `python -m bf16_migrate.diagnostics --readme`; "
    "do not edit -->"
)
README_END = "<!-- end of diagnostics-table -->"


RULES_REFERENCE = "docs/rules.md"
"""The page that holds the generated diagnostics table (relative to the repository root)."""


def readme_table() -> str:
    """The rules reference's diagnostics table (:data:`RULES_REFERENCE`), one row per code of
    the catalogue: the code, its title, what it finds and does, the fix safety, what to do."""

    def cell(text: str) -> str:
        return " ".join(text.split()).replace("|", "\\|")

    lines = [README_BEGIN, "| code | name | what it finds and does | fix | what to do |", "|---|---|---|---|---|"]
    for code, rule in sorted(diagnostic_rules().items()):
        lines.append(f"| {code} | {rule.title} | {cell(rule.what)} | {rule.fix} | {cell(rule.todo)} |")
    lines.append(README_END)
    return "\n".join(lines) + "\n"


def with_readme_table(readme: str) -> str:
    """``readme`` with its generated table (between :data:`README_BEGIN` and
    :data:`README_END`) replaced by :func:`readme_table`."""
    start = readme.index(README_BEGIN)
    end = readme.index(README_END, start) + len(README_END) + 1
    return readme[:start] + readme_table() + readme[end:]


if __name__ == "__main__":  # python -m bf16_migrate.diagnostics --readme [docs/rules.md]
    import sys
    from pathlib import Path

    if len(sys.argv) < 2 or sys.argv[1] != "--readme":
        sys.exit(f"usage: python -m bf16_migrate.diagnostics --readme [{RULES_REFERENCE}]")
    target = Path(sys.argv[2] if len(sys.argv) > 2 else RULES_REFERENCE)
    target.write_text(with_readme_table(target.read_text()))
