"""fp32-master-weights: stock optimizers are built through ``with_fp32_master_weights`` (emitted into
the script, :mod:`..snippets`), which keeps an FP32 copy of the bf16 parameters and updates it
(Neuron's migration guide, "FP32 master weights"; :mod:`..optimizers`). An optimizer over a
model torch-xla's FSDP shards gets none (its FP32 shards are); an optimizer factory of the tree is
asked to build with them (``FactoryChange``, :mod:`..tree_facts`)."""

from __future__ import annotations

from dataclasses import replace

from ...rules import Emit
from ..optimizers import plan_master_weights
from .migration import Migration, Planned

EMIT = Emit.FP32_MASTER_WEIGHTS


def plan(m: Migration, planned: Planned) -> Planned:
    """The master weights of every optimizer; returns what the script asks of its tree's factories."""
    changes = plan_master_weights(m.ctx, m.plan, m.guard, list(m.sites), sharded=m.owned)
    return replace(planned, factory_changes=tuple(changes))
