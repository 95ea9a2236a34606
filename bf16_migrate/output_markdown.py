"""``--output-format markdown``: a rewrite's findings as a Markdown report for a CI job's
summary page (GitHub Actions renders the file ``$GITHUB_STEP_SUMMARY`` names: GitHub's
documentation, "Workflow commands for GitHub Actions", "Adding a job summary";
``bf16-migrate . --check --output-format markdown >> "$GITHUB_STEP_SUMMARY"``).

One section: a title with the summary, the findings of each file in a table under the file's
name (repeats in a file folded, as in the ``grouped`` format), the to-do list as task-list
items, and what to run next. Table
cells are escaped as GitHub Flavored Markdown needs (``|`` as ``\\|``; a cell is one line).
"""

from __future__ import annotations

from collections.abc import Sequence

from .output import Report, message_of
from .output_human import file_and_place, fold
from .rule_files import Mode, diagnostic_rules

TITLE = "bf16-migrate"


def cell(text: str) -> str:
    """``text`` as one GitHub Flavored Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def code(text: str) -> str:
    """``text`` as a code span (a backtick inside it gets a longer fence, as CommonMark allows)."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def to_markdown(report: Report, summary: str, next_rows: Sequence[tuple[str, str]], mode: Mode) -> str:
    """The report (module docstring). ``summary``: the run's summary line; ``next_rows``: what
    to run next (:func:`bf16_migrate.next_steps.next_rows`); ``mode``: the run's mode."""
    rules = diagnostic_rules()
    lines = [f"## {TITLE} (mode `{mode.name}`{', dry run' if report.dry_run else ''})", ""]
    lines += [f"**{summary.removeprefix('bf16-migrate: ')}**", ""]
    for file, entries in fold(report.reported).items():
        lines += [f"#### {code(file)}", "", "| where | code | finding | fix |", "|---|---|---|---|"]
        for entry in entries:
            d = entry.first
            place = file_and_place(d)[1] + (f" (x{entry.count})" if entry.count > 1 else "")
            text = message_of(d, report.dry_run)
            if entry.others:
                text += f" (also at {', '.join(entry.others[:10])}{' ...' if len(entry.others) > 10 else ''})"
            fix = ("fixable" if report.dry_run else "fixed") if d.fixed else "**needs a hand**"
            lines.append(f"| {place} | {d.code} {rules[d.code].title} | {cell(text)} | {fix} |")
        lines.append("")
    left = [d for d in report.reported if not d.fixed]
    if left:
        lines += [f"### Left to do by hand ({len(left)})", ""]
        for file, entries in fold(left).items():
            for entry in entries:
                d = entry.first
                times = f" (x{entry.count})" if entry.count > 1 else ""
                rule = rules[d.code]
                lines.append(
                    f"- [ ] {code(file)} {file_and_place(d)[1]}{times}: **{rule.title}** ({d.code}): {cell(rule.todo)}"
                )
        lines.append("")
    problems = [*report.errors, *(f"not written (held back): {path}" for path in report.held_back)]
    if problems:
        lines += ["### Errors", "", *(f"- {cell(p)}" for p in problems), ""]
    if next_rows:
        lines += ["### Next", ""]
        for label, text in next_rows:
            shown = text if label == "by hand:" or text.startswith("...") else code(text)
            lines.append(f"- {f'**{label}** ' if label else ''}{shown}")
        lines.append("")
    return "\n".join(lines)
