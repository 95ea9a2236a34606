"""Conditions as source: the guard the migrated changes go under, its complement, and where it
can be evaluated.

A legacy write that runs under ``if`` tests (:func:`.write_conditions.guard_of`) switched bf16 on
only when they held; the migrated changes then carry the same test. The conditions are rendered
back to Python source (libcst's ``Module.code_for_node``) and re-parsed where they are used, so the
emitted code reads as the script's own.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m

from .context import FileContext, findall
from .env_writes import Condition


def guard_code(conditions: list[Condition]) -> str:
    """``a and not (b)``: the conjunction of the conditions, as source."""
    module = cst.Module(body=[])
    parts = []
    for c in conditions:
        code = module.code_for_node(c.expr)
        atomic = isinstance(c.expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
        if c.negated:
            parts.append(f"not {code}" if atomic else f"not ({code})")
        else:
            parts.append(code if atomic or len(conditions) == 1 else f"({code})")
    return " and ".join(parts)


def negate(code: str) -> str:
    """``not x`` / ``not (a and b)``: the complement of the condition ``code``, as source
    (``not not_x`` is written ``x``). Raises libcst's ``ParserSyntaxError`` when ``code`` is no
    expression."""
    atomic = cst.parse_expression(code)
    if isinstance(atomic, cst.UnaryOperation) and isinstance(atomic.operator, cst.Not):
        return cst.Module(body=[]).code_for_node(atomic.expression)
    if isinstance(atomic, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        return f"not {code}"
    return f"not ({code})"


def evaluable_like(ctx: FileContext, guard: cst.BaseExpression, where: cst.CSTNode, at: cst.CSTNode) -> bool:
    """Whether every name ``guard`` reads (a condition parsed from the code at ``where``, not a node
    of the module) denotes the same bindings at ``at`` as at ``where`` (libcst ScopeProvider)."""
    attributes = {id(a.attr) for a in findall(guard, m.Attribute()) if isinstance(a, cst.Attribute)}
    names = [n for n in findall(guard, m.Name()) if isinstance(n, cst.Name) and id(n) not in attributes]
    return _same_bindings(ctx, [(n.value, where) for n in names], at)


def evaluable_at(ctx: FileContext, condition: cst.BaseExpression, where: cst.CSTNode) -> bool:
    """Whether every name ``condition`` (a node of the module) reads denotes the same binding at
    ``where`` (libcst ScopeProvider), so the condition can be evaluated there."""
    names = []
    for name in findall(condition, m.Name()):
        parent = ctx.parent(name)
        if isinstance(name, cst.Name) and not (isinstance(parent, cst.Attribute) and parent.attr is name):
            names.append((name.value, name))
    return _same_bindings(ctx, names, where)


def _same_bindings(ctx: FileContext, names: Sequence[tuple[str, cst.CSTNode]], at: cst.CSTNode) -> bool:
    """Whether each ``(name, read where)`` denotes, at ``at``, the same non-empty set of bindings."""
    there = ctx.scopes.get(at)
    for name, read in names:
        here = ctx.scopes.get(read)
        if here is None or there is None:
            return False
        ours = {id(a) for a in here[name]}
        if not ours or ours != {id(a) for a in there[name]}:
            return False
    return True


_MUTATORS = frozenset(
    {"remove", "pop", "append", "insert", "clear", "extend", "update", "setdefault", "popitem", "sort", "reverse"}
)
"""Methods of Python's lists, dicts and sets (and ``os.environ``) that change the object in place."""


def mutated_after(ctx: FileContext, guard: cst.BaseExpression, line: int) -> cst.CSTNode | None:
    """The first place after ``line`` where the file changes in place what ``guard`` reads
    (``sys.argv.remove("--bf16")`` for ``"--bf16" in sys.argv``, ``cfg.bf16 = False`` for
    ``cfg.bf16``), or None: there the condition, evaluated again, no longer says what it said where
    the script decided. A change under a key the condition does not name (``os.environ["OTHER"] =
    ...`` for ``os.environ.get("BF16") == "1"``) leaves it as it was. A name bound again is the scope
    analysis' business (:func:`evaluable_like`)."""
    operands = {ctx.code(n) for n in findall(guard, m.Name() | m.Attribute()) if isinstance(n, cst.BaseExpression)}
    if not operands:
        return None
    keys = {s.evaluated_value for s in findall(guard, m.SimpleString()) if isinstance(s, cst.SimpleString)}
    found: list[cst.CSTNode] = []
    for call in ctx.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _MUTATORS and ctx.code(func.value) in operands:
            if _names_its_keys(call, keys):
                found.append(call)
    targets: list[tuple[cst.CSTNode, cst.BaseExpression]] = [
        *((t, t.target) for t in ctx.nodes(cst.AssignTarget)),
        *((t, t.target) for t in ctx.nodes(cst.AugAssign)),
        *((t, t.target) for t in ctx.nodes(cst.Del)),
    ]
    for node, target in targets:
        # `x[k] = ...` / `del x[k]` change x under k; `a.b = ...` changes what `a.b` reads (a bare name: bound again)
        changed = target.value if isinstance(target, cst.Subscript) else target
        if not (isinstance(target, cst.Subscript | cst.Attribute) and ctx.code(changed) in operands):
            continue
        if isinstance(target, cst.Subscript) and not _key_may_be(target, keys):
            continue
        found.append(node)
    after = [node for node in found if ctx.pos(node)[0] > line]
    return min(after, key=ctx.pos) if after else None


def _literal(expr: cst.BaseExpression) -> str | None:
    """The value of a string literal, else None."""
    value = expr.evaluated_value if isinstance(expr, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def _key_may_be(target: cst.Subscript, keys: set[str | bytes]) -> bool:
    """Whether ``x[k]`` may change what the condition reads: ``k`` not a literal, or one of ``keys``."""
    index = target.slice[0].slice if len(target.slice) == 1 else None
    key = _literal(index.value) if isinstance(index, cst.Index) else None
    return key is None or key in keys


def _names_its_keys(call: cst.Call, keys: set[str | bytes]) -> bool:
    """Whether a mutator call may change what the condition reads: its key (``pop("K")``,
    ``remove("--bf16")``, ``setdefault("K", v)``, ``update(K=v)``/``update({"K": v})``) is one of
    ``keys``, or not a literal; a call of no argument (``clear()``) changes everything."""
    if not call.args:
        return True
    named: list[str | None] = []
    for arg in call.args:
        if arg.keyword is not None:
            named.append(arg.keyword.value)
        elif isinstance(arg.value, cst.Dict):
            named += [_literal(e.key) if isinstance(e, cst.DictElement) else None for e in arg.value.elements]
        else:
            named.append(_literal(arg.value))
            break  # the first positional argument is the key (pop, remove, setdefault, insert's index: unknown)
    return any(name is None or name in keys for name in named)


def has_calls(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` calls anything (evaluating it again could then have effects)."""
    return bool(findall(expr, m.Call()))


def choose(new: cst.BaseExpression, old: cst.BaseExpression, guard: cst.BaseExpression | None) -> cst.BaseExpression:
    """``new``, or ``(new if guard else old)`` when the migration is under the script's condition."""
    if guard is None:
        return new
    choice = cst.IfExp(test=guard.deep_clone(), body=new, orelse=old.deep_clone())
    return choice.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
