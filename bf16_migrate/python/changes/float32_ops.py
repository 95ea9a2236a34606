"""float32-ops: an op the code runs on the device without a bf16 kernel there
(``torch.linalg.cholesky``, ``torch.linalg.solve``...) keeps the switch, named: a bf16 operand
raises, and run in float32 its backward computes in f32 (:mod:`..float32_ops`). One in the script's
own code that runs without gradient (an evaluation's ``torch.quantile``) runs on ``.float()`` of its
operand instead, as the switch's CPU fallback computed it (BFM156 ``evaluation``)."""

from __future__ import annotations

import functools

import libcst as cst
import libcst.matchers as m

from ...rules import Emit
from .. import snippets
from ..context import FileContext, findall
from ..device_modules import method_names
from ..device_tensors import on_device
from ..dtype_flow import INT, DtypeFlow
from ..float32_ops import (
    candidates,
    cast_back_operand,
    find_float32_ops,
    is_float32_op,
    keyword_path,
    runs_by_keyword,
    with_keyword,
)
from ..loss_reach import loss_code
from ..model_reach import model_roots, reach_from
from ..outcome import F32Island, Refusal
from .migration import Migration, Planned

EMIT = Emit.FLOAT32_OPS


def plan(m: Migration, planned: Planned) -> Planned:
    """The keyword that makes an op run in bf16 on the device, on each call that has one
    (:func:`..float32_ops.keyword_path`: ``torch.cdist(..., compute_mode="use_mm_for_euclid_dist")``,
    BFM156); a file with another such op does not reach the plans (:func:`check`)."""
    ctx = m.ctx
    if not candidates(ctx):
        return planned
    for call in candidates(ctx):
        operand = cast_back_operand(ctx, call)
        if operand is not None:
            m.plan.replace[id(call)] = functools.partial(_cast_to, dtype=f"{ctx.code(operand)}.dtype")
            ctx.report("BFM156", call, fixed=True, variant="cast_to", op=ctx.code(call.func), operand=ctx.code(operand))
    integer = ctx.rules.model_code.float32_ops_integer
    for call in _evaluation_ops(m):
        first = call.args[0].value
        if id(first) not in m.plan.replace:
            m.plan.replace[id(first)] = snippets.float_of
            floating = not ctx.qualified_names(call.func) & integer  # `matrix_rank`'s is an integer tensor
            if m.mode.casts_model and floating and id(call) not in m.plan.replace:  # its f32 result was bf16 there
                m.plan.replace[id(call)] = functools.partial(_cast_to, dtype="torch.bfloat16")
            finding = ctx.report(
                "BFM156", call, fixed=True, variant="evaluation", op=ctx.code(call.func), operand=ctx.code(first)
            )
            # the op computes on f32 as the switch's CPU fallback did: verify's trace takes it as the rewrite's
            (first_line, _), (last_line, _) = ctx.span(call)
            ctx.outcome.f32_islands.append(F32Island(first_line, last_line, finding))
    for call in _by_hand_ops(m):
        operand = next(
            v for v in [*_operands(call), *(a.value for a in _instance_calls_args(ctx, call))] if _float32_operand(v)
        )
        # a criterion class is named where its instance is called, as BFM155 names it: that call computes in f32
        used = _instance_calls(ctx, call) or [call]
        finding = ctx.report(
            "BFM156", used[0], fixed=True, variant="by_hand", op=ctx.code(call.func), operand=ctx.code(operand)
        )
        for computes in used:
            (first_line, _), (last_line, _) = ctx.span(computes)
            ctx.outcome.f32_islands.append(F32Island(first_line, last_line, finding))
    if not m.mode.casts_model:
        # amp: the op runs under autocast, whose fp32 list has torch.cdist (its operands made f32), or on
        # the FP32 model's tensors; its keyword would give the step f32 matmuls the FP32 script under
        # autocast does not have (bench/unseen/hunt10 proto_conda: verify's precision part FAILed)
        return planned
    evaluation = {id(c) for c in _evaluation_ops(m)} | {id(c) for c in _by_hand_ops(m)}
    for call in _device_ops(m):
        if id(call) in evaluation:
            continue  # its operand is made float32 above, or by hand
        path = keyword_path(ctx, call)
        assert path is not None, "the check let only ops with a keyword path through"
        m.plan.replace[id(call)] = functools.partial(with_keyword, keyword=path.keyword, value=path.value)
        ctx.report("BFM156", call, fixed=True, op=ctx.code(call.func), keyword=f"{path.keyword}={path.value}")
    return planned


def check(m: Migration) -> Migration | None:
    """The ops of the code that runs on the device: the models' and the other modules' code, the
    methods of theirs the script calls, the loss code and the steps' loss paths. None where there
    is one without a keyword that makes it run in bf16 (BFM155 at each, and ``kept`` on the writes:
    the switch stays)."""
    ctx = m.ctx
    if not candidates(ctx):
        return m  # most files call none of them: the reach of the model's code is not read for nothing
    parametrizations = ctx.rules.model_code.float32_parametrizations
    evaluation = {id(c) for c in _evaluation_ops(m)}
    by_hand = {id(c) for c in _by_hand_ops(m)}
    found = [
        call
        for call in _device_ops(m)
        if keyword_path(ctx, call) is None
        and id(call) not in evaluation
        and id(call) not in by_hand
        # amp keeps the model FP32: a parametrization's map runs on its FP32 `original`, as the FP32 run's; an op
        # autocast runs in float32 (a margin loss) is handed float32 there
        and (
            m.mode.casts_model
            or not (
                ctx.qualified_names(call.func) & (parametrizations | ctx.rules.model_code.float32_ops_autocast)
                or _on_parameters_only(ctx, call, _model_call_ids(m))
            )
        )
    ]
    if not found:
        return m
    # a criterion class is named where its instance is called (`ctc(log_probs, ...)`), where the by-hand change
    # goes, not where it is built
    named = [
        call if ctx.qualified_names(call.func) & parametrizations else next(iter(_instance_calls(ctx, call)), call)
        for call in found
    ]
    for call, where in zip(found, named):
        variant = "parametrization" if ctx.qualified_names(call.func) & parametrizations else None
        ctx.report("BFM155", where, fixed=False, variant=variant, op=ctx.code(call.func))
    for variable, anchor in m.anchors:
        finding = ctx.report(
            "BFM155", anchor, fixed=False, variant="kept", variable=variable, line=min(ctx.pos(w)[0] for w in named)
        )
        ctx.outcome.refuse(Refusal.FLOAT32_OP, finding)
    return None


def _evaluation_ops(m: Migration) -> list[cst.Call]:
    """The ops of :func:`_device_ops` in the script's own code that run without gradient (in a ``with
    torch.no_grad()`` / ``torch.inference_mode()`` block or a function decorated with one, or on a detached operand,
    ``x.detach()``) on an operand
    that is not already float32 (``.float()``): an evaluation's ``torch.quantile(resid, 0.9)``. Under the
    switch torch-xla's CPU fallback computed them in f32 and no backward ran, so run on ``.float()`` of
    the operand they compute as the legacy run did (BFM156 ``evaluation``; a hunt's evaluation kept the
    switch, BFM155)."""
    ctx = m.ctx

    def find() -> list[cst.Call]:
        out = []
        for call in _device_ops(m):
            first = call.args[0].value if call.args and call.args[0].keyword is None else None
            if first is None or _a_float_cast(first) or not (_without_gradient(ctx, call) or _detached(first)):
                continue
            calls = _model_call_ids(m)
            if not (on_device(ctx, first, calls) or _of_an_element_on_the_device(ctx, first, calls)):
                continue  # found by another operand (a distribution's scale): that one is not `.float()`-ed here
            if any(isinstance(a, cst.ClassDef) for a in ctx.ancestors(call)):
                continue  # a module's code: its forward may run with gradient elsewhere
            out.append(call)
        return out

    return list(ctx.memo(("float32 ops in evaluation",), find))


def _detached(operand: cst.BaseExpression) -> bool:
    """``x.detach()``: no gradient flows through what is computed from it (a metric's ``torch.quantile(reg.detach(),
    0.5)`` in the training loop: a hunt's was refused, BFM155, while the ``.float()`` text it asked for migrated)."""
    return m.matches(operand, m.Call(func=m.Attribute(attr=m.Name("detach")), args=[]))


def _operands(call: cst.Call) -> list[cst.BaseExpression]:
    """What ``call`` is handed: its arguments, and for a method its receiver."""
    receiver = [call.func.value] if isinstance(call.func, cst.Attribute) else []
    return [*(a.value for a in call.args), *receiver]


def _by_hand_ops(m: Migration) -> list[cst.Call]:
    """The ops of :func:`_device_ops` every operand of which the code shows on the device is cast to float32 or
    float64 where it is handed over (``torch.linalg.cholesky(K.float()).to(K.dtype)``, ``F.ctc_loss(lp.float(),
    ...)``): BFM155's own by-hand change. Kept as written and the rest of the script migrated (it was refused
    again: no script with such an op could ever finish migrating, a hunt's)."""
    ctx = m.ctx
    dtypes = ctx.memo(("device tensors flow",), lambda: DtypeFlow(ctx))

    def integer(value: cst.BaseExpression) -> bool:
        return dtypes.infer(value) == INT

    def find() -> list[cst.Call]:
        calls = _model_call_ids(m)
        out = []
        for call in _device_ops(m):
            values = [a.value for a in (*call.args, *_instance_calls_args(ctx, call))]  # a criterion's: its calls'
            if isinstance(call.func, cst.Attribute) and not ctx.qualified_names(call.func):
                values.append(call.func.value)  # `K.float().cholesky()`: the receiver is the operand
            cast = [v for v in values if _float32_operand(v)]
            # an integer operand (a CTC loss's targets and lengths, a class index) carries no floating dtype
            uncast = [v for v in values if not _float32_operand(v) and on_device(ctx, v, calls) and not integer(v)]
            if cast and not uncast:
                out.append(call)
        return out

    return list(ctx.memo(("float32 ops cast by hand",), find))


def _float32_operand(expr: cst.BaseExpression) -> bool:
    """A float cast (:func:`_a_float_cast`), or arithmetic with one (``(h.T @ h).float() + eye``): type promotion
    makes it at least float32 (torch 2.9 docs, "Type Promotion")."""
    if isinstance(expr, cst.BinaryOperation):
        return _float32_operand(expr.left) or _float32_operand(expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _float32_operand(expr.expression)
    return _a_float_cast(expr)


def _a_float_cast(expr: cst.BaseExpression) -> bool:
    """``x.float()``, ``x.double()``, ``x.to(torch.float32)`` (or ``dtype=torch.float32``/``float64``)."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)):
        return False
    if expr.func.attr.value in ("float", "double") and not expr.args:
        return True
    if expr.func.attr.value != "to" or len(expr.args) != 1:
        return False
    value = expr.args[0].value
    return isinstance(value, cst.Attribute) and value.attr.value in ("float32", "float64", "float", "double")


_NO_GRAD = frozenset({"torch.no_grad", "torch.inference_mode", "torch.autograd.grad_mode.no_grad"})


def _without_gradient(ctx, call: cst.Call) -> bool:
    """Whether ``call`` runs inside ``with torch.no_grad():`` / ``torch.inference_mode()`` or in a
    function decorated ``@torch.no_grad()`` / ``@torch.inference_mode()``."""
    for node in ctx.ancestors(call):
        if isinstance(node, cst.With):
            for item in node.items:
                target = item.item.func if isinstance(item.item, cst.Call) else item.item
                if ctx.qualified_names(target) & _NO_GRAD:
                    return True
        elif isinstance(node, cst.FunctionDef):
            for d in node.decorators:
                target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
                if ctx.qualified_names(target) & _NO_GRAD:
                    return True
    return False


def _cast_to(node: cst.CSTNode, dtype: str) -> cst.Call:
    """``node.to(<dtype>)``."""
    assert isinstance(node, cst.BaseExpression), "an op is an expression"
    return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("to")), args=[cst.Arg(cst.parse_expression(dtype))])


def _device_ops(m: Migration) -> list[cst.Call]:
    """The calls of ``[flow.float32_ops]``'s functions in the code that runs on the device (once per
    migration: the check and the plan ask)."""
    ctx = m.ctx

    def find() -> list[cst.Call]:
        calls = [c for cs in m.calls.values() for c in cs] + m.on_device.calls(ctx)
        loss = loss_code(ctx, calls)
        models = [*m.models, *m.on_device.exprs(ctx)]
        reached = reach_from(ctx, model_roots(ctx, models), [], loss, method_names(ctx, models))
        found = find_float32_ops(ctx, reached.runtime, loss.path, reached.init)
        # the script's own code outside the model's: an op whose operand the code shows on the device
        # (`torch.quantile(model(x), 0.9)`, `torch.quantile(sims.float(), q)` in an evaluation) raised there
        # once the model was cast: a hunt's, in every mode
        model_calls = _model_call_ids(m)
        ops = ctx.rules.model_code.float32_ops | ctx.rules.model_code.float32_ops_when.keys()
        for call in candidates(ctx):
            if not is_float32_op(ctx, call) or any(call is f for f in found) or runs_by_keyword(ctx, call):
                continue
            if isinstance(call.func, cst.Attribute) and not ctx.qualified_names(call.func) & ops:
                operands: list[cst.BaseExpression] = [call.func.value]  # `wave.stft(n_fft)`: the receiver
            else:
                # any tensor it is given: `StudentT(dof, mu, scale)`'s first may be a number; a criterion class
                # (`nn.CTCLoss()`) is given its operands where its instance is called
                operands = [a.value for a in (*call.args, *_instance_calls_args(ctx, call))]
            if any(
                on_device(ctx, operand, model_calls) or _of_an_element_on_the_device(ctx, operand, model_calls)
                for operand in operands
            ):
                found.append(call)
        return sorted(found, key=ctx.pos)

    return list(ctx.memo(("float32 ops on the device",), find))


_MODULE_ITERATIONS = frozenset(
    {"modules", "children", "parameters", "buffers", "named_modules", "named_children", "named_parameters"}
    | {"named_buffers", "values", "items"}
)
"""A module's methods that iterate its submodules or tensors (torch.nn.Module, torch 2.9 docs)."""
_PARAMETER_ITERATIONS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers"})
"""Those that iterate its own tensors."""


def _of_an_element_on_the_device(
    ctx: FileContext, expr: cst.BaseExpression, model_calls: frozenset[int], parameters: bool = False
) -> bool:
    """Whether ``expr`` reads an element of an iterable on the device: ``m.weight`` of ``for m in net`` (or
    ``net.modules()``, ``net.children()``, ``net.parameters()``) of a model moved there, as a comprehension or a
    loop binds it (a critic's per-block spectral norms: a hunt's). An element is where what it comes from is."""
    base = expr
    while isinstance(base, (cst.Attribute, cst.Subscript)):
        base = base.value
    scope = ctx.scopes.get(base) if isinstance(base, cst.Name) else None
    if scope is None or not isinstance(base, cst.Name):
        return False
    loops = [_loop_of(ctx, getattr(b, "node", None)) for b in scope[base.value]]
    if not loops or not all(isinstance(loop, (cst.CompFor, cst.For)) for loop in loops):
        return False
    for loop in loops:
        assert isinstance(loop, (cst.CompFor, cst.For))
        iterable = loop.iter
        method = (
            iterable.func.attr.value
            if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)
            else None
        )
        if method in (_PARAMETER_ITERATIONS if parameters else _MODULE_ITERATIONS):
            assert isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)
            iterable = iterable.func.value
        elif parameters:
            return False  # `parameters`: only a module's own tensors (`model.named_parameters()`)
        if not on_device(ctx, iterable, model_calls):
            return False
    return True


def _on_parameters_only(ctx: FileContext, call: cst.Call, model_calls: frozenset[int]) -> bool:
    """Whether every operand of ``call`` the code shows on the device is a parameter of a model there (``p`` of
    ``for name, p in model.named_parameters()``): amp keeps the model FP32, so the op is handed float32 whatever
    autocast does around it (a Lipschitz penalty's spectral norm of each weight; bench/unseen/hunt38
    lipschitz_penalty amp PASSed, then was refused once the op was named)."""
    operands = [
        v
        for v in _operands(call)
        if on_device(ctx, v, model_calls) or _of_an_element_on_the_device(ctx, v, model_calls)
    ]
    return bool(operands) and all(
        _of_an_element_on_the_device(ctx, v, model_calls, parameters=True) and not on_device(ctx, v, model_calls)
        for v in operands
    )


def _loop_of(ctx: FileContext, target: cst.CSTNode | None) -> cst.CSTNode | None:
    """The ``for`` loop or comprehension whose target binds ``target``, itself or an element of a tuple target
    (``for name, p in model.named_parameters()``); else ``target``'s parent."""
    node = ctx.parent(target) if target is not None else None
    while isinstance(node, (cst.Element, cst.Tuple, cst.List)):
        node = ctx.parent(node)
    return node


def _model_call_ids(m: Migration) -> frozenset[int]:
    """Ids of the calls of the models on the device (their outputs are there)."""
    return frozenset(id(c.call) for cs in m.calls.values() for c in cs) | frozenset(
        id(c.call) for c in m.on_device.calls(m.ctx)
    )


def _instance_calls_args(ctx: FileContext, call: cst.Call) -> list[cst.Arg]:
    """The arguments of the calls of the instance ``call`` builds (:func:`_instance_calls`): a criterion class's
    operands."""
    return [arg for used in _instance_calls(ctx, call) for arg in used.args]


def _instance_calls(ctx: FileContext, call: cst.Call) -> list[cst.Call]:
    """The calls of the instance ``call`` builds, where it is assigned to a name (``ctc = nn.CTCLoss(blank=0)``,
    then ``ctc(log_probs, targets, ...)``) or to an attribute of ``self`` (``self.ctc = nn.CTCLoss()``, then
    ``self.ctc(...)`` in the class's methods), in the file's order."""
    parent = ctx.parent(call)
    target = ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else parent
    if not (isinstance(target, cst.Assign) and target.value is call and len(target.targets) == 1):
        return []
    name = target.targets[0].target
    if m.matches(name, m.Attribute(value=m.Name("self"))):
        assert isinstance(name, cst.Attribute), "matched an Attribute"
        cls = ctx.enclosing(call, cst.ClassDef)
        pattern = m.Call(func=m.Attribute(value=m.Name("self"), attr=m.Name(name.attr.value)))
        return [c for c in findall(cls.body, pattern, ctx.index) if isinstance(c, cst.Call)] if cls is not None else []
    scope = ctx.scopes.get(name) if isinstance(name, cst.Name) else None
    if scope is None or not isinstance(name, cst.Name):
        return []
    found: list[cst.Call] = []
    for binding in scope[name.value]:
        if getattr(binding, "node", None) is not name:
            continue
        for access in binding.references:
            holder = ctx.parent(access.node)
            if isinstance(holder, cst.Call) and holder.func is access.node:
                found.append(holder)
    return sorted(found, key=ctx.pos)
