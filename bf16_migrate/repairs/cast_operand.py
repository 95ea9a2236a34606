"""Repair unit: an f32 tensor meets a bf16 one; the f32 operand is cast to its partner's dtype.

The trace saw an operation at this expression whose floating operands on the XLA device were
float32 and bf16 at once (``h + pos``: ``pos`` made f32 in ``forward``, ``h`` bf16 from the cast
model): the operation is promoted and computes in f32, and what follows does too, where the
legacy switch had everything bf16 on the device. The repair casts the f32 operand where it meets
its partner, by the names the trace found bound to it in that frame: ``pos.to(h.dtype)`` when
the partner has a name there, ``pos.to(torch.bfloat16)`` otherwise (the model's dtype in the
modes that cast it). An operand with no name there (a table a helper returns) is cast where it
is a side of the traced binary operation, by its position among the operation's tensor operands:
``h + table(n)`` -> ``h + table(n).to(h.dtype)``. Not repaired: a temporary elsewhere, an operand
already cast there (``pos.to(...)``, ``pos.float()``), the receiver of an in-place method
(``ema_p.mul_(...)``: casting a copy changes nothing; that is a copy made f32, :mod:`.cast_copy`).
"""

from __future__ import annotations

import libcst as cst

from .site import Example, Located, RepairKind, dtype_expression, names_in, replace_node, with_torch_import

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
        "INVALID: a table a helper returns, with no name, on the right of the traced addition",
        "def forward(self, h):\n    return self.mix(h + table(h.shape[1]))\n",
        2,
        "h + table(h.shape[1])",
        "def forward(self, h):\n    return self.mix(h + table(h.shape[1]).to(h.dtype))\n",
        arg=1,
    ),
    Example(
        "INVALID: the loss itself is the traced call; its f32 target has no name",
        "loss = F.mse_loss(ema(x), torch.sin(x @ w).to(device))\n",
        1,
        "F.mse_loss(ema(x), torch.sin(x @ w).to(device))",
        "import torch\n\nloss = F.mse_loss(ema(x), torch.sin(x @ w).to(device).to(torch.bfloat16))\n",
        arg=1,
        op="F.mse_loss",
    ),
    Example(
        "VALID: a module call is no operation of its own operands (F.linear's are input, weight, bias)",
        "out = self.fc(make())\n",
        1,
        "self.fc(make())",
        None,
        arg=0,
        op="F.linear",
    ),
    Example(
        "VALID: the side at that position is cast already",
        "def forward(self, h):\n    return h + table(4).to(h.dtype)\n",
        2,
        "h + table(4).to(h.dtype)",
        None,
        arg=1,
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
    targets: list[cst.BaseExpression] = [
        n for n in names_in(located, located.node, site.names) if _castable(located, n)
    ]
    partner = site.partner
    if not targets and site.arg is not None:
        side, other = _side(located, site.arg, site.op)
        if side is not None and not _cast_already(side):
            targets = [side]
            if partner is None and isinstance(other, (cst.Name, cst.Attribute)):
                partner = located.code(other)
    if not targets:
        return None
    dtype = dtype_expression(partner)
    module = located.module
    for target in targets:
        value = target
        if not isinstance(target, _TIGHT):
            value = target.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        cast = cst.Call(func=cst.Attribute(value=value, attr=cst.Name("to")), args=[cst.Arg(dtype)])
        module = replace_node(module, target, cast)
    return with_torch_import(module, dtype)


_TIGHT = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)
"""Expressions a ``.to(...)`` can follow without parentheses."""


def _side(located: Located, arg: int, op: str) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
    """The side of the traced binary operation at tensor operand ``arg`` (0: left; a reflected
    ``Tensor.__rX__`` swaps), and the other side; (None, None) when the node is no binary
    operation."""
    node = located.node
    name = op.rsplit(".", 1)[-1]
    if isinstance(node, cst.Call):
        # the traced call is the operation itself (`F.mse_loss(out, target)`, not a module
        # whose own operation has other operands): its positional arguments are its operands
        func = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", None)
        positional = [a.value for a in node.args if a.keyword is None and a.star == ""]
        if func != name or not 0 <= arg < len(positional) or len(positional) != 2:
            return None, None
        return positional[arg], positional[1 - arg]
    if not isinstance(node, cst.BinaryOperation) or arg not in (0, 1):
        return None, None
    if name.startswith("__r"):
        arg = 1 - arg
    return (node.left, node.right) if arg == 0 else (node.right, node.left)


def _cast_already(node: cst.BaseExpression) -> bool:
    """A cast to a dtype (``.float()``, ``.to(h.dtype)``, ``.to(torch.bfloat16)``), not a move
    (``.to(device)``)."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return False
    attr = node.func.attr.value
    if attr != "to":
        return attr in _CASTS
    text = " ".join(cst.Module([]).code_for_node(a) for a in node.args)
    return any(word in text for word in ("dtype", "float", "bfloat16", "half", "double"))


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
