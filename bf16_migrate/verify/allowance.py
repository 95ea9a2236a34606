"""The XLA compilations a migration may add, item by item, read from what it added to the script.

The graph part of the verdict (:func:`bf16_migrate.verify.evidence.graph_part`) lets the
migrated run compile more XLA graphs than the run it is compared with only for what the
migration itself adds, each item measured on the XLA CPU device (torch-xla 2.9, bench/calibration;
the compile counts are torch-xla's ``CompileTime`` metric at the end of the run):

* **a module cast** (a statement ``model.to(torch.bfloat16)`` / ``model.bfloat16()``, or one
  assigned back): casting a model that is already on the device is a graph of its own, synced
  with what else is pending (+1: grad_accum 4 -> 5, tiny_transformer 3 -> 4; one per cast
  statement);
* **a run-time input cast under dynamo** (``register_forward_pre_hook`` added to a model that
  runs behind ``torch.compile``): dynamo traces the hook's cast as a graph of its own beside the
  model's forward and backward graphs (+1: compiled_model, dynamo graphs 2 -> 3, compilations
  6 -> 8 with the module cast). Without dynamo the hook's cast joins the step's graph (+0:
  gru_crash, same count as the FP32 reference);
* **the first step's graphs, once more** (:func:`first_step_recompiles`): the cast leaves the
  parameters pending (a convert) until the first sync that makes them device data; every graph the
  run syncs before then holds that convert and is compiled again after it. A script that syncs once
  a step pays the +1 above; one that syncs many times in its first step pays once per graph (an
  episode of a policy that reads each action with ``.item()``: 21 graphs in step 1, compiled again
  in step 2, 25 -> 46 compilations, the same graphs from step 3 on);
* FP32 master weights and autocast add none (grad_accum gpu-compatible 5 = stochastic 5; amp
  equal counts on every case of the suite).

Items are found by parsing both texts with :mod:`ast` and counting what the migrated text holds
more of; a text that does not parse yields no item (the graph part then allows nothing extra
and says so).
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Added", "Allowance", "compile_allowance", "first_step_recompiles"]


class Added(enum.Enum):
    """What an item of the allowance is for (see the module docstring)."""

    MODULE_CAST = "module cast"
    DYNAMO_HOOK = "input-cast hook under torch.compile"
    FIRST_STEP_AGAIN = "first step's graphs compiled again"


@dataclass(frozen=True)
class Allowance:
    """One item of the compile allowance: ``count`` compilations for ``what`` the migration
    added, with ``why`` (the measurement); ``added`` says which kind of item it is."""

    count: int
    what: str
    why: str
    added: Added = Added.MODULE_CAST


def _counts(tree: ast.AST) -> dict[str, int]:
    """Statement-level module casts to bf16, forward pre-hook registrations, and uses of
    ``torch.compile`` in a parsed script."""
    out = {"cast": 0, "hook": 0, "compile": 0}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Expr, ast.Assign)) and _is_bf16_cast(node.value):
            out["cast"] += 1
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "register_forward_pre_hook":
                out["hook"] += 1
            if node.func.attr == "compile" and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch":
                out["compile"] += 1
    return out


def _is_bf16_cast(value: ast.expr) -> bool:
    """``X.to(torch.bfloat16)`` / ``X.to(dtype=torch.bfloat16)`` / ``X.bfloat16()``."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)):
        return False
    if value.func.attr == "bfloat16" and not value.args:
        return True
    if value.func.attr != "to":
        return False
    args = [*value.args, *(k.value for k in value.keywords if k.arg == "dtype")]
    return any(isinstance(a, ast.Attribute) and a.attr == "bfloat16" for a in args)


def compile_allowance(legacy_text: str | None, migrated_text: str | None) -> list[Allowance]:
    """The items of the compile allowance for a migration of ``legacy_text`` into
    ``migrated_text`` (see the module docstring); empty when a text is missing or does not
    parse."""
    if legacy_text is None or migrated_text is None:
        return []
    try:
        before, after = _counts(ast.parse(legacy_text)), _counts(ast.parse(migrated_text))
    except (SyntaxError, ValueError):
        return []
    items = []
    casts = after["cast"] - before["cast"]
    if casts > 0:
        items.append(
            Allowance(
                casts,
                "the model cast" if casts == 1 else f"{casts} module casts",
                "casting a model already on the device is a graph of its own (measured +1 per cast)",
            )
        )
    if after["hook"] > before["hook"] and after["compile"]:
        items.append(
            Allowance(
                1,
                "the input-cast hook under torch.compile",
                "dynamo traces the forward pre-hook's cast as a graph of its own (measured +1)",
                Added.DYNAMO_HOOK,
            )
        )
    return items


def first_step_recompiles(
    items: Sequence[Allowance], migrated: Sequence[int | None], baseline: Sequence[int | None]
) -> Allowance | None:
    """The graphs of the first step compiled again after the module casts of ``items`` (see the
    module docstring), or None. ``migrated`` and ``baseline`` are the runs' compile counts at the
    end of each step (``RunRecord.compiles_at_step``). Allowed: what the migrated run compiled more
    than the baseline by the end of step 2, beyond the +1 a cast has, at most the migrated run's own
    graphs of step 1 per cast (an op torch-xla runs on the CPU, ``_weight_norm_interface``,
    ``embedding_bag``, executes what it needs then, the pending convert of some parameters
    included: the cast then takes more graphs than the baseline's step 1 had, and the graphs after
    it hold the convert of the others); growth after step 2 is never allowed by this item."""
    casts = sum(item.count for item in items if item.added is Added.MODULE_CAST)
    if not casts or len(migrated) < 2 or len(baseline) < 2 or None in (migrated[0], migrated[1], baseline[1]):
        return None
    own, second, theirs = migrated[0], baseline[1], migrated[1]
    assert own is not None and second is not None and theirs is not None, "checked above"
    count = min(theirs - second, casts * own) - casts
    if count <= 0:
        return None
    return Allowance(
        count,
        f"the {own} graph(s) of step 1 compiled again once the cast parameters are device data",
        "every graph synced before the cast's first sync holds its convert (measured: 21 graphs of step 1, +21; "
        "a weight-norm model whose CPU-fallback ops sync 4 graphs in step 1, +3)",
        Added.FIRST_STEP_AGAIN,
    )
