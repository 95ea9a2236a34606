"""Find every spelling of a legacy-variable write in a Python file.

Recognised writes (the ways Python's ``os`` module sets an environment variable: ``os.environ``
is a ``MutableMapping``, plus ``os.putenv``), each with the string literal that names the variable:
``os.environ["X"] = "1"``, ``os.environ.update({"X": "1", ...})`` / ``.update(X="1")``,
``os.environ.setdefault("X", "1")`` and ``os.putenv("X", "1")``, under any import spelling
(``import os as _os``, ``from os import environ``: resolved with libcst's QualifiedNameProvider).

Every other string literal naming a legacy variable (a read, a write in a form not handled) is
returned as a :class:`Mention`, so the planner can report it: nothing is skipped silently.

What surrounds a write lives next door: the conditions it runs under in
:mod:`.write_conditions`, whether it was in force when the device was first used in
:mod:`.in_force` (with the device-use facts of :mod:`.device_use`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

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
    value: cst.BaseExpression | None  # None for an unset (``del``, ``pop``, ``unsetenv``) and ``os.system``
    literal: str | None
    statement: cst.SimpleStatementLine
    small: cst.BaseSmallStatement
    element: cst.CSTNode | None
    siblings: int  # other keys written by the same update() call

    @property
    def truthy(self) -> bool | None:
        """Whether torch-xla would read the value as on (None: computed, undecidable here)."""
        return None if self.literal is None else is_truthy(self.literal)

    @property
    def unsets(self) -> bool:
        """``del os.environ[X]``, ``os.environ.pop(X)``, ``os.unsetenv(X)``."""
        return self.form in ("del", "pop")


@dataclass(frozen=True)
class Condition:
    """One condition a write depends on: ``expr`` (evaluated where the write is), negated when
    the write is in the ``else`` branch or the value is on when the test is false."""

    expr: cst.BaseExpression
    negated: bool = False


def value_state(value: cst.BaseExpression | None) -> tuple[str, Condition | None]:
    """What a written value means to torch-xla (``GetEnvBool``: ``rules.is_truthy``):
    ``("on"|"off", None)`` for a decidable value (``"1"``, ``str(0)``, ``"1" if c else "1"``),
    ``("if", Condition)`` when it is on exactly when a condition holds (``str(int(flag))``,
    ``"1" if c else "0"``), ``("not-a-string", None)`` for ``1`` or ``True`` (os.environ
    raises TypeError: ``os.environ`` accepts only str values), ``("unknown", None)`` otherwise.
    The computed spellings are those found in public training scripts (``str(int(args.bf16))``,
    ``"1" if args.bf16 else "0"``)."""
    if value is None:
        return "unknown", None
    literal = string_value(value)
    if literal is not None:
        return ("on" if is_truthy(literal) else "off"), None
    if isinstance(value, (cst.Integer, cst.Float)) or m.matches(value, m.Name("True") | m.Name("False")):
        return "not-a-string", None
    if isinstance(value, cst.Call) and m.matches(value, m.Call(func=m.Name("str"), args=[m.Arg(keyword=None)])):
        inner = value.args[0].value
        if isinstance(inner, cst.Integer):
            return ("on" if int(inner.value, 0) != 0 else "off"), None
        if m.matches(inner, m.Name("True") | m.Name("False")):
            return "off", None  # "True"/"False": torch-xla reads neither as on
        if m.matches(inner, m.Call(func=m.Name("int"), args=[m.Arg(keyword=None)])):
            return "if", Condition(inner)  # int(x) != 0 exactly when torch-xla reads str(int(x)) as on
    if isinstance(value, cst.IfExp):
        body, _ = value_state(value.body)
        orelse, _ = value_state(value.orelse)
        if body in ("on", "off") and orelse in ("on", "off"):
            if body == orelse:
                return body, None
            return "if", Condition(value.test, negated=(body == "off"))
    return "unknown", None


@dataclass(frozen=True)
class Mention:
    """A string literal naming a legacy variable outside any recognised write, or a keyword
    argument named after one (``dict(os.environ, XLA_USE_BF16="1")``, ``env.update(XLA_USE_BF16=...)``:
    a child process's environment built from keywords)."""

    variable: str
    node: cst.SimpleString | cst.Name
    is_read: bool


def string_value(node: cst.CSTNode) -> str | None:
    """The ``str`` a (possibly implicitly concatenated) string literal evaluates to (libcst's
    ``evaluated_value``); None for any other node and for a bytes literal."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(node, cst.ConcatenatedString):
        joined = node.evaluated_value
        return joined if isinstance(joined, str) else None
    return None


def is_environ(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Whether ``node`` is ``os.environ`` under any import spelling (QualifiedNameProvider)."""
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
    # the planner asks, then the string-mention report (for the literals the planner covered)
    writes, mentions = ctx.memo(("writes", frozenset(variables)), lambda: _collect_writes(ctx, variables))
    return list(writes), list(mentions)


def _collect_writes(ctx: FileContext, variables: set[str]) -> tuple[list[LegacyWrite], list[Mention]]:
    """The phases of :func:`collect_writes`, in the order the writes are listed: subscript
    assignments, ``del``, calls (``os.environ`` methods, ``os.putenv``/``unsetenv``/``system``),
    then every other literal naming a variable."""
    collector = _WriteCollector(ctx, variables)
    collector.subscript_assignments()
    collector.merges()
    collector.deletions()
    for call in ctx.nodes(cst.Call):
        collector.call(call)
    return collector.writes, collector.mentions()


class _WriteCollector:
    """The writes of ``variables`` found so far in one file, and the ids of the keys they
    consumed (a literal that keys a write is not also a mention)."""

    def __init__(self, ctx: FileContext, variables: set[str]) -> None:
        self.ctx = ctx
        self.variables = variables
        self.writes: list[LegacyWrite] = []
        self.consumed: set[int] = set()

    def add(
        self,
        variable: str,
        form: str,
        key: cst.CSTNode,
        value: cst.BaseExpression | None,
        call_or_assign: cst.CSTNode,
        element: cst.CSTNode | None = None,
        siblings: int = 0,
    ) -> None:
        small, line = _small_and_line(self.ctx, call_or_assign)
        if line is None:  # e.g. a write inside a one-line `if x: os.environ[...] = "1"` suite
            return
        self.writes.append(
            LegacyWrite(
                variable,
                form,
                key,
                value,
                string_value(value) if value is not None else None,
                line,
                small,
                element,
                siblings,
            )
        )
        self.consumed.add(id(key))

    def name_of(self, node: cst.CSTNode) -> str | None:
        """The variable a key names: a string literal, or a name bound once to one."""
        literal = string_value(node)
        if literal is not None or not isinstance(node, cst.Name):
            return literal
        constant = _constant_string(self.ctx, node)
        return constant

    def subscript_assignments(self) -> None:
        """``os.environ[X] = value``."""
        ctx, variables = self.ctx, self.variables
        for assign in ctx.nodes(cst.Assign):
            if len(assign.targets) != 1:
                continue
            target = assign.targets[0].target
            if not (isinstance(target, cst.Subscript) and is_environ(ctx, target.value)):
                continue
            if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
                continue
            key = target.slice[0].slice.value
            name = self.name_of(key)
            if name in variables:
                self.add(name, "subscript", key, assign.value, assign)

    def merges(self) -> None:
        """``os.environ |= {X: v, ...}`` (Python 3.9's dict merge, PEP 584): the keys of an
        ``update({...})``."""
        for aug in self.ctx.nodes(cst.AugAssign):
            if (
                isinstance(aug.operator, cst.BitOrAssign)
                and isinstance(aug.value, cst.Dict)
                and is_environ(self.ctx, aug.target)
            ):
                self.dict_keys(aug.value, aug)

    def dict_keys(self, mapping: cst.Dict, statement: cst.CSTNode) -> None:
        """Each key of ``mapping`` naming a variable, as a write of the update ``statement`` (a
        call, or an ``|=``) that drops that key alone when the mapping holds others."""
        elements = mapping.elements
        for el in elements:
            name = string_value(el.key) if isinstance(el, cst.DictElement) else None
            if isinstance(el, cst.DictElement) and name is not None and name in self.variables:
                self.add(name, "update-dict", el.key, el.value, statement, el, len(elements) - 1)

    def keywords(self, call: cst.Call, statement: cst.CSTNode) -> None:
        """Each keyword of ``call`` (``update(X=v)``, ``dict(X=v)``) naming a variable, as a write
        of the update ``statement``."""
        for arg in call.args:
            keyword = arg.keyword
            if keyword is not None and keyword.value in self.variables:
                self.add(keyword.value, "update-kwarg", keyword, arg.value, statement, arg, len(call.args) - 1)

    def deletions(self) -> None:
        """``del os.environ[X]``."""
        ctx, variables = self.ctx, self.variables
        for delete in ctx.nodes(cst.Del):
            target = delete.target
            if isinstance(target, cst.Subscript) and is_environ(ctx, target.value) and len(target.slice) == 1:
                index = target.slice[0].slice
                name = self.name_of(index.value) if isinstance(index, cst.Index) else None
                if isinstance(index, cst.Index) and name is not None and name in variables:
                    self.add(name, "del", index.value, None, delete)

    def call(self, call: cst.Call) -> None:
        """A method of ``os.environ`` (``update``, ``setdefault``, ``pop``), ``os.putenv``,
        ``os.unsetenv``, or ``os.system("export X=1")``."""
        ctx, variables, add = self.ctx, self.variables, self.add
        func = call.func
        if isinstance(func, cst.Attribute) and is_environ(ctx, func.value):
            self.environ_method(call, func.attr.value)
        elif "os.putenv" in ctx.qualified_names(func) and len(call.args) == 2:
            name = self.name_of(call.args[0].value)
            if name in variables:
                add(name, "putenv", call.args[0].value, call.args[1].value, call)
        elif (
            "os.unsetenv" in ctx.qualified_names(func)
            and len(call.args) == 1
            and isinstance(ctx.parent(call), cst.Expr)
        ):
            name = self.name_of(call.args[0].value)
            if name in variables:
                add(name, "pop", call.args[0].value, None, call)
        elif (
            "os.system" in ctx.qualified_names(func) and len(call.args) == 1 and isinstance(ctx.parent(call), cst.Expr)
        ):
            command = string_value(call.args[0].value)
            exported = _export_only(command, variables) if command else None
            if exported:
                add(exported, "system-export", call.args[0].value, None, call)

    def environ_method(self, call: cst.Call, method: str) -> None:
        """``os.environ.update({X: v, ...})`` / ``.update(X=v)``, ``.setdefault(X, v)``, and
        ``.pop(X)`` as a statement of its own."""
        ctx, variables, add = self.ctx, self.variables, self.add
        if method == "update":
            single = call.args[0].value if len(call.args) == 1 and call.args[0].keyword is None else None
            if isinstance(single, cst.Dict):
                self.dict_keys(single, call)
            elif all(a.keyword is not None for a in call.args):
                self.keywords(call, call)
            elif isinstance(single, cst.Name):
                held = _held_mapping(ctx, single)
                if isinstance(held, cst.Dict):
                    self.dict_keys(held, call)
                elif isinstance(held, cst.Call):
                    self.keywords(held, call)
            elif isinstance(single, cst.Subscript):
                entry = _held_entry(ctx, single)
                if entry is not None:
                    self.dict_keys(entry, call)
        elif method == "setdefault" and len(call.args) == 2:
            name = self.name_of(call.args[0].value)
            if name in variables:
                add(name, "setdefault", call.args[0].value, call.args[1].value, call)
        elif method == "pop" and call.args and isinstance(ctx.parent(call), cst.Expr):
            name = self.name_of(call.args[0].value)
            if name in variables:
                add(name, "pop", call.args[0].value, None, call)

    def mentions(self) -> list[Mention]:
        """Every other literal naming one of the variables (a read, a write in a form not
        handled), and every keyword argument named after one that no write consumed: the
        environment of a child process is often built as ``dict(os.environ, XLA_USE_BF16="1")``
        (``dict(mapping, **kwargs)``: https://docs.python.org/3/library/stdtypes.html#dict)."""
        mentions: list[Mention] = []
        for string in self.ctx.nodes(cst.SimpleString):
            name = string_value(string)
            if name in self.variables and id(string) not in self.consumed:
                mentions.append(Mention(name, string, _is_read(self.ctx, string)))
        for arg in self.ctx.nodes(cst.Arg):
            keyword = arg.keyword
            if keyword is not None and keyword.value in self.variables and id(keyword) not in self.consumed:
                mentions.append(Mention(keyword.value, keyword, False))
        return sorted(mentions, key=lambda mention: self.ctx.pos(mention.node))


def _held_mapping(ctx: FileContext, name: cst.Name) -> cst.Dict | cst.Call | None:
    """The mapping ``name`` holds when it is bound once, by ``NAME = {...}`` or ``NAME = dict(K=v,
    ...)`` (keywords only), and read nowhere but here (``os.environ.update(XLA_ENV)``): its keys
    are the update's, and dropping one changes nothing else. None otherwise."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return None
    bindings = list(scope[name.value])
    if len(bindings) != 1 or not isinstance(bindings[0], Assignment):
        return None
    binding = bindings[0]
    if [access.node for access in binding.references] != [name]:
        return None
    target = ctx.parent(binding.node)
    assign = ctx.parent(target)
    if not (isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return None
    value = assign.value
    if isinstance(value, cst.Dict):
        return value
    if (
        isinstance(value, cst.Call)
        and "builtins.dict" in ctx.qualified_names(value.func)
        and value.args
        and all(arg.keyword is not None for arg in value.args)
    ):
        return value
    return None


def _held_entry(ctx: FileContext, subscript: cst.Subscript) -> cst.Dict | None:
    """The dict literal ``CFG["env"]`` holds when ``CFG`` is bound once, by ``CFG = {"env": {...}, ...}``
    (a run's configuration as a nested literal, the way a Hydra or YAML config is spelled inline), and
    no other subscript of the file reads ``"env"`` (of ``CFG``, or of the ``cfg`` it is handed to as a
    whole, ``main(CFG)``): its keys are the update's, and dropping one changes nothing else. None
    otherwise."""
    key = _string_key(subscript)
    if key is None or not isinstance(subscript.value, cst.Name):
        return None
    name = subscript.value
    scope = ctx.scopes.get(name)
    if scope is None:
        return None
    bindings = list(scope[name.value])
    if len(bindings) != 1 or not isinstance(bindings[0], Assignment):
        return None
    if any(other is not subscript and _string_key(other) == key for other in ctx.nodes(cst.Subscript)):
        return None
    target = ctx.parent(bindings[0].node)
    assign = ctx.parent(target)
    if not (isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return None
    if not isinstance(assign.value, cst.Dict):
        return None
    found = [
        element.value
        for element in assign.value.elements
        if isinstance(element, cst.DictElement) and string_value(element.key) == key
    ]
    return found[0] if len(found) == 1 and isinstance(found[0], cst.Dict) else None


def _string_key(subscript: cst.Subscript) -> str | None:
    """``"env"`` of ``CFG["env"]``: the one index of a subscript when it is a string literal, else None."""
    if len(subscript.slice) != 1 or not isinstance(subscript.slice[0].slice, cst.Index):
        return None
    return string_value(subscript.slice[0].slice.value)


def _constant_string(ctx: FileContext, name: cst.Name) -> str | None:
    """The string a name is bound to when every binding of it is ``NAME = "literal"`` with one
    value (a module or function constant such as ``BF16_FLAG = "XLA_USE_BF16"``)."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return None
    values = set()
    for assignment in scope[name.value]:
        parent = ctx.parent(assignment.node) if hasattr(assignment, "node") else None
        if not isinstance(parent, cst.AssignTarget):
            return None
        assign = ctx.parent(parent)
        assert isinstance(assign, cst.Assign), "an AssignTarget belongs to an Assign"
        value = string_value(assign.value)
        if value is None:
            return None
        values.add(value)
    return values.pop() if len(values) == 1 else None


def _export_only(command: str, variables: set[str]) -> str | None:
    """The legacy variable of a shell command that only exports it (``os.system("export
    XLA_USE_BF16=1")`` runs in a child shell and never reached the Python process)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if len(words) == 2 and words[0] == "export":
        name = words[1].split("=", 1)[0]
        return name if name in variables else None
    return None


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
            if isinstance(call.func, cst.Attribute) and is_environ(ctx, call.func.value):
                return call.func.attr.value in ("get", "__getitem__", "__contains__")
    if isinstance(parent, cst.Comparison):
        return any(isinstance(t.operator, (cst.In, cst.NotIn)) for t in parent.comparisons)
    if isinstance(parent, cst.Index):
        subscript = ctx.parent(ctx.parent(parent))
        return isinstance(subscript, cst.Subscript) and not _is_target(ctx, subscript)
    return False


def _is_target(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Whether ``node`` is (part of) what an assignment stores to: ``node = v``, ``a, node = v``,
    ``node: T = v``, ``node += v`` (read and written), ``for node in ...``."""
    parent = ctx.parent(node)
    while isinstance(parent, (cst.Tuple, cst.List, cst.Element, cst.StarredElement)):
        node, parent = parent, ctx.parent(parent)
    if isinstance(parent, cst.AssignTarget):
        return True
    if isinstance(parent, (cst.AnnAssign, cst.AugAssign)):
        return parent.target is node
    return isinstance(parent, cst.For) and parent.target is node


def sets_stochastic_rounding(ctx: FileContext) -> bool:
    """True when the file already names ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` in a string literal
    (a write, or a read the user relies on): the codemod then adds no write of its own."""
    return any(string_value(s) == STOCHASTIC_ROUNDING_VAR for s in ctx.nodes(cst.SimpleString))
