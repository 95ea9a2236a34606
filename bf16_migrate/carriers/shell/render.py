"""Rendering a shell fragment: the decisions of the plan (entry id -> remove/replace/keep) as
character edits of its text.

A removed word takes the blanks (and ``\\`` continuations) up to the next word with it, so
``XLA_USE_BF16=1 \\`` + newline + ``  torchrun ...`` becomes ``  torchrun ...`` on its line; a
statement left empty is deleted with its line, or becomes ``:`` where bash needs a command
(``then``/``else``/``do``/``{ }`` bodies, ``&&`` lists: bash(1), "SHELL GRAMMAR"). A replaced
entry keeps its place, renamed to ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` with the value ``1``.
"""

from __future__ import annotations

from collections.abc import Mapping

import tree_sitter

from .. import dotenv
from ..model import KEEP, REPLACE, STOCHASTIC, Decision, Edit, line_span
from .parsed import EntryData, ParsedFragment, ShellSource, statement_of
from .slurm import list_edits

STATEMENTS = {
    "command",
    "declaration_command",
    "unset_command",
    "variable_assignment",
    "variable_assignments",
    "redirected_statement",
    "list",
    "pipeline",
    "subshell",
    "compound_statement",
    "if_statement",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "case_statement",
    "function_definition",
    "negated_command",
    "test_command",
}
NEEDS_COMMAND = {
    "if_statement",
    "elif_clause",
    "else_clause",
    "while_statement",
    "do_group",
    "compound_statement",
    "subshell",
}
KEYWORDS = {
    "if",
    "then",
    "elif",
    "else",
    "fi",
    "do",
    "done",
    "{",
    "}",
    "(",
    ")",
    "in",
    "esac",
    "case",
    "while",
    "until",
    "for",
}


def edits(parsed: ParsedFragment, decisions: Mapping[int, Decision]) -> list[Edit]:
    """The edits (character offsets of the fragment's text) that carry out ``decisions`` (entry
    id -> decision) for ``parsed``'s entries (missing or ``keep``: left as is)."""
    source = parsed.source
    remove_words: dict[int, list] = {}  # owner id -> word nodes removed
    owners: dict[int, tuple[tree_sitter.Node, EntryData]] = {}
    edits: list[Edit] = []
    sites = {id(d.export): d.export for d in parsed.entry_data.values() if d.export is not None}
    for site in sites.values():  # a Slurm --export list: rewritten as a whole (its other items kept)
        edits.extend(list_edits(site, decisions, source.bm.char))
    for eid in parsed.entries:
        decision = decisions.get(eid, KEEP)
        d = parsed.entry_data[eid]
        if decision == KEEP or d.kind == "exportitem":
            continue
        if d.kind == "dotenv":
            assert d.dotenv is not None, "a dotenv entry carries its item"
            start_c, item = d.dotenv
            edits.extend(Edit(start_c + e.start, start_c + e.end, e.new) for e in dotenv.item_edits(item, decision))
            continue
        if decision == REPLACE:
            edits.extend(_rename(source, d))
            continue
        owner = d.decl if d.kind in ("decl", "decl-name", "unset", "assign") else d.owner
        assert owner is not None, "every entry but a dotenv one has its statement or command"
        owners[owner.id] = (owner, d)
        remove_words.setdefault(owner.id, []).extend(d.words)
    statements_removed = []
    for oid, (owner, d) in owners.items():
        gone = {w.id for w in remove_words[oid]}
        if d.kind in ("decl", "decl-name", "unset", "assign"):
            all_words = (
                [
                    c
                    for c in owner.named_children
                    if c.type in ("variable_assignment", "variable_name")
                    or (c.type == "word" and not source.t(c).startswith("-"))
                ]
                if owner.type != "variable_assignment"
                else [owner]
            )
            keepers = [w for w in all_words if w.id not in gone]
            if not keepers:
                statements_removed.append(statement_of(owner))
                continue
            seq = [c for c in owner.named_children] if owner.type != "variable_assignment" else [owner]
        else:
            seq = sorted(d.all_words, key=lambda n: n.start_byte)
        edits.extend(_remove_words(source, seq, gone))
    edits.extend(_remove_statements(source, statements_removed))
    return edits


def _span(source: ShellSource, a: int, b: int, new: str) -> Edit:
    return Edit(source.bm.char(a), source.bm.char(b), new)


def _rename(source: ShellSource, d: EntryData) -> list[Edit]:
    out = []
    if d.kind == "envword" and d.whole is not None and d.name is None:
        return [_span(source, *d.whole, f"{d.quote}{d.prefix}{STOCHASTIC}=1{d.quote}")]
    if d.name is not None:
        out.append(_span(source, *d.name, STOCHASTIC))
    if d.kind == "envword" and d.value is None and d.whole is not None:
        raw = source.t(d.whole)
        eq = raw.find("=", len(d.quote) + len(d.prefix))
        if eq >= 0:
            tail_quote = d.quote if raw.endswith(d.quote) and d.quote else ""
            start = d.whole[0] + len(raw[: eq + 1].encode())
            end = d.whole[1] - len(tail_quote.encode())
            value_raw = source.data[start:end].decode("utf-8")
            q = (
                value_raw[:1]
                if value_raw[:1] in ("'", '"') and len(value_raw) >= 2 and value_raw.endswith(value_raw[:1])
                else ""
            )
            out.append(_span(source, start, end, f"{q}1{q}"))
    if d.value is not None:
        raw = source.t(d.value)
        q = raw[:1] if raw[:1] in ("'", '"') and raw.endswith(raw[:1]) and len(raw) >= 2 else ""
        out.append(_span(source, *d.value, f"{q}1{q}"))
    elif d.kind in ("decl", "assign", "prefix"):
        assert d.name is not None, "these kinds always carry the name's span"
        end = d.name[1] + 1  # `X=` with no value
        out.append(_span(source, end, end, "1"))
    return out


def _remove_words(source: ShellSource, seq: list, gone: set) -> list[Edit]:
    out = []
    i = 0
    while i < len(seq):
        if seq[i].id not in gone:
            i += 1
            continue
        j = i
        while j + 1 < len(seq) and seq[j + 1].id in gone:
            j += 1
        start, end = seq[i].start_byte, seq[j].end_byte
        if j + 1 < len(seq):
            out.append(_span(source, start, seq[j + 1].start_byte, ""))
        elif i > 0:
            out.append(_span(source, seq[i - 1].end_byte, end, ""))
        else:
            out.append(_span(source, start, end, ":"))
        i = j + 1
    return out


def _remove_statements(source: ShellSource, stmts: list) -> list[Edit]:
    out = []
    gone = {s.id for s in stmts}
    colon_done: set = set()
    for s in stmts:
        parent = s.parent
        if parent is None:
            continue
        if parent.type in ("list", "pipeline", "negated_command") or parent.type not in STATEMENT_PARENTS:
            out.append(_span(source, s.start_byte, s.end_byte, ":"))
            continue
        segment = _segment(parent, s)
        if parent.type in NEEDS_COMMAND and all(x.id in gone for x in segment):
            first = segment[0]
            if first.id not in colon_done:
                colon_done.add(first.id)
                if first.id == s.id:
                    out.append(_span(source, s.start_byte, s.end_byte, ":"))
                    continue
        out.append(_delete_statement(source, s))
    return out


def _delete_statement(source: ShellSource, s) -> Edit:
    text = source.text
    a, b = source.bm.char(s.start_byte), source.bm.char(s.end_byte)
    span = line_span(text, a, b)
    if span is not None:
        return Edit(span[0], span[1], "")
    j = b
    while j < len(text) and text[j] in " \t":
        j += 1
    if j < len(text) and text[j] in ";&" and text[j : j + 2] not in (";;", "&&", ";&"):
        j += 1
        while j < len(text) and text[j] in " \t":
            j += 1
        return Edit(a, j, "")
    k = a
    while k > 0 and text[k - 1] in " \t":
        k -= 1
    if k > 0 and text[k - 1] in ";&" and text[k - 2 : k] not in (";;", "&&"):
        return Edit(k - 1, b, "")
    return Edit(a, j, "")


STATEMENT_PARENTS = {
    "program",
    "compound_statement",
    "do_group",
    "if_statement",
    "elif_clause",
    "else_clause",
    "case_item",
    "subshell",
}


def _segment(parent, stmt) -> list:
    """The statements of ``parent`` between the same keywords as ``stmt`` (a ``then`` body, an
    ``else`` body, a ``{ }`` group)."""
    segments: list[list] = [[]]
    found = 0
    for c in parent.children:
        if not c.is_named and c.type in KEYWORDS:
            segments.append([])
            continue
        if c.is_named and c.type in STATEMENTS:
            segments[-1].append(c)
            if c.id == stmt.id:
                found = len(segments) - 1
    return segments[found]
