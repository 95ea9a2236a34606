"""Tell, from the code alone, whether a tensor expression is floating-point or integer.

Under ``XLA_USE_BF16`` every floating tensor on the device became bf16 while integer tensors
(token ids, labels) stayed as they were (torch-xla `torch_xla/csrc/dtype.cpp`,
`MaybeDowncastToXlaDeviceType`). After ``model.to(torch.bfloat16)`` the floating inputs must be
cast explicitly and the integer ones must not, so the codemod needs each
input's dtype class. This module follows the data flow inside one file:

* names through their bindings (libcst ScopeProvider; ``for`` targets, tuple unpacking,
  ``x, y = next(iter(loader))``), ``self.attr`` through assignments in the same class;
* tensor factories (``rules/torch_api.toml``: ``torch.randn`` is float, ``torch.randint`` int,
  ``dtype=`` wins), tensor methods (``.to(device)`` keeps the class, ``.long()`` makes int),
  indexing, arithmetic (``/`` makes float);
* containers: ``TensorDataset(a, b)``, ``DataLoader(ds)``, ``MpDeviceLoader(loader, device)``,
  ``zip``, ``enumerate``, ``iter``/``next``, ``itertools.cycle``, and functions defined in the
  file (through their ``return`` statements).

The answer is ``FLOAT``, ``INT`` or ``UNKNOWN``; an unknown input becomes a diagnostic, never a
guessed cast.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from .bindings import argument, assigned_values, dtype_names, python_float, python_number
from .context import FileContext, findall
from .model_reach import built_class

FLOAT, INT, UNKNOWN = "float", "int", "unknown"
_CYCLE = "cycle"  # a name met again inside its own binding (`x = x.to(device)`): no information

# An op applied to a value: ("elem",) iterates over it once, ("index", i) takes item i of a
# tuple, ("any",) indexes with a non-literal (keeps a tensor's dtype, unknown for a tuple).
Op = tuple

_MAX_DEPTH = 40

_NAMED_ITEMS = {"values": 0, "indices": 1}
"""The fields of the (values, indices) named tuple of ``max(dim)``, ``topk``, ``sort``..."""

_ITER_SAME = {"builtins.iter", "itertools.cycle", "builtins.list", "builtins.tuple"}


def combine(results: Iterable[str]) -> str:
    """One class when all agree, else UNKNOWN (also for no results). Bindings that only lead
    back to the name being inferred (``x = x.to(device)``) add no information."""
    found = set(results)
    if found == {_CYCLE}:
        return _CYCLE
    found.discard(_CYCLE)
    return found.pop() if len(found) == 1 else UNKNOWN


class DtypeFlow:
    """Dtype-class inference over one file (see the module docstring for what is followed)."""

    def __init__(
        self, ctx: FileContext, model_calls: Sequence[cst.Call] = (), model_classes: Sequence[cst.ClassDef] = ()
    ) -> None:
        """``model_calls``: the calls of the model in its training steps (``model(ids, lengths)``),
        which are the calls of the ``forward`` of the classes it is built from (``model_classes``): a
        parameter of such a ``forward`` has the class of what they hand it (a submodule's ``forward``
        is called by the model's code, not by them)."""
        self.ctx = ctx
        self.api = ctx.rules.torch_api
        self.model_calls = list(model_calls)
        self._model_classes = list(model_classes)
        self._calls_by_class: dict[int, list[cst.Call]] | None = None
        self._active: set[tuple[int, tuple]] = set()

    # -- entry point -----------------------------------------------------------------------
    def infer(self, expr: cst.BaseExpression, ops: tuple = (), depth: int = 0) -> str:
        """The dtype class (FLOAT, INT or UNKNOWN) of ``expr`` after ``ops`` are applied."""
        result = self._infer_inner(expr, ops, depth)
        return UNKNOWN if result == _CYCLE and depth == 0 else result

    def _infer_inner(self, expr, ops, depth) -> str:
        key = (id(expr), ops)
        if key in self._active:
            return _CYCLE
        if depth > _MAX_DEPTH:
            return UNKNOWN
        self._active.add(key)
        try:
            return self._infer(expr, ops, depth + 1)
        finally:
            self._active.discard(key)

    # -- dispatch --------------------------------------------------------------------------
    def _infer(self, expr, ops, depth) -> str:
        if isinstance(expr, cst.Integer):
            return INT
        if isinstance(expr, cst.Float):
            return FLOAT
        if isinstance(expr, cst.Name):
            return self._name(expr, ops, depth)
        if isinstance(expr, (cst.Tuple, cst.List)):
            if ops and ops[0][0] == "index" and ops[0][1] < len(expr.elements):
                return self.infer(expr.elements[ops[0][1]].value, ops[1:], depth)
            return UNKNOWN
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)) and ops and ops[0] == ("elem",):
            return self.infer(expr.elt, ops[1:], depth)  # `[(torch.randn(8, 4), y) for ...]`, iterated
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr, ops, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, ops, depth)
        if isinstance(expr, cst.BinaryOperation):
            return self._binary(expr, depth)
        if isinstance(expr, cst.UnaryOperation):
            if isinstance(expr.operator, cst.BitInvert):
                return INT  # `~mask`: boolean or integer
            return self.infer(expr.expression, ops, depth)
        if isinstance(expr, cst.Comparison) and not ops:
            return INT  # a boolean tensor (or a Python bool): `(pred == y)`
        if isinstance(expr, cst.Call):
            return self._call(expr, ops, depth)
        return UNKNOWN

    def _attribute(self, expr: cst.Attribute, ops, depth) -> str:
        if (
            expr.attr.value in _NAMED_ITEMS
            and isinstance(expr.value, cst.Call)
            and m.matches(expr.value.func, m.Attribute(attr=m.OneOf(*map(m.Name, self.api.values_indices_methods))))
        ):  # `probs.max(dim=-1).indices`
            return self.infer(expr.value, (("index", _NAMED_ITEMS[expr.attr.value]),) + ops, depth)
        return self._self_attribute(expr, ops, depth)

    def _binary(self, expr: cst.BinaryOperation, depth) -> str:
        if isinstance(expr.operator, (cst.MatrixMultiply,)):
            return self.infer(expr.left, (), depth)
        if isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
            return INT  # defined for boolean and integer tensors only: a pair mask `(a > b) & valid`
        left, right = self.infer(expr.left, (), depth), self.infer(expr.right, (), depth)
        if FLOAT in (left, right):
            return FLOAT
        if left == right == INT:
            return FLOAT if isinstance(expr.operator, cst.Divide) else INT
        return UNKNOWN

    # -- names -----------------------------------------------------------------------------
    def _name(self, name: cst.Name, ops, depth) -> str:
        scope = self.ctx.scopes.get(name)
        if scope is None:
            return UNKNOWN
        assignments = [a for a in scope[name.value] if isinstance(a, Assignment)]
        if not assignments:
            return UNKNOWN
        augmented = [a for a in assignments if isinstance(self.ctx.parent(a.node), cst.AugAssign)]
        if (
            augmented
            and len(augmented) < len(assignments)
            and all(self._made_by_torch(a.node) for a in assignments if a not in augmented)
        ):
            # `hist += torch.bincount(...)` of a tensor torch made: an in-place op keeps its dtype (torch
            # raises where the result's cannot be cast back), so the other bindings tell (an IoU's counts)
            assignments = [a for a in assignments if a not in augmented]
        return combine(self._binding(a.node, ops, depth) for a in assignments)

    def _made_by_torch(self, target: cst.CSTNode) -> bool:
        """Whether ``target`` (a binding's node) is assigned the result of a call of torch's (a tensor)."""
        parent = self.ctx.parent(target)
        assign = self.ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else None
        value = assign.value if isinstance(assign, cst.Assign) else None
        return isinstance(value, cst.Call) and any(n.startswith("torch.") for n in self.ctx.qualified_names(value.func))

    def _binding(self, target: cst.CSTNode, ops, depth) -> str:
        """The class of the value bound to the target node ``target`` (a Name in an assignment
        target, a for-target, a function, a parameter...)."""
        if isinstance(target, cst.Param):  # ScopeProvider binds parameters to the Param node
            return self._parameter(target, ops, depth)
        path: list[Op] = []
        node = target
        while True:
            parent = self.ctx.parent(node)
            if isinstance(parent, cst.Element):
                container = self.ctx.parent(parent)
                assert isinstance(container, (cst.Tuple, cst.List, cst.Set)), (
                    "an Element belongs to a tuple, list or set"
                )
                path.insert(0, ("index", list(container.elements).index(parent)))
                node = container
                continue
            break
        stmt = self.ctx.parent(node)
        unpack = tuple(path)
        if isinstance(stmt, cst.AssignTarget):
            assign = self.ctx.parent(stmt)
            assert isinstance(assign, cst.Assign), "an AssignTarget belongs to an Assign"
            return self.infer(assign.value, unpack + ops, depth)
        if isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
            return self.infer(stmt.value, unpack + ops, depth)
        if isinstance(stmt, cst.For) and stmt.target is node:
            return self.infer(stmt.iter, (("elem",),) + unpack + ops, depth)
        if isinstance(stmt, cst.Param):
            return self._parameter(stmt, ops, depth)
        if isinstance(stmt, cst.AugAssign):
            return UNKNOWN
        if isinstance(target, cst.FunctionDef):
            return UNKNOWN
        return UNKNOWN

    def _parameter(self, param: cst.Param, ops, depth) -> str:
        """A parameter of a function defined in this file: the arguments passed to it at the
        file's call sites of that function (by position or keyword); for a ``forward``, also the
        model's calls (``model(ids, lengths)`` hands ``forward`` its ``lengths``)."""
        func = self.ctx.enclosing(param, cst.FunctionDef)
        if func is None or param.star:
            return UNKNOWN
        positional = list(func.params.posonly_params) + list(func.params.params)
        index = next((i for i, p in enumerate(positional) if p is param), None)
        if self.ctx.enclosing(func, cst.ClassDef) is not None and index is not None:
            index -= 1  # methods are called as obj.method(...): skip `self`
        results = []
        calls = self._calls_named(func.name.value)
        if func.name.value == "forward" and index is not None:
            calls = [*calls, *self._calls_of(self.ctx.enclosing(func, cst.ClassDef))]
        for call in calls:
            value = None
            for i, arg in enumerate(call.args):
                if arg.keyword is not None and arg.keyword.value == param.name.value:
                    value = arg.value
                elif arg.keyword is None and not arg.star and i == index:
                    value = arg.value
            if value is None:
                return UNKNOWN
            results.append(self.infer(value, ops, depth))
        return combine(results)

    def _calls_of(self, cls: cst.ClassDef | None) -> list[cst.Call]:
        """The model's calls (``model_calls``) that call a module built from ``cls``, one of the model's
        classes: each call's module read through the plain assignment that builds it (``model =
        TinyLM(cfg).to(device)``); with one model class, every call. Grouped once (a file of many training
        sites asks for each class's parameters: a scan of every call per parameter was quadratic)."""
        if cls is None or not any(c is cls for c in self._model_classes):
            return []
        if len(self._model_classes) == 1:
            return self.model_calls
        if self._calls_by_class is None:
            self._calls_by_class = {}
            for call in self.model_calls:
                values = assigned_values(self.ctx, call.func) if isinstance(call.func, cst.Name) else []
                built = {id(k) for v in values if (k := built_class(self.ctx, v)) is not None}
                if len(built) == 1:
                    self._calls_by_class.setdefault(built.pop(), []).append(call)
        return self._calls_by_class.get(id(cls), [])

    def _calls_named(self, name: str) -> list[cst.Call]:
        """The calls of the file whose callee is ``name`` or ``<anything>.name``, in source
        order (indexed once per file: every parameter followed asks)."""

        def index() -> dict[str, list[cst.Call]]:
            by_name: dict[str, list[cst.Call]] = {}
            for call in self.ctx.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Name):
                    by_name.setdefault(func.value, []).append(call)
                elif isinstance(func, cst.Attribute):
                    by_name.setdefault(func.attr.value, []).append(call)
            return by_name

        return self.ctx.memo(("calls by callee name",), index).get(name, [])

    def _self_attribute(self, expr: cst.Attribute, ops, depth) -> str:
        """``self.x``: every ``self.x = ...`` in the methods of the enclosing class."""
        if not m.matches(expr, m.Attribute(value=m.Name("self"))):
            return UNKNOWN
        cls = self.ctx.enclosing(expr, cst.ClassDef)
        if cls is None:
            return UNKNOWN
        values = [
            t_assign.value
            for t_assign in self.ctx.memo(("assignments in", cls), lambda: findall(cls, m.Assign(), self.ctx.index))
            for t in t_assign.targets
            if m.matches(t.target, m.Attribute(value=m.Name("self"), attr=m.Name(expr.attr.value)))
        ]
        return combine(self.infer(v, ops, depth) for v in values)

    def _subscript(self, expr: cst.Subscript, ops, depth) -> str:
        if len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            index = expr.slice[0].slice.value
            if isinstance(index, cst.Integer):
                return self.infer(expr.value, (("index", int(index.value)),) + ops, depth)
        return self.infer(expr.value, (("any",),) + ops, depth)

    # -- calls -----------------------------------------------------------------------------
    def _call(self, call: cst.Call, ops, depth) -> str:
        """The class of what ``call`` gives after ``ops``: a tensor factory's (``dtype=`` wins), a
        batch source's elements, what an iteration builtin passes through, or what the called
        method or function returns."""
        names = self.ctx.qualified_names(call.func)
        if "builtins.float" in names:  # a Python float: a tensor made from it is floating (torch.tensor's inference)
            return FLOAT
        explicit = self._dtype_kwarg(call)
        kind = self._factory_kind(names)
        if kind is not None:
            return explicit or self._factory(kind, call, depth)
        source = self._batch_source(names)
        if source is not None:
            return self._batches(source, call, ops, depth)
        passed = self._through_iteration(names, call, ops, depth)
        if passed is not None:
            return passed
        return self._callee_result(call, ops, depth, explicit)

    def _factory_kind(self, names: set[str]) -> str | None:
        """The kind of tensor factory (``rules/torch_api.toml`` ``[factories]``) a call of one of
        ``names`` is, for a function of the ``torch`` namespace (``torch.randn``, or a dotted path
        under it the table names: ``torch.nn.functional.one_hot``), or None."""
        for qn in names:
            if qn.startswith("torch."):
                kind = self.api.factories.get(qn.split(".", 1)[1])
                if kind is not None:
                    return kind
        return None

    def _through_iteration(self, names: set[str], call: cst.Call, ops, depth) -> str | None:
        """The class of what a dataset or iteration builtin gives after ``ops``, followed into the
        argument it came from (Python's "Built-in Functions" documentation for ``zip``,
        ``enumerate``, ``range``, ``iter``, ``next``, ``list``, ``tuple``; ``itertools.cycle``;
        ``torch.utils.data.TensorDataset`` yields the i-th tensor's row as item i); None when the
        call is none of these (or, for ``zip``/``enumerate``, not iterated)."""
        elem = bool(ops) and ops[0] == ("elem",)
        if any(q.endswith("TensorDataset") for q in names):
            return self._tensor_dataset_item(call, ops, depth)
        if "builtins.zip" in names and elem:
            return self._zip_item(call, ops, depth)
        if "builtins.enumerate" in names and elem:
            return self._enumerate_item(call, ops, depth)
        if "builtins.range" in names:
            return INT if elem else UNKNOWN
        if names & _ITER_SAME and call.args:
            return self.infer(call.args[0].value, ops, depth)
        if "builtins.next" in names and call.args:
            return self.infer(call.args[0].value, (("elem",),) + ops, depth)
        return None

    def _tensor_dataset_item(self, call: cst.Call, ops, depth) -> str:
        """Item ``i`` of an element of ``TensorDataset(a, b, ...)``: the class of its i-th tensor
        (``torch.utils.data.TensorDataset.__getitem__`` returns one row of each); UNKNOWN for
        anything else."""
        if ops and ops[0] == ("elem",) and len(ops) >= 2 and ops[1][0] == "index":
            i = ops[1][1]
            if i < len(call.args):
                return self.infer(call.args[i].value, (), depth)
        return UNKNOWN

    def _zip_item(self, call: cst.Call, ops, depth) -> str:
        """Item ``i`` of an element of ``zip(a, b, ...)``: an element of its i-th argument (Python
        docs, ``zip``: "the i-th tuple contains the i-th element from each of the argument
        iterables"); UNKNOWN when the item is not a literal index of an argument."""
        if len(ops) >= 2 and ops[1][0] == "index" and ops[1][1] < len(call.args):
            return self.infer(call.args[ops[1][1]].value, (("elem",),) + ops[2:], depth)
        return UNKNOWN

    def _enumerate_item(self, call: cst.Call, ops, depth) -> str:
        """Item 0 of an element of ``enumerate(it)`` is its count (INT), item 1 an element of
        ``it`` (Python docs, ``enumerate``); UNKNOWN otherwise."""
        if len(ops) >= 2 and ops[1] == ("index", 0):
            return INT
        if len(ops) >= 2 and ops[1] == ("index", 1) and call.args:
            return self.infer(call.args[0].value, (("elem",),) + ops[2:], depth)
        return UNKNOWN

    def _callee_result(self, call: cst.Call, ops, depth, explicit: str | None) -> str:
        """What a call of a method or a function of this file gives: a tensor method's class
        (``rules/torch_api.toml``), ``self.method()``'s or a local function's result; ``explicit``
        (the class of a ``dtype=`` argument) wins, UNKNOWN when nothing is known."""
        if isinstance(call.func, cst.Attribute):
            method = self._method(call, ops, depth, explicit)
            if method is not None:
                return method
            if m.matches(call.func.value, m.Name("self")):
                return explicit or self._own_method(call.func, ops, depth)
        if isinstance(call.func, cst.Name):
            return explicit or self._local_function(call.func, ops, depth)
        return explicit or UNKNOWN

    def _batch_source(self, names: set[str]) -> str | None:
        sources = self.api.batch_sources
        for qn in names:
            if qn in sources:
                return sources[qn]
            if qn.endswith(".DataLoader"):
                return "dataset"
        return None

    def _batches(self, kind: str, call: cst.Call, ops, depth) -> str:
        """The elements of a batch source (``rules/torch_api.toml`` ``[batch_sources]``): a loader
        yields its dataset's items; ``SampleGenerator(data=...)`` yields ``data`` again and
        again; a torchvision classification dataset yields (image, label)."""
        if not ops or ops[0] != ("elem",):
            return UNKNOWN
        if kind == "dataset":
            inner = argument(call, 0, "dataset")
            return UNKNOWN if inner is None else self.infer(inner, ops, depth)
        if kind == "data":
            inner = argument(call, 0, "data")
            return UNKNOWN if inner is None else self.infer(inner, ops[1:], depth)
        # image-label: the label is an integer; the image is floating when ToTensor is applied
        if len(ops) >= 2 and ops[1] == ("index", 1):
            return INT
        if len(ops) >= 2 and ops[1] == ("index", 0):
            transform = argument(call, 3, "transform")
            if transform is not None and self._applies_to_tensor(transform):
                return FLOAT
        return UNKNOWN

    def _method(self, call: cst.Call, ops, depth, explicit) -> str | None:
        assert isinstance(call.func, cst.Attribute), "called for method calls only"
        attr = call.func.attr.value
        receiver = call.func.value
        if attr == "per_device_loader":  # ParallelLoader(loader, [device]).per_device_loader(device)
            return self.infer(receiver, ops, depth)
        if attr == "type" and not call.args:
            return None  # `t.type()`: the type's name, a string
        if attr in ("to", "type"):  # `t.type(torch.float32)` casts as `.to` does
            for arg in call.args:
                if arg.keyword is not None and arg.keyword.value != "dtype":
                    continue
                cls = self._dtype_class(arg.value)
                if cls is None and m.matches(arg.value, m.Attribute(attr=m.Name("dtype"))):
                    # `y.to(x.dtype)`: the class of `x` (an integer `y` made floating like its input: a hunt's)
                    assert isinstance(arg.value, cst.Attribute), "matched"
                    return self.infer(arg.value.value, (), depth)
                if cls is None:
                    cls = self._named_dtype_class(arg.value)
                if cls is not None:
                    return cls
            return self.infer(receiver, ops, depth)
        if attr in self.api.same_dtype_methods:
            return explicit or self.infer(receiver, ops, depth)
        if attr in ("item", "tolist") and not call.args:  # a Python number (or list of them) of the tensor's class
            return self.infer(receiver, ops, depth)
        if attr in self.api.values_indices_methods and ops and ops[0] in (("index", 0), ("index", 1)):
            # (values, indices): the values keep the receiver's class, the indices are integers
            return INT if ops[0] == ("index", 1) else self.infer(receiver, ops[1:], depth)
        if attr in self.api.float_methods:
            return FLOAT
        if attr in self.api.int_methods:
            return INT
        if explicit:
            return explicit
        return None

    def _applies_to_tensor(self, transform: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether a torchvision ``transform=`` expression includes ``ToTensor`` (which makes
        the image a floating tensor), following names to the values assigned to them."""
        pattern = m.Name("ToTensor") | m.Attribute(attr=m.Name("ToTensor"))
        if findall(transform, pattern):
            return True
        if depth > 3:
            return False
        for name in findall(transform, m.Name()):
            scope = self.ctx.scopes.get(name)
            if scope is None:
                continue
            for a in scope[name.value]:
                target = self.ctx.parent(a.node) if isinstance(a, Assignment) else None
                assign = self.ctx.parent(target) if isinstance(target, cst.AssignTarget) else None
                if isinstance(assign, cst.Assign) and self._applies_to_tensor(assign.value, depth + 1):
                    return True
        return False

    def _local_function(self, func: cst.Name, ops, depth) -> str:
        """A call of a function defined in this file: what it returns or yields."""
        scope = self.ctx.scopes.get(func)
        if scope is None:
            return UNKNOWN
        defs = [a.node for a in scope[func.value] if isinstance(getattr(a, "node", None), cst.FunctionDef)]
        if len(defs) != 1:
            return UNKNOWN
        return self._function_result(defs[0], ops, depth)

    def _own_method(self, func: cst.Attribute, ops, depth) -> str:
        """``self.batches()``: the method of that name in the enclosing class."""
        cls = self.ctx.enclosing(func, cst.ClassDef)
        if cls is None:
            return UNKNOWN
        defs = [
            st
            for st in cls.body.body
            if isinstance(st, cst.FunctionDef) and st.name.value == func.attr.value and not st.decorators
        ]
        if len(defs) != 1:
            return UNKNOWN
        return self._function_result(defs[0], ops, depth)

    def _function_result(self, func: cst.FunctionDef, ops, depth) -> str:
        """The class of what calling ``func`` gives after ``ops``: its ``return`` values, or for
        a generator (a ``yield`` in its own body), the values it yields as elements."""
        own = lambda node: self.ctx.enclosing(node, (cst.FunctionDef, cst.Lambda)) is func
        yields = [
            y
            for y in self.ctx.memo(("yields in", func), lambda: findall(func.body, m.Yield(), self.ctx.index))
            if own(y)
        ]
        if yields:
            if not ops or ops[0] != ("elem",):
                return UNKNOWN
            results = []
            for y in yields:
                if y.value is None:
                    results.append(UNKNOWN)
                elif isinstance(y.value, cst.From):
                    results.append(self.infer(y.value.item, ops, depth))
                else:
                    results.append(self.infer(y.value, ops[1:], depth))
            return combine(results)
        returns = [
            r.value
            for r in self.ctx.memo(("returns in", func), lambda: findall(func.body, m.Return(), self.ctx.index))
            if r.value is not None and own(r)
        ]
        return combine(self.infer(v, ops, depth) for v in returns)

    # -- dtypes ----------------------------------------------------------------------------
    def _dtype_class(self, expr: cst.BaseExpression) -> str | None:
        for qn in self.ctx.qualified_names(expr):
            if qn.startswith("torch.") and qn.count(".") == 1:
                short = qn.split(".", 1)[1]
                if short in self.api.float_dtypes:
                    return FLOAT
                if short in self.api.int_dtypes:
                    return INT
        return None

    def _named_dtype_class(self, expr: cst.BaseExpression) -> str | None:
        """The class of a dtype a name holds or a call gives (``DTYPE = torch.float32``,
        ``torch.get_default_dtype()``: :func:`.bindings.dtype_names`), None when it names none."""
        names = dtype_names(self.ctx, expr)
        short = {n.split(".", 1)[1] for n in names if n.startswith("torch.") and n.count(".") == 1}
        if short and short <= set(self.api.float_dtypes):
            return FLOAT
        if short and short <= set(self.api.int_dtypes):
            return INT
        return None

    def _dtype_kwarg(self, call: cst.Call) -> str | None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "dtype":
                return self._dtype_class(arg.value) or UNKNOWN
        return None

    def _factory(self, kind: str, call: cst.Call, depth) -> str:
        """The class of a tensor made by a factory of ``kind`` (``rules/torch_api.toml``
        ``[factories]``): ``"float"``/``"int"`` as named, otherwise read from its arguments."""
        if kind in ("float", "int"):
            return kind
        first = call.args[0].value if call.args and call.args[0].keyword is None else None
        if kind in ("literal", "unknown") and self._numpy_integers(first):
            return INT
        if kind in ("like", "first"):
            return self._like_class(kind, first, depth)
        if kind == "arange":
            return _arange_class(self.ctx, call)
        if kind == "fill":  # `torch.full((n, 1), BOS)`: an int fill value makes an int64 tensor (a hunt's token ids)
            fill = argument(call, 1, "fill_value")
            if fill is not None and python_number(self.ctx, fill, integer=True):
                return INT
            if fill is not None and python_number(self.ctx, fill):
                return FLOAT
            return _literal_class(self.ctx, fill) if fill is not None else UNKNOWN
        if kind == "counts":  # `torch.bincount(x)`: integer counts; with `weights`, the weights' dtype
            weights = argument(call, 1, "weights")
            return INT if weights is None else self.infer(weights, (), depth)
        if kind == "literal":
            found = _literal_class(self.ctx, first)
            if found == UNKNOWN and first is not None and python_float(self.ctx, first):
                return FLOAT  # `torch.tensor(float(init))`, `torch.tensor(math.log(t))`: a Python float's tensor
            return found
        return UNKNOWN

    def _numpy_integers(self, data: cst.BaseExpression | None) -> bool:
        """Whether ``data`` is a call of a NumPy function that gives integers whatever its
        arguments (``rng.integers(0, 10, size=32)``, ``np.random.randint(...)``: ``[numpy_integers]``
        of ``rules/torch_api.toml``): ``torch.tensor`` and ``torch.from_numpy`` of it are int64 (torch
        docs, ``torch.tensor``: the dtype is inferred from ``data``; found by verify's trace on a hunt's
        labels made so and divided on the device)."""
        if not isinstance(data, cst.Call):
            return False
        if isinstance(data.func, cst.Attribute) and data.func.attr.value in self.api.numpy_integer_methods:
            return True
        return bool(self.ctx.qualified_names(data.func) & self.api.numpy_integer_functions)

    def _like_class(self, kind: str, first: cst.BaseExpression | None, depth) -> str:
        """A factory that takes its class from its first argument (``torch.zeros_like(x)``), or for
        ``"first"`` from the first element of a list or tuple given first (``torch.stack([a, b])``)
        (the torch documentation of each: the result has the input's dtype)."""
        if first is None:
            return UNKNOWN
        if kind == "first" and isinstance(first, (cst.ListComp, cst.GeneratorExp)):
            return self.infer(first, (("elem",),), depth)  # `torch.stack([m.sum() for m in masks])`: its item
        inner = (
            first.elements[0].value
            if kind == "first" and isinstance(first, (cst.List, cst.Tuple)) and first.elements
            else first
        )
        return self.infer(inner, (), depth)


def _arange_class(ctx: FileContext, call: cst.Call) -> str:
    """``torch.arange`` is floating when one of its numbers is a float literal and an integer when
    all are Python integers the code shows (:func:`.bindings.python_number`: ``torch.arange(1, CLASSES + 1)``)
    (torch docs, ``torch.arange``: the dtype is inferred from the other input arguments); UNKNOWN
    otherwise."""
    numbers = [a.value for a in call.args if a.keyword is None]
    if any(isinstance(n, cst.Float) for n in numbers):
        return FLOAT
    return INT if all(python_number(ctx, n, integer=True) for n in numbers) else UNKNOWN


def _literal_class(ctx: FileContext, first: cst.BaseExpression | None) -> str:
    """``torch.tensor(data)``: floating when ``data`` holds a float literal, an integer when it is an
    integer literal or a list or tuple of integer literals only (torch docs, ``torch.tensor``: the
    dtype is inferred from ``data``); UNKNOWN otherwise. A name every binding of which assigns such a
    literal (a module constant ``TAUS = (0.1, 0.5, 0.9)``) is read as its literal (left unknown, its
    tensor stayed f32 in a loss: bench/unseen/hunt9 quantile_docker_run)."""
    if isinstance(first, cst.Name):
        values = _constant_values(ctx, first)
        classes = {_literal_class(ctx, value) for value in values}
        return classes.pop() if len(classes) == 1 else UNKNOWN
    if first is None:
        return UNKNOWN
    while isinstance(first, cst.UnaryOperation) and isinstance(first.operator, (cst.Minus, cst.Plus)):
        first = first.expression  # `torch.tensor(-1)`: the number's class
    if not _numbers_only(first):
        return UNKNOWN  # `1.0 - ac` of a NumPy float64 array: the array's dtype, not a Python float's
    literals = [n for n in findall(first, m.Float() | m.Integer())]
    if any(isinstance(n, cst.Float) for n in literals):
        return FLOAT
    if literals and isinstance(first, (cst.Integer, cst.List, cst.Tuple)):
        return INT if all(isinstance(n, cst.Integer) for n in literals) else UNKNOWN
    return UNKNOWN


def _numbers_only(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` is made of numeric literals alone: lists and tuples of them, signs and arithmetic of them
    (``[0.1, -2]``, ``1.0 / 3``); a name or a call (a NumPy array, ``1.0 - alphas_cumprod``) may be anything."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return _numbers_only(expr.expression)
    if isinstance(expr, cst.BinaryOperation):
        return _numbers_only(expr.left) and _numbers_only(expr.right)
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _numbers_only(e.value) for e in expr.elements)
    return False


def _constant_values(ctx: FileContext, name: cst.Name) -> list[cst.BaseExpression]:
    """The values a name is assigned, when every binding of it is a plain assignment of a number or a
    list or tuple of numbers (no name inside); empty otherwise."""
    scope = ctx.scopes.get(name)
    bindings = list(scope[name.value]) if scope is not None else []
    values: list[cst.BaseExpression] = []
    for binding in bindings:
        node = getattr(binding, "node", None)
        target = ctx.parent(node) if node is not None else None
        assign = ctx.parent(target) if target is not None else None
        if not (isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign)):
            return []
        value = assign.value
        if not isinstance(value, (cst.Integer, cst.Float, cst.List, cst.Tuple)) or findall(value, m.Name()):
            return []
        values.append(value)
    return values
