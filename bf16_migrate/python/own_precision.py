"""The script's own precision code: a ``torch.autocast`` region or a ``model.to(torch.bfloat16)``
it already has, always on or behind a flag, and whether it is the change ``--mode`` makes.

torch.autocast: PyTorch's "Automatic Mixed Precision package - torch.amp" documentation;
the modes: Neuron's migration guide from XLA_USE_BF16/XLA_DOWNCAST_BF16.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from ..rules import Mode
from . import snippets
from .conditions import negate
from .context import FileContext
from .model_site import OptimizerSite, same_model
from .optimizer_kinds import master_weights_kind
from .tree_types import SUBCLASS, unwrap_optimizer_class


def existing_precision(
    ctx: FileContext, models: list[cst.BaseExpression]
) -> tuple[cst.CSTNode, cst.BaseExpression | None] | None:
    """The script's own precision code, read rather than taken as done: a
    ``torch.autocast(...)`` region (``rules/torch_api.toml`` ``autocast``) or a
    ``<model>.to(torch.bfloat16)`` of one of its models. Returns (the code, None) when it is
    always on, (the code, its condition) when it is switched by a flag
    (``autocast(enabled=flags.x)``, ``if args.bf16: model.to(torch.bfloat16)``), or None.
    The legacy switch was the precision whenever that code was off, so the migrated changes
    go under the complementary condition (as aws-neuron-samples' BERT migration did:
    ``if not flags.enable_fp32 and not flags.enable_pt_autocast: model.to(torch.bfloat16)``)."""
    flags: list[tuple[cst.CSTNode, cst.BaseExpression]] = []  # code on under a condition
    for call in ctx.nodes(cst.Call):
        if ctx.qualified_names(call.func) & ctx.rules.torch_api.autocast:
            enabled = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "enabled"), None)
            if enabled is None or m.matches(enabled, m.Name("True")):
                return call, None
            if not m.matches(enabled, m.Name("False")):
                flags.append((call, enabled))
        elif (
            isinstance(call.func, cst.Attribute)
            and m.matches(call.func, m.Attribute(attr=m.Name("to")))
            and any(ctx.qualified_names(a.value) & {"torch.bfloat16"} for a in call.args)
            and any(same_model(ctx, call.func.value, model) for model in models)
        ):
            branch = ctx.enclosing(call, cst.If)
            if branch is None or ctx.enclosing(call, cst.Else) is not None:
                return call, None
            flags.append((call, branch.test))
    # code on under a condition and code on under its complement: always on (a second run
    # over `if not flags.x: model.to(torch.bfloat16)` next to `autocast(enabled=flags.x)`)
    conditions = {ctx.code(c) for _, c in flags}
    for node, condition in flags:
        if negate(ctx.code(condition)) in conditions:
            return node, None
    return flags[0] if flags else None


def other_modes_change(ctx: FileContext, mode: Mode, existing: cst.CSTNode, sites: list[OptimizerSite]) -> str | None:
    """What ``--mode``'s change lacks in a script whose own, always-on precision code is
    ``existing`` (:func:`existing_precision`), or None when that code is this mode's: amp
    wants a ``torch.autocast`` region over an FP32 model (Neuron's migration guide: "the model
    stays in FP32"), not a bf16 cast; stochastic and gpu-compatible want the bf16 cast, not
    autocast; gpu-compatible also wants FP32 master weights on every stock optimizer
    (``with_fp32_master_weights``, as this codemod writes it)."""
    autocast = isinstance(existing, cst.Call) and bool(
        ctx.qualified_names(existing.func) & ctx.rules.torch_api.autocast
    )
    if mode.autocast:
        return None if autocast else "the model is cast to bf16, where amp keeps it in FP32 under torch.autocast"
    if autocast:
        return "it runs under torch.autocast (amp), where this mode casts the model to bf16"
    if not mode.master_weights:
        return None
    factory = snippets.MASTER_WEIGHTS_FACTORY
    built_here = [
        s
        for s in sites
        if s.factory is None and master_weights_kind(ctx, unwrap_optimizer_class(s.call.func)) == SUBCLASS
    ]
    wrapped = any(
        (isinstance(c.func, cst.Name) and c.func.value == factory)
        or any(q.rsplit(".", 1)[-1] == factory for q in ctx.qualified_names(c.func))
        for c in ctx.nodes(cst.Call)
    )
    if built_here and not wrapped:
        return f"its optimizer `{ctx.code(built_here[0].call.func)}` keeps no FP32 master weights (`{factory}`)"
    for site in sites:
        if site.factory is not None and not site.factory[1].master_weights:
            module, built_by = site.factory
            return f"the optimizer `{built_by.name}` builds in {module.path} keeps no FP32 master weights (`{factory}`)"
    return None


def launch_flag(ctx: FileContext, condition: cst.BaseExpression) -> str | None:
    """The command-line flag that makes ``condition`` (the switch of the script's own precision
    code) true: ``flags.enable_pt_autocast`` read from an argparse parser of this file with a
    single ``add_argument("--enable_pt_autocast", action="store_true")`` of that destination
    (Python's argparse documentation: the ``dest`` of an optional argument is its first long
    option string without the leading ``--``, with ``-`` turned into ``_``, unless ``dest=``
    names it). None for any other condition, and when several arguments have that destination."""
    if not m.matches(condition, m.Attribute(value=m.Name(), attr=m.Name())):
        return None
    assert isinstance(condition, cst.Attribute), "matched just above"
    dest = condition.attr.value
    found: list[str] = []
    for call in ctx.nodes(cst.Call):
        if not m.matches(call.func, m.Attribute(attr=m.Name("add_argument"))):
            continue
        options = [
            a.value.evaluated_value for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)
        ]
        keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        action = keywords.get("action")
        if not (isinstance(action, cst.SimpleString) and action.evaluated_value == "store_true"):
            continue
        longs = [o for o in options if isinstance(o, str) and o.startswith("--")]
        named = keywords.get("dest")
        own = named.evaluated_value if isinstance(named, cst.SimpleString) else None
        if not longs or (own or longs[0][2:].replace("-", "_")) != dest:
            continue
        found.append(longs[0])
    return found[0] if len(found) == 1 else None


_IMPLIED_DEVICE = {"torch.cuda.amp.autocast": "cuda", "torch.cpu.amp.autocast": "cpu"}
"""The device an autocast of a device's own module names by itself (PyTorch's torch/cuda/amp, torch/cpu/amp)."""


def foreign_autocast_device(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """The device type the script's own autocast ``node`` names when it is not the XLA device's (``device_type=
    "cuda"``, ``torch.cuda.amp.autocast``), or None (``"xla"``, ``torch_xla.amp.autocast``, a name the code does not
    tell, or ``node`` no autocast). torch-xla 2.9 applies only the ``"xla"`` autocast to XLA ops (torch_xla/csrc/
    autocast_mode.cpp registers the AutocastXLA key): under a ``"cuda"`` one the XLA matmuls stay f32 (measured on
    the XLA CPU device: the losses equal the FP32 run's, 0 of 5 matmuls bf16; Neuron's torch-neuronx maps the
    ``"cuda"`` autocast onto XLA, stock torch-xla does not)."""
    if not isinstance(node, cst.Call):
        return None
    names = ctx.qualified_names(node.func)
    implied = next((device for name, device in _IMPLIED_DEVICE.items() if name in names), None)
    if implied is not None:
        return implied
    given = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "device_type"), None)
    if given is None and node.args and node.args[0].keyword is None:
        given = node.args[0].value
    if isinstance(given, cst.SimpleString) and isinstance(given.evaluated_value, str):
        device = given.evaluated_value
        return device if device.split(":")[0] != "xla" else None
    return None
