"""Follow a tensor value past the function that makes it, to where it meets another tensor.

Under the legacy switch every floating tensor on the XLA device was bf16 (torch_xla/csrc/dtype.cpp,
``MaybeDowncastToXlaDeviceType``), the tensors the model's code makes included. After
``model.to(torch.bfloat16)`` a tensor made f32 changes the run only where it meets a bf16 one: by
PyTorch's type promotion (docs, "Type Promotion") the result of an op between f32 and bf16 is f32.
When the line that makes it cannot take a dtype (nothing of the dtype it meets is known there: a
position table made by a module-level function and returned, a cache registered as a buffer in
``forward``, a tensor handed to a helper), the value is followed to the place it first meets a tensor
whose dtype is known, in the file: :class:`ValueReach` continues a :class:`~.tensor_flow.TensorFlow`
follow across

* a ``return``: at each call of the function in the code a training step runs (``table =
  sinusoid_table(T, d, device)`` in ``forward``); the ``return`` of a submodule's ``forward`` is the
  module's output (an *exit*: it meets whatever the caller does with it), that of the model's own
  ``forward`` (the class the training script builds) goes on at the model's calls in the step;
* an argument of a function or method of the file, or of a submodule of ``self`` built from a class
  of the file: at the reads of the parameter it is bound to;
* ``self.register_buffer("name", value)`` (or ``self.name = value``) made while the step runs: at
  the reads of ``self.name`` in the class (a buffer registered after ``model.to`` keeps its dtype);
* ``state["key"] = value`` (an optimizer's state): at the reads of ``["key"]`` of that state in the
  class.

Where it cannot be followed (a container, a call of code outside the file, a function nothing in
the step calls) is *lost*: the caller names that line. :class:`Cast` is one cast written where the
value meets a tensor of known dtype (``x + table.to(x.dtype)``); :func:`plan_cast` writes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m

from .apply import EditPlan
from .bindings import assigned_values, definitions, self_assigned
from .context import FileContext, findall
from .model_reach import Reached
from .tensor_flow import Flow, Meet, TensorFlow
from .unit_examples import Example, script

__all__ = ["EXAMPLES", "Cast", "Reach", "ValueReach", "cast_to", "plan_cast"]

_MAX_HOPS = 6
_STATE_ROOT = "self.state"


@dataclass
class Reach:
    """Where one value goes across the file (see the module docstring): the ``flows`` followed
    (the value's own, then one per place it went on from), where it was ``lost`` (an escape that
    cannot be followed) and the ``exits`` (``return`` of a submodule's ``forward``)."""

    flows: list[Flow] = field(default_factory=list)
    lost: list[cst.CSTNode] = field(default_factory=list)
    exits: list[cst.Return] = field(default_factory=list)

    @property
    def meets(self) -> list[Meet]:
        return [meet for flow in self.flows for meet in flow.meets]

    @property
    def visited(self) -> set[int]:
        return set().union(*(flow.visited for flow in self.flows)) if self.flows else set()

    @property
    def matmuls(self) -> list[cst.CSTNode]:
        return [node for flow in self.flows for node in flow.matmuls]

    @property
    def casts_back(self) -> list[cst.CSTNode]:
        return [node for flow in self.flows for node in flow.casts_back]


@dataclass
class Cast:
    """A cast of the value where it meets a tensor of known dtype: ``via`` (the expression that
    carries it into the op, as written) becomes ``via.to(<carrier>.dtype)``; ``at`` is the op."""

    via: cst.BaseExpression
    carrier: str
    at: cst.CSTNode


class ValueReach:
    """Follows values across the functions of one file (see the module docstring). ``reached``
    says which code a training step runs (:mod:`.model_reach`): only the calls made there are
    followed."""

    def __init__(self, ctx: FileContext, flows: TensorFlow, reached: Reached) -> None:
        self.ctx = ctx
        self.flows = flows
        self.reached = reached

    def follow(
        self, starts: Iterable[cst.CSTNode], through: bool, fresh: frozenset[int], matmuls: bool = False
    ) -> Reach:
        """Follow each of ``starts`` as :meth:`.TensorFlow.follow` does (``through``, ``fresh``,
        ``matmuls``), then every escape on as far as it can be followed (at most a few hops)."""
        reach = Reach()
        pending = [(start, 0) for start in starts]
        seen: set[int] = set()
        while pending:
            start, hops = pending.pop(0)
            if id(start) in seen:
                continue
            seen.add(id(start))
            flow = self.flows.follow(start, through=through, fresh=fresh, matmuls=matmuls)
            reach.flows.append(flow)
            for escape in flow.escapes:
                if self._gradient_returned(escape):
                    continue  # autograd casts it to its input's dtype: it ends there
                exit_ = self._exit(escape)
                if exit_ is not None:
                    reach.exits.append(exit_)
                    continue
                nexts = self._onward(escape, flow) if hops < _MAX_HOPS else None
                if nexts is None:
                    reach.lost.append(escape)
                else:
                    pending.extend((node, hops + 1) for node in nexts)
        return reach

    # -- where a value goes on from an escape ----------------------------------------------------
    def _gradient_returned(self, escape: cst.CSTNode) -> bool:
        """The ``return`` of a ``torch.autograd.Function``'s ``backward``: the engine casts each
        gradient it returns to the dtype of the input it is the gradient of (torch's
        ``torch/csrc/autograd/engine.cpp``, ``validate_outputs``), so an f32 gradient of a bf16 input
        goes on as bf16: the value ends there, as an island that casts itself back."""
        parent = self.ctx.parent(escape)
        returned = parent if isinstance(escape, cst.Tuple) and isinstance(parent, cst.Return) else escape
        if not isinstance(returned, cst.Return):  # `return grad_x, None`: one gradient per input
            return False
        func = self.ctx.enclosing(returned, cst.FunctionDef)
        if func is None or func.name.value != "backward":
            return False
        cls = self.ctx.enclosing(func, cst.ClassDef)
        return cls is not None and any(
            "torch.autograd.Function" in self.ctx.qualified_names(base.value) for base in cls.bases
        )

    def _exit(self, escape: cst.CSTNode) -> cst.Return | None:
        """The ``return`` of a submodule's ``forward``: the module's output, met by its caller."""
        if not isinstance(escape, cst.Return):
            return None
        func = self.ctx.enclosing(escape, cst.FunctionDef)
        cls = self.ctx.enclosing(func, cst.ClassDef) if func is not None else None
        if func is None or cls is None or func.name.value not in ("forward", "__call__"):
            return None
        if any(c is cls for c in self.reached.roots) or self.reached.uncast(cls) or self._optimizer(cls):
            return None
        return escape

    def _onward(self, escape: cst.CSTNode, flow: Flow) -> list[cst.CSTNode] | None:
        """The nodes the value goes on from after ``escape``, or None when it cannot be followed."""
        if isinstance(escape, cst.Return):
            return self._returned(escape)
        if isinstance(escape, cst.Tuple) and isinstance(self.ctx.parent(escape), cst.Return):
            return self._returned_in_tuple(escape, flow)
        if isinstance(escape, cst.Call):
            return self._handed(escape, flow)
        if isinstance(escape, cst.Assign):
            return self._stored(escape)
        return None

    def _returned(self, ret: cst.Return) -> list[cst.CSTNode] | None:
        """A value returned: the calls of the function in the code a step runs; of the model's own
        ``forward``, the model's calls in the step; of a loss class's ``forward`` or an optimizer's
        ``step``, nothing more (the step's loss, the optimizer's return value)."""
        func = self.ctx.enclosing(ret, cst.FunctionDef)
        if func is None:
            return None
        cls = self.ctx.enclosing(func, cst.ClassDef)
        if cls is not None and func.name.value in ("forward", "__call__"):
            if self.reached.uncast(cls):
                return []
            if any(c is cls for c in self.reached.roots):
                return list(self.reached.model_calls) or None
        if cls is not None and self._optimizer(cls):
            return []
        calls = self._calls_of(func, cls)
        return calls or None

    def _returned_in_tuple(self, returned: cst.Tuple, flow: Flow) -> list[cst.CSTNode] | None:
        """``return cos, sin``: at each call, unpacked into as many names (``cos, sin = f(...)``),
        the reads of the name at the value's place; None where a call does anything else."""
        ret = self.ctx.parent(returned)
        assert isinstance(ret, cst.Return), "the caller checked"
        places = [i for i, e in enumerate(returned.elements) if id(e.value) in flow.visited]
        calls = self._returned(ret)
        if not places or calls is None:
            return None
        reads: list[cst.CSTNode] = []
        for call in calls:
            assign = self.ctx.parent(call)
            if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1):
                return None
            names = assign.targets[0].target
            if not isinstance(names, (cst.Tuple, cst.List)) or len(names.elements) != len(returned.elements):
                return None
            for i in places:
                name = names.elements[i].value
                if not isinstance(name, cst.Name):
                    return None
                reads.extend(self.flows.references(name))
        return reads

    def _calls_of(self, func: cst.FunctionDef, cls: cst.ClassDef | None) -> list[cst.CSTNode]:
        """The calls of ``func`` (by its name, or ``self.<name>(...)`` in its class) made in the code
        a step runs."""
        calls: list[cst.CSTNode] = []
        if cls is None:
            scope = self.ctx.scopes.get(func)
            for assignment in scope.assignments[func.name.value] if scope is not None else ():
                if assignment.node is not func:
                    continue
                for access in assignment.references:
                    call = self.ctx.parent(access.node)
                    if isinstance(call, cst.Call) and call.func is access.node and self._in_step(call):
                        calls.append(call)
            return calls
        pattern = m.Call(func=m.Attribute(value=m.Name("self"), attr=m.Name(func.name.value)))
        return [call for call in findall(cls, pattern, self.ctx.index) if self._in_step(call)]

    def _in_step(self, node: cst.CSTNode) -> bool:
        func = self.ctx.enclosing(node, cst.FunctionDef)
        if self.reached.is_runtime(func):
            return True
        scope = func if func is not None else self.ctx.module
        return any(s is scope for s in self.reached.steps)

    def _handed(self, call: cst.Call, flow: Flow) -> list[cst.CSTNode] | None:
        """A value handed to a call: registered as a buffer of ``self`` (at the reads of the
        attribute), or bound to a parameter of a function, method or submodule of the file (at its
        reads)."""
        arg = next((a for a in call.args if id(a.value) in flow.visited), None)
        if arg is None or arg.star:
            return None
        if m.matches(call.func, m.Attribute(value=m.Name("self"), attr=m.Name("register_buffer"))):
            name = call.args[0].value if call.args else None
            if arg is call.args[0] or not isinstance(name, cst.SimpleString):
                return None
            attr = name.evaluated_value
            cls = self.ctx.enclosing(call, cst.ClassDef)
            return self._attribute_reads(cls, attr) if isinstance(attr, str) and cls is not None else None
        target = self._callee(call.func)
        if target is None:
            return None
        param = _parameter_for(call, arg, target, skip_self=self._bound_method(call.func, target))
        return self._parameter_reads(param) if param is not None else None

    def _parameter_reads(self, param: cst.Param) -> list[cst.CSTNode]:
        """The reads of a parameter in its function (libcst's scope records the ``Param`` node)."""
        scope = self.ctx.scopes.get(param.name)
        if scope is None:
            return []
        return [access.node for a in scope.assignments[param.name.value] if a.node is param for access in a.references]

    def _callee(self, func: cst.BaseExpression) -> cst.FunctionDef | None:
        """The function of the file a call of ``func`` runs: a module-level function by name, a
        method ``self.<name>`` of the class, or the ``forward`` of the class a submodule
        ``self.<attr>`` of the file is built from."""
        if isinstance(func, cst.Name):
            defs = [d for d in definitions(self.ctx, func) if isinstance(d, cst.FunctionDef)]
            return defs[0] if len(defs) == 1 else None
        if not m.matches(func, m.Attribute(value=m.Name("self"))):
            return None
        assert isinstance(func, cst.Attribute), "matched an Attribute"
        cls = self.ctx.enclosing(func, cst.ClassDef)
        if cls is None:
            return None
        methods = [st for st in cls.body.body if isinstance(st, cst.FunctionDef) and st.name.value == func.attr.value]
        if methods:
            return methods[0] if len(methods) == 1 else None
        classes = {
            id(d): d
            for value in self_assigned(self.ctx, cls, func.attr.value)
            if isinstance(value, cst.Call)
            for d in definitions(self.ctx, value.func)
            if isinstance(d, cst.ClassDef)
        }
        if len(classes) != 1:
            return None
        (built,) = classes.values()
        forwards = [st for st in built.body.body if isinstance(st, cst.FunctionDef) and st.name.value == "forward"]
        return forwards[0] if len(forwards) == 1 else None

    @staticmethod
    def _bound_method(func: cst.BaseExpression, target: cst.FunctionDef) -> bool:
        params = target.params.params
        return isinstance(func, cst.Attribute) and bool(params) and params[0].name.value == "self"

    def _stored(self, assign: cst.Assign) -> list[cst.CSTNode] | None:
        """``state["key"] = value``, ``self.cache[n] = value``: the reads of the same item (the
        same container and key, as written) in the function, or, for an optimizer's state (a name
        bound to ``self.state[...]``) and a container held by ``self``, in the class."""
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Subscript):
            return None
        target = assign.targets[0].target
        assert isinstance(target, cst.Subscript), "checked above"
        holder = target.value
        if not (isinstance(holder, cst.Name) or m.matches(holder, m.Attribute(value=m.Name("self")))):
            return None
        state = isinstance(holder, cst.Name) and self._optimizer_state(holder)
        func = self.ctx.enclosing(assign, cst.FunctionDef)
        where: cst.CSTNode = func or self.ctx.module
        if state or isinstance(holder, cst.Attribute):
            where = self.ctx.enclosing(where, cst.ClassDef) or where
        key = self.ctx.code(target.slice[0]) if len(target.slice) == 1 else None
        reads: list[cst.CSTNode] = []
        for sub in findall(where, m.Subscript()):
            assert isinstance(sub, cst.Subscript), "findall of Subscript"
            if sub is target or isinstance(self.ctx.parent(sub), cst.AssignTarget) or not self._in_step(sub):
                continue
            if len(sub.slice) != 1 or self.ctx.code(sub.slice[0]) != key:
                continue
            same = self.ctx.code(sub.value) == self.ctx.code(holder)
            if same or (state and isinstance(sub.value, cst.Name) and self._optimizer_state(sub.value)):
                reads.append(sub)
        return reads

    def _optimizer_state(self, name: cst.Name) -> bool:
        """Whether ``name`` is bound only to ``self.state[...]`` in an optimizer class's method."""
        cls = self.ctx.enclosing(name, cst.ClassDef)
        if cls is None or not self._optimizer(cls):
            return False
        values = assigned_values(self.ctx, name)
        return bool(values) and all(self.ctx.code(v).startswith(_STATE_ROOT) for v in values)

    def _optimizer(self, cls: cst.ClassDef) -> bool:
        return any(c is cls for c in self.reached.optimizers)

    def _attribute_reads(self, cls: cst.ClassDef, attr: str) -> list[cst.CSTNode]:
        pattern = m.Attribute(value=m.Name("self"), attr=m.Name(attr))
        return [
            read
            for read in findall(cls, pattern, self.ctx.index)
            if not isinstance(self.ctx.parent(read), cst.AssignTarget) and self._in_step(read)
        ]


def _parameter_for(call: cst.Call, arg: cst.Arg, target: cst.FunctionDef, skip_self: bool) -> cst.Param | None:
    """The parameter of ``target`` that ``arg`` of ``call`` binds (positionally or by keyword)."""
    params = list(target.params.posonly_params) + list(target.params.params)
    if skip_self and params:
        params = params[1:]
    if arg.keyword is not None:
        named = params + list(target.params.kwonly_params)
        return next((p for p in named if p.name.value == arg.keyword.value), None)
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in positional):
        return None
    index = next(i for i, a in enumerate(positional) if a is arg)
    return params[index] if index < len(params) else None


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.SimpleString, cst.Integer, cst.Float)


def cast_to(node: cst.BaseExpression, dtype: cst.BaseExpression) -> cst.Call:
    """``node.to(dtype)``, ``node`` parenthesized when it is not an atom (``(a * b).to(d)``)."""
    if not isinstance(node, _ATOMS) or node.lpar:
        inner = node if node.lpar else node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    else:
        inner = node
    return cst.Call(func=cst.Attribute(value=inner, attr=cst.Name("to")), args=[cst.Arg(dtype)])


def plan_cast(plan: EditPlan, cast: Cast) -> None:
    """Write ``cast`` into ``plan``: its ``via`` becomes ``via.to(<carrier>.dtype)``. A node the
    plan already replaces keeps that replacement, cast after it."""
    dtype = cst.parse_expression(f"{cast.carrier}.dtype")
    earlier: Callable[[cst.CSTNode], cst.CSTNode] | None = plan.replace.get(id(cast.via))

    def replace(node: cst.CSTNode) -> cst.CSTNode:
        inner = earlier(node) if earlier is not None else node
        assert isinstance(inner, cst.BaseExpression), "an expression stays an expression"
        return cast_to(inner, dtype)

    plan.replace[id(cast.via)] = replace


# -- the unit's examples (tests/test_unit_examples.py) -------------------------------------------------
_TABLE = """
def sinusoid_table(n, dim, device):
    position = torch.arange(n, device=device).unsqueeze(1)
    table = torch.zeros(n, dim, device=device)
    table[:, 0::2] = torch.sin(position * 0.1)
    table[:, 1::2] = torch.cos(position * 0.1)
    return table
"""

_IN_A_TUPLE = """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(16, 8)
{kept}
    def forward(self, tokens):
        return self.embed(tokens), sinusoid_table(tokens.shape[1], 8, tokens.device)
"""
"""A model returning the table in a tuple (``kept``: a line keeping a module f32 by name, or nothing)."""

EXAMPLES = (
    Example(
        "returned table",
        script(
            _TABLE
            + """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(16, 8)

    def forward(self, tokens):
        x = self.embed(tokens)
        return x + sinusoid_table(tokens.shape[1], 8, tokens.device)
"""
        ),
        False,
        ("        return x + sinusoid_table(tokens.shape[1], 8, tokens.device).to(x.dtype)",),
        ("BFM087",),
    ),
    Example(
        "table registered while the step runs",
        script(
            _TABLE
            + """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(16, 8)
        self.register_buffer("table", sinusoid_table(4, 8, "cpu"), persistent=False)

    def forward(self, tokens):
        if tokens.shape[1] > self.table.shape[0]:
            self.register_buffer("table", sinusoid_table(tokens.shape[1], 8, tokens.device), persistent=False)
        return self.embed(tokens) + self.table[: tokens.shape[1]]
"""
        ),
        False,
        ("        return self.embed(tokens) + self.table[: tokens.shape[1]].to(self.embed.weight.dtype)",),
        ("BFM087",),
    ),
    Example(
        "handed to a helper",
        script(
            """
def add_positions(x, table):
    return x + table[: x.shape[1]]


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        table = torch.zeros(64, 8, device=x.device)
        table[:, 0] = 1.0
        return self.proj(add_positions(x, table))
"""
        ),
        False,
        ("    return x + table[: x.shape[1]].to(x.dtype)",),
        ("BFM087",),
    ),
    Example(
        "returned in a tuple and unpacked",
        script(
            """
def rotary(n, dim, device):
    inverse = 1.0 / (10000 ** (torch.arange(0, dim, 2, device=device).float() / dim))
    angles = torch.arange(n, device=device).float()[:, None] * inverse[None, :]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = torch.nn.Linear(8, 8)

    def forward(self, x):
        cos, sin = rotary(x.shape[1], 8, x.device)
        q = self.q(x)
        return q * cos + q.flip(-1) * sin
"""
        ),
        False,
        ("        return q * cos.to(q.dtype) + q.flip(-1) * sin.to(q.dtype)",),
        ("BFM087", "BFM087"),
    ),
    Example(
        "a torch.cat partner and a container item",
        script(
            """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.cache = {}

    def forward(self, x):
        n = x.shape[1]
        if n not in self.cache:
            self.cache[n] = torch.linspace(-1, 1, n, device=x.device).unsqueeze(-1)
        h = self.proj(x) * self.cache[n]
        return torch.cat([torch.zeros(x.shape[0], 1, 8, device=x.device), h], dim=1)
"""
        ),
        False,
        (
            "        h = self.proj(x) * self.cache[n].to(self.proj.weight.dtype)",
            "        return torch.cat([torch.zeros(x.shape[0], 1, 8, device=x.device, dtype=h.dtype), h], dim=1)",
        ),
        ("BFM087", "BFM080"),
    ),
    Example(
        "a buffer registered when the model is built",
        script(
            _TABLE
            + """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(16, 8)
        self.register_buffer("table", sinusoid_table(32, 8, "cpu"), persistent=False)

    def forward(self, tokens):
        return self.embed(tokens) + self.table[: tokens.shape[1]]
"""
        ),
        True,
        ("        return self.embed(tokens) + self.table[: tokens.shape[1]]",),
        (),
    ),
    Example(
        "lost in a tuple the model returns: the switch's rule at run time",
        script(_TABLE + _IN_A_TUPLE.format(kept="")),
        False,
        (
            "    table = bf16_on_xla(torch.zeros(n, dim, device=device))",
            "    table[:, 0::2] = torch.sin(bf16_on_xla(position * 0.1))",
        ),
        ("BFM080", "BFM080", "BFM080"),
    ),
    Example(
        "lost in a tuple the model returns, a module kept f32 by name",
        script(_TABLE + _IN_A_TUPLE.format(kept="        self.embed.float()\n")),
        True,
        ("        return self.embed(tokens), sinusoid_table(tokens.shape[1], 8, tokens.device)",),
        ("BFM085", "BFM081"),
        kept=True,
    ),
)
"""VALID and INVALID examples of following a value to where it meets (:class:`ValueReach`)."""
