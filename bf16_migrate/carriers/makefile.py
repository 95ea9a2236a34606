"""Makefiles (GNU make, BSD make): the recipe lines, each a shell command line.

**Syntax read** (GNU make manual, "Recipe Syntax": "Each line in the recipe must start with a tab ...
each line of the recipe is executed in a separate subshell"; "Recipe Echoing" and "Errors in Recipes":
a leading ``@``, ``-`` or ``+`` is make's and is removed before the line goes to the shell): a line that
starts with a tab, its prefixes and the blanks after them removed, is one command, read by the shell
reader (a prefix ``XLA_USE_BF16=1 python train.py``, an ``env`` command, ``export X=1 && python ...``),
its settings reaching the launches of that line only. make runs a recipe in the directory it was
started in, the Makefile's own as usual.

Not read, so a legacy variable named there is reported by the planner's coverage check, never
rewritten: make's own variables and exports (``export XLA_USE_BF16 = 1``, ``XLA_USE_BF16 := 1``), which
reach every recipe; a recipe line continued with a backslash; a recipe line with a ``$`` (make expands
``$(PY)``, ``$$`` before the shell sees the line, so the shell reader would read another command: its
names are reported here, BFM131 naming the scripts of the line to migrate with ``--legacy-env``), unless
every ``$`` is a variable reference among the arguments of the line's Python script (``python train.py
--steps $(STEPS)``), which decides neither the settings nor the script launched, or a variable the Makefile
defines as the Python interpreter is the command (``PYTHON ?= python3`` and ``$(PYTHON) train.py``).

The line split is written here: there is no maintained Python library that parses Makefiles for their
recipes (make itself has none to call), and the recipe itself goes to the real shell parser (:mod:`.shell`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping
from typing import TYPE_CHECKING

from ..command_lines import PYTHON
from ..diagnostics import message
from .model import Analysis, Decision, Edit, LineIndex, Note, apply_edits
from .shell.fragment import ShellFragment
from .text import find_mentions, legacy_names

if TYPE_CHECKING:
    from pathlib import Path

    from ..diagnostics import Diagnostic

# the Carrier protocol (bf16_migrate.carriers): its kind and how the planner treats its files
KIND = "makefile"
INCLUDES = False
INCLUDED_ONLY = False
OWN_COVERAGE = False

_MAKE_PREFIXES = "@-+ \t"


def commands(text: str) -> list[tuple[int, int]]:
    """Each recipe line of a Makefile's ``text`` that goes to the shell as written: (start, end) of its
    command as character offsets of ``text`` (after the tab and make's ``@``/``-``/``+``, up to the line's
    end, its newline excluded). A line continued with a backslash (or continuing one), a line with a ``$``
    before its Python script's arguments (:func:`masked`) and a line whose command is empty or a comment are
    left out."""
    out: list[tuple[int, int]] = []
    offset = 0
    continued = False
    interpreters = interpreter_variables(text)
    for raw in text.splitlines(keepends=True):
        body = raw.rstrip("\r\n")
        joins = body.endswith("\\")
        if body.startswith("\t") and not continued and not joins and masked(body, interpreters) is not None:
            start = len(body) - len(body.lstrip(_MAKE_PREFIXES))
            command = body[start:]
            if command.strip() and not command.lstrip().startswith("#"):
                out.append((offset + start, offset + len(body)))
        continued = joins
        offset += len(raw)
    return out


_REFERENCE = re.compile(r"\$(\([A-Za-z0-9_.-]+\)|\{[A-Za-z0-9_.-]+\})")
"""A make variable's reference, ``$(STEPS)`` or ``${STEPS}`` (GNU make manual, "Basics of Variable References")."""


def masked(line: str, interpreters: frozenset[str] = frozenset()) -> str | None:
    """``line`` as the shell reads its settings and its launch: ``line`` itself when it has no ``$``; when every
    ``$`` is a make variable's reference among the arguments after its Python script (``python train.py --steps
    $(STEPS)``), the line with each reference replaced by a word of ``_`` of the same length (make expands it to
    the script's arguments, which decide neither the settings nor the script: its offsets are kept, so edits of
    the settings land on the line as written), and a reference to an interpreter's variable before the script
    (``XLA_USE_BF16=1 $(PYTHON) train.py``, with ``PYTHON ?= python3`` among the Makefile's ``interpreters``:
    :func:`interpreter_variables`) read as ``python``; None for any other ``$`` (``$(CMD) train.py``, ``$$HOME``)."""
    if "$" not in line:
        return line
    script = re.search(r"\S+\.py(?=\s|$)", line)
    if script is None:
        return None
    head = _REFERENCE.sub(lambda ref: _interpreter_word(ref, interpreters), line[: script.start()])
    if "$" in head or "$" in line[script.start() : script.end()]:
        return None
    out = head + _REFERENCE.sub(lambda ref: "_" * len(ref.group(0)), line[script.start() :])
    return out if "$" not in out else None


_DEFINITION = re.compile(r"^(?:override[ \t]+)?([A-Za-z0-9_.-]+)[ \t]*(\?|::?|\+|!)?=(.*)$", re.M)
"""A make variable's definition, ``PYTHON ?= python3``, ``PY := .venv/bin/python`` (GNU make manual, "Setting
Variables"), at the start of a line (a recipe line starts with a tab): name, operator, value."""


def interpreter_variables(text: str) -> frozenset[str]:
    """The make variables a Makefile's ``text`` defines, each time it defines them, as one word naming a Python
    interpreter (``PYTHON ?= python3``: :data:`bf16_migrate.command_lines.PYTHON` on its basename); not one
    appended to (``+=``) or set from a shell command (``!=``)."""
    defined: dict[str, list[tuple[str, list[str]]]] = {}
    for name, operator, value in _DEFINITION.findall(text):
        defined.setdefault(name, []).append((operator, value.split()))
    return frozenset(
        name
        for name, definitions in defined.items()
        if all(
            operator not in ("+", "!") and len(words) == 1 and PYTHON.match(words[0].rsplit("/", 1)[-1])
            for operator, words in definitions
        )
    )


def _interpreter_word(ref: re.Match[str], interpreters: frozenset[str]) -> str:
    """A reference to a variable of ``interpreters`` as ``python`` (or ``pypy``, the shortest name the launch
    reader takes as an interpreter, for ``$(PY)``) padded with blanks to its length, so the offsets on the line
    stay as written; any other reference as it is."""
    if ref.group(0)[2:-1] not in interpreters:
        return ref.group(0)
    word = "python" if len(ref.group(0)) >= len("python") else "pypy"
    return word.ljust(len(ref.group(0)))


def analyze(text: str, path: str) -> Analysis:
    """Analyse a Makefile: every recipe line of :func:`commands` read as one shell fragment (its settings,
    its launches), whose ``render(decisions)`` returns the new text with only the changed lines edited,
    byte for byte elsewhere. A command the shell reader cannot parse is reported as a finding of its line
    (an embedded fragment), not raised."""
    analysis = Analysis(KIND, text)
    index = LineIndex(text)
    fragments: list[tuple[int, int, ShellFragment]] = []

    def at(start: int) -> Callable[[int], tuple[int, int]]:
        return lambda off: index.pos(start + off)

    interpreters = interpreter_variables(text)
    for start, end in commands(text):
        command = masked(text[start:end], interpreters)
        assert command is not None, "commands() gives the lines masked() reads"
        frag = ShellFragment(command, path, analysis, pos=at(start), embedded=True, base=start, one_line=True)
        fragments.append((start, end, frag))
    _note_expanded_lines(text, index, analysis, interpreters)

    def sr_covered(scope: Hashable) -> bool:
        return any(frag.sr_covered(scope) for _, _, frag in fragments)

    def render(decisions: Mapping[int, Decision], python: str | None = None) -> str:
        edits: list[Edit] = []
        for start, end, frag in fragments:
            changed = frag.edits(decisions)
            if changed:  # on the line as written: a masked reference is its own length, after the settings
                edits.append(Edit(start, end, apply_edits(text[start:end], changed)))
        return apply_edits(text, edits)

    analysis.sr_covered = sr_covered
    analysis.render = render
    return analysis


def _note_expanded_lines(text: str, index: LineIndex, analysis: Analysis, interpreters: frozenset[str]) -> None:
    """A BFM131 note at each legacy name of a recipe line left out because make expands it (a ``$``:
    ``XLA_USE_BF16=1 $(PY) train.py``), naming the Python scripts the line names, which the user migrates
    with ``--legacy-env``: the coverage check's words said neither why nor what to migrate. A line whose only
    references are to ``interpreters`` (``$(PYTHON)`` of ``PYTHON ?= python3``) is read, not left out."""
    offset = 0
    for raw in text.splitlines(keepends=True):
        body = raw.rstrip("\r\n")
        if body.startswith("\t") and "$" in body and masked(body, interpreters) is None:
            scripts = [word for word in body.split() if word.endswith(".py") and "$" not in word]
            for variable, off in find_mentions(body, legacy_names()):
                line, col = index.pos(offset + off)
                setting = next((w for w in body.split() if w.startswith(f"{variable}=")), f"{variable}=1")
                then = "".join(f", then `bf16-migrate {script} --legacy-env {setting}`" for script in scripts)
                said = message("BFM131", "make", variable=variable, then=then)
                analysis.notes.append(Note("BFM131", line, col, said))
                analysis.handled.append((offset + off, offset + off + len(variable)))
        offset += len(raw)


def reported_text(path: Path, text: str) -> list[Diagnostic]:
    """Findings for the parts of the file read but never rewritten: none (make's own settings naming a
    variable are left to the planner's coverage check)."""
    return []
