"""Which code of a file a model's training step runs: the classes the model and its optimizers are
built from, their submodules' classes and the functions their ``forward`` and ``step`` call.

Under the legacy switch every floating tensor on the device was bf16, the ones the model's own code
makes included (torch_xla/csrc/dtype.cpp); once the switch is gone, that code is where f32 can
enter (:mod:`.model_code` audits it). This module only finds the code, by name: from the
expressions a model is bound to (``model = TinyLM(cfg).to(device)``) and the optimizer classes
(``LayerwiseLamb(model.parameters())``), every class and function of the file their names lead to,
transitively:

* a class reached: its bases defined in the file, its ``forward`` / ``step`` (``rules/model_code.toml``
  ``[reach]``: the methods that run in a training step) and its ``__init__``;
* a method that runs in a step: every class and function its names lead to, and the methods of its
  class it calls (``self.helper(...)``), which then run in a step too;
* ``__init__`` (and what it calls) runs before ``model.to(torch.bfloat16)``: it is followed for the
  classes it builds (submodules) and read for the plain tensor attributes it keeps, but a tensor it
  makes is not a way in (a parameter or buffer is cast by ``model.to``).

Names are resolved with libcst's scopes; what they do not lead to (an import, a library class) is
not reached: code outside the file is audited when the project migrates the tree's modules
(:mod:`bf16_migrate.tree_modules`, :func:`module_classes`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m

from .bindings import assigned_values, definitions, python_number, self_assigned
from .context import FileContext, findall
from .loss_reach import LossCode

_SELF_CALL = m.Call(func=m.Attribute(value=m.Name("self")))
_MAX_BINDINGS = 6


@dataclass
class Reached:
    """The reached code of one file, each node once, in the order found.

    ``runtime``: functions and methods that run in a training step (``forward``, ``step``, what they
    call); ``init``: ``__init__`` methods (and what they call) of the classes reached; ``classes``:
    the classes reached; ``optimizers``: those of them that are optimizer classes (their step is
    audited against the parameters' dtype).

    The loss code a step applies to the model's output (:mod:`.loss_reach`): its functions run in a
    step (``runtime``); ``loss_classes``: the classes reached from the loss alone (a criterion and the
    classes it builds), which ``model.to`` does not cast, so their parameters and buffers stay f32;
    ``steps``: the functions (or the module) calling the model, whose own tensors that meet
    ``loss_path`` (ids of the nodes from the model's output to the loss) are audited too, but for
    the arguments of the loss calls in ``cast_losses`` (ids: the input casts handle them).

    ``roots``: the classes the script builds its models from (``model = TinyLM(cfg).to(device)``:
    ``TinyLM``), whose ``forward`` returns to ``model_calls``, the model's calls in the steps; the
    ``forward`` of any other class returns to a module of the model (:mod:`.meet`)."""

    runtime: list[cst.FunctionDef] = field(default_factory=list)
    init: list[cst.FunctionDef] = field(default_factory=list)
    classes: list[cst.ClassDef] = field(default_factory=list)
    optimizers: list[cst.ClassDef] = field(default_factory=list)
    loss_classes: list[cst.ClassDef] = field(default_factory=list)
    steps: list[cst.FunctionDef | cst.Module] = field(default_factory=list)
    loss_path: frozenset[int] = frozenset()
    cast_losses: frozenset[int] = frozenset()
    roots: list[cst.ClassDef] = field(default_factory=list)
    model_calls: list[cst.Call] = field(default_factory=list)
    loss_functions: list[cst.FunctionDef] = field(default_factory=list)
    """The functions of the file the step applies as its loss (:mod:`.loss_reach`)."""

    def is_runtime(self, func: cst.FunctionDef | None) -> bool:
        return func is not None and any(f is func for f in self.runtime)

    def in_loss(self, func: cst.FunctionDef | None) -> bool:
        """Whether ``func`` is a loss function the step applies (or a method of a loss class)."""
        if func is None:
            return False
        return any(f is func for f in self.loss_functions)

    def uncast(self, cls: cst.ClassDef | None) -> bool:
        """Whether ``cls`` is reached from the loss code alone (not cast by ``model.to``)."""
        return cls is not None and any(c is cls for c in self.loss_classes)


def reach_from(
    ctx: FileContext,
    roots: Iterable[cst.CSTNode],
    optimizer_classes: Iterable[cst.ClassDef],
    loss: LossCode | None = None,
    methods: Iterable[str] = (),
) -> Reached:
    """The code reached from ``roots`` (expressions whose names lead to the model's classes, or
    class definitions), from ``optimizer_classes`` (classes whose ``step`` runs each step) and from
    the step's ``loss`` code (:func:`.loss_reach.loss_code`: its functions run in a step, its classes
    are reached uncast unless the model's code reaches them too). ``methods``: the names of the
    model's own methods the script calls (``model.posterior_mean(x)``,
    :func:`.device_modules.method_calls`): those of the classes the models are built from run on
    the device as ``forward`` does."""
    walk = _Walk(ctx)
    for cls in optimizer_classes:
        walk.add_class(cls, optimizer=True)
    for root in roots:
        if isinstance(root, cst.ClassDef):
            walk.add_class(root)
        else:
            walk.expression(root, depth=0)
            built = built_class(ctx, root)
            if built is not None and not any(c is built for c in walk.reached.roots):
                walk.reached.roots.append(built)
    called = frozenset(methods)
    for cls in walk.reached.roots if called else ():
        for st in cls.body.body:
            if isinstance(st, cst.FunctionDef) and st.name.value in called:
                walk.add_runtime(st)
    walk.run()
    if loss is None:
        return walk.reached
    cast = list(walk.reached.classes)
    for func in loss.functions:
        walk.add_runtime(func)
    for cls in loss.classes:
        walk.add_class(cls)
    walk.run()
    reached = walk.reached
    reached.loss_classes = [c for c in reached.classes if not any(c is k for k in cast)]
    reached.steps, reached.loss_path, reached.cast_losses = list(loss.steps), loss.path, loss.cast_losses
    reached.model_calls = list(loss.model_calls)
    reached.loss_functions = list(loss.functions)
    return reached


def built_class(ctx: FileContext, expr: cst.CSTNode) -> cst.ClassDef | None:
    """The class of the file an expression builds its value from: ``TinyLM`` for ``TinyLM(cfg)``,
    ``TinyLM(cfg).to(device)`` or ``TinyLM(cfg).bfloat16()``; None for anything else."""
    while m.matches(expr, m.Call(func=m.Attribute(value=m.Call()))):
        assert isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute), "matched above"
        expr = expr.func.value
    if not isinstance(expr, cst.Call):
        return None
    classes = [d for d in definitions(ctx, expr.func) if isinstance(d, cst.ClassDef)]
    return classes[0] if len(classes) == 1 else None


def float64_modules(ctx: FileContext, model: cst.BaseExpression) -> list[tuple[str, cst.Call]]:
    """The modules the class of the file ``model`` is built from makes with a float64 dtype in its
    ``__init__``, as (attribute, constructor call) in the file's order
    (``self.head = nn.Linear(h, c, dtype=torch.float64)``: ``[("head", <the call>)]``); empty when
    the class is not the file's. Under XLA_DOWNCAST_BF16 such a module was f32 on the device while
    the rest was bf16 (torch-xla's torch_xla/csrc/dtype.cpp)."""
    f64 = ctx.rules.model_code.f64_dtypes
    found: dict[str, cst.Call] = {}
    for root in model_roots(ctx, [model]):
        cls = built_class(ctx, root)
        inits = (
            [s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"] if cls else []
        )
        for assign in findall(inits[0], m.Assign()) if inits else []:
            assert isinstance(assign, cst.Assign), "findall of m.Assign()"
            target = assign.targets[0].target if len(assign.targets) == 1 else None
            if not (
                isinstance(target, cst.Attribute)
                and m.matches(target.value, m.Name("self"))
                and isinstance(assign.value, cst.Call)
            ):
                continue
            dtypes = [a.value for a in assign.value.args if a.keyword is not None and a.keyword.value == "dtype"]
            if dtypes and ctx.qualified_names(dtypes[0]) & f64:
                found.setdefault(target.attr.value, assign.value)
    return list(found.items())


_DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.asarray"})
_FLOAT64 = frozenset({"torch.float64", "torch.double"})
_PRETRAINED = frozenset({"torch.nn.Embedding.from_pretrained", "torch.nn.EmbeddingBag.from_pretrained"})


def float64_state(ctx: FileContext) -> cst.Call | None:
    """The first buffer or parameter a class of the file registers from data that may be float64:
    ``self.register_buffer("slopes", torch.from_numpy(np_slopes))``, ``nn.Parameter(torch.tensor(v,
    dtype=torch.float64))``, a ``.double()`` (torch's data factories keep NumPy's float64: torch 2.9
    docs of ``torch.as_tensor``, ``torch.from_numpy``); None when there is none. A data factory given
    a Python float literal, or ``dtype=`` other than float64, is float32 or named. Under the switch such
    state was low precision on the device; autocast casts no float64 (PyTorch's
    aten/src/ATen/autocast_mode.h, ``is_eligible``), so an FP32 model keeping it computes in f64."""
    return next((call for call, _ in _float64_registrations(ctx)), None)


def float64_state_calls(ctx: FileContext) -> list[cst.Call]:
    """Every registration :func:`float64_state` finds, in the file's order."""
    return [call for call, _ in _float64_registrations(ctx)]


def tree_float64_state(ctx: FileContext) -> str | None:
    """The first buffer or parameter a class of a module of the tree the file imports registers from data that may
    be float64 (``file:line: code``, :attr:`.tree_types.TreeFacts.float64_state`), or None: a model built from
    that class holds it as a model of the file's own classes would (:func:`float64_state`; a hunt's mel filterbank
    from NumPy in a sibling front end)."""
    return ctx.tree.float64_state if ctx.tree is not None else None


def float64_state_names(ctx: FileContext) -> list[cst.CSTNode]:
    """What names float64 in the state :func:`float64_state` finds (every registration, not only the first):
    ``torch.float64`` / ``torch.double`` and the ``double`` of ``.double()``. Where the model is cast by the
    switch's rule (``downcast_bf16``: float64 to float32, float32 to bf16) they stay as written: made float32 by
    the double idiom first, that cast made them bf16, where the switch kept them float32 (a hunt's peak buffer)."""
    names: list[cst.CSTNode] = []
    for _, value in _float64_registrations(ctx):
        for node in findall(value, m.Attribute()):
            assert isinstance(node, cst.Attribute), "findall of m.Attribute()"
            if ctx.qualified_names(node) & _FLOAT64:
                names.append(node)
            elif node.attr.value == "double" and isinstance(ctx.parent(node), cst.Call):
                names.append(node.attr)
    return names


def float64_state_attributes(ctx: FileContext, cls: cst.ClassDef) -> frozenset[str]:
    """The names under which ``cls`` registers state from float64 data (:func:`float64_state`):
    ``register_buffer("lo", torch.zeros((), dtype=torch.float64))`` gives ``lo``, ``self.t = nn.Parameter(...)`` ``t``.
    Under XLA_DOWNCAST_BF16 the model's cast (``downcast_bf16``) makes them float32, not the bf16 of the rest."""

    def compute() -> frozenset[str]:
        names: set[str] = set()
        for call, _ in _float64_registrations(ctx):
            if ctx.enclosing(call, cst.ClassDef) is not cls:
                continue
            first = call.args[0].value if call.args else None
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "register_buffer":
                if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
                    names.add(first.evaluated_value)
                continue
            assign = ctx.parent(call)
            if isinstance(assign, cst.Assign) and assign.value is call:
                for target in assign.targets:
                    if m.matches(target.target, m.Attribute(value=m.Name("self"))):
                        assert isinstance(target.target, cst.Attribute), "matched"
                        names.add(target.target.attr.value)
        return frozenset(names)

    return ctx.memo(("float64 state attributes", id(cls)), compute)


def _float64_registrations(ctx: FileContext) -> Iterator[tuple[cst.Call, cst.BaseExpression]]:
    """(call, the tensor it registers) for each buffer or parameter a class of the file registers from data
    that may be float64 (:func:`float64_state`)."""
    for call in ctx.nodes(cst.Call):
        func = call.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name not in ("register_buffer", "Parameter", "from_pretrained") or ctx.enclosing(call, cst.ClassDef) is None:
            continue  # a cheap test first: every call of the file is looked at
        registers = name == "register_buffer" and len(call.args) >= 2
        parameter = bool(ctx.qualified_names(func) & {"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
        # `nn.Embedding.from_pretrained(torch.from_numpy(table))`: its weight is the tensor given (torch 2.9 docs
        # of Embedding.from_pretrained), float64 from NumPy (a hunt's frozen word vectors)
        parameter = parameter or (name == "from_pretrained" and bool(ctx.qualified_names(func) & _PRETRAINED))
        value = call.args[1].value if registers else call.args[0].value if parameter and call.args else None
        if value is not None and _may_be_float64(ctx, value):
            yield call, value


def _may_be_float64(ctx: FileContext, value: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether ``value`` may make a float64 tensor: it names float64 or calls ``.double()``, or a torch
    data factory in it is given data that is not a literal of Python numbers and no ``dtype=``; or it is a name
    bound to such a value, or a parameter of a class's ``__init__`` the file's constructions of the class pass one
    (``Clf(torch.from_numpy(np.load("vectors.npy")))`` whose ``from_pretrained(vectors)`` registers it: a hunt's
    pretrained embedding, float64 on the device under amp, which autocast does not cast)."""
    if depth > 3:
        return False
    if isinstance(value, cst.Name):
        handed = [*assigned_values(ctx, value), *_constructed_with(ctx, value)]
        return any(v is not value and _may_be_float64(ctx, v, depth + 1) for v in handed)
    for node in findall(value, m.Attribute() | m.Call()):
        if isinstance(node, cst.Attribute):
            double = node.attr.value == "double" and isinstance(ctx.parent(node), cst.Call)
            if double or ctx.qualified_names(node) & _FLOAT64:
                return True
            continue
        assert isinstance(node, cst.Call), "findall of m.Attribute() | m.Call()"
        names = ctx.qualified_names(node.func)
        if not names & _DATA_FACTORIES or not node.args:
            continue
        if any(a.keyword is not None and a.keyword.value == "dtype" for a in node.args):
            continue
        # NumPy data, or data the code does not show as Python numbers (a literal, `math.log(1 / 0.07)`)
        if names & {"torch.from_numpy"} or not _python_floats(ctx, node.args[0].value):
            return True
    return False


def _constructed_with(ctx: FileContext, name: cst.Name) -> list[cst.BaseExpression]:
    """Where ``name`` is a parameter of the ``__init__`` of a class of the file: what each construction of the
    class in the file (``Clf(vectors, prior)``) passes for it, by position or keyword; else none."""
    func = ctx.enclosing(name, cst.FunctionDef)
    cls = ctx.enclosing(func, cst.ClassDef) if func is not None else None
    if func is None or cls is None or func.name.value != "__init__":
        return []
    params = [p.name.value for p in func.params.params]
    if name.value not in params[1:]:
        return []
    at = params.index(name.value) - 1  # `self` is not passed
    found: list[cst.BaseExpression] = []
    for call in ctx.nodes(cst.Call):
        if not (isinstance(call.func, cst.Name) and call.func.value == cls.name.value):
            continue
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        keyword = [a.value for a in call.args if a.keyword is not None and a.keyword.value == name.value]
        found.extend(keyword or positional[at : at + 1])
    return found


def _python_floats(ctx: FileContext, data: cst.BaseExpression) -> bool:
    """Whether ``data`` is Python numbers the code shows: literals, ``math`` functions and constants of
    them, arithmetic of such (``torch.tensor(math.log(1 / 0.07))`` is float32, the default dtype: it was
    taken for NumPy float64 data, and amp added a needless cast: a hunt's)."""
    if python_number(ctx, data):
        return True
    if isinstance(data, (cst.List, cst.Tuple)):
        return all(_python_floats(ctx, e.value) for e in data.elements)
    if isinstance(data, cst.UnaryOperation):
        return _python_floats(ctx, data.expression)
    if isinstance(data, cst.BinaryOperation):
        return _python_floats(ctx, data.left) and _python_floats(ctx, data.right)
    if isinstance(data, (cst.Call, cst.Attribute)):
        target = data.func if isinstance(data, cst.Call) else data
        math = all(n.startswith("math.") for n in ctx.qualified_names(target)) and ctx.qualified_names(target)
        args = data.args if isinstance(data, cst.Call) else ()
        return bool(math) and all(_python_floats(ctx, a.value) for a in args)
    return False


def model_roots(ctx: FileContext, models: Iterable[cst.BaseExpression]) -> list[cst.BaseExpression]:
    """The expressions the models are built from: the values assigned to each model name
    (``model = TinyLM(cfg).to(device)``) or, for ``self.model``, to that attribute in its class."""
    roots: list[cst.BaseExpression] = []
    for model in models:
        if isinstance(model, cst.Name):
            roots.extend(assigned_values(ctx, model))
        elif m.matches(model, m.Attribute(value=m.Name("self"))):
            assert isinstance(model, cst.Attribute), "matched an Attribute"
            cls = ctx.enclosing(model, cst.ClassDef)
            if cls is not None:
                roots.extend(self_assigned(ctx, cls, model.attr.value))
    return roots


def optimizer_classes(ctx: FileContext, funcs: Iterable[cst.BaseExpression]) -> list[cst.ClassDef]:
    """The classes of the file that the optimizer constructions' callees name."""
    found: list[cst.ClassDef] = []
    for func in funcs:
        for node in definitions(ctx, func):
            if isinstance(node, cst.ClassDef) and not any(node is f for f in found):
                found.append(node)
    return found


def module_classes(ctx: FileContext) -> tuple[list[cst.ClassDef], list[cst.ClassDef]]:
    """For a module of the tree imported by a migrated script (its classes may be the model's or the
    optimizer's): the module-level classes that are ``torch.nn.Module`` subclasses and those that are
    optimizer classes (``rules/model_code.toml`` ``[reach]``), directly or through a class of the file."""
    rules = ctx.rules.model_code
    modules: list[cst.ClassDef] = []
    optimizers: list[cst.ClassDef] = []
    classes = [st for st in ctx.module.body if isinstance(st, cst.ClassDef)]
    for cls in classes:
        kinds = _base_kinds(ctx, cls, rules.module_bases, rules.optimizer_bases, set())
        if "optimizer" in kinds:
            optimizers.append(cls)
        elif "module" in kinds:
            modules.append(cls)
    return modules, optimizers


def _base_kinds(ctx: FileContext, cls: cst.ClassDef, module_bases, optimizer_bases, seen: set[int]) -> set[str]:
    kinds: set[str] = set()
    if id(cls) in seen:
        return kinds
    seen.add(id(cls))
    for base in cls.bases:
        names = ctx.qualified_names(base.value)
        if names & module_bases:
            kinds.add("module")
        if names & optimizer_bases:
            kinds.add("optimizer")
        for node in definitions(ctx, base.value):
            if isinstance(node, cst.ClassDef):
                kinds |= _base_kinds(ctx, node, module_bases, optimizer_bases, seen)
    return kinds


class _Walk:
    """Breadth-first over classes and functions, each once; a function reached both from a step
    and from ``__init__`` runs in a step."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.rules = ctx.rules.model_code
        self.reached = Reached()
        self._queue: list[tuple[str, cst.CSTNode]] = []
        self._seen: set[tuple[str, int]] = set()
        self._names_seen: set[int] = set()

    def _push(self, kind: str, node: cst.CSTNode) -> None:
        key = (kind, id(node))
        if key not in self._seen:
            self._seen.add(key)
            self._queue.append((kind, node))

    def add_runtime(self, func: cst.FunctionDef) -> None:
        self._push("runtime", func)

    def add_class(self, cls: cst.ClassDef, optimizer: bool = False) -> None:
        if optimizer and not any(c is cls for c in self.reached.optimizers):
            self.reached.optimizers.append(cls)
        self._push("class", cls)

    def expression(self, expr: cst.CSTNode, depth: int) -> None:
        """Follow the names of an expression a model is built from: classes, builder functions,
        and names bound to other such expressions."""
        for name in findall(expr, m.Name()):
            if id(name) in self._names_seen:
                continue
            self._names_seen.add(id(name))
            defs = definitions(self.ctx, name)
            for node in defs:
                self._push("class" if isinstance(node, cst.ClassDef) else "init", node)
            if not defs and depth < _MAX_BINDINGS:
                for value in assigned_values(self.ctx, name):
                    self.expression(value, depth + 1)

    def run(self) -> None:
        while self._queue:
            kind, node = self._queue.pop(0)
            if kind == "class":
                assert isinstance(node, cst.ClassDef), "pushed as a class"
                self._class(node)
            else:
                assert isinstance(node, cst.FunctionDef), "pushed as a function"
                self._function(node, runtime=kind == "runtime")

    def _class(self, cls: cst.ClassDef) -> None:
        if not any(c is cls for c in self.reached.classes):
            self.reached.classes.append(cls)
        for base in cls.bases:
            for node in definitions(self.ctx, base.value):
                if isinstance(node, cst.ClassDef):
                    self.add_class(node, optimizer=any(c is cls for c in self.reached.optimizers))
        entries = self.rules.module_entries | self.rules.optimizer_entries | {"__call__"}
        for st in cls.body.body:
            if isinstance(st, cst.FunctionDef):
                if st.name.value in entries:
                    self._push("runtime", st)
                elif st.name.value == "__init__":
                    self._push("init", st)

    def _function(self, func: cst.FunctionDef, runtime: bool) -> None:
        target = self.reached.runtime if runtime else self.reached.init
        if not any(f is func for f in target):
            target.append(func)
        kind = "runtime" if runtime else "init"
        for name in findall(func.body, m.Name(), self.ctx.index):
            for node in definitions(self.ctx, name):
                self._push("class" if isinstance(node, cst.ClassDef) else kind, node)
        cls = self.ctx.enclosing(func, cst.ClassDef)
        if cls is None:
            return
        for call in findall(func.body, _SELF_CALL, self.ctx.index):
            assert isinstance(call.func, cst.Attribute), "matched self.<name>(...)"
            for st in cls.body.body:
                if isinstance(st, cst.FunctionDef) and st.name.value == call.func.attr.value:
                    self._push(kind, st)
