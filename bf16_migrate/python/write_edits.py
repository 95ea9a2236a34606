"""What becomes of the legacy writes themselves: removed (with an ``if`` left empty, and the
key of a multi-key ``update``), or renamed to ``NEURON_RT_STOCHASTIC_ROUNDING_EN = "1"`` in the
same spelling (stochastic mode: Neuron's migration guide), each reported as BFM001.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ..rules import STOCHASTIC_ROUNDING_VAR
from .apply import EditPlan
from .conditions import has_calls
from .context import FileContext
from .env_writes import LegacyWrite, sets_stochastic_rounding
from .write_conditions import branches_cover, chain_head


def remove_write(ctx: FileContext, plan: EditPlan, w: LegacyWrite) -> None:
    """Plan the removal of ``w``: its statement (and an ``if`` it leaves empty), or, in an
    ``update()`` that writes other keys too, its element (the whole statement once every
    element is dropped). The key of a mapping held in a name (``XLA_ENV = {...}``;
    ``os.environ.update(XLA_ENV)``) is dropped from that mapping, the update left reading it."""
    held = w.element is not None and w.statement not in ctx.ancestors(w.element)
    if w.siblings == 0 and not held:
        plan.remove.add(id(w.statement))
        drop_emptied_if(ctx, plan, w.statement)
        return
    plan.drop_elements.add(id(w.element))
    # an update() whose keys are all dropped goes away as a whole
    container = ctx.parent(w.element)
    assert isinstance(container, (cst.Dict, cst.Call)), (
        "a key of a multi-key update() is an element of its Dict or an argument of the call"
    )
    items = container.elements if isinstance(container, cst.Dict) else container.args
    if not held and all(id(item) in plan.drop_elements for item in items):
        for item in items:
            plan.drop_elements.discard(id(item))
        plan.remove.add(id(w.statement))


def drop_emptied_if(ctx: FileContext, plan: EditPlan, statement: cst.BaseStatement) -> None:
    """An ``if`` (with its ``elif``/``else``) whose every branch is now empty goes too,
    instead of being left as ``if flag: pass`` (its test only reads flags)."""
    block = ctx.parent(statement)
    owner = ctx.parent(block)
    if isinstance(owner, cst.Else):
        owner = ctx.parent(owner)
    if not isinstance(owner, cst.If):
        return
    root = chain_head(ctx, owner)
    node: cst.If | cst.Else | None = root
    blocks: list[cst.BaseSuite] = []
    while isinstance(node, cst.If):
        blocks.append(node.body)
        if isinstance(node.orelse, cst.Else):
            blocks.append(node.orelse.body)
        node = node.orelse
    if all(isinstance(b, cst.IndentedBlock) and all(id(st) in plan.remove for st in b.body) for b in blocks):
        if isinstance(ctx.parent(root), (cst.IndentedBlock, cst.Module)) and not has_calls(root.test):
            plan.remove.add(id(root))


def stochastic_rounding_writes(
    ctx: FileContext,
    plan: EditPlan,
    guard: cst.BaseExpression | None,
    writes: list[LegacyWrite],
    summary_of_mode: str,
) -> tuple[frozenset[int], str]:
    """stochastic-rounding (Neuron's migration guide: the legacy switch becomes
    ``NEURON_RT_STOCHASTIC_ROUNDING_EN=1``): the first write (each of them when they cover the
    branches of one ``if``) becomes the stochastic-rounding write, unless the file already names
    that variable. Under a ``guard`` the new write's value follows it. Returns the ids of the keys
    of the writes renamed (:func:`switch_writes` removes the others) and the summary their BFM001
    gives (``summary_of_mode``, or, where the script's own setting is kept, saying so)."""
    if sets_stochastic_rounding(ctx):
        kept = f"; the script's own {STOCHASTIC_ROUNDING_VAR} setting is kept as it is"
        return frozenset(), summary_of_mode.replace(f", {STOCHASTIC_ROUNDING_VAR}=1", kept)
    chooser = len(writes) > 1 and branches_cover(ctx, writes)
    renamed = []
    for index, w in enumerate(writes):
        if index == 0 or chooser:
            rename_to_stochastic_rounding(plan, w)
            renamed.append(id(w.key))
            if guard is not None and len(writes) > 1 and not chooser:
                # several writes under different conditions: stochastic rounding follows
                # their union, the condition every other change carries
                plan.replace[id(w.value)] = _on_when(guard)
    return frozenset(renamed), summary_of_mode


def switch_writes(
    ctx: FileContext,
    plan: EditPlan,
    guard: cst.BaseExpression | None,
    writes: list[LegacyWrite],
    renamed: frozenset[int],
    summary_of_mode: str,
) -> None:
    """The migrated writes, each reported as BFM001 (``summary_of_mode``: what the mode put in
    the switch's place): those whose key is in ``renamed`` (:func:`stochastic_rounding_writes`)
    kept, the others removed. Under a ``guard`` the summary names it."""
    for w in writes:
        summary = summary_of_mode
        if id(w.key) not in renamed:
            remove_write(ctx, plan, w)
        if guard is not None:
            summary += f", all under the script's condition `{cst.Module(body=[]).code_for_node(guard)}`"
        ctx.report("BFM001", w.key, fixed=True, variable=w.variable, summary=summary)
        ctx.outcome.switch_migrated = True


def rename_to_stochastic_rounding(plan: EditPlan, w: LegacyWrite) -> None:
    """``w`` in its own spelling, now writing ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` (a literal
    where a constant held the old name) with the value ``"1"``."""
    if isinstance(w.key, cst.SimpleString):
        plan.replace[id(w.key)] = lambda node: node.with_changes(
            value=f"{node.prefix}{node.quote}{STOCHASTIC_ROUNDING_VAR}{node.quote}"
        )
    elif w.form == "update-kwarg":  # update(XLA_USE_BF16="1")
        plan.replace[id(w.key)] = lambda node: node.with_changes(value=STOCHASTIC_ROUNDING_VAR)
    else:  # a constant holding the name: write the new variable's name as a literal
        plan.replace[id(w.key)] = lambda node: cst.SimpleString(f'"{STOCHASTIC_ROUNDING_VAR}"')
    if w.literal != "1" and isinstance(w.value, cst.SimpleString):
        plan.replace[id(w.value)] = lambda node: node.with_changes(value=f"{node.prefix}{node.quote}1{node.quote}")


def _on_when(guard: cst.BaseExpression) -> Callable[[cst.BaseExpression], cst.IfExp]:
    """A replacement of a written value by ``"1" if guard else "0"``."""
    return lambda node: cst.IfExp(test=guard.deep_clone(), body=cst.SimpleString('"1"'), orelse=cst.SimpleString('"0"'))
