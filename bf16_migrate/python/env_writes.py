"""Find every spelling of a legacy-variable write in a Python file.

Recognised writes (issue 2), each with the string literal that names the variable:
``os.environ["X"] = "1"``, ``os.environ.update({"X": "1", ...})`` / ``.update(X="1")``,
``os.environ.setdefault("X", "1")`` and ``os.putenv("X", "1")``, under any import spelling
(``import os as _os``, ``from os import environ``: resolved with libcst's QualifiedNameProvider).

Every other string literal naming a legacy variable (a read, a write in a form not handled) is
returned as a :class:`Mention`, so the planner can report it: nothing is skipped silently.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from ..rules import STOCHASTIC_ROUNDING_VAR, is_truthy
from .context import FileContext

ENVIRON = "os.environ"


@dataclass(frozen=True)
class LegacyWrite:
    """One write of a legacy variable.

    ``form`` is ``"subscript"``, ``"update-dict"``, ``"update-kwarg"``, ``"setdefault"`` or
    ``"putenv"``. ``key`` is the node naming the variable (a SimpleString, or the keyword Name of
    ``update(X=...)``); ``value`` the expression written; ``literal`` its string value when it is
    a string literal (else None: a computed value). ``statement`` is the SimpleStatementLine
    holding the write, ``element`` the DictElement / Arg to drop for a multi-key ``update``.
    """

    variable: str
    form: str
    key: cst.CSTNode
    value: cst.BaseExpression
    literal: str | None
    statement: cst.SimpleStatementLine
    small: cst.BaseSmallStatement
    element: cst.CSTNode | None
    siblings: int  # other keys written by the same update() call

    @property
    def truthy(self) -> bool | None:
        """Whether torch-xla would read the value as on (None: computed, undecidable here)."""
        return None if self.literal is None else is_truthy(self.literal)


@dataclass(frozen=True)
class Mention:
    """A string literal naming a legacy variable outside any recognised write."""

    variable: str
    node: cst.SimpleString
    is_read: bool


def _string_value(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _is_environ(ctx: FileContext, node: cst.CSTNode) -> bool:
    return ENVIRON in ctx.qualified_names(node)


def _small_and_line(ctx: FileContext, node: cst.CSTNode):
    small = line = None
    for anc in [node, *ctx.ancestors(node)]:
        if small is None and isinstance(anc, cst.BaseSmallStatement):
            small = anc
        if isinstance(anc, cst.SimpleStatementLine):
            line = anc
            break
        if isinstance(anc, (cst.BaseCompoundStatement, cst.SimpleStatementSuite)):
            break
    return small, line


def collect_writes(ctx: FileContext, variables: set[str]) -> tuple[list[LegacyWrite], list[Mention]]:
    """All writes of ``variables`` (names of legacy variables) and all other mentions of them."""
    writes: list[LegacyWrite] = []
    consumed: set[int] = set()

    def add(variable, form, key, value, call_or_assign, element=None, siblings=0):
        small, line = _small_and_line(ctx, call_or_assign)
        if line is None:  # e.g. a write inside a one-line `if x: os.environ[...] = "1"` suite
            return
        writes.append(
            LegacyWrite(variable, form, key, value, _string_value(value), line, small, element, siblings)
        )
        consumed.add(id(key))

    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) != 1:
            continue
        target = assign.targets[0].target
        if not (isinstance(target, cst.Subscript) and _is_environ(ctx, target.value)):
            continue
        if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
            continue
        key = target.slice[0].slice.value
        name = _string_value(key)
        if name in variables:
            add(name, "subscript", key, assign.value, assign)

    for call in ctx.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and _is_environ(ctx, func.value):
            method = func.attr.value
            if method == "update":
                if len(call.args) == 1 and call.args[0].keyword is None and isinstance(call.args[0].value, cst.Dict):
                    elements = call.args[0].value.elements
                    for el in elements:
                        if isinstance(el, cst.DictElement) and _string_value(el.key) in variables:
                            add(_string_value(el.key), "update-dict", el.key, el.value, call, el, len(elements) - 1)
                elif all(a.keyword is not None for a in call.args):
                    for arg in call.args:
                        if arg.keyword.value in variables:
                            add(arg.keyword.value, "update-kwarg", arg.keyword, arg.value, call, arg, len(call.args) - 1)
            elif method == "setdefault" and len(call.args) == 2:
                name = _string_value(call.args[0].value)
                if name in variables:
                    add(name, "setdefault", call.args[0].value, call.args[1].value, call)
        elif "os.putenv" in ctx.qualified_names(func) and len(call.args) == 2:
            name = _string_value(call.args[0].value)
            if name in variables:
                add(name, "putenv", call.args[0].value, call.args[1].value, call)

    mentions = []
    for string in ctx.nodes(cst.SimpleString):
        name = _string_value(string)
        if name in variables and id(string) not in consumed:
            mentions.append(Mention(name, string, _is_read(ctx, string)))
    return writes, mentions


def _is_read(ctx: FileContext, string: cst.SimpleString) -> bool:
    """A literal used as ``os.environ.get(X)``, ``os.getenv(X)``, ``X in os.environ`` or
    ``os.environ[X]`` in load position."""
    parent = ctx.parent(string)
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        if isinstance(call, cst.Call):
            names = ctx.qualified_names(call.func)
            if "os.getenv" in names:
                return True
            if isinstance(call.func, cst.Attribute) and _is_environ(ctx, call.func.value):
                return call.func.attr.value in ("get", "__getitem__", "__contains__")
    if isinstance(parent, cst.Comparison):
        return any(isinstance(t.operator, (cst.In, cst.NotIn)) for t in parent.comparisons)
    if isinstance(parent, cst.Index):
        subscript = ctx.parent(ctx.parent(parent))
        return isinstance(subscript, cst.Subscript) and not isinstance(ctx.parent(subscript), cst.AssignTarget)
    return False


def sets_stochastic_rounding(ctx: FileContext) -> bool:
    """True when the file already names ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` in a string literal
    (a write, or a read the user relies on): the codemod then adds no write of its own."""
    return any(_string_value(s) == STOCHASTIC_ROUNDING_VAR for s in ctx.nodes(cst.SimpleString))


_UNGUARDED_PARENTS = (cst.Module, cst.FunctionDef)


def guard_of(ctx: FileContext, write: LegacyWrite) -> cst.CSTNode | None:
    """The innermost construct that makes the write conditional (an ``if``, loop, ``try``,
    ``with``, lambda or class body), or None when it runs unconditionally at module level or in a
    function body. ``if __name__ == "__main__":`` counts as unconditional for a script."""
    for anc in ctx.ancestors(write.statement):
        if isinstance(anc, cst.IndentedBlock):
            continue
        if isinstance(anc, _UNGUARDED_PARENTS):
            return None
        if isinstance(anc, cst.If) and _is_main_guard(anc) and write.statement in _direct_body(anc):
            continue
        return anc
    return None


def _direct_body(node: cst.If):
    body = node.body
    return body.body if isinstance(body, cst.IndentedBlock) else ()


def _is_main_guard(node: cst.If) -> bool:
    return m.matches(
        node.test,
        m.Comparison(
            left=m.Name("__name__"),
            comparisons=[m.ComparisonTarget(operator=m.Equal(), comparator=m.SimpleString())],
        ),
    ) and _string_value(node.test.comparisons[0].comparator) == "__main__"
