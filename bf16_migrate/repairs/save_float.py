"""Repair unit: bf16 tensors saved where the legacy switch saved float32.

``torch.save`` / ``xm.save`` of device tensors under the legacy switch wrote float32 (each
tensor left the device as float32); once migrated, a ``state_dict()`` of the bf16 model is
saved bf16, and a checkpoint that other code reads as float32 changes. The repair saves the
flat dict of tensors the trace saw with its floating tensors cast back:
``torch.save({k: v.float() if v.is_floating_point() else v for k, v in sd.items()}, path)``.
Only a flat dict of tensors (the trace's ``flat_dict``: a module's ``state_dict()``); nested
objects (an optimizer's state) are left to a hand. Already a comprehension: nothing.
"""

from __future__ import annotations

import libcst as cst

from .site import Example, Located, RepairKind, replace_node

KIND = RepairKind.SAVE_FLOAT

EXAMPLES = [
    Example(
        "INVALID: the bf16 model's state_dict saved as a checkpoint",
        "torch.save(model.state_dict(), 'ckpt.pt')\n",
        1,
        "torch.save(model.state_dict(), 'ckpt.pt')",
        "torch.save({k: v.float() if v.is_floating_point() else v for k, v in model.state_dict().items()}, "
        "'ckpt.pt')\n",
    ),
    Example(
        "INVALID: xm.save of a state dict held in a name",
        "sd = model.state_dict()\nxm.save(sd, path)\n",
        2,
        "xm.save(sd, path)",
        "sd = model.state_dict()\n"
        "xm.save({k: v.float() if v.is_floating_point() else v for k, v in sd.items()}, path)\n",
    ),
    Example(
        "VALID: cast back already (a second --fix changes nothing)",
        "torch.save({k: v.float() if v.is_floating_point() else v for k, v in sd.items()}, p)\n",
        1,
        "torch.save({k: v.float() if v.is_floating_point() else v for k, v in sd.items()}, p)",
        None,
    ),
]

_TEMPLATE = "{{k: v.float() if v.is_floating_point() else v for k, v in {obj}.items()}}"


def repair(located: Located) -> cst.Module | None:
    """The saved object (the call's first argument) as a dict whose floating tensors are cast
    to float32; None when the call has no first argument or it is a comprehension already."""
    node = located.node
    if not isinstance(node, cst.Call) or not node.args or node.args[0].keyword is not None:
        return None
    obj = node.args[0].value
    if isinstance(obj, cst.DictComp):
        return None
    code = located.code(obj)
    if isinstance(obj, (cst.BinaryOperation, cst.BooleanOperation, cst.IfExp, cst.Lambda)):
        code = f"({code})"
    new_arg = node.args[0].with_changes(value=cst.parse_expression(_TEMPLATE.format(obj=code)))
    new_call = node.with_changes(args=[new_arg, *node.args[1:]])
    return replace_node(located.module, node, new_call)
