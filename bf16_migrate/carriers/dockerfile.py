"""Dockerfiles (``Dockerfile``, ``Dockerfile.*``, ``*.dockerfile``), multi-stage.

Parsers: dockerfile-parse (maintained by the containerbuildsystem project; it splits the file
into instructions with their first and last lines, continuations and the ``# escape=``
directive included) for the instructions; tree-sitter-bash (see :mod:`.shell`) for what is
inside them: the ``KEY=VALUE`` pairs of ``ENV`` (several per instruction, over ``\\``
continuations, quoted or not), and the shell forms of ``RUN``, ``CMD`` and ``ENTRYPOINT``.

Rules (Dockerfile reference, docs.docker.com/reference/dockerfile):

* ``ENV K=V K2=V2`` and the old ``ENV K V`` (the value is the rest of the line) set the variable
  for the rest of the stage, for the stages built ``FROM`` it, and for the container at run
  time; so an ``ENV`` reaches the ``RUN`` launches after it and the stage's ``CMD`` /
  ``ENTRYPOINT`` wherever they are.
* The command a container runs is the exec-form ``ENTRYPOINT`` followed by the exec-form
  ``CMD``, or the shell form of either (run by ``/bin/sh -c``); both are inherited from the
  parent stage, and an ``ENTRYPOINT`` of a stage resets the inherited ``CMD``.
* A shell-form ``RUN``/``CMD`` is a shell script: exports and ``VAR=1 cmd`` prefixes in it are
  entries of this file.
* Inside a ``\\`` continuation, a comment line (``#`` its first non-blank character) and an
  empty (blank) line are skipped, the continuation going on after them (the reference's
  "Format" section: comment lines are removed before the instructions run; Docker warns
  "Empty continuation line found" for the blank one). dockerfile-parse ends the instruction at
  such a blank line, so it is given a comment line in its place (:func:`_continuations`), and
  the shell parser is given the instruction with those lines blanked out (same offsets).

A removed ``ENV`` pair takes the blanks and continuation after it; an ``ENV`` (or ``RUN``) left
empty is deleted with its lines. BuildKit heredocs (``RUN <<EOF``), the backquote escape
character and unknown instructions (``docker build`` rejects them) are not parsed: such a
file's mentions are reported (BFM131, with the reason and its line), never edited.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from dockerfile_parse import DockerfileParser

from .launch import read_command
from .model import KEEP, REMOVE, REPLACE, SET, STOCHASTIC, Analysis, CarrierError, Decision, Edit, Launch, LineIndex, Note, apply_edits
from .shell_fragment import ShellFragment
from .shell_words import parser, static_value
from .text import find_mentions, legacy_names

if TYPE_CHECKING:
    from pathlib import Path

    from ..diagnostics import Diagnostic

# the Carrier protocol (bf16_migrate.carriers): its kind and how the planner treats its files
KIND = "dockerfile"
INCLUDES = True
INCLUDED_ONLY = False
OWN_COVERAGE = False

INSTRUCTIONS = {
    "FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
    "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL", "COMMENT",
}


class _Stage:
    def __init__(self, index: int, name: str | None, parent: _Stage | None) -> None:
        self.index = index
        self.name = name
        self.parent = parent
        self.env: list[tuple[int, int]] = []  # (char offset, entry id)
        self.sr = False
        self.cmd = None  # (instruction record)
        self.entrypoint = None
        self.entrypoint_reset = False

    def chain(self):
        s = self
        while s is not None:
            yield s
            s = s.parent


def analyze(text: str, path: str) -> Analysis:
    """Analyse a Dockerfile (see the module docstring). Content it does not understand becomes
    BFM131 diagnostics; raises :class:`CarrierError` only when dockerfile-parse cannot split the
    file into instructions."""
    analysis = Analysis(KIND, text)
    index = LineIndex(text)
    lines = text.splitlines(keepends=True)
    legacy = legacy_names()
    skipped, for_parser = _continuations(text)
    try:
        structure = DockerfileParser(fileobj=io.BytesIO(for_parser.encode("utf-8"))).structure
    except Exception as exc:  # dockerfile-parse raises several kinds on malformed input
        raise CarrierError(f"{path}:1:1: cannot parse as a Dockerfile: {exc}") from None
    degraded = None
    for ins in structure:
        name = ins["instruction"]
        if name not in INSTRUCTIONS:
            degraded = f"has an unknown instruction ({name[:20]}, line {ins['startline'] + 1}; docker build rejects it)"
            break
        if name in ("RUN", "COPY", "ADD") and "<<" in ins["value"] and _heredoc(ins["value"]):
            degraded = f"uses a BuildKit heredoc (line {ins['startline'] + 1})"
            break
    escape = [k for k, line in enumerate(lines[:5]) if line.lstrip().lower().startswith("# escape=`") or line.replace(" ", "").lower() == "#escape=`\n"]
    if escape:
        degraded = f"uses the backquote escape (line {escape[0] + 1})"
    if degraded is not None:
        for var, off in find_mentions(text, legacy):
            line, col = index.pos(off)
            analysis.notes.append(Note("BFM131", line, col, f"{var} is named in a Dockerfile that {degraded}, which bf16-migrate does not parse: edit it by hand"))
            analysis.handled.append((off, off + len(var)))
        analysis.render = lambda decisions, python=None: text
        return analysis

    stages: list[_Stage] = []
    by_name: dict[str, _Stage] = {}
    edits_for: dict[int, object] = {}  # entry id -> env pair record
    env_instructions: dict[int, list] = {}  # instruction start -> [pair records]
    fragments: list[tuple[int, int, ShellFragment, tuple[int, int]]] = []  # (args start, args end, fragment, instruction span)

    def ins_span(ins) -> tuple[int, int]:
        start = index.offset(ins["startline"] + 1)
        last = ins["endline"] + 1
        end = index.offset(last + 1) if last < len(index.starts) else len(text)
        return start, end

    def args_span(ins) -> tuple[int, int]:
        start, end = ins_span(ins)
        k = start
        while k < end and text[k] in " \t":
            k += 1
        k += len(ins["instruction"])
        while k < end and text[k] in " \t":
            k += 1
        e = end
        while e > k and text[e - 1] in "\r\n":
            e -= 1
        return k, e

    stage: _Stage | None = None
    for ins in structure:
        name = ins["instruction"]
        if name == "COMMENT":
            continue
        if name == "FROM":
            words = ins["value"].split()
            words = [w for w in words if not w.startswith("--")]
            image = words[0] if words else ""
            alias = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
            parent = by_name.get(image.lower())
            stage = _Stage(len(stages), alias, parent)
            stages.append(stage)
            if alias:
                by_name[alias.lower()] = stage
            continue
        if stage is None:
            continue
        a0, a1 = args_span(ins)
        raw = _blanked(text, a0, a1, skipped)  # what Docker reads: same offsets as text[a0:a1]
        if name == "ENV":
            pairs = _env_pairs(raw, a0)
            env_instructions[a0] = pairs
            for pair in pairs:
                if pair["name"] == STOCHASTIC:
                    stage.sr = True
                if pair["name"] not in legacy:
                    continue
                line, col = index.pos(pair["name_span"][0])
                entry = analysis.new_entry(variable=pair["name"], action=SET, value=pair["value"], line=line, col=col, sr_scope=("stage", stage.index))
                entry.group = None
                pair["entry"] = entry.id
                pair["ins"] = ins_span(ins)
                pair["all"] = pairs
                edits_for[entry.id] = pair
                stage.env.append((a0, entry.id))
                analysis.handled.append(pair["name_span"])
            continue
        if name in ("RUN", "CMD", "ENTRYPOINT"):
            exec_words = _exec_form(raw)
            record = {"ins": ins, "exec": exec_words, "start": a0, "launches": []}
            if exec_words is None:
                frag = ShellFragment(raw, path, analysis, pos=lambda off, a0=a0: index.pos(a0 + off), embedded=True, base=a0)
                fragments.append((a0, a1, frag, ins_span(ins)))
                record["launches"] = list(frag.my_launches)
                record["frag"] = frag
            if name == "RUN":
                launches = record["launches"]
                if exec_words is not None:
                    launches = _exec_launch(analysis, exec_words, index.pos(a0), raw)
                for li in launches:
                    for s in stage.chain():
                        for pos, eid in s.env:
                            if s is not stage or pos < a0:
                                analysis.launches[li].reached_by.setdefault(eid, True)
            elif name == "CMD":
                stage.cmd = record
            else:
                stage.entrypoint = record
                stage.cmd = None if stage.cmd is None or stage.cmd["start"] < a0 else stage.cmd
                stage.entrypoint_reset = True
    # the container command of every stage
    made: dict = {}
    for st in stages:
        ep, cmd = None, None
        for s in st.chain():
            if ep is None and s.entrypoint is not None:
                ep = s.entrypoint
            if cmd is None and s.cmd is not None:
                cmd = s.cmd
            if s.entrypoint_reset:
                break
        if ep is None and cmd is None:
            continue
        key = (id(ep), id(cmd))
        if key not in made:
            if ep is not None and ep["exec"] is not None:
                words = ep["exec"] + (cmd["exec"] if cmd is not None and cmd["exec"] is not None else [])
                src = cmd if cmd is not None and cmd["exec"] is not None and len(ep["exec"]) < 2 else ep
                made[key] = _exec_launch(analysis, words, index.pos(src["start"]), text[src["start"]:args_span(src["ins"])[1]])
            elif ep is not None:
                made[key] = ep["launches"]
            elif cmd["exec"] is not None:
                made[key] = _exec_launch(analysis, cmd["exec"], index.pos(cmd["start"]), text[cmd["start"]:args_span(cmd["ins"])[1]])
            else:
                made[key] = cmd["launches"]
        for li in made[key]:
            for s in st.chain():
                for _, eid in s.env:
                    analysis.launches[li].reached_by.setdefault(eid, True)
    sr_stages = {("stage", s.index) for s in stages if any(x.sr for x in s.chain())}
    analysis.sr_present = sr_stages

    def sr_covered(scope) -> bool:
        if scope in sr_stages:
            return True
        return any(f.sr_covered(scope) for _, _, f, _ in fragments)

    analysis.sr_covered = sr_covered

    def render(decisions: Mapping[int, Decision], python: str | None = None) -> str:
        edits: list[Edit] = []
        for pairs in env_instructions.values():
            chosen = {p["entry"]: decisions.get(p["entry"], KEEP) for p in pairs if "entry" in p}
            if not chosen or all(v == KEEP for v in chosen.values()):
                continue
            removed = [p for p in pairs if chosen.get(p.get("entry")) == REMOVE]
            if len(removed) == len(pairs):
                s, e = pairs[0]["ins"]
                edits.append(Edit(s, e, ""))
                continue
            for p in pairs:
                d = chosen.get(p.get("entry"), KEEP)
                if d == REPLACE:
                    edits.append(Edit(*p["name_span"], STOCHASTIC))
                    vraw = text[p["value_span"][0]:p["value_span"][1]]
                    q = vraw[:1] if vraw[:1] in ("'", '"') and len(vraw) >= 2 and vraw.endswith(vraw[:1]) else ""
                    if p["value_span"][0] == p["value_span"][1] and not p["old"]:
                        edits.append(Edit(p["value_span"][0], p["value_span"][0], "1"))
                    else:
                        edits.append(Edit(*p["value_span"], f"{q}1{q}"))
            i = 0
            while i < len(pairs):
                if pairs[i] not in removed:
                    i += 1
                    continue
                j = i
                while j + 1 < len(pairs) and pairs[j + 1] in removed:
                    j += 1
                if j + 1 < len(pairs):
                    edits.append(Edit(pairs[i]["span"][0], pairs[j + 1]["span"][0], ""))
                else:
                    edits.append(Edit(pairs[i - 1]["span"][1], pairs[j]["span"][1], ""))
                i = j + 1
        for a0, a1, frag, (s, e) in fragments:
            fe = frag.edits(decisions)
            if not fe:
                continue
            new = apply_edits(frag.text, fe)
            if not new.replace("\\\n", "").strip() or new.strip() == ":":
                edits.append(Edit(s, e, ""))
            else:  # the edits in the file's own text, with the comment lines Docker skips
                edits.append(Edit(a0, a1, apply_edits(text[a0:a1], fe)))
        return apply_edits(text, edits)

    analysis.render = render
    return analysis


def _continuations(text: str) -> tuple[list[tuple[int, int]], str]:
    """Read the ``\\`` line continuations of a Dockerfile as Docker does.

    Returns the character spans (line end included) of the lines Docker skips inside a
    continuation, and ``text`` with each of those that is blank turned into a ``#`` comment
    line, for dockerfile-parse. Docker's Dockerfile reference ("Format"): comment lines are
    removed before the instructions run, also inside a continuation (its example
    ``RUN echo hello \\`` / ``# comment`` / ``world``); a blank line there is skipped with the
    warning "Empty continuation line found" and the continuation goes on after it (Docker's
    build check NoEmptyContinuation, docs.docker.com/reference/build-checks/no-empty-continuation;
    dockerfile-parse ends the instruction there instead). A line continues when its last
    character other than spaces and tabs is the escape character; a skipped line neither
    continues nor ends the instruction.
    """
    skipped: list[tuple[int, int]] = []
    out: list[str] = []
    offset = 0
    continued = False
    for line in _split_lf(text):
        body = line.rstrip("\r\n")
        blank = not body.strip()
        comment = body.lstrip().startswith("#")
        if continued and (blank or comment):
            skipped.append((offset, offset + len(line)))
            out.append("#" + line[len(body):] if blank else line)
        else:
            if not comment:  # a comment line outside a continuation starts none
                continued = body.rstrip(" \t").endswith("\\")
            out.append(line)
        offset += len(line)
    return skipped, "".join(out)


def _split_lf(text: str) -> list[str]:
    """``text`` in lines, each with its ``\\n`` (Docker and dockerfile-parse end a line there
    only: a ``\\r`` before it is part of the line end, a form feed is not one)."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _blanked(text: str, start: int, end: int, skipped: list[tuple[int, int]]) -> str:
    """``text[start:end]`` with the characters of the ``skipped`` spans in it made spaces (line
    ends included), so that a shell parser reads the continuation as Docker joins it while
    every offset stays that of ``text``."""
    raw = text[start:end]
    for s, e in skipped:
        if s < end and e > start:
            s, e = max(s, start), min(e, end)
            raw = raw[: s - start] + " " * (e - s) + raw[e - start:]
    return raw


def _heredoc(value: str) -> bool:
    k = value.find("<<")
    while k >= 0:
        rest = value[k + 2:].lstrip("-").lstrip("'\"")
        if rest[:1].isalpha() or rest[:1] == "_":
            return True
        k = value.find("<<", k + 2)
    return False


def _exec_form(raw: str) -> list[str] | None:
    """The words of an exec-form (JSON array) instruction, None for the shell form (Docker
    runs an argument that is not a valid JSON array of strings as a shell command)."""
    s = raw.strip()
    if not s.startswith("["):
        return None
    try:
        words = json.loads(s.replace("\\\n", ""))
    except ValueError:
        return None
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        return None
    return words


def _exec_launch(analysis: Analysis, words: list[str], pos: tuple[int, int], raw: str) -> list[int]:
    cmd = read_command(words)
    if not (cmd.python or cmd.target is not None):
        return []
    analysis.launches.append(Launch(pos[0], pos[1], raw.strip().split("\n")[0][:100], cmd.target, cmd.problem, args=list(cmd.args)))
    return [len(analysis.launches) - 1]


def _env_pairs(raw: str, base: int) -> list[dict]:
    """The ``KEY=VALUE`` pairs of an ``ENV`` instruction's arguments ``raw`` (which start at
    character ``base`` of the file), each with the spans of its name, value and whole word."""
    data = raw.encode("utf-8")
    from .model import ByteMap

    bm = ByteMap(raw)
    tree = parser().parse(data)
    root = tree.root_node
    stmt = root.named_children[0] if root.named_children else None
    pairs = []
    if stmt is None:
        return pairs
    assigns = []
    if stmt.type == "variable_assignment":
        assigns = [stmt]
    elif stmt.type == "variable_assignments":
        assigns = [c for c in stmt.named_children if c.type == "variable_assignment"]
    if assigns and not root.has_error and len(root.named_children) == 1:
        for a in assigns:
            n = a.child_by_field_name("name")
            v = a.child_by_field_name("value")
            name = data[n.start_byte:n.end_byte].decode()
            if v is None:
                value, vspan = "", (bm.char(n.end_byte) + 1, bm.char(n.end_byte) + 1)
            else:
                value, vspan = static_value(v, data), (bm.char(v.start_byte), bm.char(v.end_byte))
            pairs.append({
                "name": name, "value": value, "old": False,
                "name_span": (base + bm.char(n.start_byte), base + bm.char(n.end_byte)),
                "value_span": (base + vspan[0], base + vspan[1]),
                "span": (base + bm.char(a.start_byte), base + bm.char(a.end_byte)),
            })
        return pairs
    # the old form: ENV KEY the rest of the line
    k = 0
    while k < len(raw) and not raw[k].isspace():
        k += 1
    key = raw[:k]
    rest_start = k
    while rest_start < len(raw) and raw[rest_start] in " \t\\\n":
        rest_start += 1
    value_raw = raw[rest_start:].rstrip()
    value = value_raw
    if value_raw[:1] in ("'", '"') and value_raw.endswith(value_raw[:1]) and len(value_raw) >= 2:
        value = value_raw[1:-1]
    if "$" in value_raw or "\\\n" in value_raw or "=" in key:
        value = None
    pairs.append({
        "name": key, "value": value, "old": True,
        "name_span": (base, base + len(key)),
        "value_span": (base + rest_start, base + rest_start + len(value_raw)),
        "span": (base, base + len(raw)),
    })
    return pairs


def instruction_lines(text: str) -> list[tuple[int, int, list[int]]]:
    """The instructions of a Dockerfile as ``(first line, last line, comment lines above)``,
    1-based: the lines an instruction spans (its ``\\`` continuations included, as
    dockerfile-parse splits the file after :func:`_continuations`), and the comment lines
    directly above its first line (each a line whose first non-blank character is ``#``, going
    up to the first line that is not one; a comment line inside another instruction's
    continuation is that instruction's). In Dockerfile syntax a comment is a whole line
    (Dockerfile reference, "Format": a ``#`` elsewhere is an argument), so this is where a
    ``# noqa`` for an instruction can be, as hadolint reads its ``# hadolint ignore=DL3008``
    pragma on the line before the instruction (hadolint's README, "Inline ignores").
    Empty when dockerfile-parse cannot split the file."""
    _skipped, for_parser = _continuations(text)
    try:
        structure = DockerfileParser(fileobj=io.BytesIO(for_parser.encode("utf-8"))).structure
    except Exception:  # dockerfile-parse raises several kinds on malformed input
        return []
    lines = _split_lf(text)
    spans = [(ins["startline"], ins["endline"]) for ins in structure if ins["instruction"] != "COMMENT"]
    inside = {k for first, last in spans for k in range(first, last + 1)}
    out = []
    for first, last in spans:
        above = []
        k = first - 1
        while k >= 0 and k not in inside and lines[k].lstrip().startswith("#"):
            above.append(k + 1)
            k -= 1
        out.append((first + 1, last + 1, sorted(above)))
    return out


def reported_text(path: Path, text: str) -> list[Diagnostic]:
    """Findings for the parts of the file read but never rewritten: none, every mention in a
    dockerfile file is an entry, a note or the planner's coverage check."""
    return []
