"""The parsed module and its libcst metadata, shared by the fact collectors of one file.

One parse per file: every collector reads the same :class:`FileContext`, so node identities
match across them and the planned edits can be keyed by the original nodes.
"""

from __future__ import annotations

import dataclasses
import gc
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter
from types import MappingProxyType
from typing import Any, TypeVar, cast, overload

import libcst as cst
import libcst.matchers as m
from libcst._nodes.internal import CodegenState
from libcst.metadata import (
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    ScopeProvider,
)
from libcst.metadata.expression_context_provider import ExpressionContextVisitor
from libcst.metadata.scope_provider import _ASSIGNMENT_LIKE_NODES, ScopeVisitor

from ..diagnostics import Diagnostic
from ..diagnostics import report as new_diagnostic
from ..rules import Rules

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
    def report(self, code: str, node: cst.CSTNode, message: str | None = None, fixed: bool | None = None, /, **fields: object) -> None:
        """Report ``code`` at ``node``: ``ctx.report(code, node, fixed=..., variant=..., **fields)``
        words the message from the catalogue's template (``rules/diagnostics*.toml``: its
        ``message``, or ``variants.<variant>``); ``ctx.report(code, node, message, fixed)`` is
        the older form with a ready message (the carriers' until they move to the templates)."""
        line, col = self.pos(node)
        self.report_at(code, line, col, message, fixed, **fields)

    def report_at(self, code: str, line: int, col: int, message: str | None = None, fixed: bool | None = None, /, **fields: object) -> None:
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
            self.diagnostics.append(new_diagnostic(code, self.path, line, col, fixed, variant, **fields))
        else:
            if variant is not None or fields:
                raise TypeError(f"{code}: a ready message takes no template fields")
            self.diagnostics.append(Diagnostic(code, self.path, line, col, message, fixed))


_gc_lock = threading.Lock()
_gc_pauses = 0  # the gc_paused blocks running, in every thread
_gc_was_enabled = False  # whether the collector was on when the first of them began


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for the block (back on when the last such block
    of any thread ends, if it was on when the first began).

    A libcst parse and walk allocate objects for every node, the metadata an object or more
    per node, CPython's parser (the checks of the input and the output) one per AST node: the
    collector, started every 700 net allocations, keeps scanning the young objects and, as the
    tree and its metadata grow, the whole heap, a fifth to a quarter of a migration's time. The
    garbage of a migration holds few reference cycles (a node does not point to its parent),
    so reference counting frees it as before, and what does is collected after the block;
    only the scans are saved."""
    global _gc_pauses, _gc_was_enabled
    with _gc_lock:
        if _gc_pauses == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_pauses += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0 and _gc_was_enabled:
                gc.enable()


def _expression_contexts(module: cst.Module) -> Mapping:
    """What ``wrapper.resolve(ExpressionContextProvider)`` gives, by libcst's own visitor driven
    without node rebuilds (:class:`_NoRebuild`; the provider's ``visit_Module`` with the
    visitor class replaced)."""
    provider = ExpressionContextProvider()
    module.visit(_ExpressionContextVisitor(provider, ExpressionContext.LOAD))
    return MappingProxyType(dict(provider._computed))


def _scopes(module: cst.Module, expression_context: Mapping) -> Mapping:
    """What ``wrapper.resolve(ScopeProvider)`` gives, given the expression contexts, by libcst's
    own ScopeVisitor driven without node rebuilds (:class:`_NoRebuild`; the provider's
    ``visit_Module`` with the visitor class replaced)."""
    provider = ScopeProvider()
    provider.metadata = {ExpressionContextProvider: expression_context}
    visitor = _ScopeVisitor(provider)
    module.visit(visitor)
    visitor.infer_accesses()
    return MappingProxyType(dict(provider._computed))


Span = tuple[tuple[int, int], tuple[int, int]]
"""Where a node's code starts and ends: (line, column) pairs, 1-based lines and 0-based
columns, the end exclusive (libcst's CodeRange)."""


def _spans(module: cst.Module) -> dict[int, Span]:
    """The span of every node of ``module`` (by ``id``): libcst's PositionProvider, computed
    the way it does (a code generation of the module that follows the line and column), by
    :class:`_SpanState`."""
    state = _SpanState(module.default_indent, module.default_newline)
    module._codegen(state)
    return state.spans


class _SpanState(CodegenState):
    """libcst's PositionProvidingCodegenState with only what the spans need. That state keeps
    the module's code, builds two CodePosition and a CodeRange per node and a generator-based
    context manager per syntactic position (together a third of a large file's time before):
    here the tokens only move the line and column, a span is two tuples in a dict, and the
    syntactic positions (a statement after its indentation, an expression inside its
    parentheses) come from a small context manager object. The rules are libcst's: a node's
    span is what its code covers, unless ``record_syntactic_position`` recorded it (from where
    the node's own code was, or from ``start_node``'s start and ``end_node``'s end), which
    ``after_codegen`` does not overwrite."""

    def __init__(self, default_indent: str, default_newline: str) -> None:
        super().__init__(default_indent=default_indent, default_newline=default_newline)
        self.line = 1
        self.column = 0
        self.spans: dict[int, Span] = {}
        self.stack: list[tuple[int, int]] = []

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        if not self.tokens:  # Module._codegen_impl asks whether any token was added
            self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def pop_trailing_newline(self) -> None:
        pass  # no code is kept (and libcst's state does not move the position back either)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self.stack.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        start = self.stack.pop()
        key = id(node)
        if key not in self.spans:
            self.spans[key] = (start, (self.line, self.column))

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _Syntactic(self, node, start_node, end_node)


_NEWLINE = re.compile(r"\r\n?|\n")  # libcst's position_provider.NEWLINE_RE


class _Syntactic:
    """The context manager of :meth:`_SpanState.record_syntactic_position`."""

    __slots__ = ("end_node", "node", "start", "start_node", "state")

    def __init__(self, state: _SpanState, node: cst.CSTNode, start_node: cst.CSTNode | None, end_node: cst.CSTNode | None) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: object) -> None:
        state = self.state
        spans = state.spans
        start = self.start if self.start_node is None else spans[id(self.start_node)][0]
        end = (state.line, state.column) if self.end_node is None else spans[id(self.end_node)][1]
        spans[id(self.node)] = (start, end)


# -- the index: children in libcst's visiting order, without a visit -------------------------------

class _NoRebuild:
    """A mixin for a libcst :class:`~libcst.CSTVisitor` (put it first among the bases): the
    same callbacks in the same order, without the node rebuilds of libcst's traversal.

    ``CSTNode.visit`` visits the children through ``_visit_and_replace_children``, which builds
    a new node from the visited children even for a visitor that cannot change anything (the
    "TODO: provide traversal where children are not replaced" in libcst's ``CSTNode.visit``):
    most of the time of libcst's scope and expression-context analysis. Here ``on_visit``
    visits the children itself, each with ``child.visit(self)`` in libcst's order
    (:func:`children`), and returns False, so that ``CSTNode.visit`` goes straight to
    ``on_leave``: the visitor's ``visit_*``/``leave_*`` methods see what they saw before, and
    those that walk parts of a node themselves (``node.body.visit(self)``) still do.
    ``visit_<Node>_<field>`` hooks are called around each field when the visitor defines any
    for the node's class (libcst's ScopeVisitor has one, ``visit_ClassDef_bases``)."""

    _field_hooks: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        # the node classes with a field hook of the visitor's own (libcst's base visitor
        # defines a no-op one for every field of every class)
        cls._field_hooks = frozenset(
            parts[1]
            for name in dir(cls)
            if name.startswith(("visit_", "leave_"))
            and len(parts := name.split("_", 2)) == 3
            and getattr(cls, name) is not getattr(cst.CSTVisitor, name, None)
        )

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not super().on_visit(node):  # type: ignore[misc]
            return False
        shape = _shape(node)
        hooks = type(node).__name__ in self._field_hooks
        for name, value in zip(shape.fields, shape.get(node)) if hooks else zip(repeat(None), shape.get(node)):
            if hooks:
                self.on_visit_attribute(node, name)  # type: ignore[attr-defined]
            kind = value.__class__
            if kind is tuple or kind is list:
                for child in value:
                    if not _is_trivia(child.__class__):
                        child.visit(self)
            elif value is not None and value is not cst.MaybeSentinel.DEFAULT and not _is_trivia(kind):
                value.visit(self)
            if hooks:
                self.on_leave_attribute(node, name)  # type: ignore[attr-defined]
        return False


class _ExpressionContextVisitor(_NoRebuild, ExpressionContextVisitor):
    pass


class _ScopeVisitor(_NoRebuild, ScopeVisitor):
    _assignment_like: dict[type, bool] = {}

    def on_leave(self, original_node: cst.CSTNode) -> None:
        # ScopeVisitor.on_leave tests every node with isinstance against a dozen node classes
        # (ABCs: as many __instancecheck__ calls per node, half of the walk's time); here that
        # answer is taken once per class, and a node that is not one of them gets what
        # ScopeVisitor.on_leave does for it: its scope recorded, then the leave_* method
        kind = type(original_node)
        like = self._assignment_like.get(kind)
        if like is None:
            like = self._assignment_like[kind] = issubclass(kind, _ASSIGNMENT_LIKE_NODES)
        if like:
            super().on_leave(original_node)
        else:
            self.provider.set_metadata(original_node, self.scope)
            cst.CSTVisitor.on_leave(self, original_node)


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

    __slots__ = ("fields", "get", "skipped")

    get: Callable[[cst.CSTNode], tuple[Any, ...]]

    def __init__(self, node: cst.CSTNode) -> None:
        recorder = _FieldRecorder()
        node._visit_and_replace_children(recorder)
        visited = self.fields = tuple(dict.fromkeys(recorder.fields))
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


# A matcher of the class m.X matches only nodes of the class cst.X (libcst compares class
# names): the overloads say so for the classes the codemod asks about.
@overload
def findall(tree: cst.CSTNode, matcher: m.Name) -> Sequence[cst.Name]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.Call) -> Sequence[cst.Call]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.Assign) -> Sequence[cst.Assign]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.AssignTarget) -> Sequence[cst.AssignTarget]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.FunctionDef) -> Sequence[cst.FunctionDef]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.SimpleString) -> Sequence[cst.SimpleString]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.Return) -> Sequence[cst.Return]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.Yield) -> Sequence[cst.Yield]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.Float) -> Sequence[cst.Float]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.BaseMatcherNode) -> Sequence[cst.CSTNode]: ...


def findall(tree: cst.CSTNode, matcher: m.BaseMatcherNode) -> Sequence[cst.CSTNode]:
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
        known = [n for n in names if n is not None]
        return None if len(known) < len(names) else frozenset[str]().union(*known)
    name = type(matcher).__name__
    node_class = getattr(cst, name, None)
    if isinstance(matcher, m.BaseMatcherNode) and isinstance(node_class, type) and issubclass(node_class, cst.CSTNode):
        return frozenset([name])  # a matcher of one node class (m.Name(), m.Call(...))
    return None
