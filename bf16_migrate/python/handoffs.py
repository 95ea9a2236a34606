"""amp's autocast across files: a model a script hands to a function of a module of its tree (``predict(model,
x)``, ``sample_grid(model, n)`` of ``helpers.py``) runs its forward passes there. Under the switch they computed in
bf16 like the script's own; the script's migration puts its own under autocast, and the module's migration, told
which of its functions get the model (:class:`.tree_types.ModelHandoff`, carried by
:mod:`bf16_migrate.tree_modules` as the loss code is), puts those there (found by two hunts: a TTA helper and a
VAE's sampling helper ran in f32 with "0 left to do by hand")."""

from __future__ import annotations

import libcst as cst

from .autocast import Problem, Region, autocast_regions
from .bindings import bound_by_import
from .context import FileContext
from .device_modules import method_forward_calls
from .model_site import model_calls, same_model
from .tree_types import ModelHandoff
from .wrappers import aliases

_NOT_TREE = ("torch.", "torch_xla.", "builtins.", "functools.", "copy.")
"""Qualified names of functions no module of a tree defines."""


def model_handoffs(ctx: FileContext, models: list[cst.BaseExpression]) -> list[ModelHandoff]:
    """The calls of this file that hand one of ``models`` (a name) to a function of an imported module, a lower-case
    name (PEP 8 names classes in CapWords: ``Trainer(model)`` builds an object, it runs no forward pass there), as
    :class:`.tree_types.ModelHandoff` with each qualified name of the function (``helpers.predict``): the module
    defining it puts that function's forward passes under autocast (:func:`handoff_regions`)."""
    found: list[ModelHandoff] = []
    for model in models:
        if not isinstance(model, cst.Name):
            continue
        by_name = ctx.nodes_grouped(  # the grouping InputCasts reads (the same key: built once per file)
            cst.Call,
            "calls by name arguments",
            lambda c: {a.value.value for a in c.args if isinstance(a.value, cst.Name)},
        )
        for call in by_name.get(model.value, ()):
            name = call.func.attr if isinstance(call.func, cst.Attribute) else call.func
            if not isinstance(name, cst.Name) or not name.value[:1].islower() or not bound_by_import(ctx, call.func):
                continue
            positional = [a for a in call.args if a.keyword is None and not a.star]
            for arg in call.args:
                if arg.star or not isinstance(arg.value, cst.Name) or not same_model(ctx, arg.value, model):
                    continue
                index = next((i for i, a in enumerate(positional) if a is arg), None)
                keyword = arg.keyword.value if arg.keyword is not None else None
                for qualified in sorted(ctx.qualified_names(call.func)):
                    if not qualified.startswith(_NOT_TREE):
                        found.append(ModelHandoff(qualified, index, keyword))
    return sorted(set(found))


def handoff_regions(
    ctx: FileContext, handoffs: list[ModelHandoff], loss_statements: frozenset[int] = frozenset()
) -> tuple[list[Region], list[Problem]]:
    """In a module of the tree, amp: the autocast regions of the forward passes of the model each of ``handoffs``
    hands a top-level function of it (``def predict(model, x): out = model(x)``; the function named by its name
    here), as :func:`autocast_regions` finds them for the script's own calls. Under the switch those passes
    computed in bf16 like the script's; outside autocast they run in f32 (found by two hunts: a TTA helper and a
    VAE's sampling helper, with "0 left to do by hand")."""
    regions: list[Region] = []
    problems: list[Problem] = []
    functions = {f.name.value: f for f in ctx.module.body if isinstance(f, cst.FunctionDef)}
    for handoff in handoffs:
        func = functions.get(handoff.function)
        param = handoff.parameter(func) if func is not None else None
        if func is None or param is None:
            continue
        # its calls, its own methods' (`model.decode(z)`), and those of the file's functions it hands the model on to
        # and a wrap's (`traced = torch.jit.trace(model, sample)`: `traced(sample)`, its trace left out of autocast)
        calls = [*model_calls(ctx, param.name, aliases(ctx, param.name)), *method_forward_calls(ctx, param.name)]
        if calls:
            found, failed = autocast_regions(ctx, param.name, calls, loss_statements)
            regions += found
            problems += failed
    return regions, problems
