"""A notebook's JSON text: where each cell's ``source`` is in it, and a cell's source written back
in the file's own style (nbformat's format 4 schema, nbformat.readthedocs.io "The Notebook file
format"; JSON per RFC 8259). Also the comments of the code cells, for ``# noqa``.

Only the ``source`` of a changed code cell is rewritten: outputs, metadata, execution counts and
the file's formatting stay byte for byte.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
import warnings

import nbformat
from nbformat.warnings import MissingIDFieldWarning

from ..python.guard import ParseError, run_deep
from .model import CarrierError, LineIndex

SHELL_CELL_MAGICS = ("%%bash", "%%sh", "%%script bash", "%%script sh")
PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture", "%%prun")


def cell_source_spans(text: str, path: str) -> list[tuple[int, int] | None]:
    """Character spans of ``cells[i].source`` in the notebook's JSON text, in cell order (None
    for a cell without one). Raises :class:`CarrierError` (``path:1:1: ...``) when the text is
    not a JSON object with a ``cells`` list."""
    dec = json.JSONDecoder()
    ws = " \t\r\n"

    def skip(i: int) -> int:
        while i < len(text) and text[i] in ws:
            i += 1
        return i

    def obj_items(i: int):
        """Yield (key, value_start, value_end) of the object starting at ``i``; the last yield
        is (None, end, end)."""
        assert text[i] == "{"
        i = skip(i + 1)
        if text[i] == "}":
            yield None, i + 1, i + 1
            return
        while True:
            key, i = dec.raw_decode(text, i)
            i = skip(i)
            assert text[i] == ":"
            i = skip(i + 1)
            start = i
            _, end = dec.raw_decode(text, i)
            yield key, start, end
            i = skip(end)
            if text[i] == "}":
                yield None, i + 1, i + 1
                return
            assert text[i] == ","
            i = skip(i + 1)

    spans: list[tuple[int, int] | None] = []
    try:
        start = skip(0)
        for key, vs, _ve in obj_items(start):
            if key != "cells":
                continue
            i = skip(vs + 1)
            while text[i] != "]":
                cell_span = None
                for ckey, cs, ce in obj_items(i):
                    if ckey == "source":
                        cell_span = (cs, ce)
                    if ckey is None:
                        i = ce
                spans.append(cell_span)
                i = skip(i)
                if text[i] == ",":
                    i = skip(i + 1)
    except (AssertionError, ValueError, IndexError) as exc:
        raise CarrierError(f"{path}:1:1: cannot locate the cells in the notebook's JSON ({exc})") from None
    return spans


class SourceLocator:
    """Where a code cell's characters are in the notebook's JSON text: a finding inside cell
    ``N`` (1-based, counted over all cells, as the carrier numbers them in ``nb.ipynb#cellN``),
    at a line and column of that cell's source, is also at a line and column of the ``.ipynb``
    file itself, which is what a SARIF region or a GitHub annotation can point at (they know
    files, not cells; ruff's own text output names the cell instead, ``nb.ipynb:cell 2:1:6``).

    The ``source`` value of each cell is found by :func:`cell_source_spans` (the standard
    library's JSON decoder, whatever the layout: nbformat's ``indent=1``, one line, any
    spacing), then each JSON string of it (the whole source, or one per line in the list form
    of nbformat's format 4 schema, "multiline_string") is decoded by the same decoder. Only the
    offset of a character inside one string literal is counted by hand
    (:func:`_raw_offset`), because :mod:`json` decodes a string whole and tells no positions
    inside it. Raises :class:`CarrierError` when the cells cannot be located."""

    def __init__(self, text: str) -> None:
        self.text = text
        try:  # in the large-stack worker, as the carrier read it: a deeply nested notebook is located too
            self.spans = run_deep("notebook", lambda: cell_source_spans(text, "notebook"), expected=(CarrierError,))
        except ParseError as exc:  # run_deep's own error: recursion past even that stack, memory
            raise CarrierError(str(exc)) from None
        self._index = LineIndex(text)
        self._pieces: dict[int, list[tuple[int, str]]] = {}

    def _strings(self, cell: int) -> list[tuple[int, str]] | None:
        """The JSON strings of cell ``cell``'s source: (offset of the opening quote, value)."""
        span = self.spans[cell - 1] if 1 <= cell <= len(self.spans) else None
        if span is None:
            return None
        if cell not in self._pieces:
            start = span[0]
            text, dec = self.text, json.JSONDecoder()
            pieces: list[tuple[int, str]] = []
            if text[start] == '"':
                pieces.append((start, dec.raw_decode(text, start)[0]))
            else:  # a list of strings: nbformat's "multiline_string"
                i = _skip_ws(text, start + 1)
                while text[i] != "]":
                    value, end = dec.raw_decode(text, i)
                    if isinstance(value, str):
                        pieces.append((i, value))
                    i = _skip_ws(text, end)
                    if text[i] == ",":
                        i = _skip_ws(text, i + 1)
            self._pieces[cell] = pieces
        return self._pieces[cell]

    def position(self, cell: int, line: int, col: int) -> tuple[int, int] | None:
        """The 1-based (line, column) in the JSON text of the character at 1-based ``line`` and
        ``col`` of cell ``cell``'s source (lines split at ``\\n``, as the carrier splits them);
        a column past the line's end is its end. None when the notebook has no such cell or
        line."""
        try:
            pieces = self._strings(cell)
        except (ValueError, IndexError):
            return None
        if pieces is None:
            return None
        source = "".join(value for _, value in pieces)
        lines = source.split("\n")
        if not 1 <= line <= len(lines):
            return None
        offset = sum(len(before) + 1 for before in lines[: line - 1]) + min(max(col, 1) - 1, len(lines[line - 1]))
        span = self.spans[cell - 1]
        if not pieces and span is not None:  # "source": [] (an empty cell): the list itself
            return self._index.pos(span[0])
        for k, (quote, value) in enumerate(pieces):
            if offset < len(value) or k == len(pieces) - 1:
                return self._index.pos(_raw_offset(self.text, quote, min(offset, len(value))))
            offset -= len(value)
        return None


_HASH_COMMENT = re.compile(r"(?:^|(?<=\s))#")


def cell_comments(text: str) -> list[tuple[int, int, int, str]]:
    """The comments of a notebook's code cells as ``(cell, line, col, comment)``: the cell's
    1-based number among all cells (as in ``nb.ipynb#cellN``), the 1-based line and column of
    the ``#`` within the cell's source, the comment to the line's end. Python lines are read
    with :mod:`tokenize` (a ``#`` in a string is no comment); the lines IPython does not run as
    Python (``%`` magics, ``!`` and ``x = !`` shell lines, the body of a ``%%bash`` or other
    cell magic) have their comment where ``#`` starts a word, as in a shell. Markdown and raw
    cells have none. Empty for a text that is not notebook JSON."""
    try:
        top = json.loads(text)
    except (ValueError, RecursionError):  # nested deeper than json recurses: the notebook's error (analyze)
        return []
    cells = top.get("cells") if isinstance(top, dict) else None
    out: list[tuple[int, int, int, str]] = []
    for number, cell in enumerate(cells if isinstance(cells, list) else [], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else source
        if not isinstance(source, str):
            continue
        lines = source.split("\n")
        first = lines[0].strip()
        whole_magic = first.startswith("%%") and not first.startswith(PYTHON_CELL_MAGICS)
        special = {
            k
            for k, line in enumerate(lines)
            if whole_magic
            or line.lstrip().startswith(("%", "!"))
            or re.match(r"^[ \t]*[A-Za-z_][A-Za-z0-9_]*\s*=\s*!", line)
        }
        python = "\n".join("" if k in special else line for k, line in enumerate(lines))
        found: list[tuple[int, int, int, str]] = []
        try:
            for token in tokenize.generate_tokens(io.StringIO(python).readline):
                if token.type == tokenize.COMMENT:
                    found.append((number, token.start[0], token.start[1] + 1, token.string))
        except (tokenize.TokenError, SyntaxError):
            found = []  # not Python the tokenizer takes: every line is read as a shell line
            special = set(range(len(lines)))
        for k in sorted(special):
            start = _HASH_COMMENT.search(lines[k])
            if start is not None:
                found.append((number, k + 1, start.start() + 1, lines[k][start.start() :]))
        out.extend(sorted(found))
    return out


def _skip_ws(text: str, i: int) -> int:
    """The first offset from ``i`` that is not JSON whitespace (RFC 8259, section 2)."""
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _raw_offset(text: str, quote: int, n: int) -> int:
    """The offset in ``text`` of the ``n``-th decoded character of the JSON string literal whose
    opening quote is at ``quote`` (``n`` = its length: the closing quote). Escapes are those of
    RFC 8259, section 7: ``\\uXXXX`` is one character, or one with the ``\\uXXXX`` low
    surrogate after it (as :mod:`json` decodes a pair); any other escape is two characters of
    text for one; an unescaped character is itself."""
    i = quote + 1
    for _ in range(n):
        if text[i] != "\\":
            i += 1
        elif text[i + 1] != "u":
            i += 2
        else:
            high = int(text[i + 2 : i + 6], 16)
            i += 6
            if (
                0xD800 <= high <= 0xDBFF
                and text[i : i + 2] == "\\u"
                and 0xDC00 <= int(text[i + 2 : i + 6], 16) <= 0xDFFF
            ):
                i += 6
    return i


def json_kind(value) -> str:
    """The JSON type of a decoded value, as a noun phrase ("a list", "a string", ...): the
    types of RFC 8259, section 3, as Python's json module decodes them."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):  # before the numbers: bool is an int in Python
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return "an object"


def dump_source(original: str, source: str) -> str:
    """``source`` as JSON in the style of ``original`` (a list of lines or one string; the
    same indentation; ``\\u`` escapes only if the original used them)."""
    ascii_ = "\\u" in original
    if original.lstrip().startswith("["):
        lines = source.splitlines(keepends=True)
        if not lines:
            return "[]"
        first_q = original.find('"')
        last_q = original.rfind('"')
        lead = original[1:first_q] if first_q > 0 else "\n"
        close = original[last_q + 1 : -1] if last_q > 0 else "\n"
        sep = ","
        return "[" + sep.join(lead + json.dumps(line, ensure_ascii=ascii_) for line in lines) + close + "]"
    return json.dumps(source, ensure_ascii=ascii_)


def read_notebook(text: str):
    """``nbformat.reads(text, as_version=NO_CONVERT)`` (raises what nbformat raises), without
    nbformat's warning on stderr for a format-4.5 notebook whose cells have no ``id``: that is the
    file's own format, not a finding, and bf16-migrate edits the file in its own JSON text, so
    the ids nbformat adds to its copy are never written."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MissingIDFieldWarning)
        return nbformat.reads(text, as_version=nbformat.NO_CONVERT)
