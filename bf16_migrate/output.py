"""Output formats of the rewrite: ``text``, ``json``, ``sarif`` and ``github``.

- ``text``: one line per finding, ``path:line:col: CODE message [fixed]`` (a run that writes
  nothing says what it *would* do and marks ``[fixable]``, :mod:`bf16_migrate.wording`): the
  format of pipes, editors and logs, and the default there;
- ``grouped``: for a terminal (its default there): :mod:`bf16_migrate.output_human`;
- ``markdown``: a report for a CI job summary: :mod:`bf16_migrate.output_markdown`.
- ``json``: one document, ``{"schema": 1, ...}`` (:func:`to_json` lists the keys).
- ``sarif``: SARIF 2.1.0 (OASIS "Static Analysis Results Interchange Format Version 2.1.0"):
  one ``run`` whose ``tool.driver.rules`` are the diagnostics catalogue (``rules/diagnostics*.toml``,
  §3.49 reportingDescriptor: ``id``, ``name``, ``shortDescription``, ``help``), results with
  ``ruleId``/``ruleIndex`` (§3.27.5-6), ``level`` (§3.27.10) and a ``physicalLocation`` with
  ``region.startLine``/``startColumn`` (§3.30); suppressed findings carry
  ``suppressions`` (§3.27.23, §3.35: ``inSource`` for ``# noqa``, ``external`` for
  ``--ignore``/``--select``); in a dry run, each file's change is a ``fixes`` entry
  (§3.27.30, §3.55-3.57) on the first of its findings the tool would fix (:func:`sarif_fix`).
- ``github``: GitHub Actions workflow commands (GitHub docs, "Workflow commands for GitHub
  Actions": ``::error file=F,line=L,col=C,title=T::MESSAGE``), escaped as the Actions toolkit
  escapes them (``%``, CR, LF in the message; also ``:`` and ``,`` in properties).

A finding inside a notebook cell (``nb.ipynb#cell2``, line and column within the cell) is
printed ``nb.ipynb#cell2:1:6`` in ``text``, ``grouped`` (``cell2:1:6`` under the notebook),
``markdown`` and ``json``: the cell a reader finds in Jupyter (ruff's text output names the
cell too, ``nb.ipynb:cell 2:1:6:``). In ``sarif`` and ``github`` it points at the ``.ipynb``
file itself, at the line and column of the JSON text where that character of the cell's
``source`` is (:attr:`Diagnostic.file_position`,
:class:`bf16_migrate.carriers.notebook.SourceLocator`), so that a GitHub annotation or a SARIF
region lands on it, with the cell, line and column within the cell at the start of the message
(``cell 2, line 1, col 6: ``): their viewers know files, not cells. When the notebook's text
could not be read again, the location there is the file without a line.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .diagnostics import Diagnostic, as_dict
from .rule_files import diagnostic_rules
from .wording import would

FORMATS = ("text", "grouped", "json", "sarif", "github", "markdown")
JSON_SCHEMA = 1
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass
class Report:
    """What a run reports: the findings split by suppression, the per-file errors, and, for
    the edits, each changed file's old and new text (by path as printed)."""

    reported: list[Diagnostic]
    suppressed: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    held_back: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)
    sources: dict[str, tuple[str, str]] = field(default_factory=dict)
    dry_run: bool = False
    ignored_codes: frozenset[str] = frozenset()
    """Codes suppressed by ``--select``/``--ignore`` (the others by a ``# noqa`` or a kept file)."""
    changed: list[str] = field(default_factory=list)
    """The files changed (in a dry run: that would change), as shown."""


def about(d: Diagnostic, path: str) -> bool:
    """Whether finding ``d`` is about the file ``path`` (as shown; a notebook cell's finding is
    about its notebook: ``nb.ipynb#cell3``)."""
    return d.path == path or d.path.startswith(f"{path}#")


def silent_changes(report: Report) -> list[tuple[str, list[str]]]:
    """In a dry run, the files that would change while no finding about them is reported (each
    one is suppressed, or none names the file), with the codes suppressed about each, in the
    order of ``report.changed``: what ``--check`` fails for with no finding listed."""
    if not report.dry_run:
        return []
    out = []
    for path in report.changed:
        if any(about(d, path) for d in report.reported):
            continue
        out.append((path, sorted({d.code for d in report.suppressed if about(d, path)})))
    return out


def message_of(d: Diagnostic, dry_run: bool) -> str:
    """The message as shown: reworded with "would" for a fixed finding of a dry run."""
    return would(d.message) if dry_run and d.fixed else d.message


# Bidirectional-text controls (Unicode TR9, "Explicit Directional Formatting"): they reorder what a
# terminal shows ("Trojan Source", CVE-2021-42574) and are escaped like the C0/C1 controls.
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text: str) -> str:
    """``text`` (a path, a message naming one) with every character a terminal would act on
    instead of show written as a Python escape: C0 and C1 controls (a newline in a file name
    would start a forged line of output, ``ESC [`` would recolour or rewrite the terminal), the
    bidirectional controls, and the lone surrogates a file name that is not UTF-8 decodes to
    (``os.fsdecode``'s surrogateescape: ``\udcff`` for the byte 0xff)."""

    def escape(char: str) -> str:
        code = ord(char)
        if 0xD800 <= code < 0xE000:
            return f"\\u{code:04x}"
        if code < 0x20 or 0x7F <= code < 0xA0 or char in _BIDI:
            return char.encode("unicode_escape").decode("ascii")
        return char

    if text.isprintable():
        return text
    return "".join(escape(char) for char in text)


def format_text(d: Diagnostic, dry_run: bool, style=None) -> str:
    """``path:line:col: CODE message [fixed]`` (``[fixable]`` in a dry run); ``style`` (e.g.
    :func:`click.style`) colours the code: red when a hand is needed, green when fixed. A
    notebook cell's finding is ``nb.ipynb#cell2:1:6: CODE message``: the cell, and the line and
    column within it (docs/usage.md, "Output formats")."""
    mark = (" [fixable]" if dry_run else " [fixed]") if d.fixed else ""
    d = dataclasses.replace(d, path=printable(d.path), message=printable(d.message))
    code = d.code if style is None else style(d.code, fg="green" if d.fixed else "red", bold=True)
    place = f"{d.path}:{d.line}:{d.col}:"
    where = place if style is None else style(place, bold=True)
    return f"{where} {code} {message_of(d, dry_run)}{mark}"


def file_edits(old: str, new: str) -> list[dict]:
    """The line edits turning ``old`` into ``new``, in ruff's JSON shape: ``{"content",
    "location": {"row", "column"}, "end_location": {"row", "column"}}``, 1-based, the end
    exclusive (column 1 of the line after the last one replaced; ``location == end_location``
    is an insertion)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(
                {
                    "content": "".join(b[j1:j2]),
                    "location": {"row": i1 + 1, "column": 1},
                    "end_location": {"row": i2 + 1, "column": 1},
                }
            )
    return out


def statistics(diagnostics: Iterable[Diagnostic]) -> list[dict]:
    """Findings counted per code, most frequent first: ``{"code", "name", "count", "fixable"}``."""
    catalogue = diagnostic_rules()
    counts: dict[str, int] = {}
    for d in diagnostics:
        counts[d.code] = counts.get(d.code, 0) + 1
    return [
        {"code": code, "name": catalogue[code].title, "count": count, "fixable": catalogue[code].fixable}
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def to_json(report: Report) -> str:
    """One JSON document (``schema`` 1)::

        {"schema": 1, "dry_run": bool,
         "diagnostics": [{"code", "path", "line", "col", "message", "fixed"}],
         "suppressed": [same shape], "errors": [str], "held_back": [str],
         "kept": [{"path", "reason"}],
         "edits": [{"path", "edits": [{"content", "location", "end_location"}]}]}

    ``fixed`` is true for a finding the tool fixes itself (written, or in a dry run: would be);
    ``edits`` are the line edits of each file that changes (or would)."""
    doc = {
        "schema": JSON_SCHEMA,
        "dry_run": report.dry_run,
        "diagnostics": [_json_diagnostic(d, report.dry_run) for d in report.reported],
        "suppressed": [_json_diagnostic(d, report.dry_run) for d in report.suppressed],
        "errors": list(report.errors),
        "held_back": list(report.held_back),
        "kept": [{"path": path, "reason": reason} for path, reason in report.kept.items()],
        "edits": [{"path": path, "edits": file_edits(old, new)} for path, (old, new) in report.sources.items()],
    }
    return json.dumps(doc, indent=2)


def _json_diagnostic(d: Diagnostic, dry_run: bool) -> dict:
    data = as_dict(d)
    data["message"] = message_of(d, dry_run)
    return data


_CELL = re.compile(r"^(?P<file>.+\.ipynb)#cell(?P<cell>\d+)$")


def location(d: Diagnostic) -> tuple[str, int | None, int | None, str]:
    """``(file, line, col, prefix)``: where a finding is for an annotation. A notebook cell's
    finding is the ``.ipynb`` file at the line and column of its JSON text
    (:attr:`Diagnostic.file_position`; None and None when it is not known), ``prefix`` naming
    the cell, line and column within it (``"cell 2, line 1, col 6: "``); otherwise ``prefix``
    is empty."""
    match = _CELL.match(d.path)
    if match is None:
        return d.path, d.line, d.col, ""
    line, col = d.file_position if d.file_position is not None else (None, None)
    return match.group("file"), line, col, f"cell {match.group('cell')}, line {d.line}, col {d.col}: "


def _level(d: Diagnostic, dry_run: bool) -> str:
    if not d.fixed:
        return "error"
    return "warning" if dry_run else "note"


def _uri(path: str) -> str:
    """A relative POSIX URI (relative to the current directory, the SARIF ``%SRCROOT%``) when
    the file is under it, else an absolute ``file://`` URI."""
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return absolute.as_uri()


def to_sarif(report: Report, version: str) -> str:
    """The findings as a SARIF 2.1.0 log (see the module docstring for the sections used)."""
    catalogue = diagnostic_rules()
    codes = sorted(catalogue)
    index = {code: i for i, code in enumerate(codes)}
    rules = [
        {
            "id": code,
            "name": catalogue[code].title,
            "shortDescription": {"text": catalogue[code].title},
            "fullDescription": {"text": catalogue[code].what},
            "help": {"text": catalogue[code].todo},
            "defaultConfiguration": {"level": "warning" if catalogue[code].fixable else "error"},
            "properties": {"fixable": catalogue[code].fixable},
        }
        for code in codes
    ]
    results = [_sarif_result(d, report, index, suppressed=False) for d in report.reported]
    results += [_sarif_result(d, report, index, suppressed=True) for d in report.suppressed]
    if report.dry_run:
        _attach_fixes(results, report.reported, report.sources)
    run = {
        "tool": {"driver": {"name": "bf16-migrate", "version": version, "rules": rules}},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
        "invocations": [
            {
                "executionSuccessful": not (report.errors or report.held_back),
                "toolExecutionNotifications": [
                    {"level": "error", "message": {"text": error}} for error in report.errors
                ],
            }
        ],
        "results": results,
    }
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)


def _sarif_result(d: Diagnostic, report: Report, index: dict[str, int], suppressed: bool) -> dict:
    file, line, col, prefix = location(d)
    uri = _uri(file)
    physical: dict = {
        "artifactLocation": {"uri": uri, **({"uriBaseId": "%SRCROOT%"} if not uri.startswith("file:") else {})}
    }
    if line is not None:
        physical["region"] = {"startLine": line, "startColumn": col}
    result = {
        "ruleId": d.code,
        "ruleIndex": index[d.code],
        "level": _level(d, report.dry_run),
        "message": {"text": prefix + message_of(d, report.dry_run)},
        "locations": [{"physicalLocation": physical}],
        "properties": {"fixed": d.fixed},
    }
    if suppressed:
        kind = "external" if d.code in report.ignored_codes else "inSource"
        result["suppressions"] = [{"kind": kind}]
    return result


def sarif_fix(path: str, old: str, new: str) -> dict:
    """The change of one file as a SARIF 2.1.0 ``fix`` object (SARIF 2.1.0, 3.55 "fix object"
    and 3.57 "replacement object"): one ``artifactChange`` whose ``replacements`` are the line
    edits of :func:`file_edits`, each a ``deletedRegion`` given in characters of ``old``
    (``charOffset``, ``charLength``: 0 for an insertion; 3.30.11-12) and its
    ``insertedContent``, in the order of the text (a consumer applies them from the end)."""
    lines = old.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    replacements = []
    for edit in file_edits(old, new):
        first, end = edit["location"]["row"] - 1, edit["end_location"]["row"] - 1
        region = {"charOffset": starts[first], "charLength": starts[end] - starts[first]}
        replacements.append({"deletedRegion": region, "insertedContent": {"text": edit["content"]}})
    uri = _uri(path)
    location = {"uri": uri, **({"uriBaseId": "%SRCROOT%"} if not uri.startswith("file:") else {})}
    return {
        "description": {
            "text": f"bf16-migrate's change of {path} (the codemod plans a file's change as a whole: these are all of "
            "its edits)"
        },
        "artifactChanges": [{"artifactLocation": location, "replacements": replacements}],
    }


def _attach_fixes(results: list[dict], reported: list[Diagnostic], sources: dict[str, tuple[str, str]]) -> None:
    """In a dry run, the change of each file that would change goes, as ``fixes``, to the
    first of its reported findings (``results[k]`` is ``reported[k]``'s) that the tool would
    fix: once per file, so that a consumer applying every result's fixes applies each edit
    once. A notebook cell's finding belongs to its ``.ipynb`` (:func:`location`)."""
    pending = dict(sources)
    for result, d in zip(results, reported):
        file = location(d)[0]
        if d.fixed and file in pending:
            old, new = pending.pop(file)
            result["fixes"] = [sarif_fix(file, old, new)]


def escape_data(text: str) -> str:
    """A workflow command's message, escaped as the Actions toolkit does (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: as :func:`escape_data`, and ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_command(d: Diagnostic, dry_run: bool) -> str:
    """One finding as a workflow command: ``::error`` when it needs a hand, ``::warning`` when a
    dry run would fix it, ``::notice`` when it was fixed."""
    file, line, col, prefix = location(d)
    command = {"error": "error", "warning": "warning", "note": "notice"}[_level(d, dry_run)]
    props = [f"file={escape_property(file)}"]
    if line is not None:
        props += [f"line={line}", f"col={col}"]
    props.append(f"title={escape_property(d.code)}")
    return f"::{command} {','.join(props)}::{escape_data(prefix + message_of(d, dry_run))}"


def to_github(report: Report) -> list[str]:
    """The reported findings and the errors as workflow commands (suppressed ones are not
    shown; the summary on stderr counts them)."""
    lines = [github_command(d, report.dry_run) for d in report.reported]
    lines += [f"::error title=bf16-migrate::{escape_data(error)}" for error in report.errors]
    if report.held_back:
        lines.append(
            "::error title=bf16-migrate::"
            + escape_data(
                "not written, so that no launcher is migrated without its script: " + ", ".join(report.held_back)
            )
        )
    return lines
