"""Jupyter notebooks (``*.ipynb``).

Parsers: nbformat reads and checks the notebook (format 4) and gives the cells; the JSON text
itself is located with a scanner (:func:`.notebook_json.cell_source_spans`, built on the standard library's
JSON decoder), so that only the ``source`` of a changed code cell is rewritten: outputs,
metadata, execution counts and the file's formatting stay byte for byte.

Inside a code cell (IPython's syntax, ipython.readthedocs.io "Built-in magic commands"):

* ``%env X=1`` / ``%env X 1`` / ``%set_env X=1`` set ``os.environ`` in the kernel: they are in
  force for the notebook's own Python (when it uses torch: the "kernel" launch, migrated like a
  launched script) and for the ``!`` commands after them;
* ``!cmd`` and ``%%bash`` / ``%%sh`` / ``%%script bash`` cells run in a shell of their own: they
  go through :mod:`.shell`; an ``!export X=1`` alone never set anything for what follows (each
  ``!`` line is its own shell) and is removed (BFM140);
* the rest is Python: the code cells are joined, in order, into one module (the magic and
  shell lines set aside as placeholder lines, a marker line at each cell start), migrated once
  by the codemod (so a model built in one cell and trained in another is found), and split
  back; a cell that is not valid Python is left out of it and reported if it names a variable.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..diagnostics import Diagnostic
from ..mentions import docs_findings
from ..python.cells import CELL_MARKER, CELL_MARKER_RE
from .model import (
    KEEP,
    REMOVE,
    SET,
    STOCHASTIC,
    UNSET,
    Analysis,
    CarrierError,
    Decision,
    Edit,
    Launch,
    LineIndex,
    Note,
    Target,
    apply_edits,
)
from .notebook_json import (
    PYTHON_CELL_MAGICS,
    SHELL_CELL_MAGICS,
    cell_source_spans,
    dump_source,
    json_kind,
    read_notebook,
)
from .notebook_json import SourceLocator as SourceLocator  # re-exported: bf16_migrate.suppress and output read it here
from .notebook_json import cell_comments as cell_comments  # re-exported: bf16_migrate.suppress reads it here
from .shell import ShellFragment
from .text import find_mentions, legacy_names

if TYPE_CHECKING:
    from pathlib import Path

    from ..diagnostics import Diagnostic

# the Carrier protocol (bf16_migrate.carriers): its kind and how the planner treats its files
KIND = "notebook"
INCLUDES = False
INCLUDED_ONLY = False
OWN_COVERAGE = True

_PLACEHOLDER = "__bf16_migrate_line_{}__"
_PLACEHOLDER_RE = re.compile(r"^([ \t]*)__bf16_migrate_line_(\d+)__[ \t]*$")


@dataclass
class _Line:
    """A magic or shell line set aside from the Python (its id is its placeholder's)."""

    id: int
    cell: int
    index: int  # line index in the cell
    text: str  # the line as written, without its newline
    kind: str  # "env", "shell", "other"
    fragment: ShellFragment | None = None
    entry_ids: list[int] = field(default_factory=list)
    env: tuple[str, str | None, str] | None = None  # %env: (name, value, arguments as written)


class NotebookPython:
    """The notebook's Python as one module (``source``) and the way back to its cells."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.source = ""
        self.line_map: list[tuple[int, int]] = []  # module line -> (cell number, line in cell)

    def map_diagnostic(self, d: Diagnostic) -> Diagnostic:
        """The codemod's diagnostic ``d`` (a line of :attr:`source`) moved to its cell:
        path ``nb.ipynb#cell3``, line within that cell."""
        k = min(max(d.line, 1), len(self.line_map)) - 1 if self.line_map else 0
        cell, line = self.line_map[k] if self.line_map else (1, 1)
        return Diagnostic(d.code, f"{self.path}#cell{cell}", max(line, 1), d.col, d.message, d.fixed)


def analyze(text: str, path: str) -> Analysis:
    """Analyse a notebook (see the module docstring) into an :class:`Analysis` of kind
    ``"notebook"`` whose ``python`` is the code cells as one module (:class:`NotebookPython`)
    and whose ``render(decisions, python)`` writes the migrated module back into the cells.
    Raises :class:`CarrierError` when it is not a readable format-4 notebook (the message names
    the file and, for bad JSON, the line)."""
    cells, spans = _read_cells(text, path)
    reader = _Reader(Analysis(KIND, text), path)
    for ci, cell in enumerate(cells):
        if cell.cell_type == "code":
            reader.code_cell(ci, cell.source)
    reader.finish()
    analysis = reader.analysis
    analysis.sr_covered = reader.sr_covered
    analysis.render = _Renderer(reader, cells, spans).render
    return analysis


def _read_cells(text: str, path: str) -> tuple[list, list[tuple[int, int] | None]]:
    """The cells of a format-4 notebook (nbformat's ``NotebookNode`` objects) and the span of
    each cell's ``source`` in ``text``; :class:`CarrierError` for anything else. The JSON's shape
    is checked first, against the parts of nbformat's format-4 schema this reads (``nbformat``,
    ``cells``, each cell's ``cell_type``, ``source`` and ``metadata``), so that a malformed file
    gets a message saying what is wrong, never a Python error from deep in nbformat."""
    try:
        top = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as exc:
        raise CarrierError(f"{path}:1:1: not a readable notebook: {exc}") from None
    except ValueError as exc:
        raise CarrierError(
            f"{path}:{getattr(exc, 'lineno', 1)}:{getattr(exc, 'colno', 1)}: not valid notebook JSON: "
            f"{getattr(exc, 'msg', exc)}"
        ) from None
    if not isinstance(top, dict):  # nbformat would fail with "'list' object has no attribute 'get'"
        raise CarrierError(f"{path}: not a Jupyter notebook: top-level JSON is {json_kind(top)}, not an object")
    problem = _shape_problem(top)
    if problem is not None:
        raise CarrierError(f"{path}:1:1: {problem}")
    try:
        nb = read_notebook(text)
    except Exception as exc:  # nbformat raises several kinds; the shape above is what this reads
        raise CarrierError(f"{path}:1:1: not a readable notebook: {exc}") from None
    cells = nb.get("cells")
    spans = cell_source_spans(text, path)
    if not isinstance(cells, list) or len(spans) != len(cells):
        raise CarrierError(f"{path}:1:1: cannot locate the cells in the notebook's JSON")
    return cells, spans


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object as a dict, refusing a key given twice (RFC 8259 leaves its meaning open:
    Python keeps the last, and the cells' places in the text could no longer be told)."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _shape_problem(top: dict) -> str | None:
    """What is wrong with a notebook's JSON object for this reader (nbformat's format-4 schema,
    the keys read here), or None."""
    version = top.get("nbformat")
    if not isinstance(version, int) or isinstance(version, bool):
        shown = (
            "missing"
            if "nbformat" not in top
            else f"{version!r}, not a whole number"
            if isinstance(version, float)
            else f"{json_kind(version)}, not a number"
        )
        return f"not a readable notebook: its `nbformat` (the format's version) is {shown}"
    if version != 4:
        return (
            f"notebook format {version} is not supported (convert it to format 4 with `jupyter nbconvert --to "
            "notebook`)"
        )
    cells = top.get("cells")
    if "cells" not in top:
        return "not a readable notebook: it has no `cells`"
    if not isinstance(cells, list):
        return f"not a readable notebook: `cells` is {json_kind(cells)}, not a list"
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            return f"not a readable notebook: cell {number} is {json_kind(cell)}, not an object"
        kind, source = cell.get("cell_type"), cell.get("source")
        for key in ("cell_type", "source"):
            if key not in cell:
                return f"not a readable notebook: cell {number} has no `{key}`"
        if not isinstance(kind, str):
            return f"not a readable notebook: the `cell_type` of cell {number} is {json_kind(kind)}, not a string"
        if not (isinstance(source, str) or (isinstance(source, list) and all(isinstance(x, str) for x in source))):
            shown = (
                f"a list holding {json_kind(next(x for x in source if not isinstance(x, str)))}"
                if isinstance(source, list)
                else json_kind(source)
            )
            return (
                f"not a readable notebook: the `source` of cell {number} is {shown}, not a string or a list of strings"
            )
        metadata = cell.get("metadata", {})
        if not isinstance(metadata, dict):
            return f"not a readable notebook: the `metadata` of cell {number} is {json_kind(metadata)}, not an object"
    metadata = top.get("metadata", {})
    if not isinstance(metadata, dict):
        return f"not a readable notebook: its `metadata` is {json_kind(metadata)}, not an object"
    return None


class _Reader:
    """The code cells of one notebook read in order into ``analysis``: magics and shell lines
    set aside (:class:`_Line`), the rest joined into :attr:`python`."""

    def __init__(self, analysis: Analysis, path: str) -> None:
        self.analysis = analysis
        self.path = path
        self.legacy = legacy_names()
        self.python = NotebookPython(path)
        analysis.python = self.python
        self.special: dict[int, _Line] = {}
        self.cell_lines: dict[int, list[str]] = {}
        self.python_cells: list[int] = []
        self.env_entries: list[tuple[tuple[int, int], int]] = []  # (order, entry id)
        self.shell_launches: list[tuple[tuple[int, int], int, set[str]]] = []
        """(cell, line) order, launch index, the variables the launch's own shell sets or unsets."""
        self.module_parts: list[tuple[int, list[str]]] = []
        self.sr_present = False

    def _new_line(self, cell: int, index: int, text: str, kind: str) -> _Line:
        ln = _Line(len(self.special), cell, index, text, kind)
        self.special[ln.id] = ln
        return ln

    def code_cell(self, ci: int, src: str) -> None:
        """Read code cell ``ci`` (0-based) with source ``src``."""
        lines = src.split("\n")
        self.cell_lines[ci] = lines
        where = f"#cell{ci + 1}"
        first = lines[0].strip() if lines else ""
        if first.startswith("%%"):
            if first.startswith(SHELL_CELL_MAGICS):
                self._shell_cell(ci, lines, where)
                return
            if not first.startswith(PYTHON_CELL_MAGICS):
                _mentions(self.analysis, src, where, self.legacy, "a cell magic bf16-migrate does not read")
                return
        # a Python cell magic's first line (%%time) becomes a placeholder below (it starts with %)
        py_lines = [self._line(ci, li, line, where) for li, line in enumerate(lines)]
        try:
            ast.parse("\n".join(py_lines))
        except SyntaxError:
            if any(v in src for v in self.legacy):
                _mentions(self.analysis, src, where, self.legacy, "a cell that is not valid Python")
            for ln in [x for x in self.special.values() if x.cell == ci]:
                ln.kind = "frozen"
            return
        self.python_cells.append(ci)
        self.module_parts.append((ci, py_lines))

    def _shell_cell(self, ci: int, lines: list[str], where: str) -> None:
        body = "\n".join(lines[1:])
        before = len(self.analysis.launches)
        ln = self._new_line(ci, -1, body, "shell")
        ln.fragment = frag = ShellFragment(body, self.path, self.analysis, pos=_cell_pos(body, 2), embedded=True)
        _tag(self.analysis, frag, where, before)
        for li in frag.launches:
            self.shell_launches.append(((ci, 0), li, _own_variables(self.analysis, frag, li)))

    def _line(self, ci: int, li: int, line: str, where: str) -> str:
        """Line ``li`` of code cell ``ci`` as it goes into the module: itself when it is Python,
        else a placeholder for the :class:`_Line` set aside."""
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        if stripped.startswith(("%env ", "%set_env ")) or stripped in ("%env", "%set_env"):
            ln = self._env_line(ci, li, line, where)
        elif stripped.startswith("!") or stripped.startswith("%sx ") or stripped.startswith("%system "):
            ln = self._bang_line(ci, li, line, where)
        elif stripped.startswith("%"):
            ln = self._new_line(ci, li, line, "other")
            if any(v in line for v in self.legacy):
                _mentions(self.analysis, line, where, self.legacy, "a magic bf16-migrate does not read", line_no=li + 1)
        elif re.match(r"^[ \t]*[A-Za-z_][A-Za-z0-9_]*\s*=\s*!", line):
            ln = self._new_line(ci, li, line, "other")
            if any(v in line for v in self.legacy):
                _mentions(
                    self.analysis,
                    line,
                    where,
                    self.legacy,
                    "a shell capture (`x = !cmd`) bf16-migrate does not read",
                    line_no=li + 1,
                )
        else:
            return line
        return indent + _PLACEHOLDER.format(ln.id)

    def _env_line(self, ci: int, li: int, line: str, where: str) -> _Line:
        """``%env X=1``: an entry in force for the kernel and the ``!`` lines after it."""
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        ln = self._new_line(ci, li, line, "env")
        body = stripped.split(None, 1)[1] if " " in stripped else ""
        name, value = _env_args(body)
        if name == STOCHASTIC:
            self.sr_present = True
        if name is not None and name in self.legacy:
            col = len(indent) + stripped.find(name) + 1
            entry = self.analysis.new_entry(
                variable=name, action=SET, value=value, line=li + 1, col=col, sr_scope=("kernel",)
            )
            entry.where = where
            if value is None:
                entry.problem = f"the value of {name} is computed ({body}): edit it by hand"
            ln.entry_ids.append(entry.id)
            ln.env = (name, value, body)
            self.env_entries.append(((ci, li), entry.id))
        return ln

    def _bang_line(self, ci: int, li: int, line: str, where: str) -> _Line:
        """``!cmd`` (``!!cmd``, ``%sx``, ``%system``): a shell of its own."""
        stripped = line.lstrip()
        cmd = (
            stripped[2:]
            if stripped.startswith("!!")
            else stripped[1:]
            if stripped.startswith("!")
            else stripped.split(None, 1)[1]
        )
        ln = self._new_line(ci, li, line, "shell")
        prefix_len = len(line) - len(cmd)
        before = len(self.analysis.launches)
        ln.fragment = frag = ShellFragment(
            cmd,
            self.path,
            self.analysis,
            pos=lambda off: (li + 1, prefix_len + off + 1),
            embedded=True,
            one_line=True,
            ipython=True,
        )
        _tag(self.analysis, frag, where, before)
        for lidx in frag.launches:
            self.shell_launches.append(((ci, li), lidx, _own_variables(self.analysis, frag, lidx)))
        # `!export X=1` with nothing launched in the same line: never had an effect
        for eid in frag.entries:
            e = self.analysis.entries[eid]
            if (
                e.action == SET
                and frag.entry_data[eid].kind == "decl"
                and not any(eid in self.analysis.launches[k].reached_by for k in frag.launches)
            ):
                e.noop = (
                    "each `!` line runs in a shell of its own, so this export never reached the kernel or the cells "
                    "after it"
                )
        return ln

    def finish(self) -> None:
        """The Python cells joined into one module (a marker line opening each cell), the
        kernel's launch when it uses torch, and which ``%env`` reaches which launch."""
        analysis, py = self.analysis, self.python
        out_lines: list[str] = []
        for ci, py_lines in self.module_parts:
            out_lines.append(CELL_MARKER.format(ci))
            py.line_map.append((ci + 1, 1))
            for k, line in enumerate(py_lines):
                out_lines.append(line)
                py.line_map.append((ci + 1, k + 1))
        py.source = "\n".join(out_lines) + ("\n" if out_lines else "")
        python_text = "\n".join(l for _, ls in self.module_parts for l in ls)
        if "torch" in python_text:
            analysis.launches.append(Launch(1, 1, "the notebook's own Python", (Target.KERNEL, "")))
            kernel = len(analysis.launches) - 1
            for _, eid in self.env_entries:
                analysis.launches[kernel].reached_by[eid] = True
        for order, li, own in self.shell_launches:
            for eorder, eid in self.env_entries:
                # a variable the `!` line (or the %%bash cell) sets or unsets itself shadows the
                # kernel's %env for its launch: that launch is judged by its own setting alone
                if eorder < order and analysis.entries[eid].variable not in own:
                    analysis.launches[li].reached_by.setdefault(eid, True)
        if self.sr_present:
            analysis.sr_present.add(("kernel",))

    def sr_covered(self, scope: Hashable) -> bool:
        """Whether ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` is set where ``scope`` is: by ``%env``
        for the kernel, or in the shell line or cell of ``scope``."""
        if scope in self.analysis.sr_present:
            return True
        return any(
            ln.fragment is not None and ln.fragment.ok and ln.fragment.sr_covered(scope) for ln in self.special.values()
        )


class _Renderer:
    """The plan's decisions and the migrated module written back into the notebook's cells."""

    def __init__(self, reader: _Reader, cells: list, spans: list[tuple[int, int] | None]) -> None:
        self.reader = reader
        self.text = reader.analysis.text
        self.cells = cells
        self.spans = spans

    def render(self, decisions: Mapping[int, Decision], python: str | None = None) -> str:
        """The new notebook text: the special lines rendered for ``decisions``, the Python cells
        from ``python`` (the migrated module; None: the module as it was)."""
        reader = self.reader
        final = {ln.id: _render_line(ln, decisions) for ln in reader.special.values()}
        new_py = self._split_module(reader.python.source if python is None else python)
        edits: list[Edit] = []
        for ci, cell in enumerate(self.cells):
            span = self.spans[ci]
            if cell.cell_type != "code" or span is None:
                continue
            new_src = self._cell_source(ci, new_py, final)
            if new_src != cell.source:
                edits.append(Edit(span[0], span[1], dump_source(self.text[span[0] : span[1]], new_src)))
        return apply_edits(self.text, edits)

    def _split_module(self, python_code: str) -> dict[int, list[str]]:
        """The migrated module split back at its cell markers: cell index -> its lines (lines
        the codemod put before the first marker go to the first Python cell)."""
        new_py: dict[int, list[str]] = {}
        current = None
        head: list[str] = []
        module_lines = python_code.split("\n")
        if python_code.endswith("\n"):
            module_lines = module_lines[:-1]
        for line in module_lines:
            m = CELL_MARKER_RE.match(line)
            if m:
                current = int(m.group(1))
                new_py[current] = []
                continue
            if current is None:
                head.append(line)
            else:
                new_py[current].append(line)
        first_cell = self.reader.python_cells[0] if self.reader.python_cells else None
        if first_cell is not None and any(h.strip() for h in head):
            new_py[first_cell] = [h for h in head if h.strip()] + new_py[first_cell]
        return new_py

    def _cell_source(self, ci: int, new_py: dict[int, list[str]], final: dict[int, str | None]) -> str:
        """The new source of code cell ``ci``: its migrated Python with the special lines put
        back in place of their placeholders, or (a cell outside the module) its own lines with
        the special ones rendered."""
        special = self.reader.special
        lines = self.reader.cell_lines[ci]
        result: list[str] = []
        if ci in new_py:
            for line in new_py[ci]:
                m = _PLACEHOLDER_RE.match(line)
                if not m:
                    result.append(line)
                    continue
                ln = special[int(m.group(2))]
                text_ = final[ln.id]
                if text_ is not None:
                    original_indent = ln.text[: len(ln.text) - len(ln.text.lstrip())]
                    result.append(m.group(1) + text_[len(original_indent) :])
            return "\n".join(result)
        shell_cell = next((x for x in special.values() if x.cell == ci and x.index == -1), None)
        if shell_cell is not None:
            text_ = final[shell_cell.id]
            return lines[0] + "\n" + (text_ if text_ is not None else "")
        for li, line in enumerate(lines):
            found = next((x for x in special.values() if x.cell == ci and x.index == li), None)
            if found is None:
                result.append(line)
            else:
                text_ = final[found.id]
                if text_ is not None:
                    result.append(text_)
        return "\n".join(result)


def _render_line(ln: _Line, decisions: Mapping[int, Decision]) -> str | None:
    if ln.kind in ("other", "frozen"):
        return ln.text
    if ln.kind == "env":
        if not ln.entry_ids:
            return ln.text
        d = decisions.get(ln.entry_ids[0], KEEP)
        if d == KEEP:
            return ln.text
        if d == REMOVE:
            return None
        assert ln.env is not None, "an env line with an entry has its arguments"
        name, value, body = ln.env
        new_body = body.replace(name, STOCHASTIC, 1)
        if value is not None and value != "":
            k = new_body.rfind(value)
            new_body = new_body[:k] + "1" + new_body[k + len(value) :]
        start = ln.text.find(body)
        return ln.text[:start] + new_body + ln.text[start + len(body) :]
    frag = ln.fragment
    if frag is None or not frag.ok:
        return ln.text
    edits = frag.edits(decisions)
    if not edits:
        return ln.text
    new = apply_edits(frag.text, edits)
    if ln.index == -1:
        return new
    prefix = ln.text[: len(ln.text) - len(frag.text)]
    if not new.strip() or new.strip() == ":":
        return None
    return prefix + new


def _env_args(body: str) -> tuple[str | None, str | None]:
    """``%env`` arguments: ``X=1`` or ``X 1`` (IPython ``%env``), value ``None`` when it holds
    ``$`` (IPython expands it) or when there is none (``%env X`` prints the variable)."""
    body = body.strip()
    if not body:
        return None, None
    if "=" in body.split(None, 1)[0]:
        name, value = body.split("=", 1)
    else:
        parts = body.split(None, 1)
        if len(parts) < 2:
            return parts[0], None
        name, value = parts
    value = value.strip()
    if value[:1] in ("'", '"') and value.endswith(value[:1]) and len(value) >= 2:
        value = value[1:-1]
    if "$" in value or "{" in value:
        return name.strip(), None
    return name.strip(), value


def _cell_pos(body: str, first_line: int):

    index = LineIndex(body)

    def pos(off: int) -> tuple[int, int]:
        line, col = index.pos(off)
        return line + first_line - 1, col

    return pos


def _own_variables(analysis: Analysis, frag: ShellFragment, launch: int) -> set[str]:
    """The legacy variables the shell of ``frag`` itself gives launch ``launch``: set for it
    (``X=1 python ...``, an ``export X=1`` before it) or unset in it (``unset X``)."""
    own = {analysis.entries[eid].variable for eid in analysis.launches[launch].reached_by}
    own |= {analysis.entries[eid].variable for eid in frag.entries if analysis.entries[eid].action == UNSET}
    return own


def _tag(analysis: Analysis, frag: ShellFragment, where: str, launches_before: int) -> None:
    """The entries, launches and notes of a shell line or cell just read: in cell ``where``."""
    for eid in frag.entries:
        analysis.entries[eid].where = where
    for li in range(launches_before, len(analysis.launches)):
        analysis.launches[li].where = where
    notes = analysis.notes
    for k, note in enumerate(notes):
        if not note.where:
            notes[k] = replace(note, where=where)


def _mentions(analysis: Analysis, text: str, where: str, legacy, what: str, line_no: int | None = None) -> None:

    index = LineIndex(text)
    for var, off in find_mentions(text, legacy):
        line, col = index.pos(off)
        analysis.notes.append(Note.of("BFM131", line_no or line, col, at=where, variable=var, where=f"in {what}"))


def reported_text(path: Path, text: str) -> list[Diagnostic]:
    """BFM091 for each line of a markdown or raw cell naming a variable, at ``nb.ipynb#cellN``
    as the carrier numbers cells; ``[]`` when the notebook cannot be read (:func:`analyze`
    reports that)."""
    try:
        nb = read_notebook(text)
    except Exception:  # nbformat raises several kinds; analyze reports them
        return []
    found = []
    for number, cell in enumerate(nb.get("cells", []), start=1):
        if cell.get("cell_type") in ("markdown", "raw"):
            found.extend(docs_findings(f"{path}#cell{number}", cell.get("source", "")))
    return found
