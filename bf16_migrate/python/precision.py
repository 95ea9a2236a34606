"""Plan the edits of one file for a mode: collect facts, decide, report.

What each mode emits comes from ``rules/XLA_*.toml`` (``[modes.<mode>] emit``); the meaning of
each emitted change:

* ``stochastic-rounding``: the legacy write becomes a write of ``NEURON_RT_STOCHASTIC_ROUNDING_EN
  = "1"`` in the same spelling (unless the file already names that variable);
* ``model-cast``: ``<model>.to(torch.bfloat16)`` before each optimizer built from
  ``<model>.parameters()``;
* ``input-cast``: floating tensors fed to the model, and floating targets of the loss, get
  ``.to(torch.bfloat16)``; integer ones are left alone; unknown ones are reported (BFM020);
* ``fp32-loss-accumulator``: ``dtype=torch.float32`` on the ``torch.zeros``/``torch.tensor``
  that the loss is summed into (seed 000);
* ``fp32-master-weights``: stock optimizers are built through ``with_fp32_master_weights``
  (emitted into the script, see :mod:`.snippets`);
* ``autocast``: the forward pass and the loss go under ``torch.autocast("xla", ...)``.

If the model cannot be found, nothing is changed for the on-switch and the write is reported
unfixed: a migration that removed the switch without casting would silently train in fp32.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from typing import Mapping

from ..rules import STOCHASTIC_ROUNDING_VAR, is_truthy
from . import snippets
from .apply import EditPlan
from .context import FileContext
from .dtype_flow import FLOAT, INT, DtypeFlow
from .env_writes import LegacyWrite, collect_writes, guard_of, sets_stochastic_rounding
from .model_site import find_optimizers, loss_accumulators, model_calls, same_model

REFERENCE = "reference"
"""Internal mode used by ``verify``: remove the legacy writes, add nothing (an FP32 run)."""

_MODE_SUMMARY = {
    "stochastic": "model cast to torch.bfloat16, floating inputs cast, NEURON_RT_STOCHASTIC_ROUNDING_EN=1",
    "gpu-compatible": "model cast to torch.bfloat16 with FP32 master weights in the optimizer, floating inputs cast",
    "amp": "model kept in FP32, forward and loss under torch.autocast(\"xla\", dtype=torch.bfloat16)",
    REFERENCE: "removed (FP32 reference run)",
}


class Planner:
    """Builds the :class:`EditPlan` of one file for one mode, reporting into ``ctx``."""

    def __init__(self, ctx: FileContext, mode: str, launched_with: Mapping[str, str] | None = None) -> None:
        self.ctx = ctx
        self.mode = mode
        # legacy variables a launcher sets for this script (shell, --legacy-env): the script
        # then needs the mode's code change even though it never names the variable
        self.external = [
            name
            for name, value in (launched_with or {}).items()
            if name in ctx.rules.variables and ctx.rules.variables[name].effective and is_truthy(value)
        ]
        self.plan = EditPlan()
        self.flow = DtypeFlow(ctx)

    # -- top level --------------------------------------------------------------------------
    def run(self) -> EditPlan:
        ctx = self.ctx
        writes, mentions = collect_writes(ctx, set(ctx.rules.variables))
        for mention in mentions:
            if mention.is_read:
                ctx.report("BFM050", mention.node, f"{mention.variable} is read here; after migration it is never set, so this no longer tells whether bf16 is on: use the precision the script now uses (e.g. the model's parameter dtype)", False)
            else:
                ctx.report("BFM042", mention.node, f"{mention.variable} is named here outside a write the codemod can rewrite: remove it and add the explicit code for --mode {self.mode} by hand", False)
        on_writes = [w for w in writes if self._triage(w)]
        if on_writes or self.external:
            self._migrate(on_writes)
        return self.plan

    def _triage(self, w: LegacyWrite) -> bool:
        """Report and plan one write; True when it switches bf16 on and is safe to migrate."""
        ctx, rule = self.ctx, self.ctx.rules.variables[w.variable]
        if not rule.effective:
            self._remove_write(w)
            ctx.report("BFM003", w.key, f"{w.variable} has done nothing since torch-xla {rule.deprecated_since} (the script trained in fp32): removed; for fp16 use torch.autocast(\"xla\", dtype=torch.float16) with torch.amp.GradScaler", True)
            return False
        if len(w.statement.body) != 1:
            ctx.report("BFM042", w.key, f"{w.variable} is written on a line with other statements: split the line, then run bf16-migrate again", False)
            return False
        guard = guard_of(ctx, w)
        if guard is not None:
            ctx.report("BFM041", w.key, f"{w.variable} is written under a condition (line {ctx.pos(guard)[0]}): replace it by hand with the explicit code for --mode {self.mode}, inside the same branch", False)
            return False
        if w.truthy is None:
            ctx.report("BFM040", w.key, f"{w.variable} is set to a computed value ({ctx.code(w.value)}), so whether bf16 was on cannot be told: replace it by hand with the explicit code for --mode {self.mode} under the condition the value expresses", False)
            return False
        if not w.truthy:
            self._remove_write(w)
            ctx.report("BFM002", w.key, f"{w.variable}={w.literal!r} means bf16 was off: removed, nothing added", True)
            return False
        return True

    def _migrate(self, writes: list[LegacyWrite]) -> None:
        ctx = self.ctx
        if self.mode == REFERENCE:
            for w in writes:
                self._remove_write(w)
                ctx.report("BFM001", w.key, f"{w.variable} {_MODE_SUMMARY[REFERENCE]}", True)
            return
        variables = [w.variable for w in writes] + self.external
        emits = set().union(*(ctx.rules.variables[v].emit[self.mode] for v in variables))
        sites = find_optimizers(ctx)
        models = self._unique_models(sites)
        if not sites or not models:
            anchors = [(w.variable, w.key) for w in writes] or [(v, ctx.module) for v in self.external]
            for variable, anchor in anchors:
                if not sites:
                    ctx.report("BFM010", anchor, f"{variable}: no optimizer built from `<model>.parameters()` in this file, so the model to migrate cannot be found; the switch is left in place: cast the model by hand ({'autocast the forward pass' if self.mode == 'amp' else 'model.to(torch.bfloat16) before the optimizer is built'})", False)
                else:
                    ctx.report("BFM011", sites[0].call, "the optimizer's parameters do not come from one `<model>.parameters()`; the switch is left in place: cast each model by hand before the optimizer is built", False)
            return
        for variable in self.external:
            ctx.report("BFM001", ctx.module, f"{variable} is set by the launcher of this script: {_MODE_SUMMARY[self.mode].replace(', NEURON_RT_STOCHASTIC_ROUNDING_EN=1', '')} (stochastic rounding belongs where the launcher sets the variable)", True)
        for site in sites:
            if site.model is None:
                ctx.report("BFM011", site.call, "this optimizer's parameters do not come from one `<model>.parameters()`: cast its model by hand before the optimizer is built", False)
        if not _module_binds(ctx, "torch"):
            # AddImportsVisitor only sees the leading import block, which a legacy write often
            # splits (`import os; os.environ[...]; import torch`): ask the scope instead.
            self.plan.imports.append("torch")
        calls = {id(model): model_calls(ctx, model) for model in models}
        if "model-cast" in emits:
            for site in sites:
                if site.model is not None and site.statement is not None:
                    self.plan.insert_before.setdefault(id(site.statement), []).append(snippets.model_cast_statement(site.model))
                elif site.model is not None:
                    ctx.report("BFM011", site.call, "the optimizer is built inside a compound statement header: cast the model by hand before it", False)
        if "input-cast" in emits:
            for model in models:
                self._cast_inputs(model, calls[id(model)])
        if "fp32-loss-accumulator" in emits:
            names = {n for cs in calls.values() for c in cs for n in c.loss_names}
            for factory in loss_accumulators(ctx, names):
                self.plan.replace[id(factory)] = _add_float32_dtype
        if "fp32-master-weights" in emits:
            self._master_weights(sites)
        if "autocast" in emits:
            for model in models:
                self._autocast(model, calls[id(model)])
        self._switch_writes(writes, "stochastic-rounding" in emits)

    # -- helpers ----------------------------------------------------------------------------
    def _unique_models(self, sites):
        models: list[cst.BaseExpression] = []
        for site in sites:
            if site.model is not None and not any(same_model(self.ctx, site.model, known) for known in models):
                models.append(site.model)
        return models

    def _remove_write(self, w: LegacyWrite) -> None:
        if w.siblings == 0:
            self.plan.remove.add(id(w.statement))
            return
        self.plan.drop_elements.add(id(w.element))
        # an update() whose keys are all dropped goes away as a whole
        container = self.ctx.parent(w.element)
        items = container.elements if isinstance(container, cst.Dict) else container.args
        if all(id(item) in self.plan.drop_elements for item in items):
            for item in items:
                self.plan.drop_elements.discard(id(item))
            self.plan.remove.add(id(w.statement))

    def _switch_writes(self, writes: list[LegacyWrite], stochastic: bool) -> None:
        ctx = self.ctx
        keep_sr = sets_stochastic_rounding(ctx)
        for index, w in enumerate(writes):
            summary = _MODE_SUMMARY[self.mode]
            if stochastic and index == 0 and not keep_sr:
                self._rename_to_stochastic_rounding(w)
            else:
                self._remove_write(w)
                if stochastic and keep_sr:
                    summary += f" ({STOCHASTIC_ROUNDING_VAR} already set by the script: kept as it is)"
            ctx.report("BFM001", w.key, f"{w.variable} replaced: {summary}", True)

    def _rename_to_stochastic_rounding(self, w: LegacyWrite) -> None:
        if isinstance(w.key, cst.SimpleString):
            self.plan.replace[id(w.key)] = lambda node: node.with_changes(
                value=f"{node.prefix}{node.quote}{STOCHASTIC_ROUNDING_VAR}{node.quote}"
            )
        else:  # update(XLA_USE_BF16="1") keyword
            self.plan.replace[id(w.key)] = lambda node: node.with_changes(value=STOCHASTIC_ROUNDING_VAR)
        if w.literal != "1" and isinstance(w.value, cst.SimpleString):
            self.plan.replace[id(w.value)] = lambda node: node.with_changes(
                value=f"{node.prefix}{node.quote}1{node.quote}"
            )

    def _cast_inputs(self, model, calls) -> None:
        ctx = self.ctx
        if not calls:
            ctx.report("BFM021", model, f"`{ctx.code(model)}` is never called in this file: cast the floating inputs fed to it with `.to(torch.bfloat16)` where it is called", False)
            return
        for call in calls:
            for arg in call.call.args:
                self._cast_if_float(arg.value, "fed to the model")
            for loss in call.losses:
                for arg in loss.args:
                    names = {n.value for n in m.findall(arg.value, m.Name())}
                    if names & set(call.outputs) or any(a is call.call for a in m.findall(arg.value, m.Call())):
                        continue
                    self._cast_if_float(arg.value, "compared with the model's output in the loss")

    def _cast_if_float(self, expr: cst.BaseExpression, role: str) -> None:
        if isinstance(expr, (cst.SimpleString, cst.Integer)) or m.matches(expr, m.Name("None") | m.Name("True") | m.Name("False")):
            return
        if m.matches(expr, m.Call(func=m.Attribute(attr=m.Name("to")), args=[m.Arg(value=m.Attribute(value=m.Name("torch"), attr=m.Name("bfloat16")))])):
            return
        kind = self.flow.infer(expr)
        if kind == FLOAT:
            self.plan.replace[id(expr)] = snippets.cast_to_bf16
        elif kind != INT:
            self.ctx.report("BFM020", expr, f"cannot tell whether `{self.ctx.code(expr)}` ({role}) is floating-point: if it is, cast it with `.to(torch.bfloat16)`; leave integer tensors (token ids, labels) alone", False)

    def _master_weights(self, sites) -> None:
        ctx = self.ctx
        wrapped = False
        for site in sites:
            if site.qualified & ctx.rules.torch_api.stock_optimizers:
                self.plan.replace[id(site.call.func)] = _wrap_master_weights
                wrapped = True
            else:
                ctx.report("BFM060", site.call, f"`{ctx.code(site.call.func)}` is not a stock torch.optim optimizer, so FP32 master weights cannot be added automatically: keep an FP32 copy of the weights in it and update that (Neuron's migration guide shows the pattern)", False)
        if wrapped:
            self.plan.prelude.append(snippets.master_weights_helper())

    def _autocast(self, model, calls) -> None:
        ctx = self.ctx
        if not calls:
            ctx.report("BFM021", model, f"`{ctx.code(model)}` is never called in this file: wrap its forward pass and loss in torch.autocast(\"xla\", dtype=torch.bfloat16) where it is called", False)
            return
        for call in calls:
            first = call.statement
            block = ctx.block_of(first) if first is not None else None
            if block is None:
                ctx.report("BFM030", call.call, "the model is called inside a compound statement or one-line block: wrap the forward pass and the loss in torch.autocast(\"xla\", dtype=torch.bfloat16) by hand", False)
                continue
            body = list(block.body)
            last = first
            for stmt in call.loss_statements:
                if ctx.block_of(stmt) is block and body.index(stmt) > body.index(last):
                    last = stmt
            region = body[body.index(first) : body.index(last) + 1]
            if any(_steps_or_backward(s) for s in region):
                ctx.report("BFM030", call.call, "backward or the optimizer step sits between the forward pass and the loss: wrap only the forward pass and the loss in torch.autocast(\"xla\", dtype=torch.bfloat16) by hand", False)
                continue
            ranges = self.plan.wraps.setdefault(id(block), [])
            if not any(a is first for a, _ in ranges):
                ranges.append((first, last))


def _module_binds(ctx: FileContext, name: str) -> bool:
    """Whether ``name`` is bound at module level (``import torch`` anywhere at the top level)."""
    scope = ctx.scopes.get(ctx.module)
    return scope is not None and any(a.scope is scope for a in scope.assignments[name])


def _steps_or_backward(stmt: cst.CSTNode) -> bool:
    return bool(
        m.findall(stmt, m.Call(func=m.Attribute(attr=m.Name("backward") | m.Name("step") | m.Name("optimizer_step"))))
    )


def _add_float32_dtype(call: cst.Call) -> cst.Call:
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    elif args:
        pass  # an explicit trailing comma stays as written
    args.append(cst.Arg(value=snippets.attr("torch.float32"), keyword=cst.Name("dtype"), equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))))
    return call.with_changes(args=args)


def _wrap_master_weights(func: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=cst.Name(snippets.MASTER_WEIGHTS_FACTORY), args=[cst.Arg(func)])
