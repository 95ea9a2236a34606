"""libcst's metadata for one module, computed as libcst computes it but without its node
rebuilds: the scopes by libcst's own ScopeVisitor driven by a walk that reads the children
(:class:`_NoRebuild`), the expression contexts by a walk that carries ExpressionContextVisitor's
contexts down (:func:`_expression_contexts`), and the positions by libcst's code generation with
a lighter state (:class:`_SpanState`). Every libcst visit
rebuilds each node it passes (``_visit_and_replace_children``), which made libcst's providers
most of a migration's time. ``tests/test_context_metadata.py`` holds the results equal to
PositionProvider, ExpressionContextProvider and ScopeProvider. Also :func:`gc_paused`, the
collector paused for a migration.
"""

from __future__ import annotations

import gc
import re
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.helpers import get_full_name_for_node
from libcst.metadata import ExpressionContext, ExpressionContextProvider, ScopeProvider
from libcst.metadata.scope_provider import _ASSIGNMENT_LIKE_NODES, Access, BaseAssignment, Scope, ScopeVisitor
from libcst.metadata.scope_provider import _gen_dotted_names as _dotted_names

from .walk import _is_trivia, _kept_children, _shape

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


def _expression_contexts(module: cst.Module, kids: Mapping[int, list[cst.CSTNode]] | None = None) -> Mapping:
    """What ``wrapper.resolve(ExpressionContextProvider)`` gives: libcst's ExpressionContextVisitor
    (libcst 1.9's expression_context_provider.py) as one walk of :func:`children` carrying the
    context down. libcst's visitor visits the value of every attribute and subscript, and every
    target, with a new plain visitor of its own (whose visit rebuilds each node it passes, half of
    the provider's time); here each node the visitor would visit is taken once, with the context
    that visitor would have, and only the nodes libcst gives a context get one (the trivia hold
    none: they are not walked). ``kids``: the children of each node without the trivia, by ``id``,
    when a walk of the module took them already (:func:`.walk._index`)."""
    contexts: dict[cst.CSTNode, ExpressionContext] = {}
    known = kids or {}
    stack: list[tuple[cst.CSTNode, ExpressionContext]] = [(module, _LOAD)]
    pop, push = stack.pop, stack.append
    rules = _CONTEXT_RULES
    while stack:
        node, context = pop()
        rule = rules.get(node.__class__)
        if rule is None:  # no visit_* method: the children, with the same visitor
            children = known.get(id(node))
            for child in reversed(_kept_children(node) if children is None else children):
                push((child, context))
            continue
        parts = rule(node, context, contexts)
        for part in reversed(parts):
            push(part)
    return MappingProxyType(contexts)


_LOAD, _STORE, _DEL = ExpressionContext.LOAD, ExpressionContext.STORE, ExpressionContext.DEL
_Parts = list[tuple[cst.CSTNode, ExpressionContext]]


def _ec_assign(node: cst.Assign, c: ExpressionContext, out: dict) -> _Parts:
    return [*((target, _STORE) for target in node.targets), (node.value, c)]


def _ec_ann_assign(node: cst.AnnAssign, c: ExpressionContext, out: dict) -> _Parts:
    parts: _Parts = [(node.target, _STORE), (node.annotation, c)]
    if node.value:
        parts.append((node.value, c))
    return parts


def _ec_target_value(node: cst.AugAssign | cst.NamedExpr, c: ExpressionContext, out: dict) -> _Parts:
    return [(node.target, _STORE), (node.value, c)]


def _ec_name(node: cst.Name, c: ExpressionContext, out: dict) -> _Parts:
    out[node] = c
    return []


def _ec_as_name(node: cst.AsName, c: ExpressionContext, out: dict) -> _Parts:
    return [(node.name, _STORE)]


def _ec_comp_for(node: cst.CompFor, c: ExpressionContext, out: dict) -> _Parts:
    parts: _Parts = [(node.target, _STORE), (node.iter, c), *((i, c) for i in node.ifs)]
    if node.inner_for_in:
        parts.append((node.inner_for_in, c))
    return parts


def _ec_for(node: cst.For, c: ExpressionContext, out: dict) -> _Parts:
    parts: _Parts = [(node.target, _STORE), (node.iter, c), (node.body, c)]
    if node.orelse:
        parts.append((node.orelse, c))
    return parts


def _ec_del(node: cst.Del, c: ExpressionContext, out: dict) -> _Parts:
    return [(node.target, _DEL)]


def _ec_attribute(node: cst.Attribute, c: ExpressionContext, out: dict) -> _Parts:
    out[node] = c
    return [(node.value, _LOAD)]  # not ``attr``: it has no context


def _ec_subscript(node: cst.Subscript, c: ExpressionContext, out: dict) -> _Parts:
    out[node] = c
    elements = node.slice
    if isinstance(elements, Sequence):
        return [(node.value, _LOAD), *((element, _LOAD) for element in elements)]
    return [(node.value, _LOAD), (elements, _LOAD)]


def _ec_sequence(node: cst.Tuple | cst.List | cst.StarredElement, c: ExpressionContext, out: dict) -> _Parts:
    out[node] = c
    return [(child, c) for child in _kept_children(node)]


def _ec_class(node: cst.ClassDef, c: ExpressionContext, out: dict) -> _Parts:
    return [
        (node.name, _STORE),
        (node.body, c),
        *((base, c) for base in node.bases),
        *((keyword, c) for keyword in node.keywords),
        *((decorator, c) for decorator in node.decorators),
    ]


def _ec_function(node: cst.FunctionDef, c: ExpressionContext, out: dict) -> _Parts:
    parts: _Parts = [(node.name, _STORE), (node.params, c), (node.body, c), *((d, c) for d in node.decorators)]
    if node.returns:
        parts.append((node.returns, c))
    return parts


def _ec_param(node: cst.Param, c: ExpressionContext, out: dict) -> _Parts:
    parts: _Parts = [(node.name, _STORE)]
    if node.annotation:
        parts.append((node.annotation, c))
    if node.default:
        parts.append((node.default, c))
    return parts


_CONTEXT_RULES: dict[type, Callable[[Any, ExpressionContext, dict], _Parts]] = {
    cst.Assign: _ec_assign,
    cst.AnnAssign: _ec_ann_assign,
    cst.AugAssign: _ec_target_value,
    cst.NamedExpr: _ec_target_value,
    cst.Name: _ec_name,
    cst.AsName: _ec_as_name,
    cst.CompFor: _ec_comp_for,
    cst.For: _ec_for,
    cst.Del: _ec_del,
    cst.Attribute: _ec_attribute,
    cst.Subscript: _ec_subscript,
    cst.Tuple: _ec_sequence,
    cst.List: _ec_sequence,
    cst.StarredElement: _ec_sequence,
    cst.ClassDef: _ec_class,
    cst.FunctionDef: _ec_function,
    cst.Param: _ec_param,
}
"""The node classes ExpressionContextVisitor has a ``visit_*`` method for: what each gives its
node (``out[node]``) and the parts its method visits, in order, each with the context of the
visitor it visits them with (the others visit every child with their own)."""


def _scopes(
    module: cst.Module, expression_context: Mapping, kids: Mapping[int, list[cst.CSTNode]] | None = None
) -> Mapping:
    """What ``wrapper.resolve(ScopeProvider)`` gives, given the expression contexts, by libcst's
    own ScopeVisitor driven without node rebuilds (:class:`_NoRebuild`; the provider's
    ``visit_Module`` with the visitor class replaced); ``kids`` as :func:`_expression_contexts`."""
    provider = ScopeProvider()
    provider.metadata = {ExpressionContextProvider: expression_context}
    visitor = _ScopeVisitor(provider)
    if kids is not None:
        visitor._kids = kids
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
    return _spans_and_extents(module)[0]


def _spans_and_extents(module: cst.Module) -> tuple[dict[int, Span], dict[int, Span]]:
    """:func:`_spans`, and where the whole code of each statement of the module's body is (by
    ``id``; its leading lines and its line end included): that statement renders as that
    part of the module's code wherever it is put in the body (:meth:`.context.FileContext.module_code`)."""
    state = _SpanState(module.default_indent, module.default_newline)
    module._codegen(state)
    return state.spans, state.extents


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
        self.extents: dict[int, Span] = {}
        """Where the whole code of each node just below the module is (its body's statements,
        its header's and footer's lines)."""

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
        stack = self.stack
        start = stack.pop()
        key = id(node)
        if key not in self.spans:
            self.spans[key] = (start, (self.line, self.column))
        if len(stack) == 1:  # just below the module: all of its code, from where it began
            self.extents[key] = (start, (self.line, self.column))

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
    visits the children itself, each as ``child.visit(self)`` would (:meth:`_visit`) in libcst's order
    (:func:`children`), and returns False, so that ``CSTNode.visit`` goes straight to
    ``on_leave``: the visitor's ``visit_*``/``leave_*`` methods see what they saw before, and
    those that walk parts of a node themselves (``node.body.visit(self)``) still do.
    ``visit_<Node>_<field>`` hooks are called around each field when the visitor defines any
    for the node's class (libcst's ScopeVisitor has one, ``visit_ClassDef_bases``)."""

    _field_hooks: frozenset[str] = frozenset()
    _kids: Mapping[int, list[cst.CSTNode]] = MappingProxyType({})
    """The children of each node without the trivia, by ``id``, when a walk took them already."""

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
        # the visitor's visit_<Node> and leave_<Node> functions by node class, found once per
        # class instead of by name for every node (CSTVisitor.on_visit and on_leave's getattr),
        # when the visitor's on_visit is CSTVisitor's
        cls._plain_visit = super().on_visit is cst.CSTVisitor.on_visit  # type: ignore[misc]
        cls._visit_functions = {}
        cls._leave_functions = {}

    _plain_visit = False
    _visit_functions: dict[type, Callable[..., bool | None] | None]
    _leave_functions: dict[type, Callable[..., None] | None]

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._plain_visit:  # CSTVisitor.on_visit, its visit_<Node> function found once per class
            kind = node.__class__
            functions = self._visit_functions
            if kind in functions:
                visit = functions[kind]
            else:
                visit = functions[kind] = getattr(type(self), f"visit_{kind.__name__}", None)
            if visit is not None and visit(self, node) is False:
                return False
        elif not super().on_visit(node):  # type: ignore[misc]
            return False
        if type(node).__name__ not in self._field_hooks:  # most nodes: no hook between the fields
            kids = self._kids.get(id(node))
            for child in _kept_children(node) if kids is None else kids:
                self._visit(child)
            return False
        shape = _shape(node)
        for name, value in zip(shape.fields, shape.get(node)):
            self.on_visit_attribute(node, name)  # type: ignore[attr-defined]
            kind = value.__class__
            if kind is tuple or kind is list:
                for child in value:
                    if not _is_trivia(child.__class__):
                        self._visit(child)
            elif value is not None and value is not cst.MaybeSentinel.DEFAULT and not _is_trivia(kind):
                self._visit(value)
            self.on_leave_attribute(node, name)  # type: ignore[attr-defined]
        return False

    def _visit(self, node: cst.CSTNode) -> None:
        """``node.visit(self)``: libcst's ``CSTNode.visit`` for a CSTVisitor (``on_visit``, the
        children if it asks for them, ``on_leave``) without its two ``isinstance`` tests of the
        visitor and of the result against abstract classes (a tenth of the walk's time)."""
        if self.on_visit(node):
            node._visit_and_replace_children(self)  # type: ignore[arg-type]
        self.on_leave(node)  # type: ignore[attr-defined]


_TYPING_CALLS = frozenset({"typing.NewType", "typing.TypeVar", "typing.cast"})
"""The qualified names ScopeVisitor.visit_Call looks for (libcst 1.9's scope_provider.py)."""
_TYPING_LAST = frozenset(name.rpartition(".")[2] for name in _TYPING_CALLS)

# libcst 1.9's private attributes the scope visitor below reads or sets (name-mangled in
# scope_provider.py; tests/test_libcst_pin.py checks that they are there)
_ATTRIBUTE_STACK = "_ScopeVisitor__top_level_attribute_stack"
_TYPE_HINT_STACK = "_ScopeVisitor__in_type_hint_stack"
_DEFERRED = "_ScopeVisitor__deferred_accesses"
_REFERENTS = "_Access__assignments"
_REFERENCES = "_BaseAssignment__accesses"
PRIVATE_ATTRIBUTES = (_ATTRIBUTE_STACK, _TYPE_HINT_STACK, _DEFERRED, _REFERENTS, _REFERENCES)

SHARED_FROM = 8
"""From this many bindings of one name in one scope (``import torch`` in each of 100 scripts
pasted into one file), the accesses from other scopes share one set of referents, and those
bindings one set of references (:meth:`_ScopeVisitor.infer_accesses`)."""


class _ScopeVisitor(_NoRebuild, ScopeVisitor):
    _assignment_like: dict[type, bool] = {}

    def __init__(self, provider: ScopeProvider) -> None:
        super().__init__(provider)
        # the names an import seen so far binds to NewType, TypeVar or cast under another name
        # (``from typing import cast as as_type``)
        self._typing_aliases: set[str] = set()
        # id of a scope's set of bindings -> (that set, the one copy its readers share, the
        # scopes of the bindings)
        self._shared_copies: dict[int, tuple[AbstractSet, set[BaseAssignment], frozenset[Scope]]] = {}
        # (id of a set of bindings, id of a scope) -> (that set, its split for the scope's accesses)
        self._orders: dict[tuple[int, int], tuple[AbstractSet, _Ordered]] = {}

    def visit_Import(self, node: cst.Import) -> bool | None:
        self._note_typing_aliases(node)
        return super().visit_Import(node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool | None:
        self._note_typing_aliases(node)
        return super().visit_ImportFrom(node)

    def _note_typing_aliases(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                real = get_full_name_for_node(alias.name) or ""
                if real.rpartition(".")[2] in _TYPING_LAST:
                    self._typing_aliases.add(alias.asname.name.value)

    def visit_Call(self, node: cst.Call) -> bool | None:
        # ScopeVisitor.visit_Call asks the scope for the call's qualified names, to treat the
        # arguments of typing.NewType, TypeVar and cast as type hints: a loop over every binding
        # of the callee's name (every ``import torch`` of the file, for ``torch.zeros(...)``), so
        # the file's calls times its imports of one name. A qualified name the scope gives ends
        # with the call's dotted name, or, for a name an import binds with ``as``, with the
        # imported name (scope_provider's Assignment, ImportAssignment and BuiltinAssignment
        # .get_qualified_names_for): only a call whose name ends with NewType, TypeVar or cast,
        # or is such an alias bound so far, can be one of them, and only those are asked.
        full_name = get_full_name_for_node(node)
        if full_name is not None and (
            full_name.rpartition(".")[2] in _TYPING_LAST or full_name in self._typing_aliases
        ):
            return super().visit_Call(node)
        getattr(self, _ATTRIBUTE_STACK).append(None)
        getattr(self, _TYPE_HINT_STACK).append(False)
        return True

    def infer_accesses(self) -> None:
        """ScopeVisitor.infer_accesses, the same referents and references, without sets as
        large as the file's accesses times the bindings of a name.

        libcst gives each access the set of bindings it may read (``referents``) and each
        binding the set of accesses that may read it (``references``). An access from another
        scope (a function reading a module's ``torch``) may read every binding of the name
        there: a file that imports ``torch`` in each of its 100 pasted scripts had 100-element
        sets on each of its thousands of accesses and thousands-element sets on each of the 100
        imports (quadratic time and memory: 2.6 GB at 80k lines). From :data:`SHARED_FROM`
        bindings on, such accesses share one referents set per set of bindings, and such
        bindings one set of the accesses from other scopes (:class:`_SharedReferences`, with
        their own later accesses in the same scope beside it). Below it, and for accesses in
        the bindings' own scope (where libcst keeps those before the access only), libcst's
        own ``record_assignments`` and ``record_accesses`` run as before."""
        deferred = getattr(self, _DEFERRED)
        groups: dict[tuple[Scope, str], list[Access]] = {}
        for def_access in deferred:  # ScopeVisitor.infer_accesses's first loop, as written there
            access, enclosing_attribute, enclosing_string_annotation = (
                def_access.access,
                def_access.enclosing_attribute,
                def_access.enclosing_string_annotation,
            )
            assert isinstance(access.node, cst.Name), "libcst records an access at a Name"
            name = access.node.value
            if enclosing_attribute is not None:
                for attr_name, attr_node in _dotted_names(enclosing_attribute):
                    if attr_name in access.scope:
                        access.node = attr_node
                        name = attr_name
                        break
            if enclosing_string_annotation is not None:
                access.node = enclosing_string_annotation
            group = groups.get((access.scope, name))
            if group is None:
                group = groups[(access.scope, name)] = []
            group.append(access)
            self._record_referents(access, name)
            access.scope.record_access(name, access)
        self._record_references(groups)
        setattr(self, _DEFERRED, [])

    def _record_referents(self, access: Access, name: str) -> None:
        """``access.record_assignments(name)``, or the same referents shared (see above)."""
        bindings = access.scope._resolve_scope_for_access(name, access.scope)
        if len(bindings) < SHARED_FROM:
            access.record_assignments(name)
        elif access.scope not in self._shared(bindings)[1]:
            # every binding is in another scope: the access may read them all
            setattr(access, _REFERENTS, self._shared(bindings)[0])
        else:
            # some are in the access's scope: those bound before it, and all the others
            ordered = self._ordered(bindings, access.scope)
            count = bisect_left(ordered.indices, access._index)
            if count or ordered.others:
                setattr(access, _REFERENTS, BindingsBefore(ordered, count))
            else:
                access.record_assignments(name)  # none before it: libcst looks in the parent

    def _record_references(self, groups: dict[tuple[Scope, str], list[Access]]) -> None:
        """ScopeVisitor.infer_accesses's second loop (each binding the accesses that may read
        it), the parts many bindings share shared (see above)."""
        shared: dict[int, tuple[AbstractSet[BaseAssignment], list[Access]]] = {}
        later: dict[BaseAssignment, list[AbstractSet[Access]]] = {}
        for (scope, name), accesses in groups.items():
            bindings = scope._resolve_scope_for_access(name, scope)
            if len(bindings) < SHARED_FROM:
                for binding in bindings:
                    binding.record_accesses(set(accesses))
            elif scope not in self._shared(bindings)[1]:
                # each of the accesses is a later one for each binding (BaseAssignment.record_accesses)
                shared.setdefault(id(bindings), (bindings, []))[1].extend(accesses)
            elif scope.parent is not scope and scope.parent[name]:
                for binding in bindings:  # accesses before a binding go to the parent's: libcst's way
                    binding.record_accesses(set(accesses))
            else:
                # each binding of this scope is read by the accesses after it; the others by all
                in_order = sorted(accesses, key=lambda a: a._index)
                indices = [a._index for a in in_order]
                positions = {id(a): k for k, a in enumerate(in_order)}
                for binding in bindings:
                    if binding.scope is scope:
                        start = bisect_right(indices, binding._index)
                        if start < len(in_order):
                            later.setdefault(binding, []).append(_Suffix(in_order, positions, start))
                    else:
                        binding.record_accesses(set(accesses))
        for bound, accesses in shared.values():
            others = frozenset(accesses)
            for binding in bound:
                later.setdefault(binding, []).append(others)
        for binding, parts in later.items():
            own = getattr(binding, _REFERENCES)
            parts = [own, *parts] if own else parts
            setattr(binding, _REFERENCES, parts[0] if len(parts) == 1 else _SharedReferences(parts))

    def _ordered(self, bindings: AbstractSet[BaseAssignment], scope: Scope) -> _Ordered:
        """``bindings`` split for the accesses of ``scope``: those of ``scope`` in the order they
        were bound, and the others (once per set of bindings and scope)."""
        key = (id(bindings), id(scope))
        known = self._orders.get(key)
        if known is None or known[0] is not bindings:
            same = sorted((b for b in bindings if b.scope is scope), key=lambda b: b._index)
            others = frozenset(b for b in bindings if b.scope is not scope)
            known = self._orders[key] = (bindings, _Ordered(same, [b._index for b in same], others))
        return known[1]

    def _shared(self, bindings: AbstractSet[BaseAssignment]) -> tuple[set[BaseAssignment], frozenset[Scope]]:
        """One copy of ``bindings`` (a scope's own set, which grows no more once the visit is
        done) for all the accesses that may read each of them, and the scopes they are in."""
        known = self._shared_copies.get(id(bindings))
        if known is None or known[0] is not bindings or len(known[1]) != len(bindings):
            copy = set(bindings)
            known = self._shared_copies[id(bindings)] = (bindings, copy, frozenset(b.scope for b in copy))
        return known[1], known[2]

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
            # cst.CSTVisitor.on_leave, its leave_<Node> function found once per class
            functions = self._leave_functions
            if kind in functions:
                leave = functions[kind]
            else:
                leave = functions[kind] = getattr(type(self), f"leave_{kind.__name__}", None)
            if leave is not None:
                leave(self, original_node)


class _SharedReferences(AbstractSet):
    """A binding's ``references`` made of parts shared with other bindings (the accesses from
    other scopes, one frozenset for every binding of the name there; the accesses after it in
    its own scope, a :class:`_Suffix`) and its own set, without copying the shared parts into
    each binding (:meth:`_ScopeVisitor.infer_accesses`)."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[AbstractSet[Access]]) -> None:
        self.parts = parts

    def __contains__(self, access: object) -> bool:
        return any(access in part for part in self.parts)

    def __iter__(self) -> Iterator[Access]:
        for k, part in enumerate(self.parts):
            earlier = self.parts[:k]
            yield from (access for access in part if not any(access in seen for seen in earlier))

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _Suffix(AbstractSet):
    """The accesses ``in_order[start:]`` (in the order of the scope's assignments), as a set
    shared by the bindings before them, without a copy each."""

    __slots__ = ("in_order", "positions", "start")

    def __init__(self, in_order: list[Access], positions: dict[int, int], start: int) -> None:
        self.in_order, self.positions, self.start = in_order, positions, start

    def __contains__(self, access: object) -> bool:
        k = self.positions.get(id(access))
        return k is not None and k >= self.start and self.in_order[k] is access

    def __iter__(self) -> Iterator[Access]:
        return iter(self.in_order[self.start :])

    def __len__(self) -> int:
        return len(self.in_order) - self.start


class _Ordered:
    """A name's bindings as the accesses of one scope see them: ``same``, those of that scope in
    the order they were bound (``indices``: their ``_index``), and ``others``, those of other
    scopes (every access may read them)."""

    __slots__ = ("indices", "others", "position", "same")

    def __init__(self, same: list[BaseAssignment], indices: list[int], others: frozenset[BaseAssignment]) -> None:
        self.same, self.indices, self.others = same, indices, others
        self.position = {id(b): k for k, b in enumerate(same)}


class BindingsBefore(AbstractSet):
    """An access's ``referents`` where the name is bound many times in the access's own scope:
    the first ``count`` bindings of ``ordered.same`` and all of ``ordered.others``, shared by the
    accesses of the scope instead of a set each (a file of many pasted scripts, each ``class
    Net_k(nn.Module)`` at module level after its own ``import torch.nn as nn``). The qualified
    names of such prefixes are taken incrementally (:func:`.context._qualified_names`)."""

    __slots__ = ("count", "ordered")

    def __init__(self, ordered: _Ordered, count: int) -> None:
        self.ordered, self.count = ordered, count

    def __contains__(self, binding: object) -> bool:
        if binding in self.ordered.others:
            return True
        k = self.ordered.position.get(id(binding))
        return k is not None and k < self.count and self.ordered.same[k] is binding

    def __iter__(self) -> Iterator[BaseAssignment]:
        yield from self.ordered.others
        yield from self.ordered.same[: self.count]

    def __len__(self) -> int:
        return len(self.ordered.others) + self.count
