"""The ops the code runs on the device that have no bf16 kernel there (``rules/model_code.toml``
``[flow.float32_ops]``: ``torch.linalg.cholesky``, ``torch.linalg.solve``, ``torch.logdet``...).

Under the legacy switch their operands said float32, so torch-xla's CPU fallback computed them in
f32 and their backward's matmuls ran in bf16 on the device; after ``model.to(torch.bfloat16)`` an
operand is real bf16 and the fallback raises (measured with torch-xla 2.9 on the XLA CPU device:
``"cholesky_cpu" not implemented for 'BFloat16'``). Run on float32 operands and cast back
(``torch.linalg.cholesky(K.float()).to(K.dtype)``), the op no longer raises, but its backward
computes in f32 on the device (3 of 13 matmuls of ``fixtures/contract/kernel_regression``'s step
graph, 0 in the legacy run; verify's precision part FAILs it). Neither is the legacy run's
computation, so the switch is kept and each such op named.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from .context import FileContext


def candidates(ctx: FileContext) -> list[cst.Call]:
    """The file's calls whose last name is one of ``[flow.float32_ops]``'s (a check by name before
    any qualified name is read)."""
    short = {name.rsplit(".", 1)[-1] for name in ctx.rules.model_code.float32_ops}
    return [
        call
        for call in ctx.nodes(cst.Call)
        if (call.func.attr.value if isinstance(call.func, cst.Attribute) else getattr(call.func, "value", None))
        in short
    ]


def find_float32_ops(ctx: FileContext, scopes: Iterable[cst.CSTNode], path: frozenset[int]) -> list[cst.Call]:
    """The calls of ``[flow.float32_ops]``'s functions inside ``scopes`` (the code that runs on
    the device: the model's and its loss's) or on a step's loss ``path`` (ids of the nodes from
    the model's output to the loss, :attr:`.loss_reach.LossCode.path`), in the file's order. A
    call elsewhere in a step may run on the host (a float64 computation): it is left alone."""
    holders = {id(scope) for scope in scopes}
    ops = ctx.rules.model_code.float32_ops
    return [
        call
        for call in candidates(ctx)
        if (id(call) in path or any(id(a) in holders for a in ctx.ancestors(call)))
        and ctx.qualified_names(call.func) & ops
    ]
