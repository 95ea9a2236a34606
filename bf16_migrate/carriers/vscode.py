"""VS Code's ``.vscode/launch.json``: each Python debug configuration is a launcher.

A configuration (``"configurations": [...]``) with ``"type": "debugpy"`` (or the older
``"python"``) and ``"request": "launch"`` starts its ``"program"`` (a script) or ``"module"``
(``python -m``) with its ``"args"``, in an environment that adds its ``"env"`` object and the
``KEY=VALUE`` lines of its ``"envFile"`` (VS Code's "Python debugger" documentation,
``launch.json`` attributes). ``${workspaceFolder}`` is the directory that holds ``.vscode``; a
program named through any other variable (``${file}``, the file open in the editor) cannot be
resolved, and the settings for it are kept (BFM111).

The file is JSON with comments and trailing commas (VS Code reads it as "JSONC"). It is read with
json-five (``json5.loader.ModelLoader``: a JSON5 parser, JSON5 being a superset of JSONC, whose
model keeps each key and value with its character offsets); the text is never re-serialised: a
removed ``"XLA_USE_BF16": "1"`` takes its line (or, written inline, itself and one comma), a
replaced one has its key and value rewritten in place, and every other byte stays as it was.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from json5.loader import ModelLoader, loads
from json5.tokenizer import tokenize
from json5.utils import JSON5DecodeError

from .model import (
    KEEP,
    REPLACE,
    SET,
    STOCHASTIC,
    Analysis,
    Blocker,
    CarrierError,
    Decision,
    Edit,
    Include,
    Launch,
    LineIndex,
    Target,
    apply_edits,
)
from .text import legacy_names

if TYPE_CHECKING:
    from ..diagnostics import Diagnostic

# the Carrier protocol (bf16_migrate.carriers): its kind and how the planner treats its files
KIND = "vscode"
INCLUDES = True
INCLUDED_ONLY = False
OWN_COVERAGE = False

PYTHON_TYPES = ("debugpy", "python")
"""The ``"type"`` of a configuration VS Code's Python debugger starts."""
WORKSPACE = "${workspaceFolder}"
_VARIABLE = re.compile(r"\$\{[^}]*\}")


@dataclass(frozen=True)
class _Pair:
    """One ``"KEY": "VALUE"`` of an ``"env"`` object: the character spans of the key and the
    value as written (quotes included), and of the whole pair with what goes with it on removal."""

    key: tuple[int, int]
    value: tuple[int, int]
    removal: tuple[int, int]


def analyze(text: str, path: str) -> Analysis:
    """Analyse a ``launch.json``: each legacy ``"env"`` key of a Python launch configuration is
    an entry, in force for that configuration's launch (and its ``"envFile"`` an include of it).
    Raises :class:`CarrierError` (``path:line:col: ...``) when the text is not JSON with comments."""
    try:
        model = loads(text, loader=ModelLoader())
    except JSON5DecodeError as exc:
        first = str(exc).splitlines()
        detail = next((line.strip() for line in first if "Syntax Error" in line), first[0] if first else str(exc))
        where = re.search(r"line (\d+) column (\d+)", detail)
        line, col = (int(where.group(1)), int(where.group(2))) if where else (1, 1)
        raise CarrierError(f"{path}:{line}:{col}: cannot parse as JSON with comments: {detail}") from None
    except RecursionError:
        raise CarrierError(f"{path}:1:1: cannot parse as JSON with comments: nested too deeply") from None
    analysis = Analysis(KIND, text)
    index = LineIndex(text)
    pairs: dict[int, _Pair] = {}
    workspace = Path(path).resolve().parent.parent
    root = model.value
    configurations = _member(root, "configurations")
    for number, config in enumerate(getattr(configurations, "values", []) or []):
        _configuration(analysis, text, index, pairs, config, number, workspace)
    analysis.sr_covered = lambda scope: scope in analysis.sr_present

    def render(decisions: Mapping[int, Decision], python: str | None = None) -> str:
        edits: list[Edit] = []
        for eid, pair in pairs.items():
            decision = decisions.get(eid, KEEP)
            if decision == REPLACE:
                quote = text[pair.value[0]]
                edits += [Edit(pair.key[0] + 1, pair.key[1] - 1, STOCHASTIC), Edit(*pair.value, f"{quote}1{quote}")]
            elif decision != KEEP:
                edits.append(Edit(*pair.removal, ""))
        return apply_edits(text, edits)

    analysis.render = render
    return analysis


def _member(obj: Any, name: str) -> Any:
    """The value of the key ``name`` of the json-five object ``obj`` (None when absent or not an object)."""
    for pair in getattr(obj, "key_value_pairs", None) or []:
        if _string(pair.key) == name:
            return pair.value
    return None


def _string(node: Any) -> str | None:
    """The text of a json-five string or identifier node, or None for any other node."""
    value = getattr(node, "characters", None)
    if value is None:
        value = getattr(node, "name", None)
    return value if isinstance(value, str) else None


def _configuration(
    analysis: Analysis, text: str, index: LineIndex, pairs: dict[int, _Pair], config: Any, number: int, workspace: Path
) -> None:
    """One configuration: its launch (a Python one, or none), the entries of its ``"env"``
    (reaching that launch alone) and its ``"envFile"`` (an include of that launch)."""
    launch = _launch(config, index, workspace)
    launches = []
    if launch is not None:
        analysis.launches.append(launch)
        launches = [len(analysis.launches) - 1]
    env = _member(config, "env")
    legacy = legacy_names()
    scope = ("configuration", number)
    members = getattr(env, "key_value_pairs", None) or []
    for k, member in enumerate(members):
        name = _string(member.key)
        if name == STOCHASTIC:
            analysis.sr_present.add(scope)
        if name not in legacy:
            continue
        key_span = _span(member.key)
        value = _string(member.value) if type(member.value).__name__.endswith("String") else None
        line, col = index.pos(key_span[0] + 1)
        problem = None
        if value is None or _VARIABLE.search(value):
            problem = f"the value of {name} is not a plain string (VS Code fills it in when it starts): edit it by hand"
        entry = analysis.new_entry(
            variable=name,
            action=SET,
            value=None if problem else value,
            line=line,
            col=col,
            sr_scope=scope,
            problem=problem,
            blocker=Blocker.COMPUTED_VALUE if problem else Blocker.UNREWRITTEN_FORM,
        )
        entry.group = ("vscode", number, name)
        value_span = _span(member.value)
        pairs[entry.id] = _Pair(key_span, value_span, _removal(text, members, k))
        analysis.handled.append((key_span[0] + 1, key_span[1] - 1))
        for li in launches:
            analysis.launches[li].reached_by[entry.id] = True
    env_file = _string(_member(config, "envFile"))
    if env_file is not None:
        start = _span(_member(config, "envFile"))[0]
        line, col = index.pos(start)
        analysis.includes.append(Include(_in_workspace(env_file, workspace) or env_file, line, col, launches))


def _launch(config: Any, index: LineIndex, workspace: Path) -> Launch | None:
    """The Python process a configuration starts, or None (another debugger, an ``"attach"``)."""
    if _string(_member(config, "type")) not in PYTHON_TYPES or _string(_member(config, "request")) != "launch":
        return None
    program, module = _member(config, "program"), _member(config, "module")
    node = program if program is not None else module
    start = _span(node)[0] if node is not None else _span(config)[0]
    line, col = index.pos(start)
    name = _string(_member(config, "name")) or "a configuration"
    launch = Launch(line, col, f"launch.json: {name}"[:100], args=_args(_member(config, "args")))
    word = _string(node)
    if word is None:
        launch.problem = "the configuration names no program or module as a string"
        launch.target = (Target.SCRIPT, "")
    elif program is not None:
        resolved = _in_workspace(word, workspace, _string(_member(config, "cwd")))
        launch.target = (Target.SCRIPT, resolved or word)
        if resolved is None:
            launch.problem = (
                f"the program is {word}, which VS Code fills in when it starts (the file open in the editor)"
            )
    else:
        launch.target = (Target.MODULE, word)
    return launch


def _in_workspace(word: str, workspace: Path, cwd: str | None = None) -> str | None:
    """A path of a configuration as a path of the tree: ``${workspaceFolder}`` is the directory
    holding ``.vscode``, a relative path is relative to ``cwd`` (itself relative to the
    workspace, by default the workspace); None when it holds any other VS Code variable."""
    base = workspace
    if cwd is not None:
        cwd_path = _in_workspace(cwd, workspace)
        if cwd_path is None:
            return None
        base = Path(cwd_path)
    path = word.replace(WORKSPACE, str(workspace))
    if _VARIABLE.search(path):
        return None
    return str(base / path) if not Path(path).is_absolute() else path


def _args(node: Any) -> list[str | None]:
    """The ``"args"`` of a configuration: a list of strings (None where not a string), or a
    string split at blanks (newer VS Code takes one string, as a shell would split it)."""
    if node is None:
        return []
    if _string(node) is not None:
        return list((_string(node) or "").split())
    return [_string(value) for value in getattr(node, "values", None) or []]


def _span(node: Any) -> tuple[int, int]:
    """The character span of a json-five node as written (a string with its quotes)."""
    tok = node._tok
    end = getattr(node, "_end_tok", None) or tok
    return tok.index, end.end


def _removal(text: str, members: list, k: int) -> tuple[int, int]:
    """The span removed with member ``k`` of an object: its whole line(s) when nothing else is
    on them (a comma and a ``//`` comment after it go too); else the member and the comma after
    it, or, for the last member, the comma before it."""
    start, end = _span(members[k].key)[0], _span(members[k].value)[1]
    after = _skip_blank(text, end)
    comma_after = after < len(text) and text[after] == ","
    line_start = text.rfind("\n", 0, start) + 1
    rest = after + 1 if comma_after else end
    line_end = text.find("\n", rest)
    line_end = len(text) if line_end < 0 else line_end
    tail = text[rest:line_end].strip()
    if not text[line_start:start].strip() and (not tail or tail.startswith("//")):
        if not comma_after and k > 0:  # the last member: the comma before it would trail (VS Code takes it; JSON not)
            comma = _skip_blank(text, _span(members[k - 1].value)[1], comments=False)
            if text[comma : comma + 1] == "," and not text[comma + 1 : line_start].strip():
                return comma, line_end
        return line_start, min(len(text), line_end + 1)
    if comma_after and k == len(members) - 1:  # `"A": "x", "XLA_USE_BF16": "1",}`: the blanks before it go too
        return len(text[:start].rstrip(" \t")), after + 1
    if comma_after:
        return start, _skip_blank(text, after + 1, comments=False)
    if k > 0:
        return _span(members[k - 1].value)[1], end
    return start, end


def _skip_blank(text: str, at: int, comments: bool = True) -> int:
    """The first offset from ``at`` that is not a blank (nor, ``comments``, inside a comment)."""
    while at < len(text):
        if text[at].isspace():
            at += 1
        elif comments and text.startswith("//", at):
            newline = text.find("\n", at)
            at = len(text) if newline < 0 else newline
        elif comments and text.startswith("/*", at):
            close = text.find("*/", at + 2)
            at = len(text) if close < 0 else close + 2
        else:
            break
    return at


def line_comments(text: str) -> list[tuple[int, int, str]]:
    """The ``//`` comments of a ``launch.json`` as its tokenizer reads them (json-five's: a
    ``//`` inside a string is not one): ``(line, col, text)``, 1-based; none when it does not
    tokenize."""
    try:
        return [(tok.lineno, tok.colno + 1, tok.value) for tok in tokenize(text) if tok.type == "LINE_COMMENT"]
    except Exception:  # a file that does not tokenize is that file's error (analyze): no noqa read here
        return []


def reported_text(path: Path, text: str) -> list[Diagnostic]:
    """Findings for the parts of the file read but never rewritten: none, every mention in a
    ``launch.json`` is an entry or the planner's coverage check's."""
    return []
