"""fp32-master-weights: stock optimizers are built through ``with_fp32_master_weights`` (emitted into
the script, :mod:`..snippets`), which keeps an FP32 copy of the bf16 parameters and updates it
(Neuron's migration guide, "FP32 master weights"; :mod:`..optimizers`). An optimizer over a
model torch-xla's FSDP shards gets none (its FP32 shards are); an optimizer factory of the tree is
asked to build with them (``FactoryChange``, :mod:`..tree_facts`)."""

from __future__ import annotations

from dataclasses import replace

from ...rules import Emit
from ..optimizers import (
    by_hand_update,
    leaf_optimizers,
    master_weights_blocker,
    plan_master_weights,
    updated_elsewhere,
)
from ..outcome import Refusal
from .migration import Migration, Planned

EMIT = Emit.FP32_MASTER_WEIGHTS


def plan(m: Migration, planned: Planned) -> Planned:
    """The master weights of every optimizer, those over the script's own bf16 leaf tensors
    included (:func:`..optimizers.leaf_optimizers`); returns what the script asks of its tree's
    factories."""
    leaves = leaf_optimizers(m.ctx, m.sites, m.tensors.found if m.tensors is not None else ())
    changes = plan_master_weights(m.ctx, m.plan, m.guard, list(m.sites), sharded=m.owned, leaves=leaves)
    return replace(planned, factory_changes=tuple(changes))


def check(m: Migration) -> Migration | None:
    """Whether every optimizer FSDP's shards do not own can keep FP32 master weights
    (:func:`..optimizers.master_weights_blocker`); if one cannot, None: the switch is kept and that
    reported (BFM017), since removing it would leave bf16 weights updated in bf16, with neither
    stochastic rounding nor an FP32 copy. A script that updates its parameters by hand has no
    optimizer to keep them in (BFM017 ``by_hand``, :func:`..optimizers.by_hand_update`); nor does one whose weights
    are updated by a method of its own class other than ``step()`` (BFM017 ``not_step``,
    :func:`..optimizers.updated_elsewhere`)."""
    ctx = m.ctx
    backward = by_hand_update(ctx, list(m.sites))
    if backward is not None:
        _keep(m, "by_hand", backward=ctx.code(backward), line=ctx.pos(backward)[0])
        return None
    sites = [site for site in m.sites if id(site.call) not in m.owned]
    for site in sites:
        method = updated_elsewhere(ctx, site)
        if method is not None:
            fields = {"method": ctx.code(method.func), "method_line": ctx.pos(method)[0]}
            _keep(m, "not_step", optimizer=ctx.code(site.call.func), line=ctx.pos(site.call)[0], **fields)
            return None
    blocked = [(site, why) for site in sites if (why := master_weights_blocker(ctx, site)) is not None]
    for site, (optimizer, function) in blocked:
        line = ctx.pos(site.call)[0]
        if function is None:
            closure = bool(site.qualified & ctx.rules.torch_api.closure_optimizers)
            _keep(m, "closure" if closure else None, optimizer=optimizer, line=line)
        else:
            assert site.factory is not None, "a blocker names a function only for a factory of the tree"
            _keep(m, "factory", optimizer=optimizer, function=function, line=line, module=site.factory[0].path)
    return None if blocked else m


def _keep(m: Migration, variant: str | None, **fields: object) -> None:
    """The switch kept at each of the migration's writes: BFM017 (``variant``, its message ``fields``) reported
    there, the refusal recorded."""
    for variable, anchor in m.anchors:
        finding = m.ctx.report("BFM017", anchor, fixed=False, variant=variant, variable=variable, **fields)
        m.ctx.outcome.refuse(Refusal.MASTER_WEIGHTS, finding)
