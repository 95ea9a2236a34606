"""Repair unit: a module moved to the XLA device and never cast stays float32 there.

A second model (an EMA model built afresh, a teacher, a frozen encoder, the model of an
inference script without an optimizer) moved with ``.to(device)`` computes in f32 once the
switch is gone, where the legacy run had it bf16 on the device. The trace saw its f32
parameters made by this ``.to(...)`` call and used in f32 later. The repair casts it where it
is moved: ``Net().to(device)`` -> ``Net().to(device).to(torch.bfloat16)``. Not repaired: a call
that is no ``.to(...)`` without a dtype (``.float()`` is the author's own choice), or one cast
already.
"""

from __future__ import annotations

import libcst as cst

from .site import Example, Located, RepairKind, replace_node, with_torch_import

KIND = RepairKind.CAST_MODULE

_DTYPE_WORDS = ("float", "half", "bfloat16", "dtype", "double")

EXAMPLES = [
    Example(
        "INVALID: a teacher model moved to the device and never cast",
        "import torch\n\nteacher = Teacher().to(device)\n",
        3,
        "Teacher().to(device)",
        "import torch\n\nteacher = Teacher().to(device).to(torch.bfloat16)\n",
    ),
    Example(
        "INVALID: an inference script's model, moved as a statement; torch is imported for the dtype",
        "import torch_xla\n\nmodel.to(device)\n",
        3,
        "model.to(device)",
        "import torch_xla\nimport torch\n\nmodel.to(device).to(torch.bfloat16)\n",
    ),
    Example(
        "VALID: cast already (a second --fix changes nothing)",
        "import torch\n\nteacher = Teacher().to(device).to(torch.bfloat16)\n",
        3,
        "Teacher().to(device)",
        None,
    ),
    Example(
        "VALID: the author's own f32 (a dtype named in the call)",
        "import torch\n\nhead = Head().to(device, torch.float32)\n",
        3,
        "Head().to(device, torch.float32)",
        None,
    ),
]


def repair(located: Located) -> cst.Module | None:
    """``<call>.to(torch.bfloat16)`` at the traced ``.to(device)`` of a module; None otherwise."""
    node = located.node
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "to"):
        return None
    if any(word in located.code(arg) for arg in node.args for word in _DTYPE_WORDS):
        return None
    parent = located.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in ("to", "bfloat16"):
        return None
    dtype = cst.parse_expression("torch.bfloat16")
    cast = cst.Call(func=cst.Attribute(value=node, attr=cst.Name("to")), args=[cst.Arg(dtype)])
    return with_torch_import(replace_node(located.module, node, cast), dtype)
