"""What a name of a file is bound to, read through libcst's scopes: the classes and functions of
the file a name denotes (:func:`definitions`), the values of the plain assignments that bind it
(:func:`assigned_values`) and those assigned to ``self.<attr>`` in a class (:func:`self_assigned`).

A floor below the readings of a model's and a loss's code (:mod:`.model_reach`,
:mod:`.loss_reach`, :mod:`.tensor_flow`, :mod:`.submodule_inputs`, :mod:`.device_modules`), which
all ask it and import none of each other for it.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from .context import FileContext, findall


def definitions(ctx: FileContext, expr: cst.BaseExpression) -> list[cst.ClassDef | cst.FunctionDef]:
    """The classes and functions of the file the name ``expr`` is bound to (none for anything else)."""
    if not isinstance(expr, cst.Name):
        return []
    scope = ctx.scopes.get(expr)
    if scope is None:
        return []
    bindings = scope[expr.value]
    if not bindings:
        return []
    # once per set of bindings (a name bound many times, ``import torch`` in each script of a
    # file of many, is asked about at each of its uses); the set is kept alive with the answer
    _, found = ctx.memo(
        ("definitions", id(bindings), len(bindings)),
        lambda: (
            bindings,
            [
                a.node
                for a in bindings
                if isinstance(a, Assignment) and isinstance(a.node, (cst.ClassDef, cst.FunctionDef))
            ],
        ),
    )
    return list(found)


def bound_by_import(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` (``f``, ``module.f``) starts with a name bound only by imports where it is read."""
    root = expr
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name):
        return False
    scope = ctx.scopes.get(root)
    if scope is None:
        return False
    assignments = list(scope[root.value])
    return bool(assignments) and all(
        isinstance(a, Assignment) and isinstance(a.node, (cst.Import, cst.ImportFrom)) for a in assignments
    )


def plain_class(node: cst.CSTNode) -> bool:
    """A class of the file with no base but ``object``: no ``torch.nn.Module`` nor anything else, so an
    instance of it is no module and what its methods compute is the file's own code."""
    return isinstance(node, cst.ClassDef) and all(
        isinstance(base.value, cst.Name) and base.value.value == "object" for base in node.bases
    )


def plain_instance(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` is a name every plain assignment of which makes an instance of a :func:`plain_class`
    of the file (``norm = RunningNorm(dim, device)``)."""
    if not isinstance(expr, cst.Name):
        return False
    values = assigned_values(ctx, expr)
    return bool(values) and all(
        isinstance(v, cst.Call) and any(plain_class(d) for d in definitions(ctx, v.func)) for v in values
    )


def module_binds(ctx: FileContext, name: str) -> bool:
    """Whether ``name`` is bound at module level (``import torch`` anywhere at the top level)."""
    scope = ctx.scopes.get(ctx.module)
    return scope is not None and any(a.scope is scope for a in scope.assignments[name])


def self_assigned(ctx: FileContext, cls: cst.ClassDef, attr: str) -> list[cst.BaseExpression]:
    """The values assigned to ``self.<attr>`` anywhere in ``cls`` (its methods), one of a tuple too
    (``self.hidden, self.dtype = hidden, dtype``: as many targets as values, none starred; a hunt's stored dtype
    was not seen there), and in the classes of the file it derives from or that derive from it (``self`` of a
    mixin's ``to_device`` is an instance of the trainer that sets ``self.device``: a hunt's batch mover)."""
    assigns = ctx.memo(
        ("assignments in the family of", cls),
        lambda: [a for c in class_family(ctx, cls) for a in findall(c, m.Assign(), ctx.index)],
    )
    pattern = m.Attribute(value=m.Name("self"), attr=m.Name(attr))
    found: list[cst.BaseExpression] = []
    for a in assigns:
        assert isinstance(a, cst.Assign), "findall of m.Assign()"
        for t in a.targets:
            if m.matches(t.target, pattern):
                found.append(a.value)
            elif isinstance(t.target, cst.Tuple) and isinstance(a.value, cst.Tuple):
                names, values = t.target.elements, a.value.elements
                if len(names) == len(values) and not any(isinstance(e, cst.StarredElement) for e in (*names, *values)):
                    found += [v.value for n, v in zip(names, values) if m.matches(n.value, pattern)]
    return found


def class_family(ctx: FileContext, cls: cst.ClassDef) -> list[cst.ClassDef]:
    """``cls``, the classes of the file it derives from (up the bases) and those that derive from it (down),
    each named by a plain name in a class's bases (``class BaseTrainer(ToDeviceMixin)``); not its siblings
    (``self`` of one subclass is never an instance of another)."""

    def links() -> tuple[dict[int, list[cst.ClassDef]], dict[int, list[cst.ClassDef]]]:
        by_name: dict[str, list[cst.ClassDef]] = {}
        for c in ctx.nodes(cst.ClassDef):
            by_name.setdefault(c.name.value, []).append(c)
        up: dict[int, list[cst.ClassDef]] = {}
        down: dict[int, list[cst.ClassDef]] = {}
        for c in ctx.nodes(cst.ClassDef):
            for base in c.bases:
                if isinstance(base.value, cst.Name) and base.keyword is None:
                    for b in by_name.get(base.value.value, ()):
                        if b is not c:
                            up.setdefault(id(c), []).append(b)
                            down.setdefault(id(b), []).append(c)
        return up, down

    family = [cls]
    for direction in ctx.memo(("class bases of the file",), links):
        todo = [cls]
        while todo:
            for other in direction.get(id(todo.pop()), ()):
                if not any(other is f for f in family):
                    family.append(other)
                    todo.append(other)
    return family


def assigned_values(ctx: FileContext, name: cst.Name) -> list[cst.BaseExpression]:
    """The values of the plain assignments ``name = value`` that bind ``name`` where it is read."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return []
    values: list[cst.BaseExpression] = []
    for a in scope[name.value]:
        if not isinstance(a, Assignment):
            continue
        target = ctx.parent(a.node)
        assign = ctx.parent(target)
        if isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign):
            values.append(assign.value)
    return values


def assigned_value(ctx: FileContext, target: cst.CSTNode) -> cst.BaseExpression | None:
    """The value assigned to the name ``target`` (a binding's node): the whole value of
    ``target = value`` (of a chained ``H = target = 16`` too: each name is bound to that one value), or
    the matching element of ``a, target = x, y`` (as many names as values, none starred); None for any
    other binding."""
    parent = ctx.parent(target)
    if isinstance(parent, cst.AssignTarget):
        assign = ctx.parent(parent)
        return assign.value if isinstance(assign, cst.Assign) else None
    element = parent
    names = ctx.parent(element) if isinstance(element, cst.Element) else None
    holder = ctx.parent(names) if isinstance(names, cst.Tuple) else None
    assign = ctx.parent(holder) if isinstance(holder, cst.AssignTarget) else None
    if not (
        isinstance(names, cst.Tuple)
        and isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.value, cst.Tuple)
        and len(assign.value.elements) == len(names.elements)
    ):
        return None
    index = next(i for i, e in enumerate(names.elements) if e is element)
    value = assign.value.elements[index]
    return None if isinstance(value, cst.StarredElement) else value.value


def unpacked_value(ctx: FileContext, target: cst.CSTNode) -> cst.BaseExpression | None:
    """The whole value a name is unpacked from, ``a, target = value`` (one target, ``value`` not a
    tuple display, no starred name): a model's outputs (``logits, labels = model(x)``), a batch's
    parts; None for any other binding."""
    element = ctx.parent(target)
    names = ctx.parent(element) if isinstance(element, cst.Element) else None
    holder = ctx.parent(names) if isinstance(names, (cst.Tuple, cst.List)) else None
    assign = ctx.parent(holder) if isinstance(holder, cst.AssignTarget) else None
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(names, (cst.Tuple, cst.List))):
        return None
    if isinstance(assign.value, cst.Tuple) or any(isinstance(e, cst.StarredElement) for e in names.elements):
        return None
    return assign.value


_DEFAULT_DTYPE = "torch.get_default_dtype"
_SET_DEFAULT_DTYPE = "torch.set_default_dtype"


def dtype_names(ctx: FileContext, expr: cst.BaseExpression, depth: int = 0) -> frozenset[str]:
    """The qualified names of the dtype ``expr`` names: its own (``torch.float32``); for
    ``torch.get_default_dtype()``, ``torch.float32`` (torch's default: torch 2.9 docs,
    "torch.get_default_dtype"), or the dtype the file's ``torch.set_default_dtype(...)`` calls all
    set; for a name bound only to such expressions (``DT = torch.float32`` at module level), theirs.
    Empty when it cannot be told. Found by a hunt: both spellings were f32 the rewrite did not see."""
    if isinstance(expr, cst.Call):
        if expr.args or _DEFAULT_DTYPE not in ctx.qualified_names(expr.func):
            return frozenset()
        set_to = [
            call.args[0].value
            for call in ctx.nodes(cst.Call)
            if len(call.args) == 1 and _SET_DEFAULT_DTYPE in ctx.qualified_names(call.func)
        ]
        if not set_to:
            return frozenset({"torch.float32"})
        found = {frozenset(ctx.qualified_names(value)) for value in set_to}
        return next(iter(found)) if len(found) == 1 else frozenset()
    names = ctx.qualified_names(expr)
    if any(name.startswith("torch.") for name in names):
        return frozenset(names)
    if isinstance(expr, cst.Name) and depth < 3:
        values = assigned_values(ctx, expr)
        found = {dtype_names(ctx, value, depth + 1) for value in values}
        if len(found) == 1:
            return next(iter(found))
    return frozenset()


def argument(call: cst.Call, index: int, keyword: str) -> cst.BaseExpression | None:
    """The argument ``call`` passes as ``keyword=`` or at position ``index`` (None when absent)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[index].value if index < len(positional) else None


_INT_OPERATORS = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide, cst.Modulo)
_NUMBER_OPERATORS = (*_INT_OPERATORS, cst.Divide, cst.Power)


_INTEGER_MATH = frozenset({"math.floor", "math.ceil", "math.trunc", "math.comb", "math.factorial", "math.gcd"})
_INTEGER_MATH |= frozenset({"math.isqrt", "math.lcm", "math.perm"})
"""The ``math`` functions that return an ``int`` (Python docs, "math"); the others return a ``float``."""


def python_float(ctx: FileContext, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether ``expr`` is a Python ``float`` the code shows: a float literal (signed), ``float(...)``, a
    ``math`` constant or a ``math`` function that returns a float (``math.log(10000)``), arithmetic of Python
    numbers with one such float or a true division of them, or a name every binding of which is one (as
    :func:`python_number` follows them). With an integer tensor, such a number makes a float32 tensor (torch 2.9
    docs, "Type Promotion")."""
    if depth > 4:
        return False
    if isinstance(expr, cst.Float):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return python_float(ctx, expr.expression, depth)
    if isinstance(expr, cst.BinaryOperation):
        sides = (expr.left, expr.right)
        if not all(python_number(ctx, side, False, depth) for side in sides):
            return False
        return isinstance(expr.operator, cst.Divide) or any(python_float(ctx, side, depth) for side in sides)
    if isinstance(expr, (cst.Call, cst.Attribute)):
        names = ctx.qualified_names(expr.func if isinstance(expr, cst.Call) else expr)
        if isinstance(expr, cst.Call) and "builtins.float" in names:
            return True
        return any(n.startswith("math.") and n not in _INTEGER_MATH for n in names)
    if not isinstance(expr, cst.Name):
        return False
    scope = ctx.scopes.get(expr)
    bindings = list(scope[expr.value]) if scope is not None else []
    nodes = [getattr(b, "node", None) for b in bindings]
    values = [assigned_value(ctx, node) if node is not None else None for node in nodes]
    return bool(values) and all(v is not None and python_float(ctx, v, depth + 1) for v in values)


def python_number(ctx: FileContext, expr: cst.BaseExpression, integer: bool = False, depth: int = 0) -> bool:
    """Whether ``expr`` is a Python number the code shows (an ``int`` with ``integer``): a numeric
    literal, ``len(...)``, ``int(...)`` (``float(...)`` too unless ``integer``), arithmetic of such
    (``+ - * // %``, and ``/ **`` unless ``integer``), or a name every binding of which is one: a plain
    assignment of one, or a parameter whose default is one, or which has no default but is passed by some
    call of its function in the file (``smooth_targets(y, 3, 0.1)``), and that no call of its function in
    the file by name passes anything else (a call that unpacks passes something unknown). Names are
    followed 4 deep."""
    if depth > 4:
        return False
    if isinstance(expr, cst.Integer) or (isinstance(expr, cst.Float) and not integer):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return python_number(ctx, expr.expression, integer, depth)
    if isinstance(expr, cst.BinaryOperation):
        return isinstance(expr.operator, _INT_OPERATORS if integer else _NUMBER_OPERATORS) and all(
            python_number(ctx, side, integer, depth) for side in (expr.left, expr.right)
        )
    if isinstance(expr, cst.Call):
        builtins = {"builtins.len", "builtins.int"} | (set() if integer else {"builtins.float"})
        names = ctx.qualified_names(expr.func)
        if not integer and any(n.startswith("math.") for n in names):
            return True  # `math.log(10000.0)`: a number whatever it returns
        return bool(names & builtins) or (integer and bool(names & _INTEGER_MATH))
    if isinstance(expr, cst.Attribute) and not integer:
        return bool(ctx.qualified_names(expr) & {"math.pi", "math.e", "math.tau", "math.inf"})
    if not isinstance(expr, cst.Name):
        return False
    scope = ctx.scopes.get(expr)
    bindings = list(scope[expr.value]) if scope is not None else []
    if not bindings:
        return False
    for binding in bindings:
        node = getattr(binding, "node", None)
        if isinstance(node, cst.Param):
            passed = _passed_by_name(ctx, node)
            given = [node.default, *(passed or ())] if node.default is not None else list(passed or ())
            if passed is None or not given:  # no default and no call in the file: nothing shows what it is
                return False
            if not all(python_number(ctx, v, integer, depth + 1) for v in given):
                return False
            continue
        value = assigned_value(ctx, node) if node is not None else None
        if value is None or not python_number(ctx, value, integer, depth + 1):
            return False
    return True


def passed_by_name(ctx: FileContext, param: cst.Param) -> list[cst.BaseExpression] | None:
    """What the calls by name of ``param``'s function in the file pass to it (by keyword or by position);
    None when one unpacks (``*args``, ``**kw``) or the parameter is not a plain function's."""
    return _passed_by_name(ctx, param)


def _passed_by_name(ctx: FileContext, param: cst.Param) -> list[cst.BaseExpression] | None:
    """What the calls by name of ``param``'s function in the file pass to it (by keyword or by
    position); None when one unpacks (``*args``, ``**kw``) or the parameter is not a plain function's."""
    params = ctx.parent(param)
    function = ctx.parent(params) if isinstance(params, cst.Parameters) else None
    if not isinstance(function, cst.FunctionDef) or not isinstance(params, cst.Parameters):
        return None
    positional = list(params.params)
    at = positional.index(param) if param in positional else None
    out: list[cst.BaseExpression] = []
    for call in ctx.nodes_named(cst.Call, function.name.value, "func"):
        if not (isinstance(call.func, cst.Name) and call.func.value == function.name.value):
            continue
        if any(a.star for a in call.args):
            return None
        value = argument(call, at, param.name.value) if at is not None else None
        if at is None:
            value = next((a.value for a in call.args if a.keyword and a.keyword.value == param.name.value), None)
        if value is not None:
            out.append(value)
    return out
