"""Whether a legacy write was in force when the device was first used (BFM049).

torch-xla reads XLA_USE_BF16 / XLA_DOWNCAST_BF16 once, when the first tensor goes to the device
(static initialisers over ``GetEnvBool`` in torch-xla's ``torch_xla/csrc/runtime/sys_util.cc``,
used by ``torch_xla/csrc/dtype.cpp``), through the C environment (``getenv``). A write that is
undone before that, or that only runs after it, never took effect: the legacy script trained in
FP32. Migrating it as if it had would change the script's numerics.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from ..rules import Mode
from .context import FileContext, findall
from .device_use import device_functions, device_use_before, module_functions, uses_device
from .env_writes import ENVIRON, Condition, LegacyWrite, collect_writes, string_value, value_state
from .write_conditions import conditions_of


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
                if names & {"os.putenv", "os.unsetenv", "builtins.print", "print"} or any(
                    n.startswith(ENVIRON + ".") for n in names
                ):
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
    # the statements of each block that hold writes, with their index (a block of many
    # statements and many writes is not scanned whole for each write)
    with_writes: dict[int, list[tuple[int, cst.BaseStatement]]] = {}
    for w in writes:
        block = ctx.block_of(w.statement)
        if block is not None and by_statement[id(w.statement)][0] is w:
            with_writes.setdefault(id(block), []).append((ctx.index_in_block(block, w.statement), w.statement))
    for listed in with_writes.values():
        listed.sort(key=lambda pair: pair[0])
    found: dict[int, Undo] = {}
    for w in writes:
        if w.unsets or w.form == "system-export" or value_state(w.value)[0] not in ("on", "if"):
            continue
        block = ctx.block_of(w.statement)
        if block is None:
            continue
        index = ctx.index_in_block(block, w.statement)
        if not any(
            _undoes(ctx, w, later) is not None
            for k, st in with_writes[id(block)]
            if k > index
            for later in by_statement[id(st)]
        ):
            continue  # nothing later in the block touches the variable: no undo to weigh
        later_writes = block.body[index + 1 :]
        sure = True
        for statement in later_writes:
            verdicts = [
                v for v in (_undoes(ctx, w, later) for later in by_statement.get(id(statement), [])) if v is not None
            ]
            if verdicts:
                if verdicts[0]:
                    undo = next(later for later in by_statement[id(statement)] if _undoes(ctx, w, later))
                    found[id(w.key)] = Undo(w, undo, sure)
                break
            if _inert(ctx, statement, legacy):
                continue
            if any(uses_device(ctx, c) for c in findall(statement, m.Call(), ctx.index)):
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
    if late is not None:
        if isinstance(late.func, cst.Name) and late.func.value in device_functions(ctx):
            return NotInForce("after-device-call", late)
        return None  # a direct use before the write: BFM047 (removed, it never took effect)
    function = _plain_module_function(ctx, write)
    if function is None:
        return None
    references = [n for n in ctx.nodes(cst.Name) if n.value == function.name.value and n is not function.name]
    if not references:
        return _uncalled(ctx, function)
    calls = _calls_from_outside(ctx, function, references)
    return None if calls is None else _calls_verdict(ctx, calls)


def _plain_module_function(ctx: FileContext, write: LegacyWrite) -> cst.FunctionDef | None:
    """The function ``write`` is made in when it is a top-level, undecorated function of the file
    and the one its name is bound to (a later ``def`` of the same name rebinds it: Python's
    language reference, "Function definitions"); None otherwise (not followed)."""
    function = ctx.enclosing(write.statement, cst.FunctionDef)
    if function is None or ctx.parent(function) is not ctx.module or function.decorators:
        return None
    if module_functions(ctx).get(function.name.value) is not function:
        return None
    return function


def _uncalled(ctx: FileContext, function: cst.FunctionDef) -> NotInForce | None:
    """The verdict on a function that nothing in the file names: never run ("uncalled", dead when
    private), unless the file does not train (a library of helpers: its callers decide), or the
    function is the training function itself (it uses the device or reads ``.parameters()``) or is
    reached by name through a string (``getattr``, ``__all__``): then None."""
    name = function.name.value
    if not device_functions(ctx):
        return None  # nothing in the file trains: a library of helpers (BFM010 says so)
    named_in_string = any(string_value(s) == name for s in ctx.nodes(cst.SimpleString))
    if (
        named_in_string
        or name in device_functions(ctx)
        or findall(function.body, m.Call(func=m.Attribute(attr=m.Name("parameters"))), ctx.index)
    ):
        return None  # the training function itself, or reached by name (getattr, __all__)
    return NotInForce("uncalled", function, dead=name.startswith("_"))


def _calls_from_outside(
    ctx: FileContext, function: cst.FunctionDef, references: list[cst.Name]
) -> list[cst.Call] | None:
    """The calls of ``function`` made outside its own body (recursion does not start it), or None
    when a reference is not a call (passed on, ``xmp.spawn(fn)``, a callback: when it runs is not
    read here)."""
    calls = []
    for ref in references:
        call = ctx.parent(ref)
        if not (isinstance(call, cst.Call) and call.func is ref):
            return None
        if ctx.enclosing(call, cst.FunctionDef) is not function:
            calls.append(call)
    return calls


def _calls_verdict(ctx: FileContext, calls: list[cst.Call]) -> NotInForce | None:
    """The verdict from a function's calls: None when one runs unconditionally before the device is
    used (or there is none); "late-call" when all come after a device use; otherwise
    "conditional-call", at the first call made under a condition, with that condition as written
    (``not (...)`` for the ``else`` side)."""
    statuses: list[tuple[str, cst.Call, Condition | None]] = []
    for call in calls:
        status = _call_status(ctx, call)
        if status is None:
            return None  # one call runs it, unconditionally, before the device is used
        statuses.append(status)
    if not statuses:
        return None
    late_calls = [s for s in statuses if s[0] == "late-call"]
    if len(late_calls) == len(statuses):
        return NotInForce("late-call", late_calls[0][1])
    reason, call, condition = next(s for s in statuses if s[0] == "conditional-call")
    assert condition is not None, "a conditional call is listed with its condition"
    expr = condition.expr if not condition.negated else cst.parse_expression(f"not ({ctx.code(condition.expr)})")
    return NotInForce(reason, call, condition=expr)


def _call_status(ctx: FileContext, call: cst.Call) -> tuple[str, cst.Call, Condition | None] | None:
    """How one call runs its function: ``("late-call", call, None)`` after a device use,
    ``("conditional-call", call, condition)`` under a condition (the innermost), None when it runs
    unconditionally before the device is used."""
    statement = ctx.statement_of(call)
    assert statement is not None, "every call of a module is in a statement"
    conditions, _ = conditions_of(ctx, call, statement)
    if device_use_before(ctx, call) is not None:
        return ("late-call", call, None)
    if conditions:
        return ("conditional-call", call, conditions[-1])
    return None


def in_force_verdict(
    ctx: FileContext, write: LegacyWrite, mode: Mode
) -> tuple[str | None, dict[str, object], bool] | None:
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
        return "undone_unknown", {**taken, "mode": mode.name}, False
    lam = in_lambda(ctx, write)
    if lam is not None:
        return "lambda", {"variable": variable, "line": line(lam), "mode": mode.name}, False
    why = not_in_force(ctx, write)
    if why is None:
        return None
    function = ctx.enclosing(write.statement, cst.FunctionDef)
    where = f"`{function.name.value}()`" if function is not None else "this function"
    called = {"variable": variable, "function": where, "line": line(why.node)}
    if why.reason == "uncalled":
        if why.dead:
            return "private_uncalled", called, True
        return "uncalled", {**called, "mode": mode.name}, False
    if why.reason == "late-call":
        return "late_call", {**called, "mode": mode.name}, False
    if why.reason == "conditional-call":
        assert why.condition is not None, "a conditional call is reported with its condition"
        return "conditional_call", {**called, "condition": ctx.code(why.condition), "mode": mode.name}, False
    return (
        "after_device",
        {"variable": variable, "call": ctx.code(why.node), "line": line(why.node), "mode": mode.name},
        False,
    )
