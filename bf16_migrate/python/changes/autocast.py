"""autocast: the forward pass and the loss go under ``torch.autocast("xla", dtype=torch.bfloat16)``
with the model kept FP32 (Neuron's migration guide: the automatic mixed precision replacement); the
regions were found, and the migration stopped where one could not be wrapped, before any change
(:func:`..autocast.autocast_regions`)."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst
import libcst.matchers as m

from ...rules import Emit
from ..autocast import (
    Problem,
    Region,
    autocast_regions,
    plan_autocast,
    products_after,
    through_returns,
)
from ..bindings import bound_by_import
from ..context import FileContext
from ..device_modules import device_module_regions, handed_out, method_forward_calls
from ..handoffs import model_handoffs
from ..loss_reach import loss_code
from ..model_site import one_line, unseen_reach
from ..outcome import Refusal
from ..wrappers import module_of
from .migration import Migration, Planned

EMIT = Emit.AUTOCAST


def plan(m: Migration, planned: Planned) -> Planned:
    """The regions wrapped, under the guard."""
    m.plan.wrap_guard = m.guard
    plan_autocast(m.ctx, m.plan, list(m.regions))
    return planned


def _method_regions(m: Migration, model: cst.BaseExpression, loss_statements: frozenset[int]) -> list[Region]:
    """The autocast regions of the model's own methods that compute with a tensor it is handed
    (``samples = model.decode(z)``: its forward pass runs outside the regions of ``model(...)``, in
    FP32 where the legacy run computed in bf16; found by a hunt of our own). One that cannot be
    wrapped (a method called in an ``if``) is reported and left in FP32: it does not stop the
    migration of the model's calls."""
    ctx = m.ctx
    calls = [c for c in method_forward_calls(ctx, module_of(ctx, model)) if _hands_a_value(c.call)]
    if not calls:
        return []
    found, failed = autocast_regions(ctx, model, calls, loss_statements)
    for _code, node, _variant, _fields in failed:
        ctx.report("BFM030", node, fixed=False, variant="method", method=ctx.code(node))
    return found


def _hands_a_value(call: cst.Call) -> bool:
    """Whether ``call`` passes an argument that is not a literal (a tensor it may compute with)."""
    return any(
        not isinstance(a.value, (cst.SimpleString, cst.Integer, cst.Float, cst.ConcatenatedString))
        and not (isinstance(a.value, cst.Name) and a.value.value in ("None", "True", "False"))
        for a in call.args
    )


def check(m: Migration) -> Migration | None:
    """amp's autocast regions over every model's forward pass and loss, and over the forward passes
    of the other modules on the device (:mod:`..device_modules`); None when one cannot be wrapped
    (reported, with BFM033 on the writes): autocast is the whole replacement in amp, so removing
    the switch would leave that pass in FP32."""
    ctx = m.ctx
    regions: list[Region] = []
    problems = []
    lifted = {id(model): through_returns(ctx, m.calls[id(model)]) for model in m.models}
    loss = loss_code(ctx, [c for cs in lifted.values() for c in cs] + m.on_device.calls(ctx))
    for model in m.models:
        calls = lifted[id(model)]
        if not calls:  # used through its own methods alone (``loss = model.nll(x, y)``): they are its forward passes
            calls = [c for c in method_forward_calls(ctx, module_of(ctx, model)) if _hands_a_value(c.call)]
            found, failed = autocast_regions(ctx, model, calls, loss.statements)
            regions += found
            problems += failed
            continue
        found, failed = autocast_regions(ctx, model, calls, loss.statements)
        regions += found
        problems += failed
        regions += _method_regions(m, model, loss.statements)
    found, failed = device_module_regions(ctx, m.on_device, loss.statements)
    regions += found
    problems += failed
    regions += products_after(ctx, regions)
    if not regions:
        # no forward pass of this file goes under autocast, and a module's runs in code outside it (a trainer
        # class of another module given the model): removing the switch would leave the training all FP32
        for expr, call in handed_out(ctx, m.on_device):
            fields = {"model": ctx.code(expr), "call": ctx.code(call.func), "line": ctx.pos(call)[0]}
            problems.append(("BFM021", call, "handed", fields))
    # a model held in a collection whose calls the codemod cannot see (`nets[0](x)`, `for m in nets[::-1]`):
    # a forward left out of autocast would run in FP32 where the legacy run was bf16
    for expr in dict.fromkeys([*m.models, *(d.expr for d in m.on_device.unique(ctx))]):
        held = unseen_reach(ctx, expr)
        if held is not None:
            problems.append(("BFM021", held, "held", {"model": ctx.code(expr), "holder": one_line(ctx.code(held))}))
    problems = [_inherited(ctx, problem) for problem in problems]
    if not problems:
        handoffs = model_handoffs(ctx, [module_of(ctx, model) for model in m.models])
        return replace(m, regions=tuple(regions), handoffs=tuple(handoffs))
    for code, node, variant, fields in problems:
        ctx.report(code, node, fixed=False, variant=variant, **fields)
    for variable, anchor in m.anchors:
        ctx.outcome.refuse(
            Refusal.OWN_PRECISION,
            ctx.report(
                "BFM033",
                anchor,
                fixed=False,
                variable=variable,
                count=len(problems),
                first_code=problems[0][0],
                first_line=ctx.pos(problems[0][1])[0],
            ),
        )
    return None


def _inherited(ctx: FileContext, problem: Problem) -> Problem:
    """A model never called here that is ``self.<attr>`` of a class deriving from an imported class (``class
    Trainer(BaseTrainer)`` with ``BaseTrainer`` from a module of the tree): BFM021 says where its forward passes
    run, the base class's code, rather than only that this file has none (a hunt's amp refusal named no place)."""
    code, node, variant, fields = problem
    if code != "BFM021" or variant is not None or not m.matches(node, m.Attribute(value=m.Name("self"))):
        return problem
    cls = ctx.enclosing(node, cst.ClassDef)
    imported = [b.value for b in cls.bases if b.keyword is None and bound_by_import(ctx, b.value)] if cls else []
    if cls is None or not imported:
        return problem
    return (code, node, "inherited", {**fields, "cls": cls.name.value, "base": ctx.code(imported[0])})
