"""Find every spelling of a legacy-variable write in a Python file.

Recognised writes (the ways Python's ``os`` module sets an environment variable: ``os.environ``
is a ``MutableMapping``, plus ``os.putenv``), each with the string literal that names the variable:
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
from .context import FileContext, findall

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
    literal = _string_value(value)
    if literal is not None:
        return ("on" if is_truthy(literal) else "off"), None
    if isinstance(value, (cst.Integer, cst.Float)) or m.matches(value, m.Name("True") | m.Name("False")):
        return "not-a-string", None
    if m.matches(value, m.Call(func=m.Name("str"), args=[m.Arg(keyword=None)])):
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
    # the planner asks, then the string-mention report (for the literals the planner covered)
    writes, mentions = ctx.memo(("writes", frozenset(variables)), lambda: _collect_writes(ctx, variables))
    return list(writes), list(mentions)


def _collect_writes(ctx: FileContext, variables: set[str]) -> tuple[list[LegacyWrite], list[Mention]]:
    writes: list[LegacyWrite] = []
    consumed: set[int] = set()

    def add(variable, form, key, value, call_or_assign, element=None, siblings=0):
        small, line = _small_and_line(ctx, call_or_assign)
        if line is None:  # e.g. a write inside a one-line `if x: os.environ[...] = "1"` suite
            return
        writes.append(
            LegacyWrite(variable, form, key, value, _string_value(value) if value is not None else None, line, small, element, siblings)
        )
        consumed.add(id(key))

    def name_of(node):
        """The variable a key names: a string literal, or a name bound once to one."""
        literal = _string_value(node)
        if literal is not None or not isinstance(node, cst.Name):
            return literal
        constant = _constant_string(ctx, node)
        return constant

    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) != 1:
            continue
        target = assign.targets[0].target
        if not (isinstance(target, cst.Subscript) and _is_environ(ctx, target.value)):
            continue
        if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
            continue
        key = target.slice[0].slice.value
        name = name_of(key)
        if name in variables:
            add(name, "subscript", key, assign.value, assign)

    for delete in ctx.nodes(cst.Del):
        target = delete.target
        if isinstance(target, cst.Subscript) and _is_environ(ctx, target.value) and len(target.slice) == 1:
            index = target.slice[0].slice
            if isinstance(index, cst.Index) and name_of(index.value) in variables:
                add(name_of(index.value), "del", index.value, None, delete)

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
                name = name_of(call.args[0].value)
                if name in variables:
                    add(name, "setdefault", call.args[0].value, call.args[1].value, call)
            elif method == "pop" and call.args and isinstance(ctx.parent(call), cst.Expr):
                name = name_of(call.args[0].value)
                if name in variables:
                    add(name, "pop", call.args[0].value, None, call)
        elif "os.putenv" in ctx.qualified_names(func) and len(call.args) == 2:
            name = name_of(call.args[0].value)
            if name in variables:
                add(name, "putenv", call.args[0].value, call.args[1].value, call)
        elif "os.unsetenv" in ctx.qualified_names(func) and len(call.args) == 1 and isinstance(ctx.parent(call), cst.Expr):
            name = name_of(call.args[0].value)
            if name in variables:
                add(name, "pop", call.args[0].value, None, call)
        elif "os.system" in ctx.qualified_names(func) and len(call.args) == 1 and isinstance(ctx.parent(call), cst.Expr):
            command = _string_value(call.args[0].value)
            exported = _export_only(command, variables) if command else None
            if exported:
                add(exported, "system-export", call.args[0].value, None, call)

    mentions = []
    for string in ctx.nodes(cst.SimpleString):
        name = _string_value(string)
        if name in variables and id(string) not in consumed:
            mentions.append(Mention(name, string, _is_read(ctx, string)))
    return writes, mentions


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
        value = _string_value(ctx.parent(parent).value)
        if value is None:
            return None
        values.add(value)
    return values.pop() if len(values) == 1 else None


def _export_only(command: str, variables: set[str]) -> str | None:
    """The legacy variable of a shell command that only exports it (``os.system("export
    XLA_USE_BF16=1")`` runs in a child shell and never reached the Python process)."""
    import shlex

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


def guard_of(ctx: FileContext, write: LegacyWrite) -> tuple[list[Condition], cst.CSTNode | None]:
    """The ``if`` conditions the write runs under, outermost first, up to its function or the
    module; and the construct that makes it conditional in a way no condition expresses (a
    loop, ``try``, ``with``, class body, comprehension, lambda), or None. ``if __name__ ==
    "__main__":`` counts as unconditional for a script; an ``else``/``elif`` branch gives the
    negated test. Within the statement, ``flag and os.environ.update(...)`` and ``... if flag
    else ...`` give their test (Python's language reference, "Boolean operations" and
    "Conditional expressions": the right operand runs only when the left one does not decide);
    before it, an ``if`` branch that trained and returned (``if not args.bf16: train(args);
    return``) gives its negated test."""
    return _conditions_of(ctx, write.key, write.statement)


def _statement_guard(ctx: FileContext, statement: cst.BaseStatement) -> tuple[list[Condition], cst.CSTNode | None]:
    conditions: list[Condition] = []
    child: cst.CSTNode = statement
    for anc in ctx.ancestors(statement):
        if isinstance(anc, (cst.IndentedBlock, cst.Else)):
            child = anc
            continue
        if isinstance(anc, _UNGUARDED_PARENTS):
            return conditions, None
        if isinstance(anc, cst.If):
            in_body = anc.body is child
            if _is_main_guard(anc) and in_body:
                child = anc
                continue
            if in_body:
                conditions.insert(0, Condition(anc.test))
            else:  # in the else branch, or in an elif (an If nested as orelse)
                conditions.insert(0, Condition(anc.test, negated=True))
            child = anc
            continue
        return conditions, anc
    return conditions, None


def branches_cover(ctx: FileContext, writes: list[LegacyWrite]) -> bool:
    """Whether ``writes`` sit one in each branch of a single ``if/elif/else`` chain that has an
    ``else`` (the "one variable or the other, chosen by a flag" shape), so together they run
    unconditionally."""
    if len(writes) < 2:
        return False
    top = None
    covered = []
    for w in writes:
        block = ctx.parent(w.statement)
        owner = ctx.parent(block)
        if isinstance(owner, cst.Else):
            owner = ctx.parent(owner)
        if not isinstance(owner, cst.If):
            return False
        covered.append((owner, isinstance(ctx.parent(block), cst.Else)))
        root = owner
        while isinstance(ctx.parent(root), cst.If) and ctx.parent(root).orelse is root:
            root = ctx.parent(root)
        if top is not None and root is not top:
            return False
        top = root
    # every branch of the chain holds one of the writes
    branches = []
    node = top
    while isinstance(node, cst.If):
        branches.append((node, False))
        if isinstance(node.orelse, cst.Else):
            branches.append((node, True))
            break
        node = node.orelse
    else:
        return False
    return {(id(n), e) for n, e in branches} <= {(id(n), e) for n, e in covered}


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


# -- whether a write was in force when the device was first used ------------------------------------
# torch-xla reads XLA_USE_BF16 / XLA_DOWNCAST_BF16 once, when the first tensor goes to the device
# (static initialisers over ``GetEnvBool`` in torch-xla's ``torch_xla/csrc/runtime/sys_util.cc``,
# used by ``torch_xla/csrc/dtype.cpp``), through the C environment (``getenv``). A write that is
# undone before that, or that only runs after it, never took effect: the legacy script trained in
# FP32. Migrating it as if it had would change the script's numerics.

DEVICE_FUNCTIONS = frozenset({"torch_xla.device", "torch_xla.core.xla_model.xla_device"})


@dataclass(frozen=True)
class Undo:
    """A later statement of the same block that takes a write back: ``undo`` (a ``del``,
    ``pop``, ``unsetenv``, or a write of a false value). ``dead``: nothing between the two can
    have used the device, so the write never took effect; False when that cannot be told."""

    write: LegacyWrite
    undo: LegacyWrite
    dead: bool


@dataclass(frozen=True)
class NotInForce:
    """Why a write may not have been in force when the device was first used. ``reason`` is
    ``"uncalled"`` (set in a function nothing in the file calls), ``"lambda"``, ``"late-call"``
    (its function is called only after the device was used), ``"conditional-call"`` (called
    only under a condition), ``"after-device-call"`` (a call before it in its scope already used
    the device); ``node`` is what the message points to (the function, the call), ``dead`` is
    True only when the write provably never ran (a private function nothing references)."""

    reason: str
    node: cst.CSTNode
    dead: bool = False
    condition: cst.BaseExpression | None = None


def _device_names(ctx: FileContext) -> frozenset[str]:
    """Names assigned the result of ``torch_xla.device()`` / ``xm.xla_device()``."""

    def compute():
        return frozenset(
            n.value
            for call in ctx.nodes(cst.Call)
            if ctx.qualified_names(call.func) & DEVICE_FUNCTIONS and isinstance(ctx.parent(call), cst.Assign)
            for t in ctx.parent(call).targets
            for n in findall(t.target, m.Name())
        )

    return ctx.memo(("device names",), compute)


def _direct_device_use(ctx: FileContext, call: cst.Call) -> bool:
    """``x.to(device)`` / ``device=device`` with ``device`` from a device function (or the call
    itself): a tensor put on the XLA device."""
    names = _device_names(ctx)
    for arg in call.args:
        if (arg.keyword is None and m.matches(call.func, m.Attribute(attr=m.Name("to")))) or (arg.keyword is not None and arg.keyword.value == "device"):
            value = arg.value
            if (isinstance(value, cst.Name) and value.value in names) or (isinstance(value, cst.Call) and ctx.qualified_names(value.func) & DEVICE_FUNCTIONS):
                return True
    return False


def _module_functions(ctx: FileContext) -> dict[str, cst.FunctionDef]:
    """The functions defined at the module's top level, by name (a name defined twice: neither)."""

    def compute():
        found: dict[str, cst.FunctionDef] = {}
        twice = set()
        for statement in ctx.module.body:
            if isinstance(statement, cst.FunctionDef):
                name = statement.name.value
                if name in found:
                    twice.add(name)
                found[name] = statement
        return {name: fn for name, fn in found.items() if name not in twice}

    return ctx.memo(("module functions",), compute)


def device_functions(ctx: FileContext) -> frozenset[str]:
    """Names of the module's top-level functions that put a tensor on the XLA device, directly
    (``x.to(device)``, ``device=device`` with ``device`` from ``torch_xla.device()`` /
    ``xm.xla_device()``) or through a call of another such function (a fixed point over the
    file's call graph). Calling one is what makes torch-xla read the legacy variables: it reads
    them once, at the first device tensor (torch-xla ``torch_xla/csrc/runtime/sys_util.cc``
    through static initialisers in ``torch_xla/csrc/dtype.cpp``)."""

    def compute():
        functions = _module_functions(ctx)
        direct, calls = set(), {}
        for name, fn in functions.items():
            inner = findall(fn.body, m.Call())
            if any(_direct_device_use(ctx, c) for c in inner):
                direct.add(name)
            calls[name] = {c.func.value for c in inner if isinstance(c.func, cst.Name) and c.func.value in functions}
        using = set(direct)
        changed = True
        while changed:
            changed = False
            for name, callees in calls.items():
                if name not in using and callees & using:
                    using.add(name)
                    changed = True
        return frozenset(using)

    return ctx.memo(("device functions",), compute)


def _uses_device(ctx: FileContext, call: cst.Call) -> bool:
    return _direct_device_use(ctx, call) or (isinstance(call.func, cst.Name) and call.func.value in device_functions(ctx))


def _scope_of(ctx: FileContext, node: cst.CSTNode) -> cst.CSTNode:
    return ctx.enclosing(node, cst.FunctionDef) or ctx.module


def _exits(block: cst.CSTNode) -> bool:
    """Whether an ``if`` body ends by leaving its function or the program (``return``,
    ``raise``, ``sys.exit()``), so the statements after the ``if`` do not run on its path."""
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return False
    last = block.body[-1]
    if not isinstance(last, cst.SimpleStatementLine):
        return False
    small = last.body[-1]
    if isinstance(small, (cst.Return, cst.Raise)):
        return True
    return isinstance(small, cst.Expr) and m.matches(small.value, m.Call(func=m.Name("exit") | m.Name("quit") | m.Attribute(value=m.Name("sys"), attr=m.Name("exit")) | m.Attribute(value=m.Name("os"), attr=m.Name("_exit"))))


def off_path(ctx: FileContext, node: cst.CSTNode, target: cst.CSTNode) -> bool:
    """Whether ``node`` sits in an ``if`` branch that does not hold ``target`` and leaves the
    function or the program (``if not args.bf16: train(args); return``): ``target``, after the
    ``if``, does not run after it (Python's language reference, "The return statement")."""
    held = {id(a) for a in ctx.ancestors(target)}
    child = node
    for anc in ctx.ancestors(node):
        if id(anc) in held:
            return False
        if isinstance(anc, cst.If) and anc.body is child and _exits(child):
            return True
        child = anc
    return False


def device_use_before(ctx: FileContext, node: cst.CSTNode) -> cst.Call | None:
    """The first call before ``node`` in its function (or at module level), on the path to it,
    that puts a tensor on the device, directly (``.to(device)``) or through a function of the
    file that does (``train(args)``, :func:`device_functions`): after it, torch-xla has read the
    legacy variables (torch-xla ``torch_xla/csrc/runtime/sys_util.cc``). A call in an ``if``
    branch that returns or exits is not on the path to what follows the ``if``."""
    scope = _scope_of(ctx, node)
    line = ctx.pos(ctx.statement_of(node) or node)[0]
    for call in ctx.nodes(cst.Call):
        if ctx.pos(call)[0] >= line:
            break
        if _scope_of(ctx, call) is scope and _uses_device(ctx, call) and not off_path(ctx, call, node):
            return call
    return None


def _undoes(ctx: FileContext, write: LegacyWrite, later: LegacyWrite) -> bool | None:
    """True when ``later`` takes ``write`` back (a ``del``/``pop`` of what ``os.environ`` set,
    an ``unsetenv``, a write of a false value that replaces it); False when it sets the
    variable on again; None when it does not bear on it (``setdefault`` of a set variable)."""
    if later.variable != write.variable:
        return None
    if later.unsets:
        call = next((a for a in ctx.ancestors(later.key) if isinstance(a, cst.Call)), None)
        unsetenv = call is not None and "os.unsetenv" in ctx.qualified_names(call.func)
        # os.putenv does not update os.environ: a del/pop of os.environ does not see it
        # (Python's os.putenv documentation); os.unsetenv clears the C environment either way
        return True if unsetenv or write.form != "putenv" else None
    if later.form == "setdefault" or later.form == "system-export":
        return None
    state, _ = value_state(later.value)
    if state == "off":
        return True
    return False if state == "on" else None


def _inert(ctx: FileContext, statement: cst.CSTNode, legacy: set[int]) -> bool:
    """A statement that cannot use the device: an import, ``pass``, a docstring, an
    assignment without calls, a write of the environment (``os.environ[...]``, ``os.putenv``),
    ``print`` of call-free values, a function definition without decorators."""
    if isinstance(statement, cst.FunctionDef):
        return not statement.decorators
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if id(small) in legacy or isinstance(small, (cst.Import, cst.ImportFrom, cst.Pass)):
            continue
        if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Del)) and not findall(small, m.Call()):
            continue
        if isinstance(small, cst.Expr):
            value = small.value
            if isinstance(value, (cst.SimpleString, cst.ConcatenatedString)):
                continue
            if isinstance(value, cst.Call) and not any(findall(a, m.Call()) for a in value.args):
                names = ctx.qualified_names(value.func)
                if names & {"os.putenv", "os.unsetenv", "builtins.print", "print"} or any(n.startswith(ENVIRON + ".") for n in names):
                    continue
        return False
    return True


def undone_writes(ctx: FileContext, writes: list[LegacyWrite]) -> dict[int, Undo]:
    """The writes taken back later in the same block (``os.environ[X] = "1"`` then ``del
    os.environ[X]``, ``os.environ.pop(X)``, ``os.unsetenv(X)`` or ``os.environ[X] = "0"``), by
    ``id`` of the write's key: ``dead`` when only statements that cannot use the device come
    between; a device use in between means the write was in force (the undo is a cleanup, not
    listed). Python's :mod:`os` documentation: assignments to and deletions from
    ``os.environ`` call ``putenv()``/``unsetenv()``, while calling ``os.putenv()`` directly does
    not update ``os.environ`` (so a ``del``/``pop`` does not take back an ``os.putenv``, and an
    ``os.unsetenv`` takes back any write); ``setdefault`` leaves a set variable as it is."""
    legacy = {id(w.small) for w in writes}
    by_statement: dict[int, list[LegacyWrite]] = {}
    for w in writes:
        by_statement.setdefault(id(w.statement), []).append(w)
    found: dict[int, Undo] = {}
    for w in writes:
        if w.unsets or w.form == "system-export" or value_state(w.value)[0] not in ("on", "if"):
            continue
        block = ctx.block_of(w.statement)
        if block is None:
            continue
        later_writes = block.body[ctx.index_in_block(block, w.statement) + 1 :]
        if not any(_undoes(ctx, w, later) is not None for st in later_writes for later in by_statement.get(id(st), [])):
            continue  # nothing later in the block touches the variable: no undo to weigh
        sure = True
        for statement in later_writes:
            verdicts = [v for v in (_undoes(ctx, w, later) for later in by_statement.get(id(statement), [])) if v is not None]
            if verdicts:
                if verdicts[0]:
                    undo = next(later for later in by_statement[id(statement)] if _undoes(ctx, w, later))
                    found[id(w.key)] = Undo(w, undo, sure)
                break
            if _inert(ctx, statement, legacy):
                continue
            if any(_uses_device(ctx, c) for c in findall(statement, m.Call())):
                break  # in force when the device was used: the undo only cleans up
            sure = False
    return found


def in_lambda(ctx: FileContext, write: LegacyWrite) -> cst.Lambda | None:
    """The lambda a write is made in (``enable = lambda: os.environ.update(X="1")``): its body
    runs when the lambda is called, not where it is defined (Python's language reference,
    "Lambdas"), which the file does not tell."""
    for anc in ctx.ancestors(write.key):
        if anc is write.statement:
            return None
        if isinstance(anc, cst.Lambda):
            return anc
    return None


def not_in_force(ctx: FileContext, write: LegacyWrite) -> NotInForce | None:
    """Why ``write`` may not have been in force when the device was first used (torch-xla reads
    the legacy variables once, at the first device tensor: ``torch_xla/csrc/runtime/sys_util.cc``),
    or None when nothing in the file says so. Only top-level functions of the file are followed,
    one level: a write in ``setup()`` counts as in force when some call of ``setup()`` runs
    unconditionally before anything used the device; a function passed on (``xmp.spawn(fn)``,
    a callback) or named in a string counts as run. A function nothing calls is looked at only
    in a file that trains (:func:`device_functions`): a library of helpers is its callers'."""
    late = device_use_before(ctx, write.statement)
    if late is not None and isinstance(late.func, cst.Name) and late.func.value in device_functions(ctx):
        return NotInForce("after-device-call", late)
    if late is not None:
        return None  # a direct use before the write: BFM047 (removed, it never took effect)
    function = ctx.enclosing(write.statement, cst.FunctionDef)
    if function is None or ctx.parent(function) is not ctx.module or function.decorators:
        return None
    name = function.name.value
    if _module_functions(ctx).get(name) is not function:
        return None
    references = [n for n in ctx.nodes(cst.Name) if n.value == name and n is not function.name]
    named_in_string = any(_string_value(s) == name for s in ctx.nodes(cst.SimpleString))
    if not references:
        if not device_functions(ctx):
            return None  # nothing in the file trains: a library of helpers (BFM010 says so)
        if named_in_string or name in device_functions(ctx) or findall(function.body, m.Call(func=m.Attribute(attr=m.Name("parameters")))):
            return None  # the training function itself, or reached by name (getattr, __all__)
        return NotInForce("uncalled", function, dead=name.startswith("_"))
    calls = []
    for ref in references:
        call = ctx.parent(ref)
        if not (isinstance(call, cst.Call) and call.func is ref):
            return None  # passed on (xmp.spawn(fn), a callback): when it runs is not read here
        if ctx.enclosing(call, cst.FunctionDef) is function:
            continue
        calls.append(call)
    statuses = []
    for call in calls:
        statement = ctx.statement_of(call)
        conditions, _ = _conditions_of(ctx, call, statement)
        if device_use_before(ctx, call) is not None:
            statuses.append(("late-call", call, None))
        elif conditions:
            c = conditions[-1]
            statuses.append(("conditional-call", call, c))
        else:
            return None  # one call runs it, unconditionally, before the device is used
    if not statuses:
        return None
    late = [s for s in statuses if s[0] == "late-call"]
    if len(late) == len(statuses):
        return NotInForce("late-call", late[0][1])
    reason, call, condition = next(s for s in statuses if s[0] == "conditional-call")
    return NotInForce(reason, call, condition=condition.expr if not condition.negated else cst.parse_expression(f"not ({ctx.code(condition.expr)})"))


def _conditions_of(ctx: FileContext, node: cst.CSTNode, statement: cst.BaseStatement) -> tuple[list[Condition], cst.CSTNode | None]:
    """The conditions ``node`` (inside ``statement``) runs under: the ``if`` branches around the
    statement (:func:`guard_of`), those of the expression it is in (``flag and f()``,
    ``f() if flag else None``), and the early exits before it that used the device."""
    conditions, blocker = _statement_guard(ctx, statement)
    conditions = conditions + _early_exit_conditions(ctx, statement)
    inner: list[Condition] = []
    child = node
    for anc in ctx.ancestors(node):
        if anc is statement:
            break
        if isinstance(anc, cst.BooleanOperation) and anc.right is child:
            inner.insert(0, Condition(anc.left, negated=isinstance(anc.operator, cst.Or)))
        elif isinstance(anc, cst.IfExp) and anc.test is not child:
            inner.insert(0, Condition(anc.test, negated=anc.orelse is child))
        elif isinstance(anc, cst.Lambda):
            return conditions, anc  # the conditions inside a lambda are the lambda's business
        elif isinstance(anc, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)) and blocker is None:
            blocker = anc
        child = anc
    return conditions + inner, blocker


def _early_exit_conditions(ctx: FileContext, statement: cst.BaseStatement) -> list[Condition]:
    """``if not args.bf16: train(args); return`` before ``statement`` in its function (in its
    block or an enclosing one): the statement runs only when that test is false. Counted only
    when the branch used the device (the script trained there, without the write): an exit on
    a usage error trains nothing, so it conditions nothing."""
    found: list[Condition] = []
    child: cst.CSTNode = statement
    while True:
        block = ctx.block_of(child)
        if block is None:
            break
        for before in list(block.body)[: ctx.index_in_block(block, child)]:
            if (
                isinstance(before, cst.If)
                and before.orelse is None
                and _exits(before.body)
                and any(_uses_device(ctx, c) for c in findall(before.body, m.Call()))
            ):
                test = before.test
                if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                    found.insert(0, Condition(test.expression))
                else:
                    found.insert(0, Condition(test, negated=True))
        if isinstance(block, cst.Module):
            break
        owner = ctx.parent(block)
        while owner is not None and not isinstance(owner, cst.BaseStatement):
            owner = ctx.parent(owner)
        if owner is None or isinstance(owner, (cst.FunctionDef, cst.ClassDef)):
            break
        child = owner
    return found


def in_force_verdict(ctx: FileContext, write: LegacyWrite, mode: str) -> tuple[str | None, dict[str, object], bool] | None:
    """The BFM049 finding for ``write``, as ``(variant, fields, removed)`` (the message is the
    catalogue's template ``variant`` of BFM049, None for the main one, with ``fields``), or None
    when nothing says it was not in force (the planner then goes on as usual). ``removed``: it
    provably never took effect and goes, with nothing added (its undo is removed by its own
    finding); otherwise the switch is kept and reported, and so is an undo that takes back a
    kept write. The rule of the project: a migrated script that computes in bf16 where the
    legacy one trained in fp32 changes its numerics, so when this cannot be told the switch
    stays."""
    writes, _ = collect_writes(ctx, set(ctx.rules.variables))
    undone = ctx.memo(("undone writes",), lambda: undone_writes(ctx, writes))
    line = lambda node: ctx.pos(node)[0]  # noqa: E731
    variable = write.variable
    for undo in undone.values():
        if undo.undo is write and not undo.dead:
            return "undo_of_kept", {"variable": variable, "line": line(undo.write.statement)}, False
    if write.unsets or write.form == "system-export" or value_state(write.value)[0] not in ("on", "if"):
        return None
    undo = undone.get(id(write.key))
    if undo is not None:
        taken = {"variable": variable, "line": line(undo.undo.statement), "undo": ctx.code(undo.undo.small)}
        if undo.dead:
            return None, taken, True
        return "undone_unknown", {**taken, "mode": mode}, False
    lam = in_lambda(ctx, write)
    if lam is not None:
        return "lambda", {"variable": variable, "line": line(lam), "mode": mode}, False
    why = not_in_force(ctx, write)
    if why is None:
        return None
    function = ctx.enclosing(write.statement, cst.FunctionDef)
    where = f"`{function.name.value}()`" if function is not None else "this function"
    called = {"variable": variable, "function": where, "line": line(why.node)}
    if why.reason == "uncalled":
        if why.dead:
            return "private_uncalled", called, True
        return "uncalled", {**called, "mode": mode}, False
    if why.reason == "late-call":
        return "late_call", {**called, "mode": mode}, False
    if why.reason == "conditional-call":
        return "conditional_call", {**called, "condition": ctx.code(why.condition), "mode": mode}, False
    return "after_device", {"variable": variable, "call": ctx.code(why.node), "line": line(why.node), "mode": mode}, False
