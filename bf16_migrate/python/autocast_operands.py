"""amp's ops that need their operands' dtypes equal: where the code that runs under autocast (the
model's code, its loss, the wrapped statements) scatters, puts or interpolates a source into a
destination, the source takes the destination's dtype.

Under the legacy switch every floating tensor on the device was bf16, so a destination and its
source always agreed. Under ``torch.autocast("xla", dtype=torch.bfloat16)`` an autocast op's output
is bf16 while a tensor made by the script or computed from the FP32 parameters is f32, and the ops
of ``rules/model_code.toml`` ``[flow.source_methods]`` / ``[flow.source_functions]`` (``scatter_add``,
``masked_scatter``, ``index_put_``, ``lerp``...) and a tensor-indexed assignment ``t[index] = v``
(``index_put_``) neither promote nor convert: XLA refuses them (measured with torch-xla 2.9 on the
XLA CPU device; the table's header). ``src.to(dest.dtype)`` is the same op where the dtypes agree and
the op without the crash where they do not, so it is written whatever the dtypes turn out to be.

A destination whose dtype the code cannot name again (a call of the script's own) is reported for
a hand, without stopping the migration: the dtypes may agree at run time, and verify's run tells.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from .apply import EditPlan
from .bindings import assigned_values, python_number
from .context import FileContext, findall
from .dtype_flow import DtypeFlow
from .loss_reach import module_loss_code
from .model_code import factory_dtype_class, short_code
from .model_reach import module_classes, reach_from
from .tensor_flow import TensorFlow, spec_argument

# the methods whose result has the receiver's dtype, and the `torch.*_like` factories (unless they
# name a dtype): a destination built by them has the dtype of the tensor they are built from
_SAME_DTYPE_METHODS = frozenset({"clone", "detach", "contiguous", "new_zeros", "new_ones", "new_full", "new_empty"})
_LIKE_FACTORIES = frozenset({"torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.empty_like"})


@dataclass(frozen=True)
class SourceOperand:
    """One op whose ``source`` must take its destination's dtype: ``op`` is the Call (or the
    Assign of a tensor-indexed item), ``name`` what it is called in findings (``scatter_add``,
    ``t[index] = v``), ``dtype`` the destination's dtype as code (``h.dtype``, ``torch.float32``),
    None where the code does not name it."""

    op: cst.CSTNode
    name: str
    source: cst.BaseExpression
    dtype: str | None
    destination: cst.BaseExpression | None = None
    float32_loss: bool = False
    """A loss of ``[flow] float32_losses``: with ``dtype`` None both operands are made float32."""


def find_source_operands(ctx: FileContext, scopes: Iterable[cst.CSTNode]) -> list[SourceOperand]:
    """The ops of ``scopes`` (functions, statements: the code that runs under autocast) whose
    source must take the destination's dtype, each once, in the file's order."""
    rules = ctx.rules.model_code
    found: dict[int, SourceOperand] = {}
    for scope in scopes:
        for call in findall(scope, m.Call(), ctx.index):
            if id(call) not in found and (op := _call_operand(ctx, call, rules)) is not None:
                found[id(call)] = op
        for assign in findall(scope, m.Assign(), ctx.index):
            if id(assign) not in found and (op := _item_operand(ctx, assign)) is not None:
                found[id(assign)] = op
    return sorted(found.values(), key=lambda op: ctx.pos(op.op))


def plan_module_source_operands(ctx: FileContext, plan: EditPlan, loss_requests: Iterable[str]) -> None:
    """In a module of the tree a script imports under amp: :func:`plan_source_operands` for the ops
    of its module classes' code (any may be the model, which runs under autocast) and of the
    functions and classes the scripts call in their autocast regions (``loss_requests``,
    :func:`.loss_reach.module_loss_code`)."""
    if not find_source_operands(ctx, [ctx.module]):
        return  # most modules have none: their reach is not read for nothing
    modules, _ = module_classes(ctx)
    reached = reach_from(ctx, modules, [], module_loss_code(ctx, loss_requests))
    plan_source_operands(ctx, plan, find_source_operands(ctx, reached.runtime))


def plan_source_operands(ctx: FileContext, plan: EditPlan, operands: Iterable[SourceOperand]) -> None:
    """``source`` -> ``source.to(<dtype>)`` for each of ``operands`` whose destination's dtype is
    named (BFM035, fixed); the others reported for a hand (BFM035 ``unknown``)."""
    for op in operands:
        if op.dtype is None and op.float32_loss and op.destination is not None:
            for operand in (op.destination, op.source):
                if not _upcast(operand):  # `yb.double()` is the script's (BFM048 makes it `.float()`)
                    plan.replace[id(operand)] = _float_after
            ctx.report(
                "BFM035", op.op, fixed=True, variant="float32_loss", op=op.name, source=short_code(ctx, op.source)
            )
            continue
        if op.dtype is None:
            ctx.report("BFM035", op.op, fixed=False, variant="unknown", op=op.name, source=short_code(ctx, op.source))
            continue
        plan.replace[id(op.source)] = _cast_to(cst.parse_expression(op.dtype))
        ctx.report("BFM035", op.op, fixed=True, op=op.name, source=short_code(ctx, op.source), dtype=op.dtype)


def _upcast(node: cst.BaseExpression) -> bool:
    """``x.float()`` or ``x.double()``: an operand the script upcasts itself."""
    return m.matches(node, m.Call(func=m.Attribute(attr=m.Name("float") | m.Name("double")), args=[]))


def _float_after(node: cst.CSTNode) -> cst.BaseExpression:
    """``<node>.float()``."""
    assert isinstance(node, cst.BaseExpression), "an operand is an expression"
    return cst.Call(func=cst.Attribute(value=_operand(node), attr=cst.Name("float")))


def _cast_to(dtype: cst.BaseExpression) -> Callable[[cst.BaseExpression], cst.BaseExpression]:
    """The edit that makes an expression ``<expression>.to(<dtype>)``."""
    return lambda node: cst.Call(func=cst.Attribute(value=_operand(node), attr=cst.Name("to")), args=[cst.Arg(dtype)])


def _call_operand(ctx: FileContext, call: cst.Call, rules) -> SourceOperand | None:
    func = call.func
    short = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    if short not in rules.source_methods and not any(n.endswith("." + short) for n in rules.source_functions):
        return None  # the names first: the qualified names are read for these calls only
    functions = ctx.qualified_names(func) & rules.source_functions.keys()
    destination: cst.BaseExpression | None
    if functions:  # torch.scatter_add(dest, dim, index, src): the destination is the first argument
        name = min(functions)
        spec = rules.source_functions[name]
        first = call.args[0] if call.args else None
        destination = first.value if first is not None and first.keyword is None else None
    elif isinstance(func, cst.Attribute) and func.attr.value in rules.source_methods:
        name = func.attr.value
        spec = rules.source_methods[name]
        destination = func.value
    else:
        return None
    arg = spec_argument(call, spec)
    if arg is None or destination is None or not _floating_source(ctx, arg.value):
        return None
    dtype = _dtype_of(ctx, destination)
    if _already_cast(ctx, arg.value, dtype):
        return None
    return SourceOperand(call, name.rsplit(".", 1)[-1], arg.value, dtype, destination, name in rules.float32_losses)


def _item_operand(ctx: FileContext, assign: cst.Assign) -> SourceOperand | None:
    """``t[index] = v`` with a tensor ``t`` the code makes and an index that may be a tensor (a name,
    a call, a comparison: not only slices and integers), which is ``index_put_``."""
    if len(assign.targets) != 1 or not isinstance(target := assign.targets[0].target, cst.Subscript):
        return None
    if not isinstance(target.value, (cst.Name, cst.Attribute)) or not _floating_source(ctx, assign.value):
        return None
    if all(_basic_index(e.slice) for e in target.slice):
        return None
    if isinstance(target.value, cst.Attribute):
        if not _module_state(ctx, target.value):
            return None  # an attribute the class does not show to be its tensor
    else:
        values = assigned_values(ctx, target.value)
        if not values or not all(_makes_tensor(ctx, v) for v in values):
            return None  # a container, or a tensor the code does not show: a list's item takes anything
    dtype = _dtype_of(ctx, target.value)
    if _already_cast(ctx, assign.value, dtype):
        return None
    return SourceOperand(assign, f"{ctx.code(target.value)}[index] = v", assign.value, dtype)


def _module_state(ctx: FileContext, attr: cst.Attribute) -> bool:
    """Whether ``attr`` is ``self.<name>`` of a class that registers ``<name>`` as a buffer
    (``self.register_buffer("queue", torch.zeros(k, d))``) or binds it to a tensor it makes or to a
    parameter: a tensor of the module, FP32 in amp with the model (a MoCo queue written with the
    keys autocast made bf16: a hunt's)."""
    if not (isinstance(attr.value, cst.Name) and attr.value.value == "self"):
        return False
    cls = ctx.enclosing(attr, cst.ClassDef)
    if cls is None:
        return False
    name = attr.attr.value
    for call in findall(cls, m.Call(func=m.Attribute(value=m.Name("self"), attr=m.Name("register_buffer"))), ctx.index):
        assert isinstance(call, cst.Call)
        first = call.args[0].value if call.args else None
        if isinstance(first, cst.SimpleString) and first.evaluated_value == name:
            return True
    for assign in findall(
        cls, m.Assign(targets=[m.AssignTarget(target=m.Attribute(value=m.Name("self"), attr=m.Name(name)))]), ctx.index
    ):
        assert isinstance(assign, cst.Assign)
        value = assign.value
        if _makes_tensor(ctx, value) or (
            isinstance(value, cst.Call) and any(n.endswith(".Parameter") for n in ctx.qualified_names(value.func))
        ):
            return True
    return False


def _basic_index(index: cst.BaseSlice) -> bool:
    """A slice, an integer, ``None`` or ``...``: basic indexing, which copies (and converts)."""
    if not isinstance(index, cst.Index):
        return True  # a slice
    value = index.value
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    return isinstance(value, (cst.Integer, cst.Ellipsis)) or (isinstance(value, cst.Name) and value.value == "None")


def _makes_tensor(ctx: FileContext, value: cst.BaseExpression) -> bool:
    """Whether ``value`` is a torch factory call or a method of a tensor that keeps its dtype."""
    if not isinstance(value, cst.Call):
        return False
    if isinstance(value.func, cst.Attribute) and value.func.attr.value in _SAME_DTYPE_METHODS:
        return True
    return any(n.startswith("torch.") for n in ctx.qualified_names(value.func)) and (
        factory_dtype_class(ctx, value) is not None or bool(ctx.qualified_names(value.func) & _LIKE_FACTORIES)
    )


def _dtype_of(ctx: FileContext, destination: cst.BaseExpression, depth: int = 0) -> str | None:
    """The destination's dtype as code: ``<name>.dtype`` for a name or an attribute of names, the
    ``dtype=`` a call names, what a ``*_like`` factory or a same-dtype method is built from,
    ``torch.float32`` for a floating torch factory without ``dtype=`` (the default dtype); None
    where the code does not tell."""
    if _plain(destination):
        return f"{ctx.code(destination)}.dtype"
    if not isinstance(destination, cst.Call) or depth > 4:
        return None
    named = next((a for a in destination.args if a.keyword is not None and a.keyword.value == "dtype"), None)
    if named is not None:
        return ctx.code(named.value)
    func = destination.func
    if isinstance(func, cst.Attribute) and func.attr.value in _SAME_DTYPE_METHODS:
        return _dtype_of(ctx, func.value, depth + 1)
    if ctx.qualified_names(func) & _LIKE_FACTORIES and destination.args:
        return _dtype_of(ctx, destination.args[0].value, depth + 1)
    return "torch.float32" if factory_dtype_class(ctx, destination) == "float" else None


def _plain(expr: cst.BaseExpression) -> bool:
    """A name or a chain of attributes of a name (``h``, ``self.queue``): read twice, the same tensor."""
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return isinstance(expr, cst.Name)


def _floating_source(ctx: FileContext, value: cst.BaseExpression) -> bool:
    """Whether ``value`` may be a floating tensor: not a number (:func:`.bindings.python_number`: ``1.0 - eps``
    of a parameter ``eps=0.1``, which ``.to(dtype)`` would crash on: found by a hunt's label
    smoothing), a string or a constant name."""
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    if isinstance(value, (cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)) or python_number(ctx, value):
        return False
    if isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
        return False
    # a number the code does not compute but names (`-math.inf`, `np.inf`, `torch.finfo(s.dtype).min`, a
    # `self.pad_score` set from a number, `1.0 - args.smoothing`): `.to(dtype)` on it raised AttributeError
    # (a hunt's masked pooling under amp): what may be a tensor is what the model's flow tells may be one
    return not _named_number(ctx, value)


def _named_number(ctx: FileContext, value: cst.BaseExpression) -> bool:
    """Arithmetic of numbers whose attributes name numbers: ``math.inf``, ``np.inf``, ``torch.finfo(x).min``
    and ``self.<attr>`` set only from numbers (:meth:`.tensor_flow.TensorFlow.tensor_like`), an attribute of
    the script's parsed options (``args.smoothing`` of ``args = parser.parse_args()``: command-line options
    are numbers or strings, never tensors)."""
    if isinstance(value, cst.UnaryOperation):
        return _named_number(ctx, value.expression)
    if isinstance(value, cst.BinaryOperation):
        return all(python_number(ctx, side) or _named_number(ctx, side) for side in (value.left, value.right))
    if not isinstance(value, cst.Attribute):
        return False
    if isinstance(value.value, cst.Name):
        bound = assigned_values(ctx, value.value)
        if bound and all(
            isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "parse_args"
            for v in bound
        ):
            return True
    flows = ctx.memo(("autocast operands: tensor flow",), lambda: TensorFlow(ctx, DtypeFlow(ctx)))
    return not flows.tensor_like(value)


def _already_cast(ctx: FileContext, value: cst.BaseExpression, dtype: str | None) -> bool:
    """``value`` is ``x.to(<dtype>)`` already (a script that casts it itself)."""
    return (
        dtype is not None
        and isinstance(value, cst.Call)
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value in ("to", "type")
        and len(value.args) == 1
        and ctx.code(value.args[0].value) == dtype
    )


def _operand(node: cst.BaseExpression) -> cst.BaseExpression:
    """``node`` as the receiver of a method call: parenthesised unless it binds tighter than ``.``."""
    if node.lpar or isinstance(node, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
