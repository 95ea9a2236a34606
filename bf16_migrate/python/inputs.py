"""The model's inputs after ``model.to(torch.bfloat16)``: floating ones cast, integer ones left.

Under the legacy switch every floating tensor on the device was bf16, inputs included, while
integer tensors (token ids, labels) stayed integer (torch-xla
``torch_xla/csrc/dtype.cpp``, ``MaybeDowncastToXlaDeviceType``). A bf16 model fed an f32 tensor
crashes (``Input type (float) and bias type (c10::BFloat16) should be the same`` for conv, ``input must have the type
torch.bfloat16`` for RNNs, the HLO verifier's "mixed precision is disallowed" for linear at
sync). So once the model is cast, every floating input must be cast too:

* where :class:`~.dtype_flow.DtypeFlow` tells each argument of each model call, the floating
  ones get a visible ``.to(torch.bfloat16)`` at the call and the integer ones nothing;
* where it cannot tell one of them, or the model is called outside this file, a forward
  pre-hook on the model casts the floating tensors of every call at run time (integers
  untouched), which is what PyTorch Lightning's bf16-true precision does with
  ``convert_input`` after ``convert_module``. One hook covers every call site: training and
  evaluation loops, calls made in other modules, positional and keyword arguments.
* a floating loss target is cast where it is known to be floating; where it cannot be told it
  goes through the same run-time helper as the hook (``floating_to_bf16(target)``).

A model is never cast with its inputs left to crash.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from . import snippets
from .apply import EditPlan
from .context import FileContext, findall
from .dtype_flow import FLOAT, INT, DtypeFlow
from .model_site import ModelCall


class InputCasts:
    """Plans the input casts of the models of one file into ``plan``; every change is made
    under ``guard`` (the condition bf16 is on under, None when unconditional)."""

    def __init__(self, ctx: FileContext, flow: DtypeFlow, plan: EditPlan, guard: cst.BaseExpression | None) -> None:
        self.ctx, self.flow, self.plan, self.guard = ctx, flow, plan, guard
        self.helper_added = False

    def plan_model(self, model: cst.BaseExpression, calls: list[ModelCall]) -> list[cst.BaseStatement]:
        """Plan the casts for ``model`` called at ``calls``; returns the statements to put right
        after the model cast (the pre-hook registration, when the run-time path is needed)."""
        ctx = self.ctx
        unknown: list[cst.BaseExpression] = []
        static: list[cst.BaseExpression] = []
        for call in calls:
            for arg in call.call.args:
                kind = self._kind(arg.value) if not arg.star else "unknown"
                if kind == FLOAT:
                    static.append(arg.value)
                elif kind == "unknown":
                    unknown.append(arg.value)
        after: list[cst.BaseStatement] = []
        if unknown or not calls:
            after.append(
                snippets.statement(
                    f"{ctx.code(model)}.register_forward_pre_hook({snippets.BF16_INPUTS_HOOK}, with_kwargs=True)"
                )
            )
            self._need_helper()
            if unknown:
                shown = ", ".join(f"`{ctx.code(e)}`" for e in unknown[:3]) + (" ..." if len(unknown) > 3 else "")
                why = f"the dtype of {shown} cannot be told from the code"
                anchor = unknown[0]
            else:
                why = "it is not called in this file"
                anchor = model
            ctx.report("BFM022", anchor, fixed=True, model=ctx.code(model), hook=snippets.BF16_INPUTS_HOOK, why=why)
        else:
            for expr in static:
                self._cast(expr)
        for call in calls:
            for loss in call.losses:
                for arg in loss.args:
                    names = {n.value for n in findall(arg.value, m.Name())}
                    if names & set(call.outputs) or any(a is call.call for a in findall(arg.value, m.Call())):
                        continue
                    kind = self._kind(arg.value)
                    if kind == FLOAT:
                        self._cast(arg.value)
                    elif kind == "unknown":
                        self._runtime(arg.value)
        return after

    # -- helpers ---------------------------------------------------------------------------
    def _kind(self, expr: cst.BaseExpression) -> str:
        """FLOAT (cast it), INT or "explicit" (leave it), or "unknown"."""
        if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float, cst.Lambda)) or m.matches(
            expr, m.Name("None") | m.Name("True") | m.Name("False")
        ):
            return "explicit"
        if m.matches(
            expr,
            m.Call(
                func=m.Attribute(attr=m.Name("float") | m.Name("double") | m.Name("half") | m.Name("bfloat16")), args=[]
            ),
        ):
            return "explicit"  # a dtype the script chose (e.g. a loss computed in fp32 on purpose)
        if (
            isinstance(expr, cst.Call)
            and m.matches(expr.func, m.Attribute(attr=m.Name("to")))
            and any(self.flow._dtype_class(a.value) is not None for a in expr.args)
        ):
            return "explicit"
        if m.matches(expr, m.Call(func=m.Name(snippets.BF16_FLOATING))):
            return "explicit"  # already migrated
        kind = self.flow.infer(expr)
        return kind if kind in (FLOAT, INT) else "unknown"

    def _cast(self, expr: cst.BaseExpression) -> None:
        guard = self.guard
        self.plan.replace[id(expr)] = lambda node: snippets.cast_to_bf16(node, guard)

    def _runtime(self, expr: cst.BaseExpression) -> None:
        guard = self.guard
        self.plan.replace[id(expr)] = lambda node: snippets.floating_to_bf16_call(node, guard)
        self._need_helper()
        self.ctx.report(
            "BFM022", expr, fixed=True, variant="loss_target", target=self.ctx.code(expr), helper=snippets.BF16_FLOATING
        )

    def _need_helper(self) -> None:
        if not self.helper_added:
            self.plan.prelude.extend(snippets.bf16_inputs_helper())
            self.helper_added = True
