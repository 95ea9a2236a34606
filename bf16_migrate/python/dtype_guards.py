"""Guards on a tensor's dtype that name float32: ``if x.dtype != torch.float32: raise TypeError(...)``,
``assert x.dtype == torch.float32``.

**Why.** Under the legacy switch a tensor on the XLA device said ``torch.float32`` while the device held
bf16: torch-xla changes the device type, not the tensor's scalar type (torch_xla/csrc/dtype.cpp,
``MaybeDowncastToXlaDeviceType``; measured with torch-xla 2.9 on the XLA CPU device). A model's input
validation passed. After the migration the cast model's inputs (and amp's activations under autocast)
are bf16 and say so: the guard raises at the first step, a crash after a rewrite that said nothing
was left (found by a hunt's serving model, verify's trace: BFM220 at the ``raise``).

**Fix.** The guard accepts bf16 beside float32: ``x.dtype != torch.float32`` becomes ``x.dtype not in
(torch.float32, torch.bfloat16)``, ``==`` becomes ``in``, and a tuple of accepted dtypes gets
``torch.bfloat16`` after ``torch.float32``. What the guard accepted on the device under the switch
(tensors that said float32 and were bf16) it accepts now; a host tensor's float32 still passes. Only
guards: the test of an ``if`` whose body raises, or of an ``assert``. A branch on the dtype (``if
scores.dtype == torch.float32: ...`` computing something else) is the model code audit's (deliberate
f32, :mod:`.deliberate_f32`). Each is reported (BFM078).

The same reading of a label answers a dtype's constants: ``torch.finfo(probs.dtype).eps`` was float32's
(1.19e-07) under the switch, where the tensor held bf16; migrated, it is bf16's (0.0078125), and a clamp
``probs.clamp(min=torch.finfo(probs.dtype).eps)`` before a log now clamps every probability below 2^-7 and
cuts its gradient (a hunt's label-smoothed loss). The resolution constants (``rules/model_code.toml``
``[flow] label_constants``: ``eps``, ``tiny``...) of ``torch.finfo(<t>.dtype)`` become float32's:
``torch.finfo(torch.float32).eps``, what the legacy run read; representable in bf16, they clamp and
guard as they did. ``min``/``max`` are left as written: bf16's are finite and mask as well. Each is
reported (BFM079).
"""

from __future__ import annotations

import functools

import libcst as cst
import libcst.matchers as m

from .apply import EditPlan
from .context import FileContext

__all__ = ["plan_dtype_guards", "plan_label_constants"]

_FLOAT32 = frozenset({"torch.float32", "torch.float"})
_BFLOAT16 = frozenset({"torch.bfloat16"})


def plan_dtype_guards(ctx: FileContext, plan: EditPlan) -> None:
    """Plan the edit of each dtype guard of the file that names float32 (see the module docstring)
    and report it (BFM078); a comparison already edited in ``plan`` is left as planned."""
    for comparison in ctx.nodes(cst.Comparison):
        if id(comparison) in plan.replace or not _in_a_guard(ctx, comparison):
            continue
        edit = _accepting_bf16(ctx, comparison)
        if edit is None:
            continue
        plan.replace[id(comparison)] = edit
        ctx.report("BFM078", comparison, fixed=True, code=" ".join(ctx.code(comparison).split()))


def plan_label_constants(ctx: FileContext, plan: EditPlan) -> None:
    """``torch.finfo(<t>.dtype).<constant>`` -> ``torch.finfo(torch.float32).<constant>`` for each resolution
    constant the legacy run read from a float32 label (see the module docstring), reported (BFM079)."""
    constants = ctx.rules.model_code.label_constants
    for attribute in ctx.nodes(cst.Attribute):
        if attribute.attr.value not in constants or not isinstance(attribute.value, cst.Call):
            continue
        query = attribute.value
        if not ctx.qualified_names(query.func) & _FINFO or len(query.args) != 1 or query.args[0].keyword is not None:
            continue
        label = query.args[0].value
        if not m.matches(label, m.Attribute(attr=m.Name("dtype"))) or id(label) in plan.replace:
            continue
        assert isinstance(query.func, cst.Attribute), "torch.finfo is an attribute"
        float32 = cst.Attribute(value=query.func.value.deep_clone(), attr=cst.Name("float32"))
        plan.replace[id(label)] = functools.partial(_replaced_by, float32)
        ctx.report("BFM079", attribute, fixed=True, code=ctx.code(attribute), constant=attribute.attr.value)


_FINFO = frozenset({"torch.finfo"})


def _replaced_by(new: cst.CSTNode, _old: cst.CSTNode) -> cst.CSTNode:
    """``new``, whatever the node it replaces (an edit of :attr:`.apply.EditPlan.replace`)."""
    return new


def _in_a_guard(ctx: FileContext, comparison: cst.Comparison) -> bool:
    """Whether ``comparison`` is (a part of a boolean operation that is) the test of an ``assert``,
    or of an ``if`` whose own body raises."""
    node: cst.CSTNode = comparison
    parent = ctx.parent(node)
    while isinstance(parent, (cst.BooleanOperation, cst.UnaryOperation)):
        node, parent = parent, ctx.parent(parent)
    if isinstance(parent, cst.Assert):
        return parent.test is node
    if isinstance(parent, cst.If) and parent.test is node:
        body = parent.body.body if isinstance(parent.body, cst.IndentedBlock) else []
        return any(m.findall(st, m.Raise()) for st in body if not isinstance(st, (cst.FunctionDef, cst.ClassDef)))
    return False


def _accepting_bf16(ctx: FileContext, comparison: cst.Comparison):
    """The edit (a function of the node) that makes ``<t>.dtype ==/!=/in/not in <float32...>`` accept
    bf16 too; None for any other comparison, or one that names bf16 already."""
    if len(comparison.comparisons) != 1 or not m.matches(comparison.left, m.Attribute(attr=m.Name("dtype"))):
        return None
    target = comparison.comparisons[0]
    op, right = target.operator, target.comparator
    if isinstance(op, (cst.Equal, cst.NotEqual)) and ctx.qualified_names(right) & _FLOAT32:
        assert isinstance(right, cst.Attribute), "torch.float32 is an attribute"
        both = cst.Tuple(
            elements=[
                cst.Element(right.deep_clone(), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                cst.Element(right.with_changes(attr=cst.Name("bfloat16"))),
            ]
        )
        into = cst.In() if isinstance(op, cst.Equal) else cst.NotIn()
        return lambda node: node.with_changes(
            comparisons=[node.comparisons[0].with_changes(operator=_spaced(into, op), comparator=both)]
        )
    if isinstance(op, (cst.In, cst.NotIn)) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
        names = [ctx.qualified_names(e.value) for e in right.elements]
        if any(n & _BFLOAT16 for n in names):
            return None
        at = next((i for i, n in enumerate(names) if n & _FLOAT32), None)
        if at is None:
            return None
        return lambda node: node.with_changes(
            comparisons=[node.comparisons[0].with_changes(comparator=_with_bf16(node.comparisons[0].comparator, at))]
        )
    return None


def _spaced(op: cst.BaseCompOp, like: cst.BaseCompOp) -> cst.BaseCompOp:
    """``op`` with the white space around ``like`` (``!=`` -> `` not in ``)."""
    before = getattr(like, "whitespace_before", cst.SimpleWhitespace(" "))
    after = getattr(like, "whitespace_after", cst.SimpleWhitespace(" "))
    if isinstance(op, cst.NotIn):
        return cst.NotIn(whitespace_before=before, whitespace_after=after)
    return cst.In(whitespace_before=before, whitespace_after=after)


def _with_bf16(container: cst.BaseExpression, at: int) -> cst.BaseExpression:
    """The tuple, list or set ``container`` with ``<prefix>.bfloat16`` after its element ``at`` (a
    float32), spelled with the same prefix (``torch.``, ``th.``)."""
    assert isinstance(container, (cst.Tuple, cst.List, cst.Set)), "matched a literal container"
    elements = list(container.elements)
    f32 = elements[at]
    assert isinstance(f32.value, cst.Attribute), "a float32 dtype is an attribute"
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    added = cst.Element(f32.value.with_changes(attr=cst.Name("bfloat16")), comma=f32.comma)
    elements[at] = f32.with_changes(comma=comma)
    elements.insert(at + 1, added)
    return container.with_changes(elements=elements)
