"""The ``.double()`` idiom of a file that ran under XLA_DOWNCAST_BF16 (``f64_becomes = "f32"`` in its
rule file): on the device f64 was f32 there (torch-xla ``torch_xla/csrc/dtype.cpp``), so
``torch.double``/``torch.float64``/``.double()`` meant FP32 and become ``torch.float32``/``.float()``
(BFM048), except on the CPU side of ``.cpu()`` / ``.numpy()`` / ``.item()``, which were real f64.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
import libcst.matchers as m

from .apply import EditPlan
from .context import FileContext


def plan_double_meant_fp32(
    ctx: FileContext,
    plan: EditPlan,
    modules: Sequence[cst.Call] = (),
    model_cast: bool = False,
    state: Sequence[cst.CSTNode] = (),
) -> None:
    """``torch.double``/``torch.float64``/``.double()`` -> ``torch.float32``/``.float()`` on the
    device side of the file (see the module docstring), each reported (BFM048).

    ``modules``: the model's submodules built in float64 (``nn.Linear(h, c, dtype=torch.float64)``,
    :func:`~.model_reach.float64_modules`). Built in float32 they would draw other initial values
    from the same seed than the legacy run's (float64 on the host, float32 on the device), so their
    dtype stays: with ``model_cast`` the model's cast makes them float32 (``downcast_bf16``),
    without it (amp) the constructor gets ``.float()``. ``state``: what names float64 in the model's state
    registered from float64 data (:func:`~.model_reach.float64_state_names`), kept as written where the model is
    cast by the switch's rule (``downcast_bf16`` makes it float32, as the switch did)."""
    kept = {id(arg.value) for call in modules for arg in call.args if arg.keyword and arg.keyword.value == "dtype"}
    kept |= {id(node) for node in state}
    for call in modules:
        if not model_cast:
            plan.replace[id(call)] = lambda node: cst.Call(func=cst.Attribute(value=node, attr=cst.Name("float")))
        ctx.report("BFM048", call, fixed=True, variant="module")
    for attr in ctx.nodes(cst.Attribute):
        if id(attr) in kept:
            continue
        if ctx.qualified_names(attr) & {"torch.double", "torch.float64"} and not _on_cpu_side(ctx, attr):
            plan.replace[id(attr)] = lambda node: cst.parse_expression("torch.float32").with_changes(
                lpar=node.lpar, rpar=node.rpar
            )
            ctx.report("BFM048", attr, fixed=True, dtype=ctx.code(attr))
    for call in ctx.nodes(cst.Call):
        if (
            isinstance(call.func, cst.Attribute)
            and m.matches(call, m.Call(func=m.Attribute(attr=m.Name("double")), args=[]))
            and not _on_cpu_side(ctx, call)
            and id(call.func.attr) not in kept
        ):
            plan.replace[id(call.func.attr)] = lambda node: node.with_changes(value="float")
            ctx.report("BFM048", call.func.attr, fixed=True, variant="double")


def plan_float64_meant_low(ctx: FileContext, plan: EditPlan, found: Sequence[cst.CSTNode], dtype: str) -> None:
    """Under XLA_USE_BF16 (``f64_becomes = "bf16"``) the float64s named on the device (``found``:
    :func:`.device_tensors.float64_on_device`) were bf16: each becomes ``dtype`` (``"torch.bfloat16"``
    where the mode casts the model; ``"torch.float32"`` in amp, whose autocast casts no float64), a
    ``.double()`` a ``.to(dtype)`` (``.float()`` for float32), reported (BFM048 ``use_bf16``). A node
    another change already edits is left to it."""
    for node in found:
        if id(node) in plan.replace:
            continue
        if isinstance(node, cst.Call):
            plan.replace[id(node)] = lambda n: _as_dtype(n, dtype)
        else:
            plan.replace[id(node)] = lambda n: cst.parse_expression(dtype).with_changes(lpar=n.lpar, rpar=n.rpar)
        ctx.report("BFM048", node, fixed=True, variant="use_bf16", code=ctx.code(node), target=dtype)


def _as_dtype(node: cst.CSTNode, dtype: str) -> cst.BaseExpression:
    """``x.double()`` -> ``x.float()`` (``dtype`` float32) or ``x.to(<dtype>)``."""
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute), "a `.double()` call"
    if dtype == "torch.float32":
        return node.with_changes(func=node.func.with_changes(attr=cst.Name("float")))
    return node.with_changes(
        func=node.func.with_changes(attr=cst.Name("to")), args=[cst.Arg(cst.parse_expression(dtype))]
    )


def _on_cpu_side(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Whether ``node`` works on a host value: it sits in a method chain that goes through
    ``.cpu()``, ``.numpy()``, ``.item()`` or ``.tolist()`` before it, or in ``np.``/``numpy.``, or
    that begins with a tensor made on a host device the code names (``device="cpu"``)."""
    chain = node if isinstance(node, cst.Call) else ctx.parent(node)
    # walk down the receiver chain of the call this node belongs to
    while isinstance(chain, (cst.Arg, cst.Attribute)) and not isinstance(chain, cst.Call):
        chain = ctx.parent(chain)
    expr = chain
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        func = expr.func if isinstance(expr, cst.Call) else expr
        if isinstance(func, cst.Attribute) and func.attr.value in ("cpu", "numpy", "item", "tolist"):
            return True
        if isinstance(expr, cst.Call) and _made_on_a_named_host(expr):
            return True
        if ctx.qualified_names(func) & {"numpy", "np"} or any(
            q.startswith("numpy.") for q in ctx.qualified_names(func)
        ):
            return True
        expr = func.value if isinstance(func, cst.Attribute) else getattr(expr, "value", None)
    return False


def _made_on_a_named_host(call: cst.Call) -> bool:
    """``device="cpu"`` (any string but an ``"xla..."`` one) among the call's keywords: made on the
    host, where the legacy variables changed nothing."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device" and isinstance(arg.value, cst.SimpleString):
            value = arg.value.evaluated_value
            return isinstance(value, str) and not value.startswith("xla")
    return False
