"""The conditionals of a shell fragment that set a variable on every path: ``if ... else ... fi``
each of whose branches (``then``, every ``elif``, the ``else``) sets it to the same value among its
own statements, or a ``case`` with a ``*)`` item whose every item does (bash(1), "Compound
Commands": exactly one branch of such a statement runs). After one, the setting is in force
whichever branch ran (:mod:`.reach`), not on some paths only (BFM120).

The same shape as the expander's reading of assignments (:meth:`.expand.Expander._covering_ifs`),
for exported settings, with the values compared: ``export X=1`` in one branch and ``export X=0``
in the other set it on every path, but to different values, which is no covering.
"""

from __future__ import annotations

from collections.abc import Iterable

import tree_sitter

from .context import Contexts
from .parsed import Covering

_STATEMENT_HOLDERS = ("declaration_command", "variable_assignments", "command")


def coverings(sets: Iterable[tuple[int, str, str, tree_sitter.Node]], contexts: Contexts) -> list[Covering]:
    """The :class:`~.parsed.Covering` s among ``sets`` (entry id, variable, value, the node the
    setting's event is placed at), each conditional and variable once."""
    groups: dict[tuple[int, str, str], list[tuple[int, tree_sitter.Node]]] = {}
    tops: dict[int, tree_sitter.Node] = {}
    for entry, variable, value, node in sets:
        found = _branch_of(node)
        if found is None:
            continue
        branch, top = found
        groups.setdefault((top.id, variable, value), []).append((entry, branch))
        tops[top.id] = top
    out = []
    for (top_id, variable, _value), members in groups.items():
        top = tops[top_id]
        branches = _branches(top)
        if branches is None or {branch.id for _, branch in members} != {b.id for b in branches}:
            continue
        tags = frozenset(_tag(contexts, b) for b in branches)
        if None in tags:
            continue
        entries = frozenset(entry for entry, _ in members)
        out.append(Covering(variable, entries, contexts.of(top).guard, tags))
    return out


def _branch_of(node: tree_sitter.Node) -> tuple[tree_sitter.Node, tree_sitter.Node] | None:
    """The branch (the ``if_statement`` itself for its ``then`` part, an ``elif_clause``, an
    ``else_clause``, a ``case_item``) whose own statements hold ``node``'s statement, and its
    conditional; None when the statement is deeper or elsewhere."""
    stmt = node
    while stmt.parent is not None and stmt.parent.type in _STATEMENT_HOLDERS:
        stmt = stmt.parent
    holder = stmt.parent
    if holder is None:
        return None
    if holder.type == "if_statement":
        return holder, holder
    if holder.type in ("elif_clause", "else_clause") and holder.parent is not None:
        return holder, holder.parent
    if holder.type == "case_item" and holder.parent is not None:
        return holder, holder.parent
    return None


def _branches(top: tree_sitter.Node) -> list[tree_sitter.Node] | None:
    """Every branch of ``top`` when exactly one of them runs whatever happens (an ``else``, a
    ``*)`` item), else None."""
    if top.type == "if_statement":
        clauses = [c for c in top.children if c.type in ("elif_clause", "else_clause")]
        if not any(c.type == "else_clause" for c in clauses):
            return None
        return [top, *clauses]
    items = [c for c in top.children if c.type == "case_item"]
    if not any(_catch_all(item) for item in items):
        return None
    return items


def _catch_all(item: tree_sitter.Node) -> bool:
    """Whether a ``case_item``'s patterns hold a bare ``*``."""
    for child in item.children:
        if child.type == ")":
            break
        if child.text is not None and child.text.strip() == b"*":
            return True
    return False


def _tag(contexts: Contexts, branch: tree_sitter.Node) -> tuple | None:
    """The guard element a statement of ``branch`` gets (:mod:`.context`), read from its first
    statement's context: the element after the conditional's own guard."""
    body = _first_statement(branch)
    if body is None:
        return None
    guard, own = contexts.of(body).guard, contexts.of(branch).guard
    return guard[len(own)] if len(guard) > len(own) else None


def _first_statement(branch: tree_sitter.Node) -> tree_sitter.Node | None:
    """The first statement of the branch's body: after ``then`` (``if``/``elif``), after ``else``,
    after the ``)`` of a case item's patterns."""
    seen = False
    marker = {"if_statement": "then", "elif_clause": "then", "else_clause": "else", "case_item": ")"}[branch.type]
    for child in branch.children:
        if seen and child.is_named and child.type not in ("elif_clause", "else_clause", "comment"):
            return child
        if child.type == marker:
            seen = True
    return None
