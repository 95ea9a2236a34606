"""A script whose default dtype is float64 (``torch.set_default_dtype(torch.float64)``), run under a
switch that made f64 f32 on the device (XLA_DOWNCAST_BF16: ``f64_becomes = "f32"`` in its rule file)
keeps its switch (BFM058).

Under that switch torch-xla stored f64 as f32 and f32 as bf16 (``torch_xla/csrc/dtype.cpp``,
``MaybeDowncastToXlaDeviceType``): the tensors such a script makes in its default dtype, its model's
parameters and buffers included, were f32 on the device, not bf16. Its legacy run computed in f32;
a bf16 model, bf16 inputs or autocast would compute in bf16 where it did not (found by a hunt: an ODE
fit written for f64, whose legacy run had no bf16 op). The migration that keeps what the legacy run
computed is ``torch.set_default_dtype(torch.float32)`` with the switch removed and nothing else,
which is no mode's change; and the tensors the script makes in f32 by name (``.float()``,
``dtype=torch.float32``) were bf16. So the switch is kept and the call named, for a hand to decide.

INVALID (kept, BFM058)::

    os.environ["XLA_DOWNCAST_BF16"] = "1"
    torch.set_default_dtype(torch.float64)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst

from .context import FileContext
from .outcome import Refusal

_F64 = frozenset({"torch.float64", "torch.double", "torch.DoubleTensor", "torch.cuda.DoubleTensor"})
_SETTERS = frozenset({"torch.set_default_dtype", "torch.set_default_tensor_type"})


def refuse_default_f64(
    ctx: FileContext, variables: Iterable[str], anchors: Sequence[tuple[str, cst.CSTNode]], *, autocast: bool = False
) -> bool:
    """Whether the file sets a float64 default dtype (``torch.set_default_dtype(torch.float64)``,
    ``torch.set_default_tensor_type(torch.DoubleTensor)``, anywhere in it) while one of
    ``variables`` made f64 f32 on the device (its rule's ``f64_becomes`` is ``"f32"``), or, in a mode that
    keeps the model as the script builds it under autocast (``autocast``: amp), any of them: autocast casts no
    float64 (torch.amp's docs: only float32 ops are autocast), so the model and the whole run stayed float64 where
    the switch made them bf16 (a hunt's PINN: 0 of 9 matmuls bf16). If so a refusal (:attr:`Refusal.DEFAULT_F64`)
    with a BFM058 finding at each anchor (a write's key, or the module for a launcher's variable:
    ``(variable, node)``) naming the call's line."""
    downcast = {name for name in variables if autocast or ctx.rules.variables[name].f64_becomes == "f32"}
    if not downcast:
        return False
    setter = next((call for call in ctx.nodes(cst.Call) if _sets_f64(ctx, call)), None)
    if setter is None:
        return False
    for variable, anchor in anchors:
        if variable not in downcast:
            continue
        said = None if ctx.rules.variables[variable].f64_becomes == "f32" else "autocast"
        finding = ctx.report(
            "BFM058",
            anchor,
            fixed=False,
            variant=said,
            variable=variable,
            code=ctx.code(setter),
            line=ctx.pos(setter)[0],
        )
        ctx.outcome.refuse(Refusal.DEFAULT_F64, finding)
    return True


def _sets_f64(ctx: FileContext, call: cst.Call) -> bool:
    """``torch.set_default_dtype(torch.float64)`` or ``torch.set_default_tensor_type(torch.DoubleTensor)``."""
    if len(call.args) != 1 or not ctx.qualified_names(call.func) & _SETTERS:
        return False
    return bool(ctx.qualified_names(call.args[0].value) & _F64)
