"""The parsed module and its libcst metadata, shared by the fact collectors of one file.

One parse per file: every collector reads the same :class:`FileContext`, so node identities
match across them and the planned edits can be keyed by the original nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar, cast

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.helpers import get_full_name_for_node
from libcst.metadata import MetadataWrapper, Scope

from ..diagnostics import Diagnostic
from ..diagnostics import report as new_diagnostic
from ..rules import Rules
from .metadata import _NEWLINE, BindingsBefore, Span, _expression_contexts, _scopes, _spans_and_extents, gc_paused
from .outcome import Outcome
from .tree_types import TreeFacts
from .walk import NodeIndex, _index, children, findall

__all__ = [
    "FileContext",
    "Span",
    "children",
    "findall",
    "gc_paused",
]  # children, findall and gc_paused: re-exported for the collectors

N = TypeVar("N", bound=cst.CSTNode)
_Known = dict[tuple[int, str | None], tuple]
"""A module's qualified names, by (id of a set or list of bindings, the name asked): see
:func:`_names_of` and :func:`_names_of_first`."""


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
    test_module: bool = False
    """The file is a test module, not a training script (:func:`.test_or_script.is_test_module`)."""
    source: str | None = None
    """The text the module was parsed from (its ``code``), when the caller has it."""

    def __post_init__(self) -> None:
        self.module = self.wrapper.module
        with gc_paused():
            ranges: dict[int, tuple[int, int]] = {}
            kids: dict[int, list[cst.CSTNode]] = {}  # each node's children, read once for the three walks
            self._parent, self._by_type = _index(self.module, ranges, kids)
            self._spans, self._extents = _spans_and_extents(self.module)
            expression_context = _expression_contexts(self.module, kids)
            self.scopes = _scopes(self.module, expression_context, kids)
        self.index = NodeIndex(self._by_type, ranges)
        """The module's nodes for :func:`findall` (``findall(tree, matcher, ctx.index)``)."""
        self._sorted: dict[type, list[cst.CSTNode]] = {}
        self._qualified: dict[cst.CSTNode, frozenset[str]] = {}
        self._code: dict[cst.CSTNode, str] = {}
        self._names_of: _Known = {}
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

    def nodes_in(self, kind: type[N], function: cst.FunctionDef | None) -> list[N]:
        """The nodes of :meth:`nodes` (``kind``) whose innermost enclosing function is
        ``function`` (None: at module level or in a class body, outside any function), in
        source order: a question asked per model or per write is then as long as that function,
        not the file (grouped once per kind)."""
        return list(self.nodes_grouped(kind, "by function", self._function_of).get(id(function), ()))

    def nodes_named(self, kind: type[N], name: str, part: str) -> list[N]:
        """The nodes of :meth:`nodes` (``kind``) whose field ``part`` (``"func"`` for a call)
        is the name ``name`` or an attribute ``<...>.name``, in source order (grouped once per
        kind and field): what a question about the calls of one name needs to look at.
        ``part="args"``: the calls of a plain name (``f(...)``) passing such an argument."""
        key = _passed_names if part == "args" else lambda node: (_last_name(getattr(node, part)),)
        return list(self.nodes_grouped(kind, ("by name", part), key).get(name, ()))

    def nodes_grouped(
        self, kind: type[N], label: object, keys: Callable[[N], Iterable[object]]
    ) -> dict[object, list[N]]:
        """The nodes of :meth:`nodes` (``kind``) grouped under each of ``keys(node)`` (None left
        out), each group in source order; computed once per ``kind`` and ``label`` (which names
        ``keys``): an index for a question asked per model or per write."""
        return self.memo(("nodes grouped", kind, label), lambda: _group(self.nodes(kind), keys))

    def in_order(self, kind: type[N], nodes: Iterable[N]) -> list[N]:
        """``nodes`` (of :meth:`nodes` (``kind``)) once each, in :meth:`nodes`' order."""
        rank = self.memo(("rank", kind), lambda: {id(n): k for k, n in enumerate(self.nodes(kind))})
        return sorted({id(n): n for n in nodes}.values(), key=lambda n: rank[id(n)])

    def _function_of(self, node: cst.CSTNode) -> tuple[int]:
        return (id(self.enclosing(node, cst.FunctionDef)),)

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
            in_import = isinstance(node, cst.Attribute) and isinstance(self.parent(node), cst.ImportAlias)
            names = _qualified_names(scope, node, in_import, self._names_of) if scope else frozenset()
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
        """``module.code_for_node(node)``, once per node (the collectors ask for the code of the
        same names and calls many times): for an expression of the module on one line, without
        parentheses of its own, the text between its span's ends, which is what libcst renders for
        it (the text round-trips; a rendering visits every node below it), else rendered."""
        found = self._code.get(node)
        if found is None:
            found = self._sliced(node)
            if found is None:
                found = self.module.code_for_node(node)
            self._code[node] = found  # keyed by the node: it stays alive
        return found

    def _sliced(self, node: cst.CSTNode) -> str | None:
        text = self.source
        if text is None or not isinstance(node, cst.BaseExpression) or node.lpar or hasattr(node, "comma"):
            return None  # a starred element renders its comma
        span = self._spans.get(id(node))
        if span is None:
            return None
        (first, column), (last, end) = span
        if first != last:
            return None  # libcst renders a continuation line without the indentation of its block
        starts = self.memo(("line starts",), lambda: [0, *(m.end() for m in _NEWLINE.finditer(text))])
        return text[starts[first - 1] + column : starts[first - 1] + end]

    def module_code(self, new: cst.Module) -> str:
        """``new.code`` for ``new``, a module the edits made from this file's (``module``):
        each statement of its body that is one of ``module``'s body (the same node) taken from
        the text it was parsed from instead of rendered (a statement's code does not depend on
        where it is in a module's body: no indentation comes before it), the others rendered.
        Rendered whole when the text is not known, or the module's indentation, line end or
        last line end differ (libcst drops the module's last line end after the rendering)."""
        module, text = self.module, self.source
        if (
            text is None
            or not (module.has_trailing_newline and new.has_trailing_newline)
            or (new.default_indent, new.default_newline) != (module.default_indent, module.default_newline)
        ):
            return new.code
        extents = self._extents
        starts = self.memo(("line starts",), lambda: [0, *(m.end() for m in _NEWLINE.finditer(text))])
        state = CodegenState(default_indent=new.default_indent, default_newline=new.default_newline)
        for line in new.header:
            line._codegen(state)
        for statement in new.body:
            extent = extents.get(id(statement))  # the original's statements stay alive: an id is theirs
            if extent is None:
                statement._codegen(state)
            else:
                (first, column), (last, end) = extent
                state.tokens.append(text[starts[first - 1] + column : starts[last - 1] + end])
        for line in new.footer:
            line._codegen(state)
        if not state.tokens:
            state.add_token(state.default_newline)  # Module._codegen_impl's, for a module of nothing
        return "".join(state.tokens)

    def text(self) -> str:
        """The module's code: the text it was parsed from (libcst's parse and code generation
        give it back byte for byte), without rendering it when the caller gave it."""
        if self.source is None:
            self.source = self.module.code
        return self.source

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


def _group(nodes: list[N], keys: Callable[[N], Iterable[object]]) -> dict[object, list[N]]:
    """``nodes`` grouped under each of ``keys(node)`` (None left out), each group in the order
    of ``nodes``, a node once in each."""
    groups: dict[object, list[N]] = {}
    for node in nodes:
        for k in dict.fromkeys(keys(node)):
            if k is not None:
                groups.setdefault(k, []).append(node)
    return groups


def _passed_names(call: cst.CSTNode) -> Iterable[str | None]:
    """The last names (:func:`_last_name`) of the argument values of ``call`` when it calls a
    plain name."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name)):
        return ()
    return [_last_name(arg.value) for arg in call.args]


def _last_name(expr: object) -> str | None:
    """``name`` for ``name`` and ``<...>.name``, else None."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def _qualified_names(
    scope: Scope,
    node: cst.CSTNode,
    in_import: bool,
    known: _Known,
) -> frozenset[str]:
    """``{q.name for q in scope.get_qualified_names_for(node)}`` (libcst 1.9's
    ``Scope.get_qualified_names_for``), each set of bindings' names for a dotted name taken
    once: libcst asks every binding the access may read (every ``import torch`` of a file of
    many pasted scripts, for each ``torch.zeros``), a loop as long as the file for each name.

    ``in_import``: ``node`` is the dotted name of an import (``import a.b``). ``known`` maps
    (id of a set of bindings, the name asked, None for each binding's own) to (that set, its
    size, their names); the sets are a scope's own or those its accesses share (:mod:`.metadata`), which no
    longer grow."""
    accesses = scope._accesses_by_node.get(node)
    if accesses:  # an access: the names its referents give for their own names
        names: set[str] = set()
        for access in accesses:
            names |= _names_of(access.referents, None, known)
        return frozenset(names)
    full_name = get_full_name_for_node(node)
    if full_name is None:
        return frozenset()
    if not isinstance(node, (cst.Attribute, cst.Call, cst.Subscript)) or in_import:
        # maybe a binding's own node (a name, a def, an import's name): libcst picks that
        # binding (its _is_assignment), which a call, a subscript or an attribute never is
        return frozenset(q.name for q in scope.get_qualified_names_for(node))
    prefix: str | None = full_name
    while prefix:
        if prefix in scope:
            return _names_of(scope[prefix], full_name, known)
        idx = prefix.rfind(".")
        prefix = None if idx == -1 else prefix[:idx]
    return frozenset()


def _names_of(
    bindings: Collection,
    full_name: str | None,
    known: _Known,
) -> frozenset[str]:
    """The names ``bindings`` give ``full_name`` (each binding its own name for None)."""
    if isinstance(bindings, BindingsBefore):  # a prefix of one ordered list, grown one at a time
        others = _names_of(bindings.ordered.others, full_name, known) if bindings.ordered.others else frozenset()
        return others | _names_of_first(bindings.ordered.same, bindings.count, full_name, known)
    key = (id(bindings), full_name)
    hit = known.get(key)
    if hit is None or hit[0] is not bindings or hit[1] != len(bindings):
        names: set[str] = set()
        for b in bindings:  # each binding's names once: the accesses in the bindings' own
            # scope each have a set of their own (the bindings before them)
            one = known.get((id(b), full_name))
            if one is None or one[0] is not b:
                asked = b.name if full_name is None else full_name
                one = known[(id(b), full_name)] = (b, 1, frozenset(q.name for q in b.get_qualified_names_for(asked)))
            names |= one[2]
        hit = known[key] = (bindings, len(bindings), frozenset(names))
    return hit[2]


def _names_of_first(
    same: list,
    count: int,
    full_name: str | None,
    known: _Known,
) -> frozenset[str]:
    """The names the first ``count`` bindings of ``same`` give ``full_name``: the names of each
    prefix kept (in ``known``, under the id of ``same``), each made from the one before it."""
    key = (id(same), full_name)
    hit = known.get(key)
    if hit is None or hit[0] is not same:
        hit = known[key] = (same, 0, [frozenset()])
    prefixes: list[frozenset[str]] = hit[2]
    while len(prefixes) <= count:
        b = same[len(prefixes) - 1]
        asked = b.name if full_name is None else full_name
        prefixes.append(prefixes[-1] | {q.name for q in b.get_qualified_names_for(asked)})
    return prefixes[count]
