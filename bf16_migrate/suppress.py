"""Suppressions: ``# noqa`` comments, and ``--select`` / ``--ignore`` by code or prefix.

Semantics follow ruff's ("Error suppression" in ruff's documentation,
docs.astral.sh/ruff/linter/#error-suppression): ``# noqa: BFM050`` at the end of a line
suppresses the findings of that code on that line, several codes are separated by commas
(``# noqa: BFM050, BFM022``), and a bare ``# noqa`` suppresses every finding on the line.
``noqa`` is matched case-insensitively, the codes exactly. Where the comment is read:

* Python files: with :mod:`tokenize`, so a ``#`` inside a string is not a comment;
* shell scripts, YAML and ``.env`` files: a ``#`` at the start of the line or after a blank;
* notebooks: on the line of a code cell, with the cell's own syntax (as ruff reads notebooks:
  Python through :mod:`tokenize`; ``%`` magic, ``!`` and ``%%bash`` lines as a shell reads
  them; :func:`bf16_migrate.carriers.notebook.cell_comments`); a finding ``nb.ipynb#cell2`` at
  line 3 is suppressed by a noqa on line 3 of cell 2. Markdown and raw cells are not read;
* VS Code's ``launch.json``: a ``// noqa`` comment (its JSON tokens: a ``//`` inside a string is
  not a comment; :func:`bf16_migrate.carriers.vscode.line_comments`);
* Dockerfiles: a comment is a whole line there (a ``#`` after an instruction is one of its
  arguments), so a ``# noqa`` is read on the comment lines directly above an instruction and
  covers every line of that instruction, continuations included, as hadolint reads its
  ``# hadolint ignore=DL3008`` pragma on the line before the instruction
  (:func:`bf16_migrate.carriers.dockerfile.instruction_lines`).

**Unused noqa.** With ``--select BFM900`` (or a prefix of it), a ``# noqa`` naming a BFM code
that suppresses no finding of the run is reported as BFM900 at the comment, as ruff's RUF100
(unused-noqa) reports its own: "unused" for a code with no finding on the noqa's line(s),
"unknown" for a BFM code that is no diagnostic. It is opt-in as RUF100 is (not in the default
selection). A bare ``# noqa`` and other tools' codes (``# noqa: E501``) are never reported, since
they may be for another tool. A code counts as used when a finding of it is on the line,
whether or not ``--select``/``--ignore`` report that finding (ruff reports such a code as
"non-enabled"; here a noqa is stale only when nothing is there to suppress). Only the files the
run has a finding in or changes are read (the others are never opened beyond the prefilter on
the variables' names). The finding is not fixable (the comment is left to the user: removing
one code from a comment also read by other tools is not done automatically).

**Safety.** A suppression filters what is reported and the exit code; it never changes what is
rewritten, with one exception: a ``# noqa`` (bare, or naming the code reported there) on a
legacy write (a line with a fixed finding of :data:`WRITE_CODES`, in any kind of file) keeps
the whole file as it is, its findings reported as suppressed (:func:`hold_noqa_writes`). When
such a kept file is a Python script, the launchers whose settings reach it are kept too, so that
no launcher loses the switch while its script keeps none of the replacement, and so are the
modules of the tree migrated with it (BFM014), with the other scripts that import them. A switch
is therefore never removed without its replacement because of a suppression.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from . import carriers
from .carriers import CarrierError
from .diagnostics import Diagnostic
from .ignore import excluded
from .rule_files import diagnostic_rules
from .scan import kind_of

if TYPE_CHECKING:
    from .carriers.notebook import SourceLocator

# ruff's noqa regex, for this tool's codes: a bare noqa comment, or one naming codes (BFM050, or BFM050,BFM022).
_NOQA = re.compile(r"#\s*(?i:noqa)(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?")
_COMMENT_START = re.compile(r"(?:^|(?<=\s))#")
_NO_NOQA = re.compile(r"(?i:noqa)")
"""What every ``# noqa`` comment holds (:data:`_NOQA`): a text without it has none."""
ALL = frozenset({"*"})
"""What a bare ``# noqa`` suppresses."""

WRITE_CODES = frozenset({"BFM001", "BFM002", "BFM003", "BFM045", "BFM047"})
"""Findings reported on a write of a legacy variable (switch on, switch off, fp16 no-op, a write
in a child shell, a write too late to matter): a noqa on their line keeps the file."""
UNUSED_NOQA = "BFM900"
"""A ``# noqa`` naming a BFM code that suppresses nothing (ruff's RUF100, unused-noqa): reported
only when selected, :func:`unused_noqa_enabled`."""


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


_PART = re.compile(r"^(?P<file>.+\.ipynb)(?P<part>#cell(?P<cell>\d+))$")


def split_path(path: str) -> tuple[str, str]:
    """A diagnostic's path as ``(file, part)``: ``("nb.ipynb", "#cell2")`` for a notebook cell's
    finding, ``(path, "")`` otherwise."""
    match = _PART.match(path)
    return (match.group("file"), match.group("part")) if match else (path, "")


@dataclass(frozen=True)
class Noqa:
    """One ``# noqa`` comment: ``part`` of the file it is in (``""``, or ``"#cellN"`` for a
    notebook's code cell), its 1-based ``line`` and ``col`` (of its ``#``) there, the ``codes``
    it names (:data:`ALL` for a bare one) and the ``lines`` of that part whose findings it
    covers (its own line; in a Dockerfile, the lines of the instruction below it)."""

    part: str
    line: int
    col: int
    codes: frozenset[str]
    lines: tuple[int, ...]


def noqa_comments(text: str, kind: str | None) -> list[Noqa]:
    """The ``# noqa`` comments of a file of ``kind`` (see the module docstring for where each
    kind has them); none for the other kinds."""
    if _NO_NOQA.search(text) is None:
        return []  # no comment of any kind can be one: nothing to tokenize or parse
    if kind == "python":
        found = _python_noqa(text)
        if found is not None:
            return found  # else a file the tokenizer refuses: its lines are read as the other kinds'
    elif kind in _NOQA_READERS:
        return [noqa for noqa in _NOQA_READERS[kind](text) if noqa is not None]
    elif kind not in carriers.HASH_COMMENTS:
        return []
    return [noqa for noqa in _hash_noqa(text) if noqa is not None]


def _python_noqa(text: str) -> list[Noqa] | None:
    """A Python file's ``# noqa`` comments, from its tokens; None when the tokenizer refuses it.
    The tokens are read up to the last line that holds ``noqa`` (what follows it holds no such
    comment: a large module with one ``# noqa`` among its imports is not tokenized whole), so a
    refusal after that line is not seen."""
    found: list[Noqa] = []
    last = max((match.start() for match in _NO_NOQA.finditer(text)), default=-1)
    if last < 0:
        return found
    last_line = text.count("\n", 0, last) + 1  # the tokenizer's lines end at "\n" (StringIO's readline)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.start[0] > last_line:
                break
            if token.type == tokenize.COMMENT:
                noqa = _noqa_at("", token.start[0], token.start[1] + 1, token.string)
                if noqa is not None:
                    found.append(noqa)
    except (tokenize.TokenError, SyntaxError):  # IndentationError is one
        return None
    return found


def _hash_noqa(text: str) -> Iterator[Noqa | None]:
    """The ``# noqa`` of a kind whose ``#`` starts a comment wherever it starts a word."""
    for number, line in enumerate(text.splitlines(), start=1):
        start = _COMMENT_START.search(line)
        if start is not None:
            yield _noqa_at("", number, start.start() + 1, line[start.start() :])


def _dockerfile_noqa(text: str) -> Iterator[Noqa | None]:
    """A Dockerfile's: a comment line above an instruction covers the instruction's lines."""
    from .carriers.dockerfile import instruction_lines

    lines = text.split("\n")
    for first, last, above in instruction_lines(text):
        for number in above:
            line = lines[number - 1]
            yield _noqa_at("", number, len(line) - len(line.lstrip()) + 1, line.lstrip(), range(first, last + 1))


def _vscode_noqa(text: str) -> Iterator[Noqa | None]:
    """launch.json's ``// noqa: BFM001``, read as ``#  noqa: BFM001``."""
    from .carriers.vscode import line_comments

    for row, col, comment in line_comments(text):
        yield _noqa_at("", row, col, "# " + comment[2:] if comment.startswith("//") else comment)


def _notebook_noqa(text: str) -> Iterator[Noqa | None]:
    """A notebook's, by code cell."""
    from .carriers.notebook import cell_comments

    for cell, row, col, comment in cell_comments(text):
        yield _noqa_at(f"#cell{cell}", row, col, comment)


_NOQA_READERS: dict[str, Callable[[str], Iterable[Noqa | None]]] = {
    "dockerfile": _dockerfile_noqa,
    "vscode": _vscode_noqa,
    "notebook": _notebook_noqa,
}
"""The kinds with a comment syntax of their own, and their readers."""


def _noqa_at(part: str, line: int, col: int, comment: str, lines: Iterable[int] | None = None) -> Noqa | None:
    """The :class:`Noqa` of ``comment`` (starting at ``line``:``col``), None when it is none."""
    match = _NOQA.search(comment)
    if match is None:
        return None
    codes = parse_noqa(comment[match.start() :])
    assert codes is not None  # the same match
    return Noqa(part, line, col + match.start(), codes, tuple(lines) if lines is not None else (line,))


def noqa_by_line(text: str, kind: str | None) -> dict[int, frozenset[str]]:
    """The codes the ``# noqa`` comments of a file suppress, by 1-based line of the findings
    they cover (:func:`noqa_comments`; a notebook's are by cell: see :func:`noqa_by_part`)."""
    return noqa_by_part(text, kind).get("", {})


def noqa_by_part(text: str, kind: str | None) -> dict[str, dict[int, frozenset[str]]]:
    """As :func:`noqa_by_line`, by part of the file: ``""`` for a whole file, ``"#cellN"`` for
    a notebook's code cell (the part of a diagnostic's path, :func:`split_path`)."""
    return _index(noqa_comments(text, kind))


def _index(comments: Iterable[Noqa]) -> dict[str, dict[int, frozenset[str]]]:
    out: dict[str, dict[int, frozenset[str]]] = {}
    for noqa in comments:
        by_line = out.setdefault(noqa.part, {})
        for line in noqa.lines:
            before = by_line.get(line)
            by_line[line] = (
                noqa.codes if before is None else (ALL if before is ALL or noqa.codes is ALL else before | noqa.codes)
            )
    return out


def covers(codes: frozenset[str] | None, code: str) -> bool:
    """Whether a line's noqa ``codes`` (from :func:`parse_noqa`) suppress ``code``."""
    return codes is not None and (codes is ALL or code in codes)


@dataclass(frozen=True)
class Selection:
    """``--select`` / ``--extend-select`` / ``--ignore`` and ``per-file-ignores``, with ruff's
    meaning (ruff's settings reference, "lint.select", "lint.extend-select",
    "lint.per-file-ignores"): codes or prefixes (``BFM1`` is every BFM1xx code). A code is
    reported when it matches a ``select`` entry (all do when ``select`` is empty) or an
    ``extend_select`` entry (added to the selection, whatever it is: ``--extend-select BFM900``
    turns the opt-in unused-noqa check on and keeps every other code), and no ``ignore`` entry;
    ``ignore`` wins. ``per_file_ignores`` (glob, codes) pairs also ignore their codes in the
    files matching the glob (:func:`bf16_migrate.ignore.excluded`'s matching: the file's name,
    its path relative to ``root``, or a directory of that path)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    root: Path | None = None

    def enabled(self, code: str, path: str | None = None) -> bool:
        """Whether findings of ``code`` are reported (in the file ``path``, for the
        per-file ignores)."""
        # str.startswith(()) is False: an empty tuple matches no code
        if self.select and not code.startswith(self.select) and not code.startswith(self.extend_select):
            return False
        if code.startswith(self.ignore):
            return False
        return path is None or not code.startswith(self.ignored_in(path))

    def ignored_in(self, path: str) -> tuple[str, ...]:
        """The codes ``per_file_ignores`` ignores in the file ``path`` (a notebook cell's path
        is its notebook's)."""
        if not self.per_file_ignores:
            return ()

        file = Path(split_path(path)[0])
        base = self.root if self.root is not None else Path.cwd()
        return tuple(c for glob, codes in self.per_file_ignores if excluded(file, base, (glob,)) for c in codes)


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
    by ``selection``, a ``# noqa`` that covers the finding's line and code (the file's text is
    looked up in ``texts`` by the diagnostic's path, a notebook cell's by the ``.ipynb``'s; a
    path missing from it is read from disk), and every finding of a file in ``kept`` (left as
    it is by a noqa on a legacy write, :func:`hold_noqa_writes`). A notebook cell's finding
    comes back with its :attr:`~bf16_migrate.diagnostics.Diagnostic.file_position` (the line and
    column of the ``.ipynb`` text, for the output) when the notebook's text can be read."""
    kept = set(kept)
    files: dict[str, _File] = {}
    used: set[tuple[str, int, str]] = set()  # (file, index of the noqa in the file's comments, code)
    reported, suppressed = [], []
    for d in diagnostics:
        base, part = split_path(d.path)
        if base not in files:
            files[base] = _File(base, texts)
        source = files[base]
        d = source.locate(d, part)
        for k in source.at.get((part, d.line), ()):
            if d.code in source.comments[k].codes:
                used.add((base, k, d.code))
        codes = source.noqa.get(part, {}).get(d.line)
        if not selection.enabled(d.code, d.path) or d.path in kept or base in kept or covers(codes, d.code):
            suppressed.append(d)
        else:
            reported.append(d)
    if unused_noqa_enabled(selection):
        for base in sorted(set(files) | set(texts)):
            source = files[base] if base in files else _File(base, texts)
            for d, self_suppressed in source.unused(used, base):
                hidden = self_suppressed or base in kept or not selection.enabled(d.code, d.path)
                (suppressed if hidden else reported).append(d)
    return Filtered(reported, suppressed)


def unused_noqa_enabled(selection: Selection) -> bool:
    """Whether unused ``# noqa`` codes are reported (:data:`UNUSED_NOQA`): only when a
    ``--select`` or ``--extend-select`` entry names it (``BFM900``, or a prefix: ``BFM9``, ``BFM``) and no
    ``--ignore`` entry does. As ruff's RUF100, it is opt-in: the default selection (every
    code) leaves it out ("unused-noqa (RUF100)" in ruff's rules, which is not in ruff's default
    rule set)."""
    named = (*selection.select, *selection.extend_select)
    return any(UNUSED_NOQA.startswith(entry) for entry in named) and selection.enabled(UNUSED_NOQA)


class _File:
    """A file of the run as :func:`filter_findings` reads it: its kind, its ``# noqa`` comments
    by part and line, and for a notebook the locator of its cells' lines."""

    def __init__(self, path: str, texts: Mapping[str, str]) -> None:
        self.kind = kind_of(Path(path))
        self.text = texts.get(path)
        if self.text is None and (self.kind == "python" or self.kind in carriers.REGISTRY):
            from .write import ReadError, read_text_file

            try:
                self.text = read_text_file(Path(path), self.kind).text
            except (ReadError, OSError):
                self.text = None
        self.comments = noqa_comments(self.text, self.kind) if self.text is not None else []
        self.noqa = _index(self.comments)
        self.at: dict[tuple[str, int], list[int]] = {}
        for k, noqa in enumerate(self.comments):
            for line in noqa.lines:
                self.at.setdefault((noqa.part, line), []).append(k)
        self._locator: SourceLocator | None = None
        self._unlocatable = False

    def unused(self, used: set[tuple[str, int, str]], base: str) -> list[tuple[Diagnostic, bool]]:
        """A :data:`UNUSED_NOQA` finding for each noqa of the file naming BFM codes not in
        ``used`` (``(file, index, code)`` of the codes that covered a finding), at the noqa's
        ``#``; with whether the noqa names :data:`UNUSED_NOQA` itself (then it is suppressed,
        as ``# noqa: RUF100`` silences ruff's). A bare noqa and other tools' codes are never
        reported."""
        catalogue = diagnostic_rules()
        out = []
        for k, noqa in enumerate(self.comments):
            if noqa.codes is ALL:
                continue
            left = sorted(
                code
                for code in noqa.codes
                if code.startswith("BFM") and code != UNUSED_NOQA and (base, k, code) not in used
            )
            if not left:
                continue
            unknown = [code for code in left if code not in catalogue]
            unused = [code for code in left if code in catalogue]
            where = "in the instruction under it" if self.kind == "dockerfile" else "on its line"
            parts = [f"unused: {', '.join(unused)}"] if unused else []
            parts += [f"unknown: {', '.join(unknown)}"] if unknown else []
            message = (
                f"unused `noqa` directive ({'; '.join(parts)}): it suppresses no finding {where}; remove the code "
                "from the comment"
            )
            d = self.locate(Diagnostic(UNUSED_NOQA, base + noqa.part, noqa.line, noqa.col, message, False), noqa.part)
            out.append((d, UNUSED_NOQA in noqa.codes))
        return out

    def locate(self, d: Diagnostic, part: str) -> Diagnostic:
        """``d`` with its place in the ``.ipynb`` text when it is a notebook cell's finding."""
        if not part or self.kind != "notebook" or self.text is None or d.file_position is not None:
            return d
        if self._locator is None and not self._unlocatable:
            from .carriers.notebook import SourceLocator

            try:
                self._locator = SourceLocator(self.text)
            except CarrierError:
                self._unlocatable = True
        if self._locator is None:
            return d
        position = self._locator.position(int(part[len("#cell") :]), d.line, d.col)
        return replace(d, file_position=position) if position is not None else d


def hold_noqa_writes(planned) -> dict[Path, str]:
    """The files of a run to leave as they are because of a ``# noqa`` on a legacy write, each
    with the reason: ``planned`` are the per-file results whose text would change (``path``,
    ``old``, ``new``, ``diagnostics``, ``with_scripts``). A legacy write is a line with a fixed
    finding of a :data:`WRITE_CODES` code; its noqa counts when it is bare or names that code.
    A kept Python script keeps what goes with it (``with_scripts``, the run's plan): the
    launchers whose settings reach it, and the modules of the tree it imports; a module kept so
    keeps the other scripts that import it (migrated, they would miss its change), and so on.
    Nothing else is kept: a launcher that starts other scripts only is migrated."""
    kept: dict[Path, str] = {}
    for result in planned:
        comments = noqa_comments(result.old, kind_of(result.path))
        if not comments:
            continue
        for d in result.diagnostics:
            base, part = split_path(d.path)
            if not (d.fixed and d.code in WRITE_CODES and base == str(result.path)):
                continue
            noqa = next((n for n in comments if n.part == part and d.line in n.lines and covers(n.codes, d.code)), None)
            if noqa is not None:
                kept[result.path] = f"{_where(noqa, d.line)}, a legacy setting ({d.code})"
                break
    _keep_what_goes_with(planned, kept)
    return kept


def _keep_what_goes_with(planned, kept: dict[Path, str]) -> None:
    """Add to ``kept`` (path -> reason) what goes with each kept Python script (see
    :func:`hold_noqa_writes`), each reason naming the file it goes with."""
    by_key = {result.path.resolve(): result for result in planned}
    origin = {result.path.resolve(): result.path for result in planned if result.path in kept}
    todo = [key for key in origin if kind_of(by_key[key].path) == "python"]

    def keep(result, reason: str, root: Path) -> bool:
        key = result.path.resolve()
        if result.path in kept:
            return False
        kept[result.path] = reason
        origin[key] = root
        return True

    while todo:
        key = todo.pop(0)
        script, root = by_key[key].path, origin[key]
        because = "left as it is by a `# noqa`" if script == root else f"left as it is with {root}"
        for result in planned:
            if key not in {path.resolve() for path in result.with_scripts}:
                continue
            if kind_of(result.path) != "python" or getattr(result, "launches", None):  # a launcher, shell or Python
                keep(result, f"it launches {script}, {because}", root)
                continue
            if not keep(result, f"it is imported by {script}, {because}", root):
                continue
            for other in result.with_scripts:  # the module's other importers would miss its change
                importer = by_key.get(other.resolve())
                if importer is not None and keep(
                    importer, f"it imports {result.path}, left as it is with {root}", root
                ):
                    todo.append(other.resolve())


def _where(noqa: Noqa, line: int) -> str:
    """Where a noqa is, in words: "`# noqa` on line 8" (and for the instruction under it: "on
    line 4, for line 5"; in a notebook: "in cell 2, line 3")."""
    if noqa.part:
        return f"`# noqa` in cell {noqa.part[len('#cell') :]}, line {noqa.line}"
    if noqa.line != line:
        return f"`# noqa` on line {noqa.line}, for line {line}"
    return f"`# noqa` on line {noqa.line}"
