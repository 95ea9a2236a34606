"""Dockerfile syntax below the instructions: line continuations as Docker reads them, the
exec form, BuildKit heredocs and the pairs of an ``ENV`` (Dockerfile reference,
docs.docker.com/reference/dockerfile: "Format", "Shell and exec form", "ENV", "Here-Documents").

dockerfile-parse splits a file into instructions; what it leaves to its caller is here, for
:mod:`.dockerfile` (and :func:`.dockerfile.instruction_lines`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .model import ByteMap
from .shell.words import parse, static_value


@dataclass(eq=False)
class EnvPair:
    """One ``KEY=VALUE`` of an ``ENV`` instruction: character spans (of the file) of its name,
    its value as written and the whole pair; ``old`` for the ``ENV KEY value`` form. ``entry``
    and ``ins`` (the instruction's span) are set for a legacy variable's pair."""

    name: str
    value: str | None
    old: bool
    name_span: tuple[int, int]
    value_span: tuple[int, int]
    span: tuple[int, int]
    entry: int | None = None
    ins: tuple[int, int] | None = None


def continuations(text: str) -> tuple[list[tuple[int, int]], str]:
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
    for line in split_lf(text):
        body = line.rstrip("\r\n")
        blank = not body.strip()
        comment = body.lstrip().startswith("#")
        if continued and (blank or comment):
            skipped.append((offset, offset + len(line)))
            out.append("#" + line[len(body) :] if blank else line)
        else:
            if not comment:  # a comment line outside a continuation starts none
                continued = body.rstrip(" \t").endswith("\\")
            out.append(line)
        offset += len(line)
    return skipped, "".join(out)


def split_lf(text: str) -> list[str]:
    """``text`` in lines, each with its ``\\n`` (Docker and dockerfile-parse end a line there
    only: a ``\\r`` before it is part of the line end, a form feed is not one)."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def blanked(text: str, start: int, end: int, skipped: list[tuple[int, int]]) -> str:
    """``text[start:end]`` with the characters of the ``skipped`` spans in it made spaces (line
    ends included), so that a shell parser reads the continuation as Docker joins it while
    every offset stays that of ``text``."""
    raw = text[start:end]
    for s, e in skipped:
        if s < end and e > start:
            s, e = max(s, start), min(e, end)
            raw = raw[: s - start] + " " * (e - s) + raw[e - start :]
    return raw


def has_heredoc(value: str) -> bool:
    """Whether an instruction's ``value`` opens a BuildKit heredoc (``<<EOF``, ``<<-"EOF"``)."""
    k = value.find("<<")
    while k >= 0:
        rest = value[k + 2 :].lstrip("-").lstrip("'\"")
        if rest[:1].isalpha() or rest[:1] == "_":
            return True
        k = value.find("<<", k + 2)
    return False


def exec_form(raw: str) -> list[str] | None:
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


def env_pairs(raw: str, base: int) -> list[EnvPair]:
    """The ``KEY=VALUE`` pairs of an ``ENV`` instruction's arguments ``raw`` (which start at
    character ``base`` of the file), each with the spans of its name, value and whole word."""
    data = raw.encode("utf-8")
    bm = ByteMap(raw)
    tree = parse(data)
    root = tree.root_node
    stmt = root.named_children[0] if root.named_children else None
    pairs: list[EnvPair] = []
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
            assert n is not None, "tree-sitter-bash gives every variable_assignment its name"
            name = data[n.start_byte : n.end_byte].decode()
            value: str | None
            if v is None:
                value, vspan = "", (bm.char(n.end_byte) + 1, bm.char(n.end_byte) + 1)
            else:
                value, vspan = static_value(v, data), (bm.char(v.start_byte), bm.char(v.end_byte))
            pairs.append(
                EnvPair(
                    name,
                    value,
                    False,
                    name_span=(base + bm.char(n.start_byte), base + bm.char(n.end_byte)),
                    value_span=(base + vspan[0], base + vspan[1]),
                    span=(base + bm.char(a.start_byte), base + bm.char(a.end_byte)),
                )
            )
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
    old_value: str | None = value_raw
    if value_raw[:1] in ("'", '"') and value_raw.endswith(value_raw[:1]) and len(value_raw) >= 2:
        old_value = value_raw[1:-1]
    if "$" in value_raw or "\\\n" in value_raw or "=" in key:
        old_value = None
    pairs.append(
        EnvPair(
            key,
            old_value,
            True,
            name_span=(base, base + len(key)),
            value_span=(base + rest_start, base + rest_start + len(value_raw)),
            span=(base, base + len(raw)),
        )
    )
    return pairs
