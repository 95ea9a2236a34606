"""The ops the code runs on the device that have no bf16 kernel there (``rules/model_code.toml``
``[flow.float32_ops]``: ``torch.linalg.cholesky``, ``torch.linalg.solve``, ``torch.logdet``...).

Under the legacy switch their operands said float32, so torch-xla's CPU fallback computed them in
f32 and the result was low precision again on the device; after ``model.to(torch.bfloat16)`` an
operand is real bf16 and the fallback raises (measured with torch-xla 2.9 on the XLA CPU device:
``"cholesky_cpu" not implemented for 'BFloat16'``). Each op returning one tensor is run in float32
and its result cast back to its first operand's dtype, which is what the legacy run computed:
``torch.linalg.cholesky(K.float()).to(K.dtype)``. On an f32 operand both casts are no-ops, so the
rewrite holds under a condition the switch was set under too. An op returning several tensors
cannot be cast back in one expression: the switch is kept and the line named.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import libcst as cst

from .apply import EditPlan
from .conditions import choose
from .context import FileContext
from .model_code import short_code
from .snippets import attr


@dataclass(frozen=True)
class Float32Ops:
    """The calls found: ``single`` (one tensor returned: rewritten), ``several`` (a tuple: the
    switch kept), in the file's order."""

    single: tuple[cst.Call, ...] = ()
    several: tuple[cst.Call, ...] = ()


def find_float32_ops(ctx: FileContext, scopes: Iterable[cst.CSTNode], path: frozenset[int]) -> Float32Ops:
    """The calls of ``[flow.float32_ops]``'s functions inside ``scopes`` (the code that runs on
    the device: the model's and its loss's) or on a step's loss ``path`` (ids of the nodes from
    the model's output to the loss, :attr:`.loss_reach.LossCode.path`), each once. A call
    elsewhere in a step may run on the host (a float64 computation): it is left as it is."""
    rules = ctx.rules.model_code
    holders = {id(scope) for scope in scopes}
    single: list[cst.Call] = []
    several: list[cst.Call] = []
    for call in candidates(ctx):
        if id(call) not in path and not any(id(a) in holders for a in ctx.ancestors(call)):
            continue
        names = ctx.qualified_names(call.func)
        if names & rules.float32_single:
            single.append(call)
        elif names & rules.float32_several:
            several.append(call)
    return Float32Ops(tuple(single), tuple(several))


def candidates(ctx: FileContext) -> list[cst.Call]:
    """The file's calls whose last name is one of ``[flow.float32_ops]``'s (a check by name before
    any qualified name is read)."""
    rules = ctx.rules.model_code
    short = {name.rsplit(".", 1)[-1] for name in rules.float32_single | rules.float32_several}
    return [
        call
        for call in ctx.nodes(cst.Call)
        if (call.func.attr.value if isinstance(call.func, cst.Attribute) else getattr(call.func, "value", None))
        in short
    ]


def plan_float32_ops(
    ctx: FileContext, plan: EditPlan, calls: Sequence[cst.Call], guard: cst.BaseExpression | None
) -> None:
    """``op(a, b)`` -> ``op(a.float(), b.float()).to(<a>.dtype)`` for each of ``calls`` (BFM155):
    every positional tensor operand made float32 (a Python number left), the result cast back to
    the first operand's dtype, or to bf16 (under ``guard``: bf16 if it holds, else float32) where
    that operand is not a name or an attribute of names."""
    for call in calls:
        if not call.args or call.args[0].keyword is not None:
            continue
        first = call.args[0].value
        back = (
            cst.Attribute(value=first, attr=cst.Name("dtype"))
            if _plain(first)
            else choose(attr("torch.bfloat16"), attr("torch.float32"), guard)
        )
        plan.replace[id(call)] = _in_float32(back)
        ctx.report(
            "BFM155", call, fixed=True, op=short_code(ctx, call.func), dtype=ctx.code(back) if _plain(first) else "bf16"
        )


def _in_float32(back: cst.BaseExpression):
    def edit(node: cst.Call) -> cst.Call:
        args = [
            a.with_changes(value=_float(a.value)) if a.keyword is None and not _number(a.value) else a
            for a in node.args
        ]
        return cst.Call(
            func=cst.Attribute(value=node.with_changes(args=args), attr=cst.Name("to")), args=[cst.Arg(back)]
        )

    return edit


def _float(expr: cst.BaseExpression) -> cst.Call:
    if not (expr.lpar or isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))):
        expr = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=expr, attr=cst.Name("float")))


def _number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float)) or (
        isinstance(expr, cst.Name) and expr.value in ("True", "False")
    )


def _plain(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name)
