"""Repair unit: a bf16 tensor handed to the host, where the legacy switch gave float32.

Under ``XLA_USE_BF16`` / ``XLA_DOWNCAST_BF16`` a floating tensor that leaves the device is
float32 on the host (bf16-rounded values); once migrated, ``x.cpu()`` of a bf16 tensor is bf16
there (``.numpy()`` then raises, a metric accumulates in bf16, a printed array changes). The
repair casts back at the exit the trace saw: ``x.cpu()`` -> ``x.cpu().float()`` (on the host:
no graph changes; the values are those the legacy run handed over). Only where every floating
tensor that left there was floating (the trace's ``exit_dtypes``; an exit that also moves
integer tensors is left to a hand). Already cast back: nothing.
"""

from __future__ import annotations

import libcst as cst

from .site import Example, Located, RepairKind, replace_node

KIND = RepairKind.HOST_FLOAT

_EXITS = frozenset({"cpu", "to"})
_UPCASTS = frozenset({"float", "double"})

EXAMPLES = [
    Example(
        "INVALID: bf16 predictions copied to the host for NumPy",
        "preds = model(x).cpu()\narr = preds.numpy()\n",
        1,
        "model(x).cpu()",
        "preds = model(x).cpu().float()\narr = preds.numpy()\n",
    ),
    Example(
        "INVALID: .to('cpu') of a bf16 tensor",
        "out = logits.detach().to('cpu')\n",
        1,
        "logits.detach().to('cpu')",
        "out = logits.detach().to('cpu').float()\n",
    ),
    Example(
        "VALID: cast back already (a second --fix changes nothing)",
        "preds = model(x).cpu().float()\n",
        1,
        "model(x).cpu()",
        None,
    ),
    Example(
        "VALID: the traced expression is no exit call",
        "preds = host_copy(model(x))\n",
        1,
        "host_copy(model(x))",
        None,
    ),
]


def repair(located: Located) -> cst.Module | None:
    """``<exit>.float()`` at the traced exit call; None when it is no ``.cpu()``/``.to()``
    call or is cast back already."""
    node = located.node
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _EXITS):
        return None
    parent = located.parent(node)
    if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _UPCASTS:
        return None
    cast = cst.Call(func=cst.Attribute(value=node, attr=cst.Name("float")), args=[])
    return replace_node(located.module, node, cast)
