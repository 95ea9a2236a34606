"""Suppressions: ``# noqa`` comments, and ``--select`` / ``--ignore`` by code or prefix.

Semantics follow ruff's ("Error suppression" in ruff's documentation): ``# noqa: BFM050`` at
the end of a line suppresses the findings of that code on that line, several codes are
separated by commas (``# noqa: BFM050, BFM022``), and a bare ``# noqa`` suppresses every finding
on the line. ``noqa`` is matched case-insensitively, the codes exactly. The comment is read in
Python files (with :mod:`tokenize`, so a ``#`` inside a string is not a comment), shell
scripts, YAML and ``.env`` files (a ``#`` at the start of the line or after a blank). Dockerfile
comments are whole lines and notebook cells are not read: there ``--ignore`` or ``--exclude``
is the way.

**Safety.** A suppression filters what is reported and the exit code; it never changes what is
rewritten, with one exception: a ``# noqa`` (bare, or naming the code reported there) on a
legacy write (a line with a fixed finding of :data:`WRITE_CODES`) keeps the whole file as it
is, its findings reported as suppressed (:func:`hold_noqa_writes`). When such a kept file is
a Python script that ran under a launcher's setting, every launcher of the run is kept too, so
that no launcher loses the switch while its script keeps none of the replacement, and so are
the modules of the tree migrated with a script (BFM014), which may be imported by the kept one.
A switch is therefore never removed without its replacement because of a suppression.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .diagnostics import Diagnostic
from .scan import kind_of

# ruff's noqa regex, for this tool's codes: a bare noqa comment, or one naming codes (BFM050, or BFM050,BFM022).
_NOQA = re.compile(r"#\s*(?i:noqa)(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?")
_COMMENT_START = re.compile(r"(?:^|(?<=\s))#")
_HASH_COMMENT_KINDS = ("shell", "yaml", "dotenv")
ALL = frozenset({"*"})
"""What a bare ``# noqa`` suppresses."""

WRITE_CODES = frozenset({"BFM001", "BFM002", "BFM003", "BFM045", "BFM047"})
"""Findings reported on a write of a legacy variable (switch on, switch off, fp16 no-op, a write
in a child shell, a write too late to matter): a noqa on their line keeps the file."""
IMPORTED_MODULE = "BFM014"
"""A module of the tree migrated with the script that imports it: kept when a script is."""


class SelectionError(ValueError):
    """A code or prefix in ``--select``/``--ignore`` (or the configuration) that matches no
    diagnostic of the catalogue; the message names the option."""


def parse_noqa(comment: str) -> frozenset[str] | None:
    """The codes a comment suppresses: :data:`ALL` for a bare ``# noqa``, the listed codes for
    ``# noqa: A1, B2``, None when the comment is no noqa."""
    match = _NOQA.search(comment)
    if match is None:
        return None
    codes = match.group("codes")
    if not codes:
        return ALL
    return frozenset(code for code in re.split(r"[,\s]+", codes) if code)


def noqa_by_line(text: str, kind: str | None) -> dict[int, frozenset[str]]:
    """The ``# noqa`` comments of a file, by 1-based line: Python through :mod:`tokenize`
    (only real comments), shell/YAML/.env by a ``#`` that starts a comment; other kinds none."""
    found: dict[int, frozenset[str]] = {}
    if kind == "python":
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                if token.type == tokenize.COMMENT:
                    codes = parse_noqa(token.string)
                    if codes is not None:
                        found[token.start[0]] = codes
            return found
        except (tokenize.TokenError, SyntaxError, IndentationError):
            found.clear()  # a file the tokenizer refuses: read the lines as the other kinds
    elif kind not in _HASH_COMMENT_KINDS:
        return found
    for number, line in enumerate(text.splitlines(), start=1):
        start = _COMMENT_START.search(line)
        if start is not None:
            codes = parse_noqa(line[start.start():])
            if codes is not None:
                found[number] = codes
    return found


def covers(codes: frozenset[str] | None, code: str) -> bool:
    """Whether a line's noqa ``codes`` (from :func:`parse_noqa`) suppress ``code``."""
    return codes is not None and (codes is ALL or code in codes)


@dataclass(frozen=True)
class Selection:
    """``--select`` / ``--ignore``: codes or prefixes (``BFM1`` is every BFM1xx code). A code is
    reported when it matches a ``select`` entry (all do when ``select`` is empty) and no
    ``ignore`` entry; ``ignore`` wins over ``select``."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def enabled(self, code: str) -> bool:
        """Whether findings of ``code`` are reported."""
        if self.select and not code.startswith(self.select):
            return False
        return not code.startswith(self.ignore) if self.ignore else True


def check_codes(option: str, values: Iterable[str], known: Iterable[str]) -> tuple[str, ...]:
    """``values`` of ``option`` upper-cased and validated: each must be a diagnostic code or the
    prefix of one (``BFM05``); raises :class:`SelectionError` naming the option otherwise."""
    known = tuple(known)
    out = []
    for value in values:
        for item in (part.strip().upper() for part in value.split(",")):
            if not item:
                continue
            if not any(code.startswith(item) for code in known):
                raise SelectionError(f"{option} {item}: no diagnostic code starts with it (see `bf16-migrate explain`)")
            out.append(item)
    return tuple(out)


@dataclass
class Filtered:
    """The findings of a run split by suppression: ``reported`` and ``suppressed``."""

    reported: list[Diagnostic]
    suppressed: list[Diagnostic]


def filter_findings(
    diagnostics: Iterable[Diagnostic],
    selection: Selection,
    texts: Mapping[str, str],
    kept: Iterable[str] = (),
) -> Filtered:
    """Split ``diagnostics`` into reported and suppressed ones. Suppressed: a code not enabled
    by ``selection``, a ``# noqa`` on the finding's line that covers its code (the file's text
    is looked up in ``texts`` by the diagnostic's path; a path missing from it is read from
    disk), and every finding of a file in ``kept`` (left as it is by a noqa on a legacy
    write, :func:`hold_noqa_writes`)."""
    kept = set(kept)
    cache: dict[str, dict[int, frozenset[str]]] = {}
    reported, suppressed = [], []
    for d in diagnostics:
        if d.path not in cache:
            cache[d.path] = _noqa_of(d.path, texts)
        if not selection.enabled(d.code) or d.path in kept or covers(cache[d.path].get(d.line), d.code):
            suppressed.append(d)
        else:
            reported.append(d)
    return Filtered(reported, suppressed)


def _noqa_of(path: str, texts: Mapping[str, str]) -> dict[int, frozenset[str]]:
    kind = kind_of(Path(path)) if "#cell" not in path else None
    if kind not in ("python", *_HASH_COMMENT_KINDS):
        return {}
    text = texts.get(path)
    if text is None:
        from .write import ReadError, read_source

        try:
            text = read_source(Path(path)).text
        except (ReadError, OSError):
            return {}
    return noqa_by_line(text, kind)


def hold_noqa_writes(planned) -> dict[Path, str]:
    """The files of a run to leave as they are because of a ``# noqa`` on a legacy write, each
    with the reason: ``planned`` are the per-file results whose text would change (``path``,
    ``old``, ``new``, ``diagnostics``, ``legacy_env``). A legacy write is a line with a fixed
    finding of a :data:`WRITE_CODES` code; its noqa counts when it is bare or names that code.
    When a Python script is kept, the launchers (non-Python files) of the run are kept with it
    if it ran under a launcher's setting, and the modules migrated with a script (BFM014) are
    kept too (see the module docstring)."""
    kept: dict[Path, str] = {}
    for result in planned:
        noqa = noqa_by_line(result.old, kind_of(result.path))
        if not noqa:
            continue
        for d in result.diagnostics:
            if d.fixed and d.code in WRITE_CODES and d.path == str(result.path) and covers(noqa.get(d.line), d.code):
                kept[result.path] = f"`# noqa` on line {d.line}, a legacy setting ({d.code})"
                break
    scripts = [r for r in planned if r.path in kept and kind_of(r.path) == "python"]
    for result in planned if scripts else ():
        if result.path in kept:
            continue
        if kind_of(result.path) != "python" and any(r.legacy_env for r in scripts):
            kept[result.path] = f"it may launch {scripts[0].path}, left as it is by a `# noqa`"
        elif any(d.code == IMPORTED_MODULE for d in result.diagnostics):
            kept[result.path] = f"it may be imported by {scripts[0].path}, left as it is by a `# noqa`"
    return kept
