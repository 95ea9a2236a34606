"""Dockerfiles (``Dockerfile``, ``Dockerfile.*``, ``*.dockerfile``), multi-stage.

Parsers: dockerfile-parse (maintained by the containerbuildsystem project; it splits the file
into instructions with their first and last lines, continuations and the ``# escape=``
directive included) for the instructions; tree-sitter-bash (see :mod:`.shell.walk`) for what is
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
  such a blank line, so it is given a comment line in its place (:func:`.dockerfile_syntax.continuations`), and
  the shell parser is given the instruction with those lines blanked out (same offsets).

A removed ``ENV`` pair takes the blanks and continuation after it; an ``ENV`` (or ``RUN``) left
empty is deleted with its lines. BuildKit heredocs (``RUN <<EOF``), the backquote escape
character and unknown instructions (``docker build`` rejects them) are not parsed: such a
file's mentions are reported (BFM131, with the reason and its line), never edited.
"""

from __future__ import annotations

import io
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dockerfile_parse import DockerfileParser

from ..command_lines import read_command
from .dockerfile_syntax import EnvPair, blanked, continuations, env_pairs, exec_form, has_heredoc, split_lf
from .model import (
    KEEP,
    REMOVE,
    REPLACE,
    SET,
    STOCHASTIC,
    Analysis,
    Blocker,
    CarrierError,
    Decision,
    Edit,
    Launch,
    LineIndex,
    Note,
    apply_edits,
    decide_together,
    same_effect,
)
from .shell import ShellFragment
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
    "FROM",
    "RUN",
    "CMD",
    "LABEL",
    "MAINTAINER",
    "EXPOSE",
    "ENV",
    "ADD",
    "COPY",
    "ENTRYPOINT",
    "VOLUME",
    "USER",
    "WORKDIR",
    "ARG",
    "ONBUILD",
    "STOPSIGNAL",
    "HEALTHCHECK",
    "SHELL",
    "COMMENT",
}


@dataclass(eq=False)
class _Command:
    """A ``RUN``, ``CMD`` or ``ENTRYPOINT``: its dockerfile-parse record, its exec-form words
    (None for the shell form), where its arguments start, and the launches of its shell form."""

    ins: dict
    exec: list[str] | None
    start: int
    launches: list[int] = field(default_factory=list)


class _Stage:
    def __init__(self, index: int, name: str | None, parent: _Stage | None) -> None:
        self.index = index
        self.name = name
        self.parent = parent
        self.env: list[tuple[int, int]] = []  # (char offset, entry id)
        self.sr = False
        self.cmd: _Command | None = None
        self.entrypoint: _Command | None = None
        self.entrypoint_reset = False

    def chain(self) -> Iterator[_Stage]:
        s: _Stage | None = self
        while s is not None:
            yield s
            s = s.parent


def analyze(text: str, path: str) -> Analysis:
    """Analyse a Dockerfile (see the module docstring) into an :class:`Analysis` of kind
    ``"dockerfile"``. Content it does not understand becomes BFM131 notes (and the file is then
    never edited); raises :class:`CarrierError` (``path:1:1: ...``) only when dockerfile-parse
    cannot split the file into instructions."""
    skipped, for_parser = continuations(text)
    try:
        structure = DockerfileParser(fileobj=io.BytesIO(for_parser.encode("utf-8"))).structure
    except Exception as exc:  # dockerfile-parse raises several kinds on malformed input
        raise CarrierError(f"{path}:1:1: cannot parse as a Dockerfile: {exc}") from None
    analysis = Analysis(KIND, text)
    degraded = _degraded(text, structure)
    if degraded is not None:
        _report_unparsed(analysis, degraded)
        return analysis
    reader = _Reader(analysis, path, skipped)
    for ins in structure:
        reader.instruction(ins)
    reader.container_commands()
    _never_in_force(analysis, reader.overridden)
    analysis.sr_present = reader.sr_stages = {("stage", s.index) for s in reader.stages if any(x.sr for x in s.chain())}
    analysis.sr_covered = reader.sr_covered
    analysis.render = reader.render
    return analysis


def _never_in_force(analysis: Analysis, overridden: dict[int, int]) -> None:
    """An ``ENV`` replaced before every launch it would reach never took effect: kept and
    reported (BFM092), with the setting that replaces it."""
    reached = {eid for launch in analysis.launches for eid in launch.reached_by}
    for eid, by in overridden.items():
        entry = analysis.entries[eid]
        if eid in reached or entry.problem is not None:
            continue
        other = analysis.entries[by]
        shown = f"{other.variable}={other.value}" if other.value is not None else other.variable
        entry.problem = (
            f"{entry.variable} is set again at line {other.line} ({shown}) before anything runs: this setting never "
            "took effect"
        )
        entry.blocker = Blocker.NEVER_IN_FORCE


def _degraded(text: str, structure: list[dict]) -> str | None:
    """Why the file is not parsed (an unknown instruction, a BuildKit heredoc, the backquote
    escape), as the end of a sentence; None when it is."""
    degraded = None
    for ins in structure:
        name = ins["instruction"]
        if name not in INSTRUCTIONS:
            degraded = f"has an unknown instruction ({name[:20]}, line {ins['startline'] + 1}; docker build rejects it)"
            break
        if name in ("RUN", "COPY", "ADD") and "<<" in ins["value"] and has_heredoc(ins["value"]):
            degraded = f"uses a BuildKit heredoc (line {ins['startline'] + 1})"
            break
    lines = text.splitlines(keepends=True)
    escape = [
        k
        for k, line in enumerate(lines[:5])
        if line.lstrip().lower().startswith("# escape=`") or line.replace(" ", "").lower() == "#escape=`\n"
    ]
    if escape:
        degraded = f"uses the backquote escape (line {escape[0] + 1})"
    return degraded


def _report_unparsed(analysis: Analysis, degraded: str) -> None:
    """Every mention of a variable in a file not parsed is a BFM131 note; the file renders as it is."""
    text = analysis.text
    index = LineIndex(text)
    for var, off in find_mentions(text, legacy_names()):
        line, col = index.pos(off)
        analysis.notes.append(
            Note.of(
                "BFM131",
                line,
                col,
                variable=var,
                where=f"in a Dockerfile that {degraded}, which bf16-migrate does not parse",
            )
        )
        analysis.handled.append((off, off + len(var)))
    analysis.render = lambda decisions, python=None: text


class _Reader:
    """The instructions of one Dockerfile read in order into ``analysis``: stages, ``ENV``
    pairs, ``RUN`` launches, then each stage's container command."""

    def __init__(self, analysis: Analysis, path: str, skipped: list[tuple[int, int]]) -> None:
        self.analysis = analysis
        self.text = analysis.text
        self.path = path
        self.skipped = skipped
        self.index = LineIndex(self.text)
        self.legacy = legacy_names()
        self.stages: list[_Stage] = []
        self.by_name: dict[str, _Stage] = {}
        self.stage: _Stage | None = None
        self.env_instructions: dict[int, list[EnvPair]] = {}  # instruction start -> its pairs
        self.fragments: list[
            tuple[int, int, ShellFragment, tuple[int, int]]
        ] = []  # (args start, args end, fragment, instruction span)
        self.sr_stages: set = set()
        self.overridden: dict[int, int] = {}  # an ENV replaced before a launch -> the entry that replaces it

    def ins_span(self, ins: dict) -> tuple[int, int]:
        """Character span of the whole instruction, its last line end included."""
        start = self.index.offset(ins["startline"] + 1)
        last = ins["endline"] + 1
        end = self.index.offset(last + 1) if last < len(self.index.starts) else len(self.text)
        return start, end

    def args_span(self, ins: dict) -> tuple[int, int]:
        """Character span of the instruction's arguments (after its keyword, before the line end)."""
        text = self.text
        start, end = self.ins_span(ins)
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

    # -- the instructions ---------------------------------------------------------------------
    def instruction(self, ins: dict) -> None:
        name = ins["instruction"]
        if name == "COMMENT":
            return
        if name == "FROM":
            self._from(ins)
            return
        if self.stage is None:
            return
        a0, a1 = self.args_span(ins)
        raw = blanked(self.text, a0, a1, self.skipped)  # what Docker reads: same offsets as text[a0:a1]
        if name == "ENV":
            self._env(ins, self.stage, raw, a0)
        elif name in ("RUN", "CMD", "ENTRYPOINT"):
            self._command(ins, self.stage, raw, a0, a1)

    def _from(self, ins: dict) -> None:
        words = [w for w in ins["value"].split() if not w.startswith("--")]
        image = words[0] if words else ""
        alias = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
        self.stage = _Stage(len(self.stages), alias, self.by_name.get(image.lower()))
        self.stages.append(self.stage)
        if alias:
            self.by_name[alias.lower()] = self.stage

    def _env(self, ins: dict, stage: _Stage, raw: str, a0: int) -> None:
        pairs = env_pairs(raw, a0)
        self.env_instructions[a0] = pairs
        for pair in pairs:
            if pair.name == STOCHASTIC:
                stage.sr = True
            if pair.name not in self.legacy:
                continue
            line, col = self.index.pos(pair.name_span[0])
            entry = self.analysis.new_entry(
                variable=pair.name, action=SET, value=pair.value, line=line, col=col, sr_scope=("stage", stage.index)
            )
            entry.group = None
            pair.entry = entry.id
            pair.ins = self.ins_span(ins)
            stage.env.append((a0, entry.id))
            self.analysis.handled.append(pair.name_span)

    def _command(self, ins: dict, stage: _Stage, raw: str, a0: int, a1: int) -> None:
        name = ins["instruction"]
        record = _Command(ins, exec_form(raw), a0)
        if record.exec is None:
            index = self.index
            frag = ShellFragment(
                raw,
                self.path,
                self.analysis,
                pos=lambda off: index.pos(a0 + off),
                embedded=True,
                base=a0,
                one_line=True,
            )
            self.fragments.append((a0, a1, frag, self.ins_span(ins)))
            record.launches = list(frag.launches)
        if name == "RUN":
            launches = (
                record.launches
                if record.exec is None
                else _exec_launch(self.analysis, record.exec, self.index.pos(a0), raw)
            )
            before = [eid for s in stage.chain() for pos, eid in s.env if s is not stage or pos < a0]
            for li in launches:
                self._reach(li, stage, before)
        elif name == "CMD":
            stage.cmd = record
        else:
            stage.entrypoint = record
            stage.cmd = None if stage.cmd is None or stage.cmd.start < a0 else stage.cmd
            stage.entrypoint_reset = True

    def container_commands(self) -> None:
        """The command each stage's container runs (``ENTRYPOINT`` and ``CMD``, inherited from
        the parent stages), reached by every ``ENV`` of the stage and its parents."""
        made: dict[tuple[int, int], list[int]] = {}
        for st in self.stages:
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
                made[key] = self._container_launches(ep, cmd)
            every = [eid for s in st.chain() for _, eid in s.env]
            for li in made[key]:
                self._reach(li, st, every)

    def _reach(self, li: int, stage: _Stage, allowed: list[int]) -> None:
        """The ``ENV`` settings of ``stage`` and its parents (those in ``allowed``) in force at
        launch ``li``: per variable the last one, parents first (a later ``ENV`` replaces an
        earlier one), unless the launch's own shell command sets it (``X=0 python ...``),
        which is nearer. An ``ENV`` replaced so is decided together with what replaces it."""
        keep = set(allowed)
        ordered = [eid for s in reversed(list(stage.chain())) for _, eid in s.env if eid in keep]
        entries = self.analysis.entries
        launch = self.analysis.launches[li]
        if launch.isolated:
            return  # `env -i`: no ENV reaches it
        last: dict[str, int] = {}
        for eid in ordered:
            last[entries[eid].variable] = eid
        own = {entries[e].variable: e for e in launch.reached_by}
        for eid in ordered:
            variable = entries[eid].variable
            nearer = own.get(variable, last[variable])
            if nearer == eid or same_effect(entries[eid], entries[nearer]):
                launch.reached_by.setdefault(eid, True)  # in force, or replaced by the same value
                continue
            decide_together(entries, eid, nearer)
            if variable not in own:  # a later ENV: this one is never the image's value
                self.overridden.setdefault(eid, nearer)

    def _container_launches(self, ep: _Command | None, cmd: _Command | None) -> list[int]:
        if ep is not None and ep.exec is not None:
            words = ep.exec + (cmd.exec if cmd is not None and cmd.exec is not None else [])
            src = cmd if cmd is not None and cmd.exec is not None and len(ep.exec) < 2 else ep
            return _exec_launch(
                self.analysis, words, self.index.pos(src.start), self.text[src.start : self.args_span(src.ins)[1]]
            )
        if ep is not None:
            return ep.launches
        assert cmd is not None, "a stage with neither ENTRYPOINT nor CMD starts nothing"
        if cmd.exec is not None:
            return _exec_launch(
                self.analysis, cmd.exec, self.index.pos(cmd.start), self.text[cmd.start : self.args_span(cmd.ins)[1]]
            )
        return cmd.launches

    def sr_covered(self, scope: Hashable) -> bool:
        """Whether ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` is set where ``scope`` is: by an ``ENV``
        of the stage (or a parent) or in the same shell form."""
        if scope in self.sr_stages:
            return True
        return any(f.sr_covered(scope) for _, _, f, _ in self.fragments)

    # -- rendering ----------------------------------------------------------------------------
    def render(self, decisions: Mapping[int, Decision], python: str | None = None) -> str:
        """The new text for ``decisions`` (a Dockerfile holds no Python of its own: ``python``
        is unused): ``ENV`` pairs renamed or removed, shell forms edited by :mod:`.shell.render`;
        an ``ENV`` or ``RUN`` left empty goes with its lines."""
        edits: list[Edit] = []
        for pairs in self.env_instructions.values():
            edits.extend(self._env_edits(pairs, decisions))
        text = self.text
        for a0, a1, frag, (s, e) in self.fragments:
            fe = frag.edits(decisions)
            if not fe:
                continue
            new = apply_edits(frag.text, fe)
            if not new.replace("\\\n", "").strip() or new.strip() == ":":
                edits.append(Edit(s, e, ""))
            else:  # the edits in the file's own text, with the comment lines Docker skips
                edits.append(Edit(a0, a1, apply_edits(text[a0:a1], fe)))
        return apply_edits(text, edits)

    def _env_edits(self, pairs: list[EnvPair], decisions: Mapping[int, Decision]) -> list[Edit]:
        text = self.text
        chosen = {p.entry: decisions.get(p.entry, KEEP) for p in pairs if p.entry is not None}
        if not chosen or all(v == KEEP for v in chosen.values()):
            return []
        removed = [p for p in pairs if p.entry is not None and chosen.get(p.entry) == REMOVE]
        if len(removed) == len(pairs):
            assert pairs[0].ins is not None, "a removed pair is a legacy one, with its instruction"
            return [Edit(pairs[0].ins[0], pairs[0].ins[1], "")]
        edits: list[Edit] = []
        for p in pairs:
            if p.entry is not None and chosen.get(p.entry, KEEP) == REPLACE:
                edits.append(Edit(p.name_span[0], p.name_span[1], STOCHASTIC))
                vraw = text[p.value_span[0] : p.value_span[1]]
                q = vraw[:1] if vraw[:1] in ("'", '"') and len(vraw) >= 2 and vraw.endswith(vraw[:1]) else ""
                if p.value_span[0] == p.value_span[1] and not p.old:
                    edits.append(Edit(p.value_span[0], p.value_span[0], "1"))
                else:
                    edits.append(Edit(p.value_span[0], p.value_span[1], f"{q}1{q}"))
        i = 0
        while i < len(pairs):
            if pairs[i] not in removed:
                i += 1
                continue
            j = i
            while j + 1 < len(pairs) and pairs[j + 1] in removed:
                j += 1
            if j + 1 < len(pairs):
                edits.append(Edit(pairs[i].span[0], pairs[j + 1].span[0], ""))
            else:
                edits.append(Edit(pairs[i - 1].span[1], pairs[j].span[1], ""))
            i = j + 1
        return edits


def _exec_launch(analysis: Analysis, words: list[str], pos: tuple[int, int], raw: str) -> list[int]:
    """The launch of an exec-form command (its ``words``, all static) as a list of launch
    indices: one when it starts Python, none otherwise."""
    static: list[str | None] = list(words)
    cmd = read_command(static)
    if not (cmd.python or cmd.target is not None):
        return []
    analysis.launches.append(
        Launch(
            pos[0],
            pos[1],
            raw.strip().split("\n")[0][:100],
            cmd.target,
            cmd.problem,
            args=list(cmd.args),
            isolated=cmd.isolated,
        )
    )
    return [len(analysis.launches) - 1]


def instruction_lines(text: str) -> list[tuple[int, int, list[int]]]:
    """The instructions of a Dockerfile as ``(first line, last line, comment lines above)``,
    1-based: the lines an instruction spans (its ``\\`` continuations included, as
    dockerfile-parse splits the file after :func:`.dockerfile_syntax.continuations`), and the comment lines
    directly above its first line (each a line whose first non-blank character is ``#``, going
    up to the first line that is not one; a comment line inside another instruction's
    continuation is that instruction's). In Dockerfile syntax a comment is a whole line
    (Dockerfile reference, "Format": a ``#`` elsewhere is an argument), so this is where a
    ``# noqa`` for an instruction can be, as hadolint reads its ``# hadolint ignore=DL3008``
    pragma on the line before the instruction (hadolint's README, "Inline ignores").
    Empty when dockerfile-parse cannot split the file."""
    _skipped, for_parser = continuations(text)
    try:
        structure = DockerfileParser(fileobj=io.BytesIO(for_parser.encode("utf-8"))).structure
    except Exception:  # dockerfile-parse raises several kinds on malformed input
        return []
    lines = split_lf(text)
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
