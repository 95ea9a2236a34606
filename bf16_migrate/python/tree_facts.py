"""What a training script builds with the modules of its tree: functions that build its optimizer
(``optimizer = build_optimizer(model, cfg)``, with ``build_optimizer`` in ``optim.py``) and the
optimizer classes defined there (``from lamb import Lamb``).

The codemod migrates one file and reads no other. A script whose optimizer is built in a sibling
module would look like a file without an optimizer (no model found, the switch kept); an
optimizer class of the tree would look like one that cannot take FP32 master weights. So the
project reads the modules a script imports from its tree (:mod:`bf16_migrate.tree_modules`) and
hands the codemod what :func:`module_facts` finds in each, as a :class:`.tree_types.TreeFacts` keyed by the
module's name as the script imports it (libcst's qualified names: ``optim.build_optimizer``,
``.optim.build_optimizer`` for a relative import). With them the codemod finds the model where
its optimizer is built (:func:`.model_site.find_optimizers`), casts it before the factory is
called, and asks the module for the FP32 master weights in gpu-compatible mode
(:class:`.tree_types.FactoryChange`), which :func:`plan_factory_changes` carries out when the project
migrates that module.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from .apply import EditPlan
from .bindings import assigned_values
from .context import FileContext, findall
from .model_reach import float64_state_calls
from .model_site import OptimizerSite, find_optimizers, parameter_sources
from .optimizer_kinds import local_optimizer_classes, master_weights_kind, optimizer_kind
from .optimizers import plan_master_weights
from .snippets import MASTER_WEIGHTS_FACTORY
from .tree_types import FactoryChange, OptimizerFactory, TreeModule, unwrap_optimizer_class, variables_read


def module_facts(ctx: FileContext, module_name: str) -> TreeModule:
    """What the module parsed in ``ctx`` offers a script that imports it as ``module_name``: its
    top-level functions, and the constructors of its top-level classes, that build an optimizer from a
    parameter (:class:`OptimizerFactory`), and its ``torch.optim.Optimizer`` subclasses."""
    local = local_optimizer_classes(ctx)
    factories: list[OptimizerFactory] = []
    for name, func, params in _factory_candidates(ctx):
        keyword_only = [p.name.value for p in func.params.kwonly_params]
        found: list[tuple[str, str, cst.Call]] = []  # (parameter, takes, optimizer call)
        submodules = False
        for site in find_optimizers(ctx):
            owner = _parameter_owning(ctx, site, func) if ctx.enclosing(site.call, cst.FunctionDef) is func else None
            if owner is not None:
                found.append((owner.value, "model", site.call))
                submodules = submodules or site.model is None or owner is not site.model
        for call in findall(func.body, m.Call(), ctx.index):
            inside = ctx.enclosing(call, cst.FunctionDef) is func
            if not inside or not optimizer_kind(ctx, unwrap_optimizer_class(call.func), local):
                continue
            given = _given_parameters(ctx, _params_argument(call), func)
            if given is not None:
                found.append((given.value, "parameters", call))
        if not found or len({(p, t) for p, t, _ in found}) != 1:
            continue  # no optimizer over a parameter, or over several: not a factory we can follow
        param, takes = found[0][0], found[0][1]
        classes = [unwrap_optimizer_class(call.func) for _, _, call in found]
        optimizers = tuple(dict.fromkeys((ctx.code(c), optimizer_kind(ctx, c, local)) for c in classes))
        index = params.index(param) if param in params else None
        if index is None and param not in keyword_only:
            continue
        done = all(
            MASTER_WEIGHTS_FACTORY in ctx.code(call.func) or "optimizer_dtype" in ctx.code(call) for _, _, call in found
        )
        factories.append(OptimizerFactory(name, param, index, takes, tuple(params), optimizers, done, submodules))
    where = Path(ctx.path).name
    state = tuple(f"{where}:{ctx.pos(call)[0]}: {ctx.code(call)}" for call in float64_state_calls(ctx))
    return TreeModule(module_name, ctx.path, tuple(factories), tuple(sorted(local)), state)


def _factory_candidates(ctx: FileContext) -> list[tuple[str, cst.FunctionDef, list[str]]]:
    """(the name a script calls, the function that runs, its positional parameters as the call fills them) of
    each top-level function of the module and each top-level class's ``__init__`` (``Trainer(model, device)``
    runs ``__init__(self, model, device)``: a trainer class that builds its optimizer over the model it is
    given is a factory as a function is; found by a hunt, whose gpu-compatible migration kept no master
    weights there)."""
    found: list[tuple[str, cst.FunctionDef, list[str]]] = []
    for node in ctx.module.body:
        if isinstance(node, cst.FunctionDef):
            found.append(
                (node.name.value, node, [p.name.value for p in (*node.params.posonly_params, *node.params.params)])
            )
        elif isinstance(node, cst.ClassDef):
            init = next(
                (f for f in node.body.body if isinstance(f, cst.FunctionDef) and f.name.value == "__init__"), None
            )
            if init is not None:
                params = [p.name.value for p in (*init.params.posonly_params, *init.params.params)]
                found.append((node.name.value, init, params[1:]))
    return found


def _parameter_owning(ctx: FileContext, site: OptimizerSite, func: cst.FunctionDef) -> cst.Name | None:
    """The parameter of ``func`` whose parameters the optimizer of ``site`` is built over: the site's
    model, or every module its parameters come from (``net.encoder`` and ``net.head`` of parameter
    groups), when that is the parameter or a submodule of it (``net`` for ``net.encoder``); or None."""
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


def _given_parameters(ctx: FileContext, expr: cst.BaseExpression | None, func: cst.FunctionDef, depth: int = 0):
    """The parameter of ``func`` whose values the optimizer's ``params`` are, or None: the parameter itself
    (``AdamW(params)``), a comprehension over it (``[p for n, p in params if p.requires_grad]``), parameter
    groups of such (``[{"params": [p for n, p in params if "bias" not in n], "weight_decay": 0.0}, ...]``),
    or a name bound once to one of them (a weight-decay split: a hunt's factory was refused)."""
    if expr is None or depth > 6:
        return None
    if isinstance(expr, cst.Name):
        if _is_parameter(ctx, expr, func):
            return expr
        values = [v for v in assigned_values(ctx, expr) if ctx.enclosing(v, cst.FunctionDef) is func]
        return _given_parameters(ctx, values[0], func, depth + 1) if len(values) == 1 else None
    if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
        source = expr.for_in.iter
        if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and not source.args:
            source = source.func.value  # `params.items()`, a dict of named parameters
        return _given_parameters(ctx, source, func, depth + 1) if expr.for_in.inner_for_in is None else None
    if isinstance(expr, (cst.List, cst.Tuple)) and expr.elements:
        found = []
        for element in expr.elements:
            group = element.value
            if not isinstance(group, cst.Dict):
                return None
            params = [
                e.value
                for e in group.elements
                if isinstance(e, cst.DictElement)
                and m.matches(e.key, m.SimpleString())
                and isinstance(e.key, cst.SimpleString)
                and e.key.evaluated_value == "params"
            ]
            if len(params) != 1:
                return None
            found.append(_given_parameters(ctx, params[0], func, depth + 1))
        names = {f.value for f in found if f is not None}
        return found[0] if None not in found and len(names) == 1 else None
    return None


def _params_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The first positional argument of ``call``, or its ``params=``."""
    for i, arg in enumerate(call.args):
        if (arg.keyword is None and i == 0) or (arg.keyword is not None and arg.keyword.value == "params"):
            return arg.value
    return None


def plan_factory_changes(ctx: FileContext, plan: EditPlan, changes: tuple[FactoryChange, ...]) -> None:
    """In the module of the tree parsed in ``ctx``, the FP32 master weights its scripts asked
    for (:class:`FactoryChange`): each optimizer the named function builds is built through
    ``with_fp32_master_weights`` (or, for ZeRO-1, with ``optimizer_dtype``), under the guard when
    every script asked under the same one and the function does not rebind its names, else
    unconditionally (the helper leaves FP32 parameters alone). Reported (BFM016)."""
    by_function: dict[str, list[FactoryChange]] = {}
    for change in changes:
        by_function.setdefault(change.function, []).append(change)
    for name, func, _params in _factory_candidates(ctx):
        if name not in by_function:
            continue
        asked = by_function[name]
        guards = {c.guard for c in asked}
        code = guards.pop() if len(guards) == 1 else None
        guard = cst.parse_expression(code) if code is not None and not _rebinds(func, code) else None
        facts = module_facts(ctx, "")
        factory = next((f for f in facts.factories if f.name == name), None)
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
                function=name,
                scripts=scripts,
                condition=ctx.code(guard) if guard is not None else "",
            )
            ctx.outcome.factory_changes_made.append(made)


def _factory_sites(ctx: FileContext, func: cst.FunctionDef, factory: OptimizerFactory):
    """The optimizer constructions of ``func`` that make it ``factory``, as optimizer sites."""
    sites = []
    seen: set[int] = set()
    for site in find_optimizers(ctx):
        inside = ctx.enclosing(site.call, cst.FunctionDef) is func
        owner = _parameter_owning(ctx, site, func) if inside else None
        if owner is not None and owner.value == factory.param:
            sites.append(site)
            seen.add(id(site.call))
    for call in findall(func.body, m.Call(), ctx.index):
        given = _given_parameters(ctx, _params_argument(call), func) if id(call) not in seen else None
        if given is None or given.value != factory.param:
            continue
        if ctx.enclosing(call, cst.FunctionDef) is func and master_weights_kind(ctx, call.func):
            statement = ctx.statement_of(call)
            line = statement if isinstance(statement, cst.SimpleStatementLine) else None
            sites.append(OptimizerSite(call, line, None, ctx.qualified_names(call.func)))
    return sites


def _rebinds(func: cst.FunctionDef, guard: str) -> bool:
    """Whether ``func`` assigns to a name ``guard`` reads (it would not mean the same there)."""
    names = variables_read(cst.parse_expression(guard))
    for node in findall(func.body, m.AssignTarget() | m.AugAssign() | m.For()):
        assert isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.For)), "the matcher names three classes"
        if any(n.value in names for n in findall(node.target, m.Name())):
            return True
    return False
