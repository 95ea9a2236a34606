"""The file's reads of the legacy variables, and the constants that name them.

Once the switch is migrated, a read (``os.environ.get("XLA_USE_BF16")``) no longer tells whether
bf16 is on: with the switch migrated unconditionally in a bf16 mode it has one answer and is
replaced; an ``if`` on it that patched the switch's side effects goes; every other read is
reported (BFM050, BFM051). A constant that only keyed writes goes with them (BFM043).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import libcst as cst
import libcst.matchers as m

from ..rules import Mode
from .apply import EditPlan
from .context import FileContext, findall
from .env_writes import LegacyWrite, Mention

ENABLED_CONSTANT = "BF16_ENABLED"
"""The constant a value read of a migrated variable becomes (declared once, with a comment)."""


def report_reads(ctx: FileContext, reads: list[Mention]) -> None:
    """Each read left as it is: BFM050, unfixed."""
    for mention in reads:
        ctx.report("BFM050", mention.node, fixed=False, variable=mention.variable)


def replace_reads(
    ctx: FileContext, plan: EditPlan, mode: Mode, reads: list[Mention], values: Mapping[str, str]
) -> list[Mention]:
    """In bf16 modes, with the switch migrated unconditionally, a read of a variable that
    was in force (``values``: variable -> the value the legacy run saw) now has one answer.
    Value reads become the constant ``BF16_ENABLED`` (declared once, with a comment) and
    membership tests ``True``; an ``if`` on such reads that patches ``torch.finfo`` or HF's
    ``get_parameter_dtype`` (a workaround for the switch's side effects: under it
    ``torch.finfo(torch.float32).min`` became -inf on the device) is removed whole. Returns the reads left to report."""
    migrated = set(values)
    constant = next(iter(set(values.values()))) if len(set(values.values())) == 1 else None
    left, replaced = [], False
    for mention in reads:
        assert isinstance(mention.node, cst.SimpleString), "a read names its variable in a string literal"
        expr = read_expression(ctx, mention.node)
        if (
            mention.variable not in migrated
            or expr is None
            or (constant is None and not isinstance(expr, cst.Comparison))
        ):
            left.append(mention)
            continue
        if isinstance(expr, cst.Comparison):
            negated = isinstance(expr.comparisons[0].operator, cst.NotIn)
            value = "False" if negated else "True"
            plan.replace[id(expr)] = _becomes_name(value)
        else:
            plan.replace[id(expr)] = _becomes_name(ENABLED_CONSTANT)
            replaced = True
        ctx.report("BFM050", mention.node, fixed=True, variant="replaced", variable=mention.variable)
    if replaced:
        plan.prelude.append(
            cst.parse_statement(
                (
                    f"{ENABLED_CONSTANT} = {constant!r}  # bf16-migrate: what the legacy bf16 variable read as; "
                    f"the model now runs in bf16 explicitly ({mode.name} mode)\n"
                ).replace("'", '"', 2)
            ).with_changes(leading_lines=[cst.EmptyLine()])
        )

    return left


def remove_patches(ctx: FileContext, plan: EditPlan, reads: list[Mention], migrated: set[str]) -> list[Mention]:
    """An ``if`` on reads of the variables that patches ``torch.finfo`` or HF's
    ``get_parameter_dtype`` was a workaround for the switch's side effects (under it
    ``torch.finfo(torch.float32).min`` became -inf on the device; optimum-neuron's
    ``accelerator.py`` removed its own patch when it migrated): once the switch is
    migrated (any of ``migrated``), in any mode, the patch is dead weight and goes, with
    every read in its test. Returns the reads left."""
    patches: list[cst.If] = []
    for mention in reads:
        assert isinstance(mention.node, cst.SimpleString), "a read names its variable in a string literal"
        expr = read_expression(ctx, mention.node)
        patch = workaround_patch(ctx, expr) if expr is not None else None
        if patch is not None and mention.variable in migrated and patch not in patches:
            patches.append(patch)
            plan.remove.add(id(patch))
    left = []
    for mention in reads:
        patch = next((p for p in patches if any(mention.node is n for n in findall(p.test, m.SimpleString()))), None)
        if patch is None:
            left.append(mention)
        else:
            ctx.report("BFM051", mention.node, fixed=True, variable=mention.variable)
    return left


def workaround_patch(ctx: FileContext, read: cst.CSTNode) -> cst.If | None:
    """The ``if`` around ``read`` that patches ``torch.finfo`` or ``get_parameter_dtype`` (see
    :func:`remove_patches`), or None."""
    stmt = ctx.enclosing(read, cst.If)
    if (
        stmt is None
        or stmt.orelse is not None
        or not any(read is n for n in findall(stmt.test, m.Call() | m.Subscript() | m.Comparison()))
    ):
        return None
    for target in findall(stmt.body, m.AssignTarget(), ctx.index):
        code = cst.Module(body=[]).code_for_node(target.target)
        if code.endswith("finfo") or code.endswith("get_parameter_dtype"):
            return stmt
    return None


def read_expression(ctx: FileContext, string: cst.SimpleString) -> cst.BaseExpression | None:
    """The whole read a variable-name literal belongs to: ``os.environ.get(X, ...)``,
    ``os.getenv(X)``, ``os.environ[X]``, or a one-operator ``X in os.environ``."""
    parent = ctx.parent(string)
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        return call if isinstance(call, cst.Call) and call.args[0] is parent else None
    if isinstance(parent, cst.Comparison):
        return parent if len(parent.comparisons) == 1 and parent.left is string else None
    if isinstance(parent, cst.Index):
        subscript = ctx.parent(ctx.parent(parent))
        return subscript if isinstance(subscript, cst.Subscript) else None
    return None


def constant_target(ctx: FileContext, constant_keys: Mapping[str, list[LegacyWrite]], mention: Mention) -> str | None:
    """The constant's name when the mention is ``NAME = "XLA_..."`` and NAME keys a write."""
    assign = ctx.parent(mention.node)
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
        name = assign.targets[0].target.value
        return name if name in constant_keys else None
    return None


def plan_constants(
    ctx: FileContext, plan: EditPlan, constant_keys: Mapping[str, list[LegacyWrite]], constants: list[Mention]
) -> None:
    """A constant naming a legacy variable goes when every use of it was a write this run
    removed or renamed; otherwise it is reported (BFM043)."""
    for mention in constants:
        name = constant_target(ctx, constant_keys, mention)
        assert name is not None, "the planner passes only the mentions constant_target names"
        by_key = {id(w.key): w for w in constant_keys[name]}
        uses = [n for n in ctx.nodes(cst.Name) if n.value == name and not isinstance(ctx.parent(n), cst.AssignTarget)]
        done = all(
            id(u) in by_key and (id(u) in plan.replace or id(by_key[id(u)].statement) in plan.remove) for u in uses
        )
        statement = ctx.statement_of(mention.node)
        if done and isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            plan.remove.add(id(statement))
            ctx.report("BFM043", mention.node, fixed=True, name=name, variable=mention.variable)
        else:
            ctx.report("BFM043", mention.node, fixed=False, variant="still_used", name=name, variable=mention.variable)


def _becomes_name(name: str) -> Callable[[cst.BaseExpression], cst.Name]:
    """A replacement (:attr:`.apply.EditPlan.replace`) of an expression by the name ``name``,
    keeping the expression's parentheses."""
    return lambda node: cst.Name(name).with_changes(lpar=node.lpar, rpar=node.rpar)
