"""Where a file puts tensors on the XLA device, and what runs before that.

torch-xla reads XLA_USE_BF16 / XLA_DOWNCAST_BF16 once, when the first tensor goes to the device
(static initialisers over ``GetEnvBool`` in torch-xla's ``torch_xla/csrc/runtime/sys_util.cc``,
used by ``torch_xla/csrc/dtype.cpp``), through the C environment (``getenv``). These are the facts
the planner and :mod:`.in_force` weigh a write against: the direct device uses
(``x.to(device)``, ``device=device`` with ``device`` from ``torch_xla.device()`` /
``xm.xla_device()``), the file's functions that reach one, and the ``if`` branches that leave
the function before what follows them.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from .context import FileContext, findall

DEVICE_FUNCTIONS = frozenset({"torch_xla.device", "torch_xla.core.xla_model.xla_device"})


def device_names(ctx: FileContext) -> frozenset[str]:
    """Names assigned the result of ``torch_xla.device()`` / ``xm.xla_device()``."""

    def compute() -> frozenset[str]:
        assigns = [
            ctx.parent(call) for call in ctx.nodes(cst.Call) if ctx.qualified_names(call.func) & DEVICE_FUNCTIONS
        ]
        return frozenset(
            n.value
            for assign in assigns
            if isinstance(assign, cst.Assign)
            for t in assign.targets
            for n in findall(t.target, m.Name())
        )

    return ctx.memo(("device names",), compute)


def _direct_device_use(ctx: FileContext, call: cst.Call) -> bool:
    """``x.to(device)`` / ``device=device`` with ``device`` from a device function (or the call
    itself): a tensor put on the XLA device."""
    names = device_names(ctx)
    to = isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"  # m.Attribute(attr=m.Name("to"))
    for arg in call.args:
        if (arg.keyword is None and to) or (arg.keyword is not None and arg.keyword.value == "device"):
            value = arg.value
            if (isinstance(value, cst.Name) and value.value in names) or (
                isinstance(value, cst.Call) and ctx.qualified_names(value.func) & DEVICE_FUNCTIONS
            ):
                return True
    return False


def module_functions(ctx: FileContext) -> dict[str, cst.FunctionDef]:
    """The functions defined at the module's top level, by name (a name defined twice: neither)."""

    def compute():
        found: dict[str, cst.FunctionDef] = {}
        twice = set()
        for statement in ctx.module.body:
            if isinstance(statement, cst.FunctionDef):
                name = statement.name.value
                if name in found:
                    twice.add(name)
                found[name] = statement
        return {name: fn for name, fn in found.items() if name not in twice}

    return ctx.memo(("module functions",), compute)


def device_functions(ctx: FileContext) -> frozenset[str]:
    """Names of the module's top-level functions that put a tensor on the XLA device, directly
    (``x.to(device)``, ``device=device`` with ``device`` from ``torch_xla.device()`` /
    ``xm.xla_device()``) or through a call of another such function (a fixed point over the
    file's call graph). Calling one is what makes torch-xla read the legacy variables: it reads
    them once, at the first device tensor (torch-xla ``torch_xla/csrc/runtime/sys_util.cc``
    through static initialisers in ``torch_xla/csrc/dtype.cpp``)."""

    def compute():
        functions = module_functions(ctx)
        direct, calls = set(), {}
        for name, fn in functions.items():
            inner = findall(fn.body, m.Call(), ctx.index)
            if any(_direct_device_use(ctx, c) for c in inner):
                direct.add(name)
            calls[name] = {c.func.value for c in inner if isinstance(c.func, cst.Name) and c.func.value in functions}
        using = set(direct)
        changed = True
        while changed:
            changed = False
            for name, callees in calls.items():
                if name not in using and callees & using:
                    using.add(name)
                    changed = True
        return frozenset(using)

    return ctx.memo(("device functions",), compute)


def uses_device(ctx: FileContext, call: cst.Call) -> bool:
    """Whether ``call`` puts a tensor on the device, directly or through one of the file's
    :func:`device_functions`."""
    return _direct_device_use(ctx, call) or (
        isinstance(call.func, cst.Name) and call.func.value in device_functions(ctx)
    )


def scope_of(ctx: FileContext, node: cst.CSTNode) -> cst.CSTNode:
    """The function ``node`` is in, or the module."""
    return ctx.enclosing(node, cst.FunctionDef) or ctx.module


def exits(block: cst.CSTNode) -> bool:
    """Whether an ``if`` body ends by leaving its function or the program (``return``,
    ``raise``, ``sys.exit()``), so the statements after the ``if`` do not run on its path."""
    if not isinstance(block, cst.IndentedBlock) or not block.body:
        return False
    last = block.body[-1]
    if not isinstance(last, cst.SimpleStatementLine):
        return False
    small = last.body[-1]
    if isinstance(small, (cst.Return, cst.Raise)):
        return True
    return isinstance(small, cst.Expr) and m.matches(
        small.value,
        m.Call(
            func=m.Name("exit")
            | m.Name("quit")
            | m.Attribute(value=m.Name("sys"), attr=m.Name("exit"))
            | m.Attribute(value=m.Name("os"), attr=m.Name("_exit"))
        ),
    )


def off_path(ctx: FileContext, node: cst.CSTNode, target: cst.CSTNode) -> bool:
    """Whether ``node`` sits in an ``if`` branch that does not hold ``target`` and leaves the
    function or the program (``if not args.bf16: train(args); return``): ``target``, after the
    ``if``, does not run after it (Python's language reference, "The return statement")."""
    held = {id(a) for a in ctx.ancestors(target)}
    child = node
    for anc in ctx.ancestors(node):
        if id(anc) in held:
            return False
        if isinstance(anc, cst.If) and anc.body is child and exits(child):
            return True
        child = anc
    return False


def _first_on_path(
    ctx: FileContext, key: tuple, calls: list[cst.Call], target: cst.CSTNode, line: int
) -> cst.Call | None:
    """The first of ``calls`` (of one function, in source order) on a line before ``line`` that
    is not :func:`off_path` for ``target``, without asking each call: a call under no ``if``
    that exits is never off the path, and one under such an ``if`` is whenever the outermost
    of them does not hold ``target``, so only the calls under an exiting ``if`` that holds
    ``target`` are asked (a file of many scripts, each ending ``if __name__ == "__main__":
    sys.exit(main())``, had each write ask each earlier script's ``main()``)."""

    def fenced() -> tuple[list[cst.Call], dict[int, list[cst.Call]]]:
        free: list[cst.Call] = []
        under: dict[int, list[cst.Call]] = {}
        for call in calls:
            outermost: cst.If | None = None
            child: cst.CSTNode = call
            for anc in ctx.ancestors(call):
                if isinstance(anc, cst.FunctionDef):
                    break
                if isinstance(anc, cst.If) and anc.body is child and exits(child):
                    outermost = anc
                child = anc
            if outermost is None:
                free.append(call)
            else:
                under.setdefault(id(outermost), []).append(call)
        return free, under

    free, under = ctx.memo(("fenced",) + key, fenced)
    found = [free[0]] if free and ctx.pos(free[0])[0] < line else []
    for anc in ctx.ancestors(target):
        for call in under.get(id(anc), ()):
            if ctx.pos(call)[0] >= line:
                break
            if not off_path(ctx, call, target):
                found.append(call)
                break
    return ctx.in_order(cst.Call, found)[0] if found else None


def device_use_before(ctx: FileContext, node: cst.CSTNode) -> cst.Call | None:
    """The first call before ``node`` in its function (or at module level), on the path to it,
    that puts a tensor on the device, directly (``.to(device)``) or through a function of the
    file that does (``train(args)``, :func:`device_functions`): after it, torch-xla has read the
    legacy variables (torch-xla ``torch_xla/csrc/runtime/sys_util.cc``). A call in an ``if``
    branch that returns or exits is not on the path to what follows the ``if``."""
    function = ctx.enclosing(node, cst.FunctionDef)  # scope_of, None for the module
    line = ctx.pos(ctx.statement_of(node) or node)[0]
    # the calls of that function that use the device, found once per function (asked per write)
    using = ctx.memo(
        ("device calls in", id(function)), lambda: [c for c in ctx.nodes_in(cst.Call, function) if uses_device(ctx, c)]
    )
    return _first_on_path(ctx, ("device calls in", id(function)), using, node, line)


def direct_device_use_before(ctx: FileContext, statement: cst.BaseStatement) -> cst.Call | None:
    """The first call on a line before ``statement``, in its function (or at module level) and
    on the path to it (:func:`off_path`), that puts a tensor on the XLA device directly
    (``.to(device)``, ``device=device``, ``xm.send_cpu_data_to_device(..., device)`` with
    ``device`` from ``torch_xla.device()`` / ``xm.xla_device()``), or None. Calls of the file's
    functions do not count here (:func:`device_use_before` follows them)."""
    function = ctx.enclosing(statement, cst.FunctionDef)  # scope_of, None for the module
    line = ctx.pos(statement)[0]
    # the calls of that function that put a tensor on the device, found once per function
    direct = ctx.memo(
        ("direct device calls in", id(function)),
        lambda: [c for c in ctx.nodes_in(cst.Call, function) if _direct_device_use(ctx, c)],
    )
    return _first_on_path(ctx, ("direct device calls in", id(function)), direct, statement, line)
