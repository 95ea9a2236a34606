"""float32-inputs: in a mode that keeps the model FP32 (amp, and ``verify``'s FP32 reference run), a
model whose inputs' dtype the code does not tell gets a forward pre-hook (``float32_inputs_hook``)
that makes its float64 inputs float32 at run time, integer and float32 ones untouched.

Under the legacy switch a float64 tensor on the XLA device was low precision like a float32 one
(torch-xla ``torch_xla/csrc/dtype.cpp``, ``MaybeDowncastToXlaDeviceType``), so a script could feed
NumPy's float64 batches (``torch.from_numpy``) to its model. Without the switch such a batch reaches
the FP32 model as float64: autocast casts float16/float32/bfloat16 arguments only, never float64
(PyTorch ``aten/src/ATen/autocast_mode.h``, ``is_eligible``), and XLA refuses an op that mixes
float64 with the parameters' float32 ("mixed precision is disallowed"; measured with torch-xla 2.9
on the XLA CPU device). The hook is registered where the bf16 modes cast the model (before the
optimizer built from it), under the guard; the reasons are those of the bf16 modes' run-time cast
(:meth:`..inputs.InputCasts.hook_reason`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import libcst as cst

from ...rules import Emit
from .. import snippets
from ..apply import EditPlan
from ..bindings import assigned_values
from ..context import FileContext
from ..device_modules import DeviceModule, OnDevice, passed_out
from ..device_tensors import unknown_arrivals
from ..dtype_flow import DtypeFlow
from ..inputs import InputCasts, refuse_scripted
from ..model_code import short_code
from ..model_reach import float64_state, tree_float64_state
from ..model_site import ModelCall, same_model
from ..wrappers import module_of
from .migration import Migration, Planned

EMIT = Emit.FLOAT32_INPUTS


def plan(m: Migration, planned: Planned) -> Planned:
    """The hook on each model, not sharded, and each other module on the device whose inputs need
    it (:func:`plan_float32_inputs`)."""
    models = [(model, at) for model, at in zip(m.models, m.cast_anchors) if id(model) not in m.sharded]
    _float64_state(m, models)
    plan_float32_inputs(m.ctx, m.plan, m.flow, models, m.calls, m.guard, m.on_device)
    return planned


def check(m: Migration) -> Migration | None:
    """Keep the switch where a model whose float64 inputs the run-time pre-hook must make float32 is compiled by
    TorchScript (:func:`..inputs.refuse_scripted`)."""
    inputs = InputCasts(m.ctx, m.flow, m.plan, m.guard)
    models = [module_of(m.ctx, model) for model in m.models if id(model) not in m.sharded]
    calls = [m.calls[id(model)] for model in m.models if id(model) not in m.sharded]
    return None if refuse_scripted(inputs, models, calls, m.anchors, snippets.FP32_INPUTS_HOOK, uncalled=False) else m


def _float64_state(m: Migration, models: Sequence[tuple[cst.BaseExpression, list[cst.BaseStatement] | None]]) -> None:
    """``<model>.to(torch.float32)`` before each model's anchors when a class of the file registers a
    buffer or parameter that may be float64 (:func:`..model_reach.float64_state`), reported once
    (BFM023 ``state``). Under the switch that state was low precision on the device; the FP32 model
    under autocast would compute with it in f64 (a hunt's ALiBi slopes from NumPy: the scores, the
    softmax and the attention matmuls in f64). For an FP32 model the cast changes nothing else."""
    state = float64_state(m.ctx)
    elsewhere = tree_float64_state(m.ctx) if state is None else None  # `file:line: code` in a module of the tree
    for model, anchors in models:
        double = _made_float64(m.ctx, model)
        if double is not None and anchors:
            module = m.ctx.code(module_of(m.ctx, model))
            for statement in anchors:
                cast = snippets.statement(f"{module}.to(torch.float32)")
                m.plan.insert_before.setdefault(id(statement), []).extend(snippets.guarded([cast], m.guard))
            m.ctx.report("BFM023", double, fixed=True, variant="double", code=short_code(m.ctx, double), model=module)
        elif (state is not None or elsewhere is not None) and plan_float64_state(
            m.ctx, m.plan, model, anchors, m.guard
        ):
            module = m.ctx.code(module_of(m.ctx, model))
            at, code = (state, short_code(m.ctx, state)) if state is not None else (model, str(elsewhere))
            m.ctx.report("BFM023", at, fixed=True, variant="state", code=code, model=module)


_F64 = frozenset({"torch.float64", "torch.double"})


def _made_float64(ctx: FileContext, model: cst.BaseExpression) -> cst.Call | None:
    """The call that makes the model float64 where it is built (``nn.Sequential(...).double().to(device)``,
    ``.to(torch.float64)``), or None. Under the switch its parameters were low precision on the device; kept
    float64 under autocast, which casts no float64, the forward met its bf16 activations and raised ("mat1 and
    mat2 must have the same dtype, but got BFloat16 and Double": a hunt's). amp's FP32 model is float32."""
    values = assigned_values(ctx, model) if isinstance(model, cst.Name) else [model]
    for value in values:
        expr: cst.BaseExpression = value
        while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            method = expr.func.attr.value
            if method == "double" and not expr.args:
                return expr
            named = [a.value for a in expr.args if a.keyword is None or a.keyword.value == "dtype"]
            if method in ("to", "type") and any(ctx.qualified_names(v) & _F64 for v in named):
                return expr
            expr = expr.func.value
    return None


def plan_float64_state(
    ctx: FileContext,
    plan: EditPlan,
    model: cst.BaseExpression,
    anchors: Sequence[cst.BaseStatement] | None,
    guard: cst.BaseExpression | None,
) -> bool:
    """``<model>.to(torch.float32)`` before each of ``anchors`` when a class of the file registers a buffer or
    parameter that may be float64 (:func:`..model_reach.float64_state`), or a class of a module of the tree it
    imports does (:func:`..model_reach.tree_float64_state`); whether one was planned. The amp
    migration's and verify's FP32 reference's (whose float64 parameter, kept, let an amp migration that
    left it float64 pass as "FP32 where the FP32 script has it": a hunt's)."""
    if (float64_state(ctx) is None and tree_float64_state(ctx) is None) or not anchors:
        return False
    module = ctx.code(module_of(ctx, model))
    for statement in anchors:
        cast = snippets.statement(f"{module}.to(torch.float32)")
        plan.insert_before.setdefault(id(statement), []).extend(snippets.guarded([cast], guard))
    return True


def plan_float32_inputs(
    ctx: FileContext,
    plan: EditPlan,
    flow: DtypeFlow,
    models: Sequence[tuple[cst.BaseExpression, list[cst.BaseStatement] | None]],
    calls: Mapping[int, list[ModelCall]],
    guard: cst.BaseExpression | None,
    on_device: OnDevice,
) -> None:
    """For each ``(model, anchors)`` of ``models`` (``anchors``: the statements its cast would go
    before, None where there is none) whose inputs' dtype cannot be told from its ``calls`` (by id
    of the model), ``model.register_forward_pre_hook(float32_inputs_hook, with_kwargs=True)``
    before each anchor; for each other module ``on_device`` called in the file or handed out of it,
    the same right after it reaches the device (a copy that keeps its source's hooks gets none of
    its own). Under ``guard``, the helpers once in the prelude, each reported (BFM023). Also the FP32
    reference run's (``bf16_migrate.verify``), which has no :class:`Migration`."""
    hooks = _Hooks(ctx, plan, flow, guard)
    called = frozenset(id(c.call) for cs in calls.values() for c in cs)
    for call in unknown_arrivals(ctx, called):
        hooks.arrival(call)
    for model, anchors in models:
        if not anchors or (registration := hooks.registration(model, calls.get(id(model), []))) is None:
            continue
        for statement in anchors:
            plan.insert_before.setdefault(id(statement), []).extend(snippets.guarded([registration], guard))
    done: list[DeviceModule] = []
    for module in on_device.modules:
        first = not any(same_model(ctx, module.expr, d.expr) for d in done)
        done.append(module)
        if not first or (module.hooks and not module.cast):
            continue
        if not module.calls and passed_out(ctx, module.expr) is None:
            continue  # no forward pass runs
        registration = hooks.registration(module.expr, module.calls)
        if registration is not None:
            plan.insert_after.setdefault(id(module.anchor), []).extend(snippets.guarded([registration], guard))


class _Hooks:
    """The hook registrations of one file, the helpers planned with the first."""

    def __init__(self, ctx: FileContext, plan: EditPlan, flow: DtypeFlow, guard: cst.BaseExpression | None) -> None:
        self.ctx, self.plan, self.guard = ctx, plan, guard
        self.inputs = InputCasts(ctx, flow, plan, guard)
        self.helper_added = False

    def _helpers(self) -> None:
        if not self.helper_added:
            self.plan.prelude.extend(snippets.float32_inputs_helper())
            self.helper_added = True

    def arrival(self, call: cst.BaseExpression) -> None:
        """``float64_to_float32(...)`` around ``call``, a tensor of a dtype the code does not tell brought
        to the device, or a device loader batch's read (:func:`..device_tensors.unknown_arrivals`): a float64
        one was low precision there under the switch; left float64 it made a loss float64 under autocast, which
        casts no float64 (found by a hunt: a Gaussian NLL and a negative binomial NLL computed in f64)."""
        self._helpers()
        guard = self.guard
        self.plan.replace[id(call)] = lambda node: _float64_to_float32(node, guard)
        self.ctx.report("BFM023", call, fixed=True, variant="arrival", code=short_code(self.ctx, call))

    def registration(self, model: cst.BaseExpression, calls: list[ModelCall]) -> cst.BaseStatement | None:
        """The registration on ``model`` called at ``calls`` (reported), or None where every input's
        dtype is told (:meth:`..inputs.InputCasts.hook_reason`)."""
        ctx = self.ctx
        # a model the file never calls nor hands out runs no forward pass here (the bf16 modes still
        # cast such a model's inputs: its cast is theirs, and a bf16 model fed f32 crashes)
        reason = self.inputs.hook_reason(model, calls, self.inputs.unknown_inputs(calls), uncalled=False)
        if reason is None:
            return None
        self._helpers()
        module = ctx.code(module_of(ctx, model))
        anchor, why = reason
        ctx.report("BFM023", anchor, fixed=True, model=module, hook=snippets.FP32_INPUTS_HOOK, why=why)
        return snippets.forward_pre_hook_statement(module, snippets.FP32_INPUTS_HOOK)


def _float64_to_float32(node: cst.CSTNode, guard: cst.BaseExpression | None) -> cst.BaseExpression:
    """``float64_to_float32(node)``; under ``guard``, ``(float64_to_float32(node) if guard else node)``."""
    assert isinstance(node, cst.BaseExpression), "an arrival is an expression"
    call = cst.Call(func=cst.Name(snippets.FP32_FLOAT64), args=[cst.Arg(node)])
    if guard is None:
        return call
    return cst.IfExp(test=guard.deep_clone(), body=call, orelse=node, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
