"""Walking a libcst tree without libcst's visits, which rebuild every node they pass: the
children of a node in libcst's visiting order (:func:`children`), ``libcst.matchers.findall``
over them (:func:`findall`), and one index of parents and nodes by class (:func:`_index`).
Punctuation, operators, brackets and whitespace ("trivia") are left out where nothing asks
about them.
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter
from typing import Any, overload

import libcst as cst
import libcst.matchers as m


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
_BRACKETS = {
    cst.LeftParen,
    cst.RightParen,
    cst.LeftSquareBracket,
    cst.RightSquareBracket,
    cst.LeftCurlyBrace,
    cst.RightCurlyBrace,
}
_TRIVIA: dict[type, bool] = {}
_DEFAULT = cst.MaybeSentinel.DEFAULT


def _is_trivia(cls: type) -> bool:
    found = _TRIVIA.get(cls)
    if found is None:
        found = _TRIVIA[cls] = cls.__module__ in _TRIVIA_MODULES or cls in _BRACKETS
    return found


def _node_classes(cls: type) -> Iterator[type]:
    subclasses: list[type] = cls.__subclasses__()
    for sub in subclasses:
        yield sub
        yield from _node_classes(sub)


# every node class libcst defines, judged once here: the walks below read ``_TRIVIA`` directly
# (a call of _is_trivia per child was a tenth of their time), _is_trivia only for a class
# defined later
for _cls in _node_classes(cst.CSTNode):
    _is_trivia(_cls)


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
    if not trivia:
        return _kept_children(node)
    out: list[cst.CSTNode] = []
    for value in _shape(node).get(node):
        if value is None or value is cst.MaybeSentinel.DEFAULT:
            continue
        if isinstance(value, (tuple, list)):
            out.extend(value)
        else:
            out.append(value)
    return out


def _kept_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``children(node, trivia=False)``: one pass over the fields, the trivia left out as they
    come (the walks of the index and of findall call this for every node they pass)."""
    out: list[cst.CSTNode] = []
    known = _TRIVIA
    for value in _shape(node).get(node):
        kind = value.__class__
        if kind is tuple or kind is list or isinstance(value, (tuple, list)):
            for child in value:
                trivia = known.get(child.__class__)
                if not (_is_trivia(child.__class__) if trivia is None else trivia):
                    out.append(child)
        elif value is not None and value is not _DEFAULT:
            trivia = known.get(kind)
            if not (_is_trivia(kind) if trivia is None else trivia):
                out.append(value)
    return out


# A matcher of the class m.X matches only nodes of the class cst.X (libcst compares class
# names): the overloads say so for the classes the codemod asks about.
@overload
def findall(tree: cst.CSTNode, matcher: m.Name, index: NodeIndex | None = None) -> Sequence[cst.Name]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.Call, index: NodeIndex | None = None) -> Sequence[cst.Call]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.Assign, index: NodeIndex | None = None) -> Sequence[cst.Assign]: ...


@overload
def findall(
    tree: cst.CSTNode, matcher: m.AssignTarget, index: NodeIndex | None = None
) -> Sequence[cst.AssignTarget]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.FunctionDef, index: NodeIndex | None = None) -> Sequence[cst.FunctionDef]: ...


@overload
def findall(
    tree: cst.CSTNode, matcher: m.SimpleString, index: NodeIndex | None = None
) -> Sequence[cst.SimpleString]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.Return, index: NodeIndex | None = None) -> Sequence[cst.Return]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.Yield, index: NodeIndex | None = None) -> Sequence[cst.Yield]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.Float, index: NodeIndex | None = None) -> Sequence[cst.Float]: ...


@overload
def findall(tree: cst.CSTNode, matcher: m.BaseMatcherNode, index: NodeIndex | None = None) -> Sequence[cst.CSTNode]: ...


def findall(tree: cst.CSTNode, matcher: m.BaseMatcherNode, index: NodeIndex | None = None) -> Sequence[cst.CSTNode]:
    """``libcst.matchers.findall(tree, matcher)``, the same nodes in the same order, without
    rebuilding the tree (a libcst visit rebuilds every node it passes): a walk of
    :func:`children` that tries the matcher only on nodes of the classes it names (and so
    skips the trivia below the tree unless it names a trivia class). Any other matcher (a
    predicate, an inverse, metadata) goes to libcst.

    ``index``: the :class:`NodeIndex` of the module ``tree`` is part of (``FileContext.index``):
    the nodes of the classes the matcher names are then taken from it instead of walking the
    tree (a function's body, asked about once per model or per write), the same nodes in the
    same order; a tree of no module's index (a node the planner made) is walked."""
    names = _matcher_classes(matcher)
    if names is None or not isinstance(tree, cst.CSTNode):
        return m.findall(tree, matcher)
    trivia = any(_is_trivia(getattr(cst, name)) for name in names)
    bare = _is_bare(matcher)  # m.Name() | m.Call(): the class is the whole question
    if index is not None and not trivia:
        listed = index.below(tree, names)
        if listed is not None:
            return listed if bare else [node for node in listed if m.matches(node, matcher)]
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


def _index(
    module: cst.Module,
    ranges: dict[int, tuple[int, int]] | None = None,
    kids_of: dict[int, list[cst.CSTNode]] | None = None,
) -> tuple[dict[int, cst.CSTNode], dict[type, list[cst.CSTNode]]]:
    """One walk: the parent of every node but the trivia (by ``id``) and those nodes grouped
    by class, in the order libcst's ParentNodeProvider records them (a node's children, in
    order, when the walk leaves the node), so that ties in :meth:`FileContext.nodes` keep
    their order. ``ranges``, when given, gets each of those nodes' (by ``id``) place in the
    walk's pre-order, the order :func:`findall` finds nodes in: (its own, the first after its
    descendants'), so that the nodes below it are those whose place is in that range.
    ``kids_of``, when given, gets each of those nodes' children without the trivia (by ``id``):
    the walks of the metadata read them there instead of reading the fields again."""
    parent: dict[int, cst.CSTNode] = {}
    by_type: dict[type, list[cst.CSTNode]] = {}
    stack: list[tuple[cst.CSTNode, list[cst.CSTNode] | None, int]] = [(module, None, 0)]
    pop, push = stack.pop, stack.append
    entered = 0
    while stack:
        node, kids, start = pop()
        if kids is None:  # entering: leave after the children
            kids = _kept_children(node)
            if kids_of is not None:
                kids_of[id(node)] = kids
            push((node, kids, entered))
            entered += 1
            for child in reversed(kids):
                push((child, None, 0))
            continue
        if ranges is not None:
            ranges[id(node)] = (start, entered)
        for child in kids:  # leaving
            key = id(child)
            if key not in parent:
                group = by_type.get(child.__class__)
                if group is None:
                    group = by_type[child.__class__] = []
                group.append(child)
            parent[key] = node
    return parent, by_type


class NodeIndex:
    """The nodes of one module's index (:func:`_index`: every node but the trivia, by class)
    in the pre-order of its walk, the order :func:`findall` finds them in: the nodes of a class
    below a node are one slice of that class's list (found by bisection), not a walk."""

    __slots__ = ("_by_type", "_preorder", "_ranges")

    def __init__(self, by_type: dict[type, list[cst.CSTNode]], ranges: dict[int, tuple[int, int]]) -> None:
        self._by_type, self._ranges = by_type, ranges
        self._preorder: dict[type, tuple[list[cst.CSTNode], list[int]]] = {}

    def below(self, tree: cst.CSTNode, names: frozenset[str]) -> list[cst.CSTNode] | None:
        """The nodes of the classes named ``names`` that are ``tree`` or below it, in
        :func:`findall`'s order; None when ``tree`` is not a node of the index."""
        ranges = self._ranges
        span = ranges.get(id(tree))
        if span is None:
            return None
        start, end = span
        found: list[cst.CSTNode] = []
        for name in names:
            kind = getattr(cst, name)
            listed = self._preorder.get(kind)
            if listed is None:
                ordered = sorted(self._by_type.get(kind, ()), key=lambda n: ranges[id(n)][0])
                listed = self._preorder[kind] = (ordered, [ranges[id(n)][0] for n in ordered])
            ordered, starts = listed
            found += ordered[bisect_left(starts, start) : bisect_left(starts, end)]
        if len(names) > 1:
            found.sort(key=lambda n: ranges[id(n)][0])
        return found


def _is_bare(matcher) -> bool:
    """Whether ``matcher`` (one that :func:`_matcher_classes` reads) asks nothing but the
    class: every field of it (and of each option of a ``|``) is ``DoNotCare()``."""
    options = matcher.options if isinstance(matcher, m.OneOf) else (matcher,)
    return all(
        not isinstance(option, m.OneOf)
        and all(isinstance(getattr(option, f.name), m.DoNotCareSentinel) for f in dataclasses.fields(option))
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
