"""The parsed module and its libcst metadata, shared by the fact collectors of one file.

One parse per file: every collector reads the same :class:`FileContext`, so node identities
match across them and the planned edits can be keyed by the original nodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import libcst as cst
from libcst.metadata.base_provider import LazyValue
from libcst.metadata import (
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
    QualifiedNameProvider,
    ScopeProvider,
)

from ..diagnostics import Diagnostic
from ..rules import Rules


@dataclass
class FileContext:
    """A parsed file with scope, parent, position and qualified-name metadata.

    ``path`` is only used in diagnostics. ``diagnostics`` collects what the collectors and the
    planner report, in the order found.
    """

    path: str
    wrapper: MetadataWrapper
    rules: Rules
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.module = self.wrapper.module
        self.parents = self.wrapper.resolve(ParentNodeProvider)
        self.positions = self.wrapper.resolve(PositionProvider)
        self.scopes = self.wrapper.resolve(ScopeProvider)
        self.qualified = self.wrapper.resolve(QualifiedNameProvider)
        self._by_type: dict[type, list[cst.CSTNode]] = {}
        for node in self.parents:  # every node but the module, grouped by type
            self._by_type.setdefault(type(node), []).append(node)
        self._order = {id(n): self.positions[n].start for n in self.parents if n in self.positions}

    def nodes(self, kind: type) -> list[cst.CSTNode]:
        """Every node of exactly type ``kind`` in the module, in source order (one indexing
        pass instead of a libcst ``findall`` walk per question)."""
        found = self._by_type.get(kind, [])
        return sorted(found, key=lambda n: (self._order[id(n)].line, self._order[id(n)].column))

    # -- navigation -------------------------------------------------------------------------
    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """The parents of ``node``, innermost first."""
        current = self.parents.get(node)
        while current is not None:
            yield current
            current = self.parents.get(current)

    def statement_of(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        """The innermost statement (simple line or compound statement) holding ``node``."""
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return node
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return anc
        return None

    def block_of(self, stmt: cst.BaseStatement) -> cst.CSTNode | None:
        """The Module or IndentedBlock whose ``body`` lists ``stmt`` (None for a one-line
        ``SimpleStatementSuite`` body such as ``if x: a = 1``)."""
        parent = self.parents.get(stmt)
        if isinstance(parent, (cst.Module, cst.IndentedBlock)):
            return parent
        return None

    def enclosing(self, node: cst.CSTNode, kind: type) -> cst.CSTNode | None:
        for anc in self.ancestors(node):
            if isinstance(anc, kind):
                return anc
        return None

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        value = self.qualified.get(node, ())
        if isinstance(value, LazyValue):  # libcst computes qualified names on demand
            value = value()
        return {q.name for q in value}

    def pos(self, node: cst.CSTNode) -> tuple[int, int]:
        """1-based (line, column) of the start of ``node``."""
        start = self.positions[node].start
        return start.line, start.column + 1

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    # -- reporting --------------------------------------------------------------------------
    def report(self, code: str, node: cst.CSTNode, message: str, fixed: bool) -> None:
        line, col = self.pos(node)
        self.report_at(code, line, col, message, fixed)

    def report_at(self, code: str, line: int, col: int, message: str, fixed: bool) -> None:
        """Report at a 1-based (line, column) inside a node (a name within a string literal)."""
        self.diagnostics.append(Diagnostic(code, self.path, line, col, message, fixed))

