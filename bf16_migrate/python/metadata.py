"""libcst's metadata for one module, computed as libcst computes it but without its node
rebuilds: the expression contexts and scopes by libcst's own visitors (ExpressionContextVisitor,
ScopeVisitor) driven by a walk that reads the children (:class:`_NoRebuild`), and the positions
by libcst's code generation with a lighter state (:class:`_SpanState`). Every libcst visit
rebuilds each node it passes (``_visit_and_replace_children``), which made libcst's providers
most of a migration's time. ``tests/test_context_metadata.py`` holds the results equal to
PositionProvider, ExpressionContextProvider and ScopeProvider. Also :func:`gc_paused`, the
collector paused for a migration.
"""

from __future__ import annotations

import gc
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from itertools import repeat
from types import MappingProxyType

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import ExpressionContext, ExpressionContextProvider, ScopeProvider
from libcst.metadata.expression_context_provider import ExpressionContextVisitor
from libcst.metadata.scope_provider import _ASSIGNMENT_LIKE_NODES, ScopeVisitor

from .walk import _is_trivia, _shape

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

    def __init__(
        self, state: _SpanState, node: cst.CSTNode, start_node: cst.CSTNode | None, end_node: cst.CSTNode | None
    ) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc: object) -> None:
        state = self.state
        spans = state.spans
        start = self.start if self.start_node is None else spans[id(self.start_node)][0]
        end = (state.line, state.column) if self.end_node is None else spans[id(self.end_node)][1]
        spans[id(self.node)] = (start, end)


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
