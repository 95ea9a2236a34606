"""model-cast: ``<model>.to(torch.bfloat16)`` before each optimizer built from
``<model>.parameters()`` (Neuron's migration guide from XLA_USE_BF16/XLA_DOWNCAST_BF16: the model
cast to bf16 replaces the switch), with what its inputs need right after (input-cast), and the
other modules on the device cast where they arrive (:mod:`..device_modules`). A model torch-xla's
FSDP shards gets ``compute_dtype=torch.bfloat16`` on its wraps instead, its FP32 shards the master
weights (measured: ``[fsdp_compute_dtype]`` in ``rules/torch_api.toml``, :mod:`..wrappers`)."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from ...rules import Emit
from .. import snippets
from ..device_modules import plan_device_modules
from ..model_reach import float64_state, tree_float64_state
from ..model_site import modules_put_into
from ..optimizers import add_keywords
from ..wrappers import Wrap, module_of
from .migration import Migration, Planned

EMIT = Emit.MODEL_CAST

SHARDED_CHANGE = (
    "XlaFullyShardedDataParallel computing in bf16 (compute_dtype=torch.bfloat16) with its FP32 shards as the "
    "master weights"
)
"""What a launcher's finding says such a script got (the mode's ``script_change`` otherwise)."""


def plan(m: Migration, planned: Planned) -> Planned:
    """One cast per model, before every optimizer built from it, with the statements input-cast
    planned for it right after, under the guard: a model is never cast without its inputs, nor its
    inputs cast without the model. Returns the script's change when a model is sharded."""
    ctx = m.ctx
    for model, anchors in zip(m.models, m.cast_anchors):
        if id(model) in m.sharded:
            _compute_dtype(m, m.sharded[id(model)])
            continue
        assert anchors is not None, "the planner let model-cast through only with an anchor per model"
        module = module_of(ctx, model)
        after = planned.after_cast.get(id(model), [])
        # XLA_DOWNCAST_BF16 made a float64 submodule f32 on the device, the rest bf16: the switch's rule.
        # Under a guard the submodule is built float32 for both paths (the double idiom's `.float()`):
        # put back to float32 after the cast, from its bf16 rounding.
        f64 = m.float64_modules(model)
        # so did it a parameter or buffer registered from float64 data (`nn.Parameter(torch.tensor(np.log(
        # 1 / 0.07)))`, a learned temperature): `.to(torch.bfloat16)` made it bf16, where it stayed f32 (a hunt's)
        # (a class of the tree's modules too: a front end registering a NumPy filterbank, a hunt's)
        state = m.f64_was_f32 and (float64_state(ctx) is not None or tree_float64_state(ctx) is not None)
        downcast = (bool(f64) or state) and m.guard is None
        kept = [snippets.statement(f"{ctx.code(module)}.{name}.to(torch.float32)") for name, _ in f64 if not downcast]
        if downcast and not any(
            isinstance(st, cst.FunctionDef) and st.name.value == snippets.DOWNCAST_BF16 for st in m.plan.prelude
        ):
            m.plan.prelude.append(snippets.downcast_bf16_helper())
        for anchor in anchors:
            cast = snippets.model_cast_statement(module, downcast=downcast)
            m.plan.insert_before.setdefault(id(anchor), []).extend(snippets.guarded([cast, *kept, *after], m.guard))
        if anchors:
            # a module put into the model after its cast (a second stage's fresh head) is cast where it is put
            for line in modules_put_into(ctx, module, min(anchors, key=ctx.pos)):
                cast = snippets.model_cast_statement(module, downcast=downcast)
                m.plan.insert_after.setdefault(id(line), []).extend(snippets.guarded([cast], m.guard))
    plan_device_modules(ctx, m.plan, m.on_device, planned.inputs, m.guard)
    return replace(planned, script_change=SHARDED_CHANGE) if m.sharded else planned


def _compute_dtype(m: Migration, wraps: list[Wrap]) -> None:
    """``compute_dtype=torch.bfloat16`` on each FSDP wrap of a model (under the guard), which the
    planner found torch-xla 2.9 runs (BFM056)."""
    guard = m.guard
    for wrap in wraps:
        m.plan.replace[id(wrap.call)] = lambda node: add_keywords(
            node, [("compute_dtype", "torch.bfloat16", "None")], guard
        )
        m.ctx.report("BFM056", wrap.call, fixed=True, wrapper=m.ctx.code(wrap.call.func))
