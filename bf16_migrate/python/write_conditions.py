"""The conditions a legacy write runs under: the ``if`` branches around it, the expression it
is part of (``flag and os.environ.update(...)``), and the early exits before it, as
:class:`~.env_writes.Condition` s; the construct that makes it conditional in a way no condition
expresses (a loop, ``try``, ``with``, a lambda); and whether several writes together cover every
branch of one ``if/elif/else`` chain.

Python's language reference ("The if statement", "Boolean operations", "Conditional
expressions") gives what runs when; libcst's parent metadata (``ParentNodeProvider``, through
:class:`~.context.FileContext`) gives where a write sits.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from .context import FileContext, findall
from .device_use import exits, uses_device
from .env_writes import Condition, LegacyWrite, string_value

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
    return conditions_of(ctx, write.key, write.statement)


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
        root = chain_head(ctx, owner)
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


def _is_main_guard(node: cst.If) -> bool:
    return (
        isinstance(node.test, cst.Comparison)
        and m.matches(
            node.test,
            m.Comparison(
                left=m.Name("__name__"),
                comparisons=[m.ComparisonTarget(operator=m.Equal(), comparator=m.SimpleString())],
            ),
        )
        and string_value(node.test.comparisons[0].comparator) == "__main__"
    )


def conditions_of(
    ctx: FileContext, node: cst.CSTNode, statement: cst.BaseStatement
) -> tuple[list[Condition], cst.CSTNode | None]:
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
        # the block's early exits, found once per block (asked for each write in it)
        exits_of_block = ctx.memo(("early exits", block), lambda block=block: _early_exits(ctx, block))
        index = ctx.index_in_block(block, child)
        for k, before in exits_of_block:
            if k >= index:
                break
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


def _early_exits(ctx: FileContext, block: cst.Module | cst.IndentedBlock) -> list[tuple[int, cst.If]]:
    """The ``if`` statements of ``block`` (with their index in it) that have no ``else``, leave
    the function or the program and use the device in their body."""
    return [
        (k, before)
        for k, before in enumerate(block.body)
        if isinstance(before, cst.If)
        and before.orelse is None
        and exits(before.body)
        and any(uses_device(ctx, c) for c in findall(before.body, m.Call(), ctx.index))
    ]


def chain_head(ctx: FileContext, node: cst.If) -> cst.If:
    """The first ``if`` of the ``if/elif`` chain ``node`` is part of (``node`` itself when it is
    no ``elif``): libcst writes ``elif`` as an If in the ``orelse`` of the one before."""
    root = node
    while True:
        above = ctx.parent(root)
        if not (isinstance(above, cst.If) and above.orelse is root):
            return root
        root = above
