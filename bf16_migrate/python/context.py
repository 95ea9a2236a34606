"""The parsed module and its libcst metadata, shared by the fact collectors of one file.

One parse per file: every collector reads the same :class:`FileContext`, so node identities
match across them and the planned edits can be keyed by the original nodes.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from operator import attrgetter
from types import MappingProxyType

import libcst as cst
import libcst.matchers as m
from libcst.metadata import (
    BatchableMetadataProvider,
    ExpressionContextProvider,
    MetadataWrapper,
    PositionProvider,
    ScopeProvider,
)

from ..diagnostics import Diagnostic
from ..rules import Rules


@dataclass
class FileContext:
    """A parsed file with scope, parent, position and qualified-name metadata.

    ``path`` is only used in diagnostics. ``diagnostics`` collects what the collectors and the
    planner report, in the order found.

    Every libcst visit rebuilds each node it passes (``_visit_and_replace_children``), which
    made the metadata most of a migration's time, and more so as the file grew: libcst's
    providers run here only where nothing cheaper gives the same answer (positions, expression
    contexts, scopes: one walk each per file, see :func:`_resolve_alone`). Parents come from one
    walk of our own that reads the children without rebuilding them (:func:`children`), and
    qualified names from the scopes, when asked (libcst's QualifiedNameProvider is that same
    call, behind one more visit of every node). Punctuation, operators, brackets and whitespace
    are not indexed: :meth:`parent` does not know them and :meth:`nodes` does not list them
    (nothing asks about them).
    """

    path: str
    wrapper: MetadataWrapper
    rules: Rules
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.module = self.wrapper.module
        with gc_paused():
            self.positions = _resolve_alone(self.wrapper, PositionProvider, {})
            expression_context = _resolve_alone(self.wrapper, ExpressionContextProvider, {})
            self.scopes = _resolve_alone(self.wrapper, ScopeProvider, {ExpressionContextProvider: expression_context})
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

    def nodes(self, kind: type) -> list[cst.CSTNode]:
        """Every node of exactly type ``kind`` in the module, in source order (one indexing
        pass instead of a libcst ``findall`` walk per question; sorted once per kind)."""
        found = self._sorted.get(kind)
        if found is None:
            # a stable sort: nodes of one kind that start together (``a.b().c()``) keep the
            # order of the index, innermost first
            positions = self.positions
            found = self._sorted[kind] = sorted(
                self._by_type.get(kind, []), key=lambda n: (positions[n].start.line, positions[n].start.column)
            )
        return list(found)

    # -- navigation -------------------------------------------------------------------------
    def index_in_block(self, block: cst.CSTNode, stmt: cst.BaseStatement) -> int:
        """``list(block.body).index(stmt)`` from a table made once per block (each model call
        and loss of a long block asked it, a scan of the block each time)."""
        table = self.memo(("statement index", block), lambda: {id(st): k for k, st in enumerate(block.body)})
        try:
            return table[id(stmt)]
        except KeyError:
            raise ValueError(f"{type(stmt).__name__} is not in the block") from None

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The parent of ``node`` (None for the module, for a node of no file's module, and for
        punctuation, operators, brackets and whitespace)."""
        return self._parent.get(id(node))

    def parent_of_id(self, node_id: int) -> cst.CSTNode | None:
        """The parent of the node of the module whose ``id()`` is ``node_id`` (the plan keys
        its edits by id)."""
        return self._parent.get(node_id)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        """The parents of ``node``, innermost first."""
        parents = self._parent
        current = parents.get(id(node))
        while current is not None:
            yield current
            current = parents.get(id(current))

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
        parent = self._parent.get(id(stmt))
        if isinstance(parent, (cst.Module, cst.IndentedBlock)):
            return parent
        return None

    def enclosing(self, node: cst.CSTNode, kind: type) -> cst.CSTNode | None:
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


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (back on after it, if it was on).

    A libcst walk allocates a new node for every node it passes, and the metadata keep an
    object or more per node: the collector, started every 700 net allocations, keeps scanning
    the young objects and, as the tree and its metadata grow, the whole heap, about a fifth of
    the time of the walks. Their garbage holds no reference cycles (a node does not point to
    its parent), so reference counting frees it as before; only the scans are saved."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _resolve_alone(wrapper: MetadataWrapper, provider: type, dependencies: Mapping) -> Mapping:
    """``wrapper.resolve(provider)``, given the mappings of the provider's dependencies, without
    the walks of the whole module that MetadataWrapper makes for nothing (each walk rebuilds
    every node): it resolves a batchable provider by a batched walk that calls the provider's
    ``visit_Module`` and then visits every other node (libcst's batched visitor always goes
    down), and ends each resolution with such a walk even when nothing batchable is left (as
    for PositionProvider alone).

    A batchable provider that does all its work in ``visit_Module`` (ExpressionContextProvider
    and ScopeProvider each walk the module with a visitor of their own) has it called alone; a
    non-batchable one (PositionProvider: one code generation) is generated as the wrapper
    would. Any other provider goes through the wrapper."""
    instance = provider()
    needs = instance.get_inherited_dependencies()
    if not needs <= set(dependencies) or getattr(instance, "gen_cache", None) is not None:
        return wrapper.resolve(provider)
    if not isinstance(instance, BatchableMetadataProvider):
        if needs:  # _gen would resolve them through the wrapper
            return wrapper.resolve(provider)
        return instance._gen(wrapper)  # what MetadataWrapper calls for it
    if set(instance.get_visitors()) != {"visit_Module"}:
        return wrapper.resolve(provider)
    instance.metadata = {dependency: dependencies[dependency] for dependency in needs}
    instance.visit_Module(wrapper.module)
    computed = getattr(instance, "_computed", None)  # where BaseMetadataProvider.set_metadata writes
    if not isinstance(computed, Mapping):  # pragma: no cover - another libcst
        return wrapper.resolve(provider)
    return MappingProxyType(dict(computed))


# -- the index: children in libcst's visiting order, without a visit -------------------------------

class _FieldRecorder(cst.CSTVisitor):
    """Records the fields libcst visits on one node, in the order it visits them, without
    going further down."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        pass

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


class _Shape:
    """How to read the children of the nodes of one class: ``get(node)`` gives the values of
    the fields libcst visits, in its order; ``skipped`` are the other fields that were None on
    the node the order was read from (a class may skip a field when it is None, e.g.
    ``format_spec``: the order is read again from a node where one of them holds nodes)."""

    __slots__ = ("get", "skipped")

    def __init__(self, node: cst.CSTNode) -> None:
        recorder = _FieldRecorder()
        node._visit_and_replace_children(recorder)
        visited = tuple(dict.fromkeys(recorder.fields))
        if len(visited) > 1:
            self.get = attrgetter(*visited)
        elif visited:
            only = attrgetter(visited[0])
            self.get = lambda n: (only(n),)
        else:
            self.get = lambda n: ()
        self.skipped = tuple(
            f.name for f in dataclasses.fields(node) if f.name not in visited and getattr(node, f.name) is None
        )


_SHAPES: dict[type, _Shape] = {}

# Punctuation, operators, brackets and whitespace: nodes that hold nothing but more of the same
# (libcst's ``whitespace`` and ``op`` modules, and the brackets). Nothing the codemod asks about
# is one of them or below one, so the index and :func:`findall` do not walk them (most of a
# tree's nodes).
_TRIVIA_MODULES = ("libcst._nodes.whitespace", "libcst._nodes.op")
_BRACKETS = {cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace, cst.RightCurlyBrace}
_TRIVIA: dict[type, bool] = {}


def _is_trivia(cls: type) -> bool:
    found = _TRIVIA.get(cls)
    if found is None:
        found = _TRIVIA[cls] = cls.__module__ in _TRIVIA_MODULES or cls in _BRACKETS
    return found


def _holds_nodes(value: object) -> bool:
    return isinstance(value, cst.CSTNode) or (
        isinstance(value, (tuple, list)) and any(isinstance(v, cst.CSTNode) for v in value)
    )


def _shape(node: cst.CSTNode) -> _Shape:
    shape = _SHAPES.get(type(node))
    if shape is None or (shape.skipped and any(_holds_nodes(getattr(node, name)) for name in shape.skipped)):
        shape = _SHAPES[type(node)] = _Shape(node)
    return shape


def children(node: cst.CSTNode, trivia: bool = True) -> list[cst.CSTNode]:
    """The children of ``node`` in the order libcst visits them (what ``node.children`` gives
    by rebuilding the node); without punctuation, operators, brackets and whitespace when
    ``trivia`` is False."""
    out: list[cst.CSTNode] = []
    for value in _shape(node).get(node):
        if value is None or value is cst.MaybeSentinel.DEFAULT:
            continue
        if isinstance(value, (tuple, list)):
            out.extend(value)
        else:
            out.append(value)
    if not trivia:
        out = [child for child in out if not _is_trivia(type(child))]
    return out


def findall(tree: cst.CSTNode, matcher) -> Sequence[cst.CSTNode]:
    """``libcst.matchers.findall(tree, matcher)``, the same nodes in the same order, without
    rebuilding the tree (a libcst visit rebuilds every node it passes): a walk of
    :func:`children` that tries the matcher only on nodes of the classes it names (and so
    skips the trivia below the tree unless it names a trivia class). Any other matcher (a
    predicate, an inverse, metadata) goes to libcst."""
    names = _matcher_classes(matcher)
    if names is None or not isinstance(tree, cst.CSTNode):
        return m.findall(tree, matcher)
    trivia = any(_is_trivia(getattr(cst, name)) for name in names)
    bare = _is_bare(matcher)  # m.Name() | m.Call(): the class is the whole question
    found = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if type(node).__name__ in names and (bare or m.matches(node, matcher)):
            found.append(node)
        kids = children(node, trivia)
        if kids:
            kids.reverse()
            stack.extend(kids)
    return found


def _index(module: cst.Module) -> tuple[dict[int, cst.CSTNode], dict[type, list[cst.CSTNode]]]:
    """One walk: the parent of every node but the trivia (by ``id``) and those nodes grouped
    by class, in the order libcst's ParentNodeProvider records them (a node's children, in
    order, when the walk leaves the node), so that ties in :meth:`FileContext.nodes` keep
    their order."""
    parent: dict[int, cst.CSTNode] = {}
    by_type: dict[type, list[cst.CSTNode]] = {}
    stack: list[tuple[cst.CSTNode, list[cst.CSTNode] | None]] = [(module, None)]
    while stack:
        node, kids = stack.pop()
        if kids is None:  # entering: leave after the children
            kids = children(node, trivia=False)
            stack.append((node, kids))
            stack.extend((child, None) for child in reversed(kids))
            continue
        for child in kids:  # leaving
            key = id(child)
            if key not in parent:
                by_type.setdefault(type(child), []).append(child)
            parent[key] = node
    return parent, by_type


def _is_bare(matcher) -> bool:
    """Whether ``matcher`` (one that :func:`_matcher_classes` reads) asks nothing but the
    class: every field of it (and of each option of a ``|``) is ``DoNotCare()``."""
    options = matcher.options if isinstance(matcher, m.OneOf) else (matcher,)
    return all(
        not isinstance(option, m.OneOf) and all(isinstance(getattr(option, f.name), m.DoNotCareSentinel) for f in dataclasses.fields(option))
        for option in options
    )


def _matcher_classes(matcher) -> frozenset[str] | None:
    """The names of the node classes ``matcher`` can match (libcst compares class names) when
    it is a matcher of node classes or a ``|`` of them, else None."""
    if isinstance(matcher, m.OneOf):
        names = [_matcher_classes(option) for option in matcher.options]
        return None if any(n is None for n in names) else frozenset().union(*names)
    name = type(matcher).__name__
    node_class = getattr(cst, name, None)
    if isinstance(matcher, m.BaseMatcherNode) and isinstance(node_class, type) and issubclass(node_class, cst.CSTNode):
        return frozenset([name])  # a matcher of one node class (m.Name(), m.Call(...))
    return None
