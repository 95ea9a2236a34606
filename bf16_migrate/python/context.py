"""The parsed module and its libcst metadata, shared by the fact collectors of one file.

One parse per file: every collector reads the same :class:`FileContext`, so node identities
match across them and the planned edits can be keyed by the original nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar, cast

import libcst as cst
from libcst.metadata import (
    MetadataWrapper,
)

from ..diagnostics import Diagnostic
from ..diagnostics import report as new_diagnostic
from ..rules import Rules
from .metadata import Span, _expression_contexts, _scopes, _spans, gc_paused
from .outcome import Outcome
from .walk import _index, children, findall

if TYPE_CHECKING:
    from .tree_facts import TreeFacts

__all__ = [
    "FileContext",
    "Span",
    "children",
    "findall",
    "gc_paused",
]  # children, findall and gc_paused: re-exported for the collectors

N = TypeVar("N", bound=cst.CSTNode)


@dataclass
class FileContext:
    """A parsed file with scope, parent, position and qualified-name metadata.

    ``path`` is only used in diagnostics. ``diagnostics`` collects what the collectors and the
    planner report, in the order found.

    Every libcst visit rebuilds each node it passes (``_visit_and_replace_children``), and
    libcst's metadata (one such visit per provider, and more for the providers it depends on)
    was most of a migration's time, and more so as the file grew. Here each is computed once
    per file, the way libcst computes it, without the rebuilds: the expression contexts and
    the scopes by libcst's own visitors, driven by a walk that reads the children instead
    (:class:`_NoRebuild`); the positions by libcst's code generation with a lighter state
    (:class:`_SpanState`, :meth:`span`). Parents come from one walk of our own that reads the
    children (:func:`children`), and qualified names from the scopes, when asked (libcst's
    QualifiedNameProvider is that same call, behind one more visit of every node).
    Punctuation, operators, brackets and whitespace are not indexed: :meth:`parent` does not
    know them, :meth:`nodes` does not list them and ``scopes`` has none of them (nothing asks
    about them).
    """

    path: str
    wrapper: MetadataWrapper
    rules: Rules
    diagnostics: list[Diagnostic] = field(default_factory=list)
    outcome: Outcome = field(default_factory=Outcome)
    """What the migration did, set where the planner decides (:mod:`.outcome`)."""
    tree: TreeFacts | None = None
    """What the modules of the tree this file imports offer (optimizer factories and classes),
    when the caller read them (:mod:`.tree_facts`); None: the file is read alone."""

    def __post_init__(self) -> None:
        self.module = self.wrapper.module
        with gc_paused():
            self._spans = _spans(self.module)
            expression_context = _expression_contexts(self.module)
            self.scopes = _scopes(self.module, expression_context)
            self._parent, self._by_type = _index(self.module)
        self._sorted: dict[type, list[cst.CSTNode]] = {}
        self._qualified: dict[cst.CSTNode, frozenset[str]] = {}
        self._memo: dict[tuple, object] = {}

    def memo(self, key: tuple, compute):
        """``compute()``, computed once per file for ``key``: the collectors' answers that
        depend on the file alone (the optimizers, the writes) are asked for several times."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def nodes(self, kind: type[N]) -> list[N]:
        """Every node of exactly type ``kind`` in the module, in source order (one indexing
        pass instead of a libcst ``findall`` walk per question; sorted once per kind)."""
        found = self._sorted.get(kind)
        if found is None:
            # a stable sort: nodes of one kind that start together (``a.b().c()``) keep the
            # order of the index, innermost first
            spans = self._spans
            found = self._sorted[kind] = sorted(self._by_type.get(kind, []), key=lambda n: spans[id(n)][0])
        return cast(list[N], list(found))  # the index lists each node under its exact type

    # -- navigation -------------------------------------------------------------------------
    def index_in_block(self, block: cst.Module | cst.IndentedBlock, stmt: cst.CSTNode) -> int:
        """``list(block.body).index(stmt)`` from a table made once per block (each model call
        and loss of a long block asked it, a scan of the block each time)."""
        table = self.memo(("statement index", block), lambda: {id(st): k for k, st in enumerate(block.body)})
        try:
            return table[id(stmt)]
        except KeyError:
            raise ValueError(f"{type(stmt).__name__} is not in the block") from None

    def parent(self, node: cst.CSTNode | None) -> cst.CSTNode | None:
        """The parent of ``node`` (None for the module, for a node of no file's module, for
        punctuation, operators, brackets and whitespace, and for None: ``parent(parent(x))``
        asks without a check in between)."""
        return self._parent.get(id(node))

    def parent_of_id(self, node_id: int) -> cst.CSTNode | None:
        """The parent of the node of the module whose ``id()`` is ``node_id`` (the plan keys
        its edits by id)."""
        return self._parent.get(node_id)

    def ancestors(self, node: cst.CSTNode | None) -> Iterator[cst.CSTNode]:
        """The parents of ``node``, innermost first."""
        parents = self._parent
        current = parents.get(id(node))
        while current is not None:
            yield current
            current = parents.get(id(current))

    def statement_of(self, node: cst.CSTNode | None) -> cst.BaseStatement | None:
        """The innermost statement (simple line or compound statement) holding ``node`` (None
        for None)."""
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return node
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                return anc
        return None

    def block_of(self, stmt: cst.CSTNode) -> cst.Module | cst.IndentedBlock | None:
        """The Module or IndentedBlock whose ``body`` lists ``stmt`` (None for a one-line
        ``SimpleStatementSuite`` body such as ``if x: a = 1``)."""
        parent = self._parent.get(id(stmt))
        if isinstance(parent, (cst.Module, cst.IndentedBlock)):
            return parent
        return None

    def enclosing(self, node: cst.CSTNode, kind: type[N] | tuple[type[N], ...]) -> N | None:
        """The innermost ancestor of ``node`` that is a ``kind`` (a class or a tuple of them, as
        ``isinstance`` takes), or None."""
        for anc in self.ancestors(node):
            if isinstance(anc, kind):
                return anc
        return None

    def qualified_names(self, node: cst.CSTNode) -> set[str]:
        """The qualified names of ``node`` (what libcst's QualifiedNameProvider gives: the
        names its scope resolves it to), computed once per node."""
        names = self._qualified.get(node)
        if names is None:
            scope = self.scopes.get(node)
            names = frozenset(q.name for q in scope.get_qualified_names_for(node)) if scope else frozenset()
            self._qualified[node] = names  # keyed by the node itself: it stays alive, its id unique
        return set(names)

    def pos(self, node: cst.CSTNode) -> tuple[int, int]:
        """1-based (line, column) of the start of ``node``."""
        line, column = self._spans[id(node)][0]
        return line, column + 1

    def span(self, node: cst.CSTNode) -> Span:
        """Where ``node``'s code starts and ends in the module: ((line, column), (line,
        column)), 1-based lines, 0-based columns, the end exclusive (what libcst's
        PositionProvider gives as a CodeRange: without a statement's leading lines and
        indentation, without an expression's parentheses)."""
        return self._spans[id(node)]

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    # -- reporting --------------------------------------------------------------------------
    def report(
        self, code: str, node: cst.CSTNode, message: str | None = None, fixed: bool | None = None, /, **fields: object
    ) -> Diagnostic:
        """Report ``code`` at ``node``: ``ctx.report(code, node, fixed=..., variant=..., **fields)``
        words the message from the catalogue's template (``rules/diagnostics*.toml``: its
        ``message``, or ``variants.<variant>``); ``ctx.report(code, node, message, fixed)`` is
        the older form with a ready message (the carriers' until they move to the templates).
        Returns the finding (for the :class:`~.outcome.Outcome` it explains)."""
        line, col = self.pos(node)
        return self.report_at(code, line, col, message, fixed, **fields)

    def report_at(
        self, code: str, line: int, col: int, message: str | None = None, fixed: bool | None = None, /, **fields: object
    ) -> Diagnostic:
        """Report at a 1-based (line, column) inside a node (a name within a string literal);
        the arguments as :meth:`report`'s."""
        if "fixed" in fields:
            if fixed is not None:
                raise TypeError(f"{code}: fixed given twice")
            fixed = bool(fields.pop("fixed"))
        if fixed is None:
            raise TypeError(f"{code}: say whether the finding is fixed")
        variant = fields.pop("variant", None)
        if not (variant is None or isinstance(variant, str)):
            raise TypeError(f"{code}: variant must be the name of a message variant")
        if message is None:
            found = new_diagnostic(code, self.path, line, col, fixed, variant, **fields)
        else:
            if variant is not None or fields:
                raise TypeError(f"{code}: a ready message takes no template fields")
            found = Diagnostic(code, self.path, line, col, message, fixed)
        self.diagnostics.append(found)
        return found
