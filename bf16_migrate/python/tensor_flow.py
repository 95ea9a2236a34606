"""Where a tensor value goes inside the code that makes it, and which other tensors it meets.

A tensor made in f32 by a model's own code (a mask, a position table, a norm computed in f32)
changes the migrated run only where it meets another tensor: by PyTorch's type promotion (docs,
"Type Promotion") the result of an op between an f32 and a bf16 tensor is f32, so what it meets
decides both the dtype the legacy run had (the other operand's: bf16 on the device under the
switch) and how far f32 travels. :class:`TensorFlow` follows one value forward through the code:
method chains (``.unsqueeze(1)``), arithmetic, indexing, torch functions, the names it is bound to
(libcst scope references), ``self.<attr>`` it is stored in, and records:

* ``meets``: the operands it meets (``scores + mask`` meets ``scores``; ``self.qkv(x)`` meets
  ``self.qkv.weight``; ``p.grad.div_(clip)`` meets ``p.grad``, which keeps its own dtype: kind
  ``"into"``; ``self.rnn(x, (h0, c0))`` meets the parameters of the submodule: kind ``"module"``)
  and whether in a matmul;
* ``casts_back``: casts to another tensor's dtype or to a low precision (``h.to(input_dtype)``,
  ``.type_as(x)``, ``.bfloat16()``: ``rules/model_code.toml`` ``[flow]``);
* ``escapes``: where it leaves what can be followed (``return``, a call of a function or module that
  is not a torch op or a known layer, a container);
* ``matmuls``: the matmuls it enters.

A flow stops at what ends it (an integer or boolean result, a host value, metadata); with
``through=False`` it also stops where it meets another tensor (that operand decides the result's
dtype once the value follows it), with ``through=True`` it goes on (an f32 value promotes what it
meets). Which operands may be tensors, rather than Python numbers, is :meth:`TensorFlow.tensor_like`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from .bindings import assigned_values, definitions, dtype_names, self_assigned
from .context import FileContext, findall
from .dtype_flow import INT, DtypeFlow
from .model_site import loss_module
from .submodule_inputs import receiver

__all__ = ["Flow", "Meet", "TensorFlow", "cast_kind"]

_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
_MAX_DEPTH = 8
_CONSTANT_NAMES = {"True", "False", "None"}
_DEVICE_CALLS = {"torch.device", "torch_xla.device", "torch_xla.core.xla_model.xla_device"}
_LOW_DTYPES = {"torch.bfloat16", "torch.half", "torch.float16"}
_TRANSPARENT_ATTRS = {"T", "mT", "H", "mH", "real", "data", "grad"}


def _number_arithmetic(op: cst.BinaryOperation) -> bool:
    """Arithmetic that reads as a number's (a floor division, or a numeric literal operand: ``dim // 2``,
    ``n - 1``), not two names added (``x + y`` of two parameters may be tensors)."""
    return isinstance(op.operator, cst.FloorDivide) or any(isinstance(side, _LITERALS) for side in (op.left, op.right))


@dataclass
class Meet:
    """The followed value meets ``other`` at ``at``. ``kind``: ``"arith"`` (an element-wise op: the
    result takes the wider dtype), ``"matmul"``, or ``"into"`` (the value is written into ``other``,
    which keeps its dtype: an in-place op, an indexed assignment), or ``"module"`` (the value is handed
    to a submodule of ``self`` and meets its parameters: :mod:`.submodule_inputs`). ``weight``: for a
    torch.nn layer the value is fed to, the code of its weight (``self.qkv.weight``), ``other`` then
    None; for ``"module"``, the code of a tensor with its parameters' dtype
    (``next(self.rnn.parameters())``), ``other`` the plain-name input beside the value whose dtype is
    theirs, or None."""

    other: cst.BaseExpression | None
    at: cst.CSTNode
    kind: str
    weight: str | None = None
    fresh: bool = False
    """``other`` is itself made by the code audited (one of the ``fresh`` nodes of the follow):
    the two are decided together, and the flow goes on through the op."""
    via: cst.BaseExpression | None = None
    """The expression that carries the followed value into the op (``table`` in ``x + table``,
    ``table[pos]`` in ``x + table[pos]``): where a cast to the other operand's dtype goes
    (``x + table.to(x.dtype)``); None where such a cast would change what the op does (the
    receiver of an in-place method, a tuple handed to a submodule)."""


@dataclass
class Flow:
    """Where one value goes (see the module docstring). ``visited``: ids of the expression nodes
    that carry it."""

    start: cst.CSTNode
    visited: set[int] = field(default_factory=set)
    meets: list[Meet] = field(default_factory=list)
    escapes: list[cst.CSTNode] = field(default_factory=list)
    casts_back: list[cst.CSTNode] = field(default_factory=list)
    matmuls: list[cst.CSTNode] = field(default_factory=list)
    ends: int = 0


def _decorator_callee(decorator: cst.Decorator) -> cst.BaseExpression:
    """What a decorator names: ``dataclass`` of ``@dataclass`` and of ``@dataclass(frozen=True)``."""
    value = decorator.decorator
    return value.func if isinstance(value, cst.Call) else value


def cast_kind(ctx: FileContext, call: cst.Call) -> str:
    """What ``x.to(...)`` / ``x.type(...)`` does to the dtype: ``"f32"``, ``"f64"``, ``"low"`` (bf16,
    f16), ``"like"`` (another tensor's dtype: ``x.dtype``, a name bound to one, a tensor),
    ``"device"`` (a move only) or ``"unknown"``."""
    rules = ctx.rules.model_code
    kinds = []
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value not in ("dtype", "device", "other"):
            continue
        kinds.append(_arg_cast_kind(ctx, arg.value, rules, depth=0))
    for kind in ("f32", "f64", "low", "like"):
        if kind in kinds:
            return kind
    return "device" if "device" in kinds else "unknown"


def _arg_cast_kind(ctx: FileContext, value: cst.BaseExpression, rules, depth: int) -> str:
    names = dtype_names(ctx, value) or ctx.qualified_names(value)
    if names & rules.f32_dtypes:
        return "f32"
    if names & rules.f64_dtypes:
        return "f64"
    if names & _LOW_DTYPES:
        return "low"
    if isinstance(value, cst.Attribute):
        if value.attr.value == "dtype":
            return "like"
        if value.attr.value == "device":
            return "device"
    if isinstance(value, cst.SimpleString) or (
        isinstance(value, cst.Call) and ctx.qualified_names(value.func) & _DEVICE_CALLS
    ):
        return "device"
    if isinstance(value, cst.Name):
        lowered = value.value.lower()
        if "dtype" in lowered:
            return "like"
        if "device" in lowered or lowered == "dev":
            return "device"
        if depth < 3:
            kinds = {_arg_cast_kind(ctx, v, rules, depth + 1) for v in _bound_values(ctx, value)}
            if len(kinds) == 1:
                return kinds.pop()
    return "unknown"


def _bound_values(ctx: FileContext, name: cst.Name) -> list[cst.BaseExpression]:
    """The values assigned to ``name`` (plain assignments), where it is read."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return []
    values = []
    for a in scope[name.value]:
        if isinstance(a, Assignment) and isinstance(a.node, cst.Name):
            target = ctx.parent(a.node)
            assign = ctx.parent(target)
            if isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign):
                values.append(assign.value)
    return values


class TensorFlow:
    """Follows values forward inside one file (see the module docstring)."""

    def __init__(self, ctx: FileContext, dtypes: DtypeFlow | None = None) -> None:
        self.ctx = ctx
        self.rules = ctx.rules.model_code
        self.dtypes = dtypes or DtypeFlow(ctx)
        self._fresh: frozenset[int] = frozenset()
        self._matmuls = False

    # -- what is a tensor ------------------------------------------------------------------
    def tensor_like(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether ``expr`` may be a tensor rather than a Python number, bool, string, size or
        tuple: literals, ``math.*``, sizes (``x.shape[1]``, ``x.size(0)``), ``__init__``
        parameters and parameters with a literal default, and names and ``self.<attr>`` bound only
        to such are not."""
        if depth > _MAX_DEPTH or isinstance(expr, _LITERALS):
            return False
        if isinstance(expr, (cst.Comparison, cst.BooleanOperation, cst.Tuple, cst.List, cst.Dict, cst.Lambda)):
            return False
        if isinstance(expr, cst.Name):
            return expr.value not in _CONSTANT_NAMES and self._name_tensor_like(expr, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute_tensor_like(expr, depth)
        if isinstance(expr, cst.Subscript):
            return self.tensor_like(expr.value, depth + 1)
        if isinstance(expr, cst.Call):
            return self._call_tensor_like(expr)
        if isinstance(expr, cst.BinaryOperation):
            return self.tensor_like(expr.left, depth + 1) or self.tensor_like(expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self.tensor_like(expr.expression, depth + 1)
        if isinstance(expr, cst.IfExp):
            return self.tensor_like(expr.body, depth + 1) or self.tensor_like(expr.orelse, depth + 1)
        return True

    def _call_tensor_like(self, call: cst.Call) -> bool:
        names = self.ctx.qualified_names(call.func)
        if names & self.rules.host_functions or any(n.startswith("math.") for n in names):
            return False
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in self.rules.ends:
            return False
        # a method of a host object made here (`torch.Generator().manual_seed(0)`): a host object too
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        return not (
            isinstance(receiver, cst.Call) and self.ctx.qualified_names(receiver.func) & self.rules.host_functions
        )

    def _attribute_tensor_like(self, expr: cst.Attribute, depth: int) -> bool:
        names = self.ctx.qualified_names(expr)
        if expr.attr.value in self.rules.ends or any(n.startswith(("math.", "numpy.")) for n in names):
            return False  # `math.inf`, `np.pi`: numbers
        if m.matches(expr.value, m.Call(func=m.Attribute(attr=m.Name("finfo") | m.Name("iinfo")))):
            return False  # `torch.finfo(x.dtype).min`: a Python number
        if m.matches(expr.value, m.Name("self")):
            cls = self.ctx.enclosing(expr, cst.ClassDef)
            values = self_assigned(self.ctx, cls, expr.attr.value) if cls is not None else []
            return not values or any(self.tensor_like(v, depth + 1) for v in values)
        if isinstance(expr.value, cst.Name):
            fields = self._record_fields(expr.value, expr.attr.value)
            if fields is not None:
                return any(self.tensor_like(v, depth + 1) for v in fields)
        return True

    def _record_fields(self, name: cst.Name, attr: str) -> list[cst.BaseExpression] | None:
        """What ``name.attr`` may hold where ``name`` is bound only to records of settings (``rules/model_code.toml``
        ``[flow] records``): the keyword given for ``attr`` (``SimpleNamespace(eps=0.1)``), else the default of the
        field of a record class of the file (``@dataclass class Config: lr: float = 3e-3``); a field annotated as a
        Python scalar, and any option of ``parser.parse_args()``, as the literal ``0``. None where a binding is no
        record, or a field's value cannot be told."""
        values = assigned_values(self.ctx, name)
        if not values:
            return None
        found: list[cst.BaseExpression] = []
        for value in values:
            if not isinstance(value, cst.Call):
                return None
            if isinstance(value.func, cst.Attribute) and value.func.attr.value in self.rules.option_parsers:
                found.append(cst.Integer("0"))
                continue
            given = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == attr), None)
            if self.ctx.qualified_names(value.func) & self.rules.records:
                if given is None:
                    return None
                found.append(given)
                continue
            default = self._record_class_field(value.func, attr)
            if default is None:
                return None
            found.append(given if given is not None else default)
        return found

    def _record_class_field(self, func: cst.BaseExpression, attr: str) -> cst.BaseExpression | None:
        """The default of the field ``attr`` of the record class of the file ``func`` names (the literal ``0`` for a
        field annotated as a Python scalar), or None."""
        classes = [d for d in definitions(self.ctx, func) if isinstance(d, cst.ClassDef)]
        if len(classes) != 1:
            return None
        cls = classes[0]
        if not any(
            self.ctx.qualified_names(_decorator_callee(d)) & self.rules.record_decorators for d in cls.decorators
        ):
            return None
        for statement in cls.body.body:
            for small in statement.body if isinstance(statement, cst.SimpleStatementLine) else ():
                if isinstance(small, cst.AnnAssign) and m.matches(small.target, m.Name(attr)):
                    annotation = small.annotation.annotation
                    if isinstance(annotation, cst.Name) and annotation.value in self.rules.record_scalars:
                        return cst.Integer("0")
                    if small.value is None or m.matches(small.value, m.Name("None")):
                        return None  # `scale: torch.Tensor = None`: set later, to what the code does not say
                    return small.value
        return None

    def _name_tensor_like(self, name: cst.Name, depth: int) -> bool:
        scope = self.ctx.scopes.get(name)
        if scope is None:
            return True
        assignments = [a for a in scope[name.value] if isinstance(a, Assignment)]
        return not assignments or any(self._binding_tensor_like(a.node, depth) for a in assignments)

    def _binding_tensor_like(self, node: cst.CSTNode, depth: int) -> bool:
        if isinstance(node, cst.Param):
            return self._param_tensor_like(node)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom)):
            return False
        target = self.ctx.parent(node)
        if isinstance(target, cst.Element):  # tuple unpacking: `B, T, C = x.shape`
            container = self.ctx.parent(target)
            holder = self.ctx.parent(container)
            if isinstance(holder, cst.AssignTarget):
                assign = self.ctx.parent(holder)
                return isinstance(assign, cst.Assign) and self.tensor_like(assign.value, depth + 1)
            return True
        if isinstance(target, cst.AssignTarget):
            assign = self.ctx.parent(target)
            return isinstance(assign, cst.Assign) and self.tensor_like(assign.value, depth + 1)
        if isinstance(target, cst.AnnAssign):
            return target.value is None or self.tensor_like(target.value, depth + 1)
        if isinstance(target, cst.For):
            return not m.matches(target.iter, m.Call(func=m.Name("range")))
        return True

    def maybe_scalar(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a parameter of a step function that nothing in the function uses as a
        tensor (no attribute, method, index, matmul, torch function or layer takes it): a loss's
        ``temperature``, ``margin``, ``eps`` is as likely a Python number, whose dtype is none to
        take (``temperature.dtype`` would fail) and which promotes no tensor."""
        if not isinstance(expr, cst.Name):
            return False
        scope = self.ctx.scopes.get(expr)
        if scope is None:
            return False
        bindings = [a for a in scope[expr.value] if isinstance(a, Assignment)]
        if len(bindings) != 1 or not isinstance(bindings[0].node, cst.Param):
            return False
        return not any(self._used_as_tensor(access.node) for access in bindings[0].references)

    def maybe_number(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """:meth:`maybe_scalar`, or arithmetic of such parameters and literals (``0.5 / n``), or a name bound once
        to such arithmetic (``half = dim // 2`` of a parameter ``dim``: a hunt's timestep embedding took
        ``half.dtype``)."""
        if isinstance(expr, cst.BinaryOperation):
            return all(self.maybe_number(e, depth) for e in (expr.left, expr.right))
        if isinstance(expr, cst.UnaryOperation):
            return self.maybe_number(expr.expression, depth)
        if isinstance(expr, _LITERALS) or self.maybe_scalar(expr) or self._group_hyperparameter(expr):
            return True
        if isinstance(expr, cst.Name) and depth < 4:
            values = assigned_values(self.ctx, expr)
            return (
                len(values) == 1
                and isinstance(values[0], cst.BinaryOperation)
                and _number_arithmetic(values[0])
                and self.maybe_number(values[0], depth + 1)
            )
        return False

    def _group_hyperparameter(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a hyperparameter of an optimizer's param group, ``group["beta"]`` (or a
        name bound once to one, ``beta = group["beta"]``) where ``group`` is the target of a ``for`` over
        ``X.param_groups``: torch.optim keeps a group's hyperparameters, the keys beside ``"params"``, as
        the numbers the optimizer was built with (torch/optim/optimizer.py, ``add_param_group``), which
        decide no dtype (found by a hunt: a hand-written optimizer's state was refused, BFM081)."""
        if isinstance(expr, cst.Name):
            values = assigned_values(self.ctx, expr)
            return len(values) == 1 and isinstance(values[0], cst.Subscript) and self._group_hyperparameter(values[0])
        if not isinstance(expr, cst.Subscript) or not isinstance(expr.value, cst.Name) or len(expr.slice) != 1:
            return False
        index = expr.slice[0].slice
        if not isinstance(index, cst.Index) or not isinstance(index.value, cst.SimpleString):
            return False
        if index.value.evaluated_value == "params":
            return False
        scope = self.ctx.scopes.get(expr.value)
        bindings = [a for a in scope[expr.value.value] if isinstance(a, Assignment)] if scope is not None else []
        if len(bindings) != 1:
            return False
        loop = self.ctx.parent(bindings[0].node)
        return (
            isinstance(loop, cst.For)
            and loop.target is bindings[0].node
            and isinstance(loop.iter, cst.Attribute)
            and loop.iter.attr.value == "param_groups"
        )

    def _used_as_tensor(self, read: cst.CSTNode) -> bool:
        parent = self.ctx.parent(read)
        if isinstance(parent, cst.Attribute) and parent.value is read:
            return True  # `z.shape`, `z.device`, `z.view(...)`
        if isinstance(parent, cst.Subscript) and parent.value is read:
            return True
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.MatrixMultiply):
            return True
        if isinstance(parent, cst.Arg) and parent.value is read:
            call = self.ctx.parent(parent)
            if isinstance(call, cst.Call) and call.args and call.args[0] is parent:
                names = self.ctx.qualified_names(call.func)
                if any(n.startswith("torch.") and n[6:] in self.rules.float_factories for n in names):
                    return False  # `torch.eye(n)`, `torch.zeros(n, d)`: a size
                return any(n.startswith("torch.") for n in names) or self.layer(call.func) is not None
        if isinstance(parent, cst.Element):  # `torch.cat([z1, z2])`
            holder = self.ctx.parent(self.ctx.parent(parent))
            call = self.ctx.parent(holder)
            return isinstance(call, cst.Call) and any(
                n.startswith("torch.") for n in self.ctx.qualified_names(call.func)
            )
        return False

    def _param_tensor_like(self, param: cst.Param) -> bool:
        func = self.ctx.enclosing(param, cst.FunctionDef)
        if func is None or func.name.value == "__init__" or param.name.value in ("self", "cls"):
            return False
        if param.default is not None and isinstance(param.default, (*_LITERALS, cst.Name, cst.UnaryOperation)):
            return False
        annotation = param.annotation.annotation if param.annotation is not None else None
        return not (isinstance(annotation, cst.Name) and annotation.value in ("int", "float", "bool", "str"))

    # -- following -------------------------------------------------------------------------
    def follow(
        self, start: cst.CSTNode, through: bool = False, fresh: frozenset[int] = frozenset(), matmuls: bool = False
    ) -> Flow:
        """Follow the value of the expression ``start`` (see the module docstring). ``fresh``:
        ids of the nodes that carry other values made by the code audited; meeting one of them is
        recorded (``Meet.fresh``) and the flow goes on. ``matmuls``: go on through every op but a
        matmul, a weighted layer or a submodule whose other side is not ``fresh`` (where an f32 value
        would make the matmul f32), and stop there."""
        flow = Flow(start)
        self._fresh = fresh
        self._matmuls = matmuls
        through = through or matmuls
        queue: list[cst.CSTNode] = [start]
        while queue:
            node = queue.pop()
            if id(node) in flow.visited:
                continue
            flow.visited.add(id(node))
            queue.extend(self._step(node, flow, through))
        return flow

    def _step(self, node: cst.CSTNode, flow: Flow, through: bool) -> list[cst.CSTNode]:
        """What carries the value of ``node`` next (and what it meets on the way, into ``flow``)."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return self._attribute(parent, flow, through)
        if isinstance(parent, cst.Arg) and parent.value is node:
            return self._argument(parent, flow, through)
        if isinstance(parent, cst.BinaryOperation):
            other = parent.right if parent.left is node else parent.left
            kind = "matmul" if isinstance(parent.operator, cst.MatrixMultiply) else "arith"
            return self._meet_then(parent, [other], kind, flow, through, _expression(node))
        if isinstance(parent, (cst.UnaryOperation, cst.IfExp)) and getattr(parent, "test", None) is not node:
            return [parent]
        if isinstance(parent, cst.Subscript) and parent.value is node:
            return [parent]
        if isinstance(parent, cst.AssignTarget):  # `t[i] = ...` writes into the value
            flow.ends += 1
            return []
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation, cst.Index, cst.Expr)):
            flow.ends += 1
            return []
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
            return self._assigned(parent, flow)
        if isinstance(parent, cst.AugAssign):
            return self._augmented(parent, node, flow, through)
        if isinstance(parent, cst.Element):
            return self._element(parent, flow, through)
        flow.escapes.append(parent if parent is not None else node)
        return []

    def _meet_then(
        self,
        at: cst.CSTNode,
        others: list[cst.BaseExpression],
        kind: str,
        flow: Flow,
        through: bool,
        via: cst.BaseExpression | None = None,
    ) -> list[cst.CSTNode]:
        """Record the tensors among ``others`` met at ``at`` (the value carried in by ``via``); go
        on with ``at`` unless one was met and the flow stops at meetings."""
        met = False
        for other in others:
            if id(other) in self._fresh:
                flow.meets.append(Meet(other, at, kind, fresh=True, via=via))
            elif self.tensor_like(other) and self.dtypes.infer(other) != INT:  # an integer decides no float dtype
                flow.meets.append(Meet(other, at, kind, via=via))
                met = met or not self.maybe_number(other)  # a Python number decides no dtype: go on
        if kind == "matmul":
            flow.matmuls.append(at)
            if met and self._matmuls:
                return []
        return [at] if through or not met else []

    def _attribute(self, attribute: cst.Attribute, flow: Flow, through: bool) -> list[cst.CSTNode]:
        """``value.<attr>``: a method call on the value, or an attribute of it."""
        name = attribute.attr.value
        call = self.ctx.parent(attribute)
        if not (isinstance(call, cst.Call) and call.func is attribute):
            if name in _TRANSPARENT_ATTRS:
                return [attribute]
            flow.ends += 1
            return []
        rules = self.rules
        if name in rules.ends:
            flow.ends += 1
            return []
        if name in ("to", "type"):
            kind = cast_kind(self.ctx, call) if call.args else "unknown"
            if kind in ("low", "like"):
                flow.casts_back.append(call)
                return []
            return [call]
        if name in rules.low_casts or name in rules.cast_like:
            flow.casts_back.append(call)
            return []
        if name in self.ctx.rules.torch_api.same_dtype_methods:
            # the result has the receiver's dtype (rules/torch_api.toml [methods] same): the
            # arguments are sizes, dims or a tensor whose shape alone is read (`expand(batch, -1)`,
            # `view_as(x)`), never an operand the value meets
            return [call]
        index = spec_argument(call, rules.index_methods.get(name))
        others = [a.value for a in call.args if a is not index]
        # a scatter into the value (`[flow.source_methods]`: `zeros(..., dtype=torch.float32).scatter_add(0, i, h)`)
        # takes no promotion: its source must have the value's dtype, as a matmul's operands must (torch-xla 2.9's
        # HLO verifier: "Seen floating point types of different precisions", a hunt's op probe)
        strict = name in rules.matmul_methods or name in rules.source_methods
        kind = "matmul" if strict else "arith"
        inplace = name.endswith("_") and not name.endswith("__")  # written into the value: it keeps its dtype
        via = None if inplace else attribute.value
        return self._meet_then(call, others, kind, flow, through, via) if others else [call]

    def _argument(self, arg: cst.Arg, flow: Flow, through: bool) -> list[cst.CSTNode]:
        """The value is an argument of a call: a method of another tensor, a torch function, a
        layer of the module, or something that cannot be followed."""
        call = self.ctx.parent(arg)
        assert isinstance(call, cst.Call), "an Arg belongs to a Call"
        func = call.func
        names = self.ctx.qualified_names(func)
        if isinstance(func, cst.Attribute) and not m.matches(func.value, m.Name("self")):
            spec = self.rules.index_methods.get(func.attr.value)
        else:
            spec = next((self.rules.index_functions[n] for n in names if n in self.rules.index_functions), None)
        index = spec_argument(call, spec)
        if names & self.rules.host_functions or arg is index:  # a host value, or used as indices
            flow.ends += 1
            return []
        others = [a.value for a in call.args if a is not arg and a is not index]
        if isinstance(func, cst.Attribute) and not m.matches(func.value, m.Name("self")):
            return self._method_argument(call, func, others, flow, through, arg.value)
        if names & self.rules.matmul_functions:
            return self._meet_then(call, others, "matmul", flow, through, arg.value)
        if any(n.startswith("torch.") for n in names) or loss_module(self.ctx, func):
            # a torch function, or an instance of a torch.nn loss class (`criterion(out.float(), y)` of
            # `criterion = nn.CrossEntropyLoss()`): its functional form, computed as torch computes it
            return self._meet_then(call, others, "arith", flow, through, arg.value)
        layer = self.layer(func)
        if layer is not None:
            weight, kind = layer
            if kind == "gather":  # an embedding's input is an index: it carries no dtype on
                flow.ends += 1
                return []
            flow.meets.append(Meet(None, call, kind, weight, via=arg.value))
            if kind == "matmul":
                flow.matmuls.append(call)
                if self._matmuls:
                    return []
            return [call] if through else []
        if (not through or self._matmuls) and self._handed_to_submodule(call, arg, flow):
            return []
        flow.escapes.append(call)
        return []

    def _handed_to_submodule(self, call: cst.Call, handed: cst.Arg, flow: Flow) -> bool:
        """The value (or a tuple holding it, ``handed``) is an argument of a submodule of ``self``
        the model's cast reaches (:mod:`.submodule_inputs`: an RNN's initial state): it meets the
        submodule's parameters (``Meet.kind`` ``"module"``) and the flow stops there (the output has
        their dtype). Only when the flow stops at meetings: an upcast island handed on still leaves."""
        found = receiver(self.ctx, call, handed)
        if found is None:
            return False
        beside = found.beside if found.beside is not None and id(found.beside) not in self._fresh else None
        via = handed.value if not isinstance(handed.value, (cst.Tuple, cst.List)) else None  # a state tuple: no cast
        flow.meets.append(Meet(beside, call, "module", found.parameters, via=via))
        return True

    def _method_argument(
        self,
        call: cst.Call,
        func: cst.Attribute,
        others: list[cst.BaseExpression],
        flow: Flow,
        through: bool,
        via: cst.BaseExpression,
    ) -> list[cst.CSTNode]:
        name = func.attr.value
        if name in ("to", "type") or name in self.rules.cast_like:  # used for its dtype or device only
            flow.ends += 1
            return []
        if name == "save_for_backward":
            saved = self._saved_for_backward(call, via)
            if saved is not None:  # it goes on in `backward`, where `ctx.saved_tensors` hands it back
                return self.references(saved)
        receiver = func.value
        if name.endswith("_") and not name.endswith("__"):  # written into the receiver, which keeps its dtype
            flow.meets.append(Meet(receiver, call, "into", fresh=id(receiver) in self._fresh, via=via))
            self._meet_then(call, others, "arith", flow, through, via)
            return []
        strict = name in self.rules.matmul_methods or name in self.rules.source_methods  # a scatter's source too
        return self._meet_then(call, [receiver, *others], "matmul" if strict else "arith", flow, through, via)

    def _saved_for_backward(self, call: cst.Call, value: cst.BaseExpression) -> cst.Name | None:
        """The name ``backward`` unpacks ``value`` into from ``ctx.saved_tensors`` (``(mask,) = ctx.saved_tensors``),
        where ``call`` is ``ctx.save_for_backward(..., value, ...)`` in a ``torch.autograd.Function``'s ``forward``
        (torch docs, "Extending torch.autograd": the saved tensors come back in that order); None otherwise. A mask
        saved for a straight-through estimator meets the gradient there, not ``ctx`` (a hunt's refusal)."""
        cls = self.ctx.enclosing(call, cst.ClassDef)
        if cls is None or not any("torch.autograd.Function" in self.ctx.qualified_names(b.value) for b in cls.bases):
            return None
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        index = next((i for i, v in enumerate(positional) if v is value), None)
        backward = next(
            (f for f in cls.body.body if isinstance(f, cst.FunctionDef) and f.name.value == "backward"), None
        )
        if index is None or backward is None:
            return None
        for assign in findall(backward.body, m.Assign(value=m.Attribute(attr=m.Name("saved_tensors")))):
            assert isinstance(assign, cst.Assign), "findall of m.Assign()"
            target = assign.targets[0].target if len(assign.targets) == 1 else None
            if isinstance(target, (cst.Tuple, cst.List)) and index < len(target.elements):
                named = target.elements[index].value
                return named if isinstance(named, cst.Name) else None
        return None

    def layer(self, func: cst.BaseExpression) -> tuple[str, str] | None:
        """For ``self.<attr>(...)`` where ``self.<attr>`` is a torch.nn layer of
        ``rules/model_code.toml`` ``[flow.weighted_layers]``: (its weight's code, its kind)."""
        if not m.matches(func, m.Attribute(value=m.Name("self"))):
            return None
        assert isinstance(func, cst.Attribute), "matched an Attribute"
        cls = self.ctx.enclosing(func, cst.ClassDef)
        if cls is None:
            return None
        kinds = set()
        for value in self_assigned(self.ctx, cls, func.attr.value):
            if not isinstance(value, cst.Call):
                return None
            found = [
                self.rules.weighted_layers[n]
                for n in self.ctx.qualified_names(value.func)
                if n in self.rules.weighted_layers
            ]
            if not found:
                return None
            kinds.update(found)
        if len(kinds) != 1:
            return None
        return f"self.{func.attr.value}.weight", kinds.pop()

    def _assigned(self, assign: cst.Assign | cst.AnnAssign, flow: Flow) -> list[cst.CSTNode]:
        """``target = value``: the reads of each name bound, the ``self.<attr>`` reads of the class,
        or (``t[i] = value``) a write into ``t``."""
        targets = [t.target for t in assign.targets] if isinstance(assign, cst.Assign) else [assign.target]
        nexts: list[cst.CSTNode] = []
        for target in targets:
            if isinstance(target, cst.Subscript):
                if _keyed(target) or not self.tensor_like(target.value):  # `state["k"] = v`, `cache[n] = v`: stored
                    flow.escapes.append(assign)
                else:
                    into = target.value
                    value = assign.value
                    flow.meets.append(Meet(into, assign, "into", fresh=id(into) in self._fresh, via=value))
                continue
            if isinstance(target, cst.Attribute):
                nexts.extend(self._attribute_reads(target))
                continue
            names = [target] if isinstance(target, cst.Name) else findall(target, m.Name())
            for name in names:
                assert isinstance(name, cst.Name), "findall of Name"
                nexts.extend(self.references(name))
        return nexts

    def _augmented(self, aug: cst.AugAssign, node: cst.CSTNode, flow: Flow, through: bool) -> list[cst.CSTNode]:
        if aug.value is node:  # t += value: written into t
            flow.meets.append(Meet(aug.target, aug, "into", fresh=id(aug.target) in self._fresh, via=aug.value))
            return []
        nexts = self._meet_then(aug, [aug.value], "arith", flow, through)
        if isinstance(aug.target, cst.Name) and nexts:
            return self.references(aug.target)
        return []

    def _element(self, element: cst.Element, flow: Flow, through: bool) -> list[cst.CSTNode]:
        """An element of a list or tuple: followed only as an argument of a torch function
        (``torch.cat([a, b])``), where it meets the other elements."""
        container = self.ctx.parent(element)
        holder = self.ctx.parent(container)
        if isinstance(container, (cst.List, cst.Tuple)) and isinstance(holder, cst.Arg):
            call = self.ctx.parent(holder)
            if isinstance(call, cst.Call) and any(n.startswith("torch.") for n in self.ctx.qualified_names(call.func)):
                others = [e.value for e in container.elements if e is not element]
                return self._meet_then(container, others, "arith", flow, through, element.value)
        unpacked = self._unpacked(element, container, holder)
        if unpacked is not None:
            return unpacked
        if (
            (not through or self._matmuls)
            and isinstance(container, cst.Tuple)
            and self._state_tuple(container, holder, flow)
        ):
            return []
        flow.escapes.append(container if container is not None else element)
        return []

    def _unpacked(
        self, element: cst.Element, container: cst.CSTNode | None, holder: cst.CSTNode | None
    ) -> list[cst.CSTNode] | None:
        """``a, b = x, y`` with the value in ``x``: the reads of ``a`` (the name at the same place
        of a target of the same length); None for any other container."""
        if not (isinstance(container, cst.Tuple) and isinstance(holder, cst.Assign) and holder.value is container):
            return None
        if len(holder.targets) != 1 or not isinstance(holder.targets[0].target, (cst.Tuple, cst.List)):
            return None
        names = holder.targets[0].target.elements
        if len(names) != len(container.elements) or any(isinstance(e, cst.StarredElement) for e in names):
            return None
        target = names[[id(e) for e in container.elements].index(id(element))].value
        return self.references(target) if isinstance(target, cst.Name) else None

    def _state_tuple(self, container: cst.Tuple, holder: cst.CSTNode | None, flow: Flow) -> bool:
        """A tuple holding the value handed to submodules of ``self`` (an LSTM's ``(h0, c0)``):
        directly (``self.rnn(x, (h0, c0))``, ``hx=(h0, c0)``) or through a name every read of which
        is so handed (``state = (h0, c0)``; ``self.rnn(x, state)``). Records the meets; False (and
        nothing recorded) when one use is anything else."""
        if isinstance(holder, cst.Arg):
            call = self.ctx.parent(holder)
            return isinstance(call, cst.Call) and self._handed_to_submodule(call, holder, flow)
        if not (isinstance(holder, cst.Assign) and holder.value is container and len(holder.targets) == 1):
            return False
        target = holder.targets[0].target
        reads = self.references(target) if isinstance(target, cst.Name) else []
        handed: list[tuple[cst.Call, cst.Arg]] = []
        for read in reads:
            arg = self.ctx.parent(read)
            call = self.ctx.parent(arg)
            if not (isinstance(arg, cst.Arg) and isinstance(call, cst.Call) and receiver(self.ctx, call, arg)):
                return False
            handed.append((call, arg))
        for call, arg in handed:
            self._handed_to_submodule(call, arg, flow)
        return bool(handed)

    def references(self, name: cst.Name) -> list[cst.CSTNode]:
        """The reads of the binding of ``name`` made where ``name`` is assigned."""
        scope = self.ctx.scopes.get(name)
        if scope is None:
            return []
        reads: list[cst.CSTNode] = []
        for a in scope.assignments[name.value]:
            if a.node is name:
                reads.extend(access.node for access in a.references)
        return reads

    def _attribute_reads(self, target: cst.Attribute) -> list[cst.CSTNode]:
        """The reads of ``self.<attr>`` in the class that stores the value there."""
        if not m.matches(target.value, m.Name("self")):
            return []
        cls = self.ctx.enclosing(target, cst.ClassDef)
        if cls is None:
            return []
        pattern = m.Attribute(value=m.Name("self"), attr=m.Name(target.attr.value))
        return [
            node
            for node in findall(cls, pattern, self.ctx.index)
            if node is not target and not isinstance(self.ctx.parent(node), cst.AssignTarget)
        ]


def _expression(node: cst.CSTNode) -> cst.BaseExpression | None:
    return node if isinstance(node, cst.BaseExpression) else None


def spec_argument(call: cst.Call, spec: tuple[int, str] | None) -> cst.Arg | None:
    """The argument of ``call`` that ``spec`` (position, keyword: ``rules/model_code.toml``
    ``[flow.index_methods]``) names as its index or mask, if given."""
    if spec is None:
        return None
    at, keyword = spec
    named = next((a for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
    if named is not None:
        return named
    positional = [a for a in call.args if a.keyword is None]
    return positional[at] if at < len(positional) else None


def _keyed(target: cst.Subscript) -> bool:
    """``d["key"]``: an item of a container named by a string, not a slice of a tensor."""
    return (
        len(target.slice) == 1
        and isinstance(target.slice[0].slice, cst.Index)
        and isinstance(target.slice[0].slice.value, cst.SimpleString)
    )
