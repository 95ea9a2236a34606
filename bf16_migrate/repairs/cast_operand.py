"""Repair unit: an f32 tensor meets a bf16 one; the f32 operand is cast to its partner's dtype.

The trace saw an operation at this expression whose floating operands on the XLA device were
float32 and bf16 at once (``h + pos``: ``pos`` made f32 in ``forward``, ``h`` bf16 from the cast
model): the operation is promoted and computes in f32, and what follows does too, where the
legacy switch had everything bf16 on the device. The repair casts the f32 operand where it meets
its partner, by the names the trace found bound to it in that frame: ``pos.to(h.dtype)`` when
the partner has a name there, ``pos.to(torch.bfloat16)`` otherwise (the model's dtype in the
modes that cast it). Not repaired: an operand with no name (a temporary), one already cast
there (``pos.to(...)``, ``pos.float()``), the receiver of an in-place method (``ema_p.mul_(...)``:
casting a copy changes nothing; that is a copy made f32, :mod:`.cast_copy`).
"""

from __future__ import annotations

import libcst as cst

from . import Example, Located, RepairKind, dtype_expression, names_in, replace_node, with_torch_import

KIND = RepairKind.CAST_OPERAND

_CASTS = frozenset({"to", "float", "double", "half", "bfloat16", "type", "type_as"})
_NOT_TENSOR_USE = frozenset({"shape", "dtype", "device", "size", "dim", "ndim", "numel", "requires_grad"})

EXAMPLES = [
    Example(
        "INVALID: a position table made f32 in forward meets the bf16 hidden states",
        "def forward(self, h):\n    pos = torch.arange(16, device=h.device).float()\n    return h + pos\n",
        3,
        "h + pos",
        "def forward(self, h):\n    pos = torch.arange(16, device=h.device).float()\n    return h + pos.to(h.dtype)\n",
        names=("pos",),
        partner="h",
    ),
    Example(
        "INVALID: an f32 input reaches a bf16 layer (the partner, a weight, has no name there)",
        "import torch\n\n\ndef step(model, x):\n    return model.fc(x)\n",
        5,
        "model.fc(x)",
        "import torch\n\n\ndef step(model, x):\n    return model.fc(x.to(torch.bfloat16))\n",
        names=("x",),
    ),
    Example(
        "INVALID: an f32 buffer of self meets bf16 activations; torch is imported for the dtype",
        "from torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n        return x * self.scale\n",
        6,
        "x * self.scale",
        "from torch import nn\nimport torch\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
        "        return x * self.scale.to(torch.bfloat16)\n",
        names=("self.scale",),
    ),
    Example(
        "VALID: the operand is already cast where it meets its partner (a second --fix changes nothing)",
        "def forward(self, h, pos):\n    return h + pos.to(h.dtype)\n",
        2,
        "h + pos.to(h.dtype)",
        None,
        names=("pos",),
        partner="h",
    ),
    Example(
        "VALID: the f32 operand is the receiver of an in-place update (an f32 copy: cast_copy's)",
        "for pe, p in pairs:\n    pe.mul_(0.9).add_(p, alpha=0.1)\n",
        2,
        "pe.mul_(0.9).add_(p, alpha=0.1)",
        None,
        names=("pe",),
        partner="p",
    ),
    Example(
        "VALID: no name is bound to the f32 operand at the line (a temporary)",
        "loss = (model(x) - target()) ** 2\n",
        1,
        "model(x) - target()",
        None,
    ),
]


def repair(located: Located) -> cst.Module | None:
    """Cast every use of the f32 operand's names inside the traced expression to the partner's
    dtype; None when there is none to cast (see the module docstring)."""
    site = located.site
    dtype = dtype_expression(site.partner)
    targets = [n for n in names_in(located, located.node, site.names) if _castable(located, n)]
    if not targets:
        return None
    module = located.module
    for target in targets:
        cast = cst.Call(func=cst.Attribute(value=target, attr=cst.Name("to")), args=[cst.Arg(dtype)])
        module = replace_node(module, target, cast)
    return with_torch_import(module, dtype)


def _castable(located: Located, node: cst.BaseExpression) -> bool:
    """A use of the tensor itself: not a callee, not already cast, not the receiver of an
    in-place method, not read for its shape or dtype, not assigned to."""
    parent = located.parent(node)
    if isinstance(parent, cst.Call) and parent.func is node:
        return False
    if isinstance(parent, cst.Attribute) and parent.value is node:
        attr = parent.attr.value
        if attr in _CASTS or attr in _NOT_TENSOR_USE or attr.endswith("_"):
            return False
        grand = located.parent(parent)
        return isinstance(grand, cst.Call) and grand.func is parent
    if isinstance(parent, (cst.AssignTarget, cst.AugAssign)):
        return False
    return True
