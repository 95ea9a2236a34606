"""What a training script builds with the modules of its tree: functions that build its optimizer
(``optimizer = build_optimizer(model, cfg)``, with ``build_optimizer`` in ``optim.py``) and the
optimizer classes defined there (``from lamb import Lamb``).

The codemod migrates one file and reads no other. A script whose optimizer is built in a sibling
module would look like a file without an optimizer (no model found, the switch kept); an
optimizer class of the tree would look like one that cannot take FP32 master weights. So the
project reads the modules a script imports from its tree (:mod:`bf16_migrate.tree_modules`) and
hands the codemod what :func:`module_facts` finds in each, as a :class:`TreeFacts` keyed by the
module's name as the script imports it (libcst's qualified names: ``optim.build_optimizer``,
``.optim.build_optimizer`` for a relative import). With them the codemod finds the model where
its optimizer is built (:func:`.model_site.find_optimizers`), casts it before the factory is
called, and asks the module for the FP32 master weights in gpu-compatible mode
(:class:`FactoryChange`), which :func:`plan_factory_changes` carries out when the project
migrates that module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from .apply import EditPlan
from .context import FileContext, findall

if TYPE_CHECKING:
    from .model_site import OptimizerSite

SUBCLASS = "subclass"
"""Master-weights kind of an optimizer class ``with_fp32_master_weights`` can subclass: a stock
torch.optim class, a known ``torch.optim.Optimizer`` subclass of a library
(``rules/torch_api.toml`` ``optimizer_subclasses``) or one defined in the tree."""
ZERO1 = "zero1"
"""Master-weights kind of torch-xla's ZeRO-1, which keeps its own (``optimizer_dtype``)."""


@dataclass(frozen=True)
class OptimizerFactory:
    """A function of a tree module that builds an optimizer over a model it is given
    (``def build_optimizer(model, config): ... torch.optim.AdamW(model.parameters(), ...)``,
    ``takes="model"``) or over parameters it is given (``def make(params, lr): return
    torch.optim.SGD(params, lr)``, ``takes="parameters"``).

    ``name``: the function's name; ``param``: the parameter the model (or its parameters) comes
    in; ``index``: its position (None when keyword-only); ``params``: the names of the
    positional parameters in order (a condition is rewritten through them); ``optimizers``:
    each optimizer class the function may build, as written, with its master-weights kind
    (:data:`SUBCLASS`, :data:`ZERO1`, or ``""`` when FP32 master weights cannot be added to it)."""

    name: str
    param: str
    index: int | None
    takes: str
    params: tuple[str, ...]
    optimizers: tuple[tuple[str, str], ...]
    master_weights: bool = False
    """Every optimizer it builds already keeps FP32 master weights (built through
    ``with_fp32_master_weights``, as a gpu-compatible migration of the module writes it)."""
    submodules: bool = False
    """``takes="model"`` and an optimizer is built over a submodule of it (``model.deep.parameters()``,
    ``{"params": model.encoder.parameters()}``): the argument is taken for the model only where the
    script calls it as one (:func:`.model_site.whole_model`), the whole model being cast."""

    @property
    def blocking(self) -> str | None:
        """The first optimizer class that cannot take FP32 master weights, or None."""
        return next((name for name, kind in self.optimizers if not kind), None)


@dataclass(frozen=True)
class TreeModule:
    """One module of the tree a script imports: ``name`` as the script imports it
    (``optim``, ``.optim``, ``pkg.optim``), ``path`` of its file (for messages and for the
    project to find it again), its optimizer ``factories`` and the names of the
    ``torch.optim.Optimizer`` subclasses it defines (``optimizer_classes``)."""

    name: str
    path: str
    factories: tuple[OptimizerFactory, ...] = ()
    optimizer_classes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TreeFacts:
    """The modules of the tree one script imports (:class:`TreeModule`), for its codemod, and
    those it imports that are there but cannot be read (``unread``: ``(name, path, why)``, a
    FIFO, a file without read permission): what their code does under the switch cannot be told
    (:mod:`.unread_imports`)."""

    modules: tuple[TreeModule, ...] = ()
    unread: tuple[tuple[str, str, str], ...] = ()

    def factory(self, qualified: set[str]) -> tuple[TreeModule, OptimizerFactory] | None:
        """The factory one of the ``qualified`` names denotes (``optim.build_optimizer``), or None."""
        for module in self.modules:
            for factory in module.factories:
                if f"{module.name}.{factory.name}" in qualified:
                    return module, factory
        return None

    def optimizer_class(self, qualified: set[str]) -> TreeModule | None:
        """The module defining the optimizer class one of the ``qualified`` names denotes, or None."""
        for module in self.modules:
            if any(f"{module.name}.{name}" in qualified for name in module.optimizer_classes):
                return module
        return None


@dataclass(frozen=True)
class FactoryChange:
    """What a migrated script asks of an optimizer factory of its tree (gpu-compatible mode):
    FP32 master weights for the optimizer ``function`` of the module at ``path`` builds, under
    ``guard`` (source in the function's own names, the script's condition rewritten through the
    call's arguments), or unconditionally when ``guard`` is None (``with_fp32_master_weights``
    leaves FP32 parameters alone, so a model the script did not cast is unaffected).
    ``script`` asked for it (named in the module's finding)."""

    path: str
    function: str
    guard: str | None
    script: str


def module_facts(ctx: FileContext, name: str) -> TreeModule:
    """What the module parsed in ``ctx`` offers a script that imports it as ``name``: its
    top-level functions that build an optimizer from a parameter (:class:`OptimizerFactory`)
    and its ``torch.optim.Optimizer`` subclasses."""
    from .model_site import find_optimizers  # model_site asks this module about the tree
    from .optimizers import local_optimizer_classes
    from .snippets import MASTER_WEIGHTS_FACTORY

    local = local_optimizer_classes(ctx)
    factories: list[OptimizerFactory] = []
    for func in ctx.module.body:
        if not isinstance(func, cst.FunctionDef):
            continue
        params = [p.name.value for p in (*func.params.posonly_params, *func.params.params)]
        keyword_only = [p.name.value for p in func.params.kwonly_params]
        found: list[tuple[str, str, cst.Call]] = []  # (parameter, takes, optimizer call)
        submodules = False
        for site in find_optimizers(ctx):
            owner = _parameter_owning(ctx, site, func) if ctx.enclosing(site.call, cst.FunctionDef) is func else None
            if owner is not None:
                found.append((owner.value, "model", site.call))
                submodules = submodules or site.model is None or owner is not site.model
        for call in findall(func.body, m.Call()):
            inside = ctx.enclosing(call, cst.FunctionDef) is func
            if not inside or not _master_weights_kind(ctx, unwrap_optimizer_class(call.func), local):
                continue
            first = _params_argument(call)
            if isinstance(first, cst.Name) and _is_parameter(ctx, first, func):
                found.append((first.value, "parameters", call))
        if not found or len({(p, t) for p, t, _ in found}) != 1:
            continue  # no optimizer over a parameter, or over several: not a factory we can follow
        param, takes = found[0][0], found[0][1]
        classes = [unwrap_optimizer_class(call.func) for _, _, call in found]
        optimizers = tuple(dict.fromkeys((ctx.code(c), _master_weights_kind(ctx, c, local)) for c in classes))
        index = params.index(param) if param in params else None
        if index is None and param not in keyword_only:
            continue
        done = all(
            MASTER_WEIGHTS_FACTORY in ctx.code(call.func) or "optimizer_dtype" in ctx.code(call) for _, _, call in found
        )
        factories.append(
            OptimizerFactory(func.name.value, param, index, takes, tuple(params), optimizers, done, submodules)
        )
    return TreeModule(name, ctx.path, tuple(factories), tuple(sorted(local)))


def unwrap_optimizer_class(func: cst.BaseExpression) -> cst.BaseExpression:
    """The optimizer class inside ``with_fp32_master_weights(torch.optim.AdamW)`` or
    ``(with_fp32_master_weights(SGD) if flag else SGD)``, as the codemod writes them."""
    while True:
        if isinstance(func, cst.IfExp):
            func = func.orelse
        elif isinstance(func, cst.Call) and len(func.args) == 1 and func.args[0].keyword is None:
            func = func.args[0].value
        else:
            return func


def _parameter_owning(ctx: FileContext, site: OptimizerSite, func: cst.FunctionDef) -> cst.Name | None:
    """The parameter of ``func`` whose parameters the optimizer of ``site`` is built over: the site's
    model, or every module its parameters come from (``net.encoder`` and ``net.head`` of parameter
    groups), when that is the parameter or a submodule of it (``net`` for ``net.encoder``); or None."""
    from .model_site import parameter_sources

    sources = [site.model] if site.model is not None else parameter_sources(ctx, site.call)
    roots: list[cst.Name] = []
    for source in sources:
        while isinstance(source, cst.Attribute):
            source = source.value
        if not isinstance(source, cst.Name) or not _is_parameter(ctx, source, func):
            return None
        roots.append(source)
    if not roots or len({r.value for r in roots}) != 1:
        return None
    return roots[0]


def _is_parameter(ctx: FileContext, name: cst.Name, func: cst.FunctionDef) -> bool:
    """Whether ``name`` is bound only by a parameter of ``func`` where it is read."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return False
    bindings = [a for a in scope[name.value] if isinstance(a, Assignment)]
    return bool(bindings) and all(
        isinstance(a.node, cst.Param) and ctx.enclosing(a.node, cst.FunctionDef) is func for a in bindings
    )


def _params_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The first positional argument of ``call``, or its ``params=``."""
    for i, arg in enumerate(call.args):
        if (arg.keyword is None and i == 0) or (arg.keyword is not None and arg.keyword.value == "params"):
            return arg.value
    return None


def _master_weights_kind(ctx: FileContext, func: cst.BaseExpression, local: set[str]) -> str:
    """:data:`SUBCLASS` for a class ``with_fp32_master_weights`` can subclass, :data:`ZERO1` for
    torch-xla's ZeRO-1, ``""`` otherwise (also for anything that is no optimizer class)."""
    api = ctx.rules.torch_api
    qualified = ctx.qualified_names(func)
    if qualified & (api.stock_optimizers | api.optimizer_subclasses):
        return SUBCLASS
    if isinstance(func, cst.Name) and func.value in local:
        return SUBCLASS
    if ctx.tree is not None and ctx.tree.optimizer_class(qualified) is not None:
        return SUBCLASS
    if qualified & api.zero_redundancy_optimizers:
        return ZERO1
    return ""


def master_weights_kind(ctx: FileContext, func: cst.BaseExpression) -> str:
    """How an optimizer class written ``func`` in this file takes FP32 master weights
    (:data:`SUBCLASS`, :data:`ZERO1`, ``""``): torch.optim's and the known library subclasses,
    classes defined in the file, and the tree's own (:class:`TreeFacts`)."""
    from .optimizers import local_optimizer_classes

    return _master_weights_kind(ctx, func, local_optimizer_classes(ctx))


def guard_through_call(
    ctx: FileContext, guard: cst.BaseExpression | None, call: cst.Call, factory: OptimizerFactory
) -> str | None:
    """``guard`` (the script's condition) in the names of ``factory``'s own parameters: every
    name it reads must be passed to the call as that very name (``build_optimizer(model, cfg)``
    with ``def build_optimizer(model, config)``: ``cfg["precision"] == "bf16"`` becomes
    ``config["precision"] == "bf16"``). None when there is no guard or it cannot be rewritten."""
    if guard is None:
        return None
    renames: dict[str, str] = {}
    for name in _variables(guard):
        param = _parameter_receiving(call, factory, name)
        if param is None:
            return None
        renames[name] = param

    class _Rename(cst.CSTTransformer):
        def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
            return updated.with_changes(value=renames.get(updated.value, updated.value))

        def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
            return updated.with_changes(attr=original.attr)  # an attribute's own name is no variable

        def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
            return updated.with_changes(keyword=original.keyword)  # nor a keyword's

    renamed = cast(cst.BaseExpression, guard.deep_clone().visit(_Rename()))
    return cst.Module(body=[]).code_for_node(renamed)


def _variables(expr: cst.BaseExpression) -> set[str]:
    """The variables ``expr`` reads: its names, not attribute names nor keywords. (``expr`` may
    be a node of no module, a guard parsed on its own, so no scope can be asked.)"""
    found: set[str] = set()

    class _Reads(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Arg(self, node: cst.Arg) -> bool:
            node.value.visit(self)
            return False

    expr.visit(_Reads())
    return found


def _parameter_receiving(call: cst.Call, factory: OptimizerFactory, name: str) -> str | None:
    """The parameter of ``factory`` that receives the variable ``name`` at ``call`` (passed as
    that bare name, positionally or by keyword), or None."""
    for i, arg in enumerate(call.args):
        if not m.matches(arg.value, m.Name(name)) or arg.star:
            continue
        if arg.keyword is not None:
            return arg.keyword.value
        return factory.params[i] if i < len(factory.params) else None
    return None


def plan_factory_changes(ctx: FileContext, plan: EditPlan, changes: tuple[FactoryChange, ...]) -> None:
    """In the module of the tree parsed in ``ctx``, the FP32 master weights its scripts asked
    for (:class:`FactoryChange`): each optimizer the named function builds is built through
    ``with_fp32_master_weights`` (or, for ZeRO-1, with ``optimizer_dtype``), under the guard when
    every script asked under the same one and the function does not rebind its names, else
    unconditionally (the helper leaves FP32 parameters alone). Reported (BFM016)."""
    from .optimizers import plan_master_weights

    by_function: dict[str, list[FactoryChange]] = {}
    for change in changes:
        by_function.setdefault(change.function, []).append(change)
    for func in ctx.module.body:
        if not isinstance(func, cst.FunctionDef) or func.name.value not in by_function:
            continue
        asked = by_function[func.name.value]
        guards = {c.guard for c in asked}
        code = guards.pop() if len(guards) == 1 else None
        guard = cst.parse_expression(code) if code is not None and not _rebinds(func, code) else None
        facts = module_facts(ctx, "")
        factory = next((f for f in facts.factories if f.name == func.name.value), None)
        if factory is None:
            continue
        sites = _factory_sites(ctx, func, factory)
        plan_master_weights(ctx, plan, guard, sites, report_owners=False)
        scripts = ", ".join(sorted({c.script for c in asked}))
        for site in sites:
            made = ctx.report(
                "BFM016",
                site.call,
                fixed=True,
                variant="module" if guard is not None else "module_unconditional",
                optimizer=ctx.code(site.call.func),
                function=func.name.value,
                scripts=scripts,
                condition=ctx.code(guard) if guard is not None else "",
            )
            ctx.outcome.factory_changes_made.append(made)


def _factory_sites(ctx: FileContext, func: cst.FunctionDef, factory: OptimizerFactory):
    """The optimizer constructions of ``func`` that make it ``factory``, as optimizer sites."""
    from .model_site import OptimizerSite, find_optimizers

    sites = []
    seen: set[int] = set()
    for site in find_optimizers(ctx):
        inside = ctx.enclosing(site.call, cst.FunctionDef) is func
        owner = _parameter_owning(ctx, site, func) if inside else None
        if owner is not None and owner.value == factory.param:
            sites.append(site)
            seen.add(id(site.call))
    for call in findall(func.body, m.Call()):
        first = _params_argument(call)
        if id(call) in seen or first is None or not m.matches(first, m.Name(factory.param)):
            continue
        if ctx.enclosing(call, cst.FunctionDef) is func and master_weights_kind(ctx, call.func):
            statement = ctx.statement_of(call)
            line = statement if isinstance(statement, cst.SimpleStatementLine) else None
            sites.append(OptimizerSite(call, line, None, ctx.qualified_names(call.func)))
    return sites


def _rebinds(func: cst.FunctionDef, guard: str) -> bool:
    """Whether ``func`` assigns to a name ``guard`` reads (it would not mean the same there)."""
    names = _variables(cst.parse_expression(guard))
    for node in findall(func.body, m.AssignTarget() | m.AugAssign() | m.For()):
        assert isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.For)), "the matcher names three classes"
        if any(n.value in names for n in findall(node.target, m.Name())):
            return True
    return False
