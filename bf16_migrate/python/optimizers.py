"""The optimizer side of the migration: FP32 master weights, torch-xla's ZeRO-1, the FP32
gradient norm, and ``--fp32-optimizer-state``.

gpu-compatible mode keeps the bf16 model's updates in FP32 (Neuron's migration guide, "FP32
master weights"): a stock optimizer is built through ``with_fp32_master_weights``
(:mod:`.snippets`), ZeRO-1 (``torch_xla/distributed/zero_redundancy_optimizer.py``) gets its own
``optimizer_dtype``, and ``torch.nn.utils.clip_grad_norm_`` computes its norm in FP32. Edits go
into the :class:`~.apply.EditPlan`; expressions are built with libcst nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from ..rules import Mode
from . import snippets
from .apply import EditPlan
from .bindings import assigned_value, assigned_values, definitions
from .conditions import choose
from .context import FileContext, findall
from .leaves import leaf_source
from .model_site import OptimizerSite, find_optimizers
from .optimizer_kinds import local_optimizer_classes, master_weights_kind
from .tree_types import SUBCLASS, ZERO1, FactoryChange, guard_through_call, unwrap_optimizer_class


def plan_master_weights(
    ctx: FileContext,
    plan: EditPlan,
    guard: cst.BaseExpression | None,
    sites: list[OptimizerSite],
    report_owners: bool = True,
    sharded: frozenset[int] = frozenset(),
    leaves: Sequence[cst.Call] = (),
) -> list[FactoryChange]:
    """gpu-compatible mode's FP32 master weights, per optimizer built in the file: a class
    ``with_fp32_master_weights`` can subclass (:func:`.optimizer_kinds.master_weights_kind`: torch.optim's,
    the known library subclasses, one defined in the file or in the tree) is built through it
    (``snippets.MASTER_WEIGHTS_SOURCE``); torch-xla's ZeRO-1 gets its own setting
    (:func:`zero1_master_weights`); an optimizer built by a factory of the tree is left to that
    module (the :class:`.tree_types.FactoryChange` returned, the guard rewritten through the
    call); a wrapper that owns the optimizer (``rules/torch_api.toml`` ``[optimizer_owners]``:
    NxD, FSDP; with ``report_owners``) and any other optimizer are reported (BFM060), the former
    with the wrapper's own setting named. ``sharded``: ids of the optimizer calls and FSDP wraps
    left alone, the model's FSDP shards being its FP32 master weights already (``compute_dtype``,
    :mod:`.wrappers`). ``leaves``: the optimizers over the script's own bf16 leaf tensors
    (:func:`leaf_optimizers`), built through the wrapper too."""
    api = ctx.rules.torch_api
    wrapped = False
    for call in leaves:
        plan.replace[id(call.func)] = lambda node: wrap_master_weights(node, guard)
        wrapped = True
    changes: list[FactoryChange] = []
    for site in sites:
        if id(site.call) in sharded:
            continue
        if site.factory is not None:
            module, factory = site.factory
            changes.append(
                FactoryChange(module.path, factory.name, guard_through_call(guard, site.call, factory), ctx.path)
            )
            continue
        kind = master_weights_kind(ctx, unwrap_optimizer_class(site.call.func))
        if kind == ZERO1:
            zero1_master_weights(ctx, plan, guard, site)
        elif kind == SUBCLASS:
            plan.replace[id(site.call.func)] = lambda node: wrap_master_weights(node, guard)
            wrapped = True
        elif not site.qualified & api.optimizer_owners.keys():
            ctx.report("BFM060", site.call, fixed=False, optimizer=ctx.code(site.call.func))
    for call in ctx.nodes(cst.Call) if report_owners else ():
        owner = sorted(ctx.qualified_names(call.func) & api.optimizer_owners.keys())
        if owner and id(call) not in sharded:
            ctx.report(
                "BFM060",
                call,
                fixed=False,
                variant="owner",
                owner=ctx.code(call.func),
                setting=api.optimizer_owners[owner[0]],
            )
    if wrapped:
        plan.prelude.append(snippets.master_weights_helper())
    return changes


def leaf_optimizers(
    ctx: FileContext, sites: Sequence[OptimizerSite], made_bf16: Iterable[cst.CSTNode]
) -> list[cst.Call]:
    """The optimizers, other than ``sites`` (those over a model's parameters), built over tensors of
    the script's own that the migration makes bf16 (``made_bf16``: the device tensors' factories,
    :mod:`.device_tensors`): ``torch.optim.Adam([log_alpha], lr=3e-3)`` of ``log_alpha =
    torch.zeros(1, device=device, requires_grad=True)``, a learned temperature, a loss weight. Under
    the switch those were bf16 leaves as the model's parameters were; gpu-compatible keeps every
    bf16 parameter's update in FP32 (Neuron's migration guide, "FP32 master weights"), so each is
    built through ``with_fp32_master_weights`` too (a class it can subclass,
    :func:`.optimizer_kinds.master_weights_kind`; found by a hunt: a SAC script's temperature).
    Only a list or tuple written in the call whose names are each bound to such a tensor."""
    made = frozenset(id(node) for node in made_bf16)
    if not made:
        return []
    taken = frozenset(id(site.call) for site in sites)
    found: list[cst.Call] = []
    for call in ctx.nodes(cst.Call):
        if id(call) in taken or not call.args:
            continue
        first = call.args[0]
        params = first.value if first.keyword is None or first.keyword.value == "params" else None
        if not isinstance(params, (cst.List, cst.Tuple)) or not params.elements:
            continue
        names = [element.value for element in params.elements]
        if not all(isinstance(name, cst.Name) for name in names):
            continue
        if not any(_bound_to(ctx, name, made) for name in names if isinstance(name, cst.Name)):
            continue
        if master_weights_kind(ctx, unwrap_optimizer_class(call.func)) == SUBCLASS:
            found.append(call)
    return found


def _bound_to(ctx: FileContext, name: cst.Name, made: frozenset[int], depth: int = 0) -> bool:
    """Whether every plain assignment that binds ``name`` where it is read assigns one of ``made``, or
    a copy of one (``.clone().requires_grad_()``, ``nn.Parameter(...)``: :func:`.leaves.leaf_source`),
    directly or through one name (``content = t.to(d)``; ``img = content.clone().requires_grad_()``)."""
    values = [_scaled(leaf_source(ctx, value)) for value in assigned_values(ctx, name)]
    return bool(values) and all(
        id(value) in made or (isinstance(value, cst.Name) and depth < 1 and _bound_to(ctx, value, made, depth + 1))
        for value in values
    )


def _scaled(value: cst.BaseExpression) -> cst.BaseExpression:
    """``t`` of ``t * 0.1`` (an initial scale: the product has ``t``'s dtype), else ``value``."""
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Multiply, cst.Divide)):
        numbers = (cst.Integer, cst.Float)
        if isinstance(value.right, numbers):
            return value.left
        if isinstance(value.left, numbers) and isinstance(value.operator, cst.Multiply):
            return value.right
    return value


def master_weights_blocker(ctx: FileContext, site: OptimizerSite) -> tuple[str, str | None] | None:
    """Why FP32 master weights cannot be added for ``site``: the optimizer class as written and,
    when a factory of the tree builds it, that factory's name; None when they can (or a wrapper
    that owns the optimizer has its own setting, reported by :func:`plan_master_weights`)."""
    owners = ctx.rules.torch_api.optimizer_owners
    if site.factory is not None:
        blocking = site.factory[1].blocking
        return None if blocking is None else (blocking, site.factory[1].name)
    if site.qualified & owners.keys():
        return None
    if master_weights_kind(ctx, unwrap_optimizer_class(site.call.func)):
        return None
    return ctx.code(site.call.func), None


_OPTIMIZER_API = frozenset({"step", "zero_grad", "state_dict", "load_state_dict", "add_param_group"})
"""``torch.optim.Optimizer``'s own public methods (torch/optim/optimizer.py)."""


def _reads_of(ctx: FileContext, name: cst.Name) -> list[cst.CSTNode]:
    """The reads of the value the assignment to ``name`` binds (its binding's references, libcst's scopes)."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return []
    return [
        access.node
        for binding in scope[name.value]
        if getattr(binding, "node", None) is name
        for access in getattr(binding, "references", ())
    ]


def updated_elsewhere(ctx: FileContext, site: OptimizerSite) -> cst.Call | None:
    """A call of a method of the file's own optimizer class other than ``step()`` (``opt.second_step()``: a
    SAM-like class that updates through an inner optimizer) when the file never calls ``step()`` of the
    optimizer ``site`` builds nor hands it to a call (``xm.optimizer_step(opt)`` calls its ``step``): the
    FP32-master-weights helper wraps ``step()`` only (``snippets.MASTER_WEIGHTS_SOURCE``), so those weights
    would be updated in bf16 with no FP32 copy (found by a hunt: a SAM optimizer's momentum stayed bf16). None
    otherwise."""
    func = unwrap_optimizer_class(site.call.func)
    if not isinstance(func, cst.Name):
        return None
    classes = [c for c in ctx.nodes(cst.ClassDef) if c.name.value == func.value]
    if len(classes) != 1:
        return None
    methods = {
        f.name.value
        for f in classes[0].body.body
        if isinstance(f, cst.FunctionDef) and not f.name.value.startswith("_") and f.name.value not in _OPTIMIZER_API
    }
    assign = ctx.parent(site.call)
    if not methods or not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    if isinstance(target, cst.Name):
        uses = _reads_of(ctx, target)
    elif m.matches(target, m.Attribute(value=m.Name("self"))):  # `self.opt = SAM(...)` in a trainer class
        assert isinstance(target, cst.Attribute), "matched"
        holder_class = ctx.enclosing(site.call, cst.ClassDef)
        if holder_class is None:
            return None
        pattern = m.Attribute(value=m.Name("self"), attr=m.Name(target.attr.value))
        uses = [a for a in findall(holder_class, pattern, ctx.index) if a is not target]
    else:
        return None
    found: cst.Call | None = None
    for use in uses:
        holder = ctx.parent(use)
        if isinstance(holder, cst.Attribute) and holder.value is use:
            call = ctx.parent(holder)
            if not isinstance(call, cst.Call) or call.func is not holder:
                continue
            if holder.attr.value == "step":
                return None
            if holder.attr.value in methods and found is None:
                found = call
        elif isinstance(holder, cst.Arg):
            call = ctx.parent(holder)
            if isinstance(call, cst.Call) and any(q.startswith("builtins.") for q in ctx.qualified_names(call.func)):
                continue  # `hasattr(opt, ...)`, `print(opt)`: no step
            return None  # handed to code that may call its step()
    return found


def zero1_master_weights(
    ctx: FileContext, plan: EditPlan, guard: cst.BaseExpression | None, site: OptimizerSite
) -> None:
    """torch-xla's ``ZeroRedundancyOptimizer`` keeps its sharded master weights and state in
    ``optimizer_dtype`` (default: the parameters' dtype, bf16 after the model cast), and puts
    them in its ``state_dict`` only with ``save_master_weights=True``
    (torch_xla/distributed/zero_redundancy_optimizer.py): ``optimizer_dtype=torch.float32``
    is added, and ``save_master_weights=True`` where the file takes the optimizer's
    ``state_dict()``. A value the script already passes is kept and reported."""
    call = site.call
    keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
    name = ctx.code(call.func)
    added = []
    if "optimizer_dtype" in keywords:
        ctx.report(
            "BFM063",
            keywords["optimizer_dtype"],
            fixed=False,
            variant="kept",
            optimizer=name,
            value=ctx.code(keywords["optimizer_dtype"].value),
        )
    else:
        added.append(("optimizer_dtype", "torch.float32", "None"))
    if "save_master_weights" not in keywords and checkpoints(ctx, site):
        added.append(("save_master_weights", "True", "False"))
    if not added:
        return
    plan.replace[id(call)] = lambda node: add_keywords(node, added, guard)
    text = " and ".join(f"`{k}={v}`" for k, v, _ in added)
    ctx.report("BFM063", call, fixed=True, optimizer=name, added=text)


def zero1_bf16_state(
    ctx: FileContext, plan: EditPlan, guard: cst.BaseExpression | None, sites: list[OptimizerSite]
) -> None:
    """stochastic mode: torch-xla's ``ZeroRedundancyOptimizer`` keeps its master weights and
    state in ``optimizer_dtype``, ``torch.float32`` when not given
    (torch_xla/distributed/zero_redundancy_optimizer.py); under the legacy switch that f32 was
    bf16 on the device, so ``optimizer_dtype=torch.bfloat16`` is added (BFM066, with the
    measurement). A value the script passes is kept and reported."""
    for site in sites:
        if not site.qualified & ctx.rules.torch_api.zero_redundancy_optimizers:
            continue
        call = site.call
        name = ctx.code(call.func)
        given = next((a for a in call.args if a.keyword is not None and a.keyword.value == "optimizer_dtype"), None)
        if given is not None:
            ctx.report("BFM066", given, fixed=False, variant="kept", optimizer=name, value=ctx.code(given.value))
            continue
        plan.replace[id(call)] = lambda node: add_keywords(node, [("optimizer_dtype", "torch.bfloat16", "None")], guard)
        ctx.report("BFM066", call, fixed=True, optimizer=name)


def checkpoints(ctx: FileContext, site: OptimizerSite) -> bool:
    """Whether the file checkpoints the optimizer: calls one of ``checkpoint_methods``
    (``rules/torch_api.toml``: ``state_dict()``, ``save_sharded_state_dict(...)``...) on a
    name the optimizer is assigned to."""
    assign = ctx.parent(site.call)
    if not isinstance(assign, cst.Assign):
        return False
    targets = {ctx.code(t.target) for t in assign.targets}
    methods = ctx.rules.torch_api.checkpoint_methods
    return any(
        isinstance(c.func, cst.Attribute) and c.func.attr.value in methods and ctx.code(c.func.value) in targets
        for c in ctx.nodes(cst.Call)
    )


def plan_fp32_grad_norm(ctx: FileContext, plan: EditPlan, guard: cst.BaseExpression | None) -> None:
    """gpu-compatible mode: ``torch.nn.utils.clip_grad_norm_`` (``rules/torch_api.toml``
    ``grad_norm_clipping``) becomes ``clip_grad_norm_fp32_`` (``snippets.FP32_GRAD_NORM_SOURCE``),
    the same clipping with the norm of the bf16 gradients computed in FP32."""
    api = ctx.rules.torch_api
    calls = [c for c in ctx.nodes(cst.Call) if ctx.qualified_names(c.func) & api.grad_norm_clipping]
    for call in calls:
        plan.replace[id(call.func)] = lambda node: choose(cst.Name(snippets.FP32_GRAD_NORM), node, guard)
        ctx.report("BFM064", call, fixed=True, call=ctx.code(call.func), helper=snippets.FP32_GRAD_NORM)
    if calls:
        plan.prelude.append(snippets.fp32_grad_norm_helper())


def fp32_optimizer_state(ctx: FileContext, plan: EditPlan, mode: Mode) -> None:
    """``--fp32-optimizer-state`` (Neuron's migration guide from XLA_DOWNCAST_BF16: "if the optimizer states are to
    be kept in FP32, convert the gradients to FP32 before optimizer computations"): in the
    ``step`` of optimizer classes defined in the file, ``p.grad`` / ``p.grad.data`` read
    into a local become ``.float()``, and ``torch.zeros_like(p...)`` states get
    ``dtype=torch.float32``. Stock optimizers keep state in the parameter dtype: reported."""
    local = local_optimizer_classes(ctx)
    for cls in ctx.nodes(cst.ClassDef):
        if cls.name.value not in local:
            continue
        for func in findall(cls.body, m.FunctionDef(name=m.Name("step")), ctx.index):
            for assign in findall(
                func.body,
                m.Assign(
                    value=m.Attribute(attr=m.Name("grad"))
                    | m.Attribute(value=m.Attribute(attr=m.Name("grad")), attr=m.Name("data"))
                ),
                ctx.index,
            ):
                plan.replace[id(assign.value)] = lambda node: cst.Call(
                    func=cst.Attribute(value=node, attr=cst.Name("float"))
                )
                ctx.report("BFM061", assign.value, fixed=True, optimizer=cls.name.value)
            for call in findall(
                func.body,
                m.Call(
                    func=m.Attribute(
                        value=m.Name("torch"), attr=m.Name("zeros_like") | m.Name("ones_like") | m.Name("empty_like")
                    )
                ),
                ctx.index,
            ):
                if not any(a.keyword is not None and a.keyword.value == "dtype" for a in call.args):
                    plan.replace[id(call)] = add_float32_dtype
                    ctx.report("BFM061", call, fixed=True, variant="state", optimizer=cls.name.value)
    for site in find_optimizers(ctx):
        if site.qualified & ctx.rules.torch_api.stock_optimizers and not mode.master_weights:
            ctx.report("BFM061", site.call, fixed=False, variant="stock", optimizer=ctx.code(site.call.func))


def wrap_master_weights(func: cst.BaseExpression, guard: cst.BaseExpression | None) -> cst.BaseExpression:
    """``with_fp32_master_weights(func)`` in place of the optimizer class ``func`` (under
    ``guard``: :func:`.conditions.choose`)."""
    return choose(cst.Call(func=cst.Name(snippets.MASTER_WEIGHTS_FACTORY), args=[cst.Arg(func)]), func, guard)


def add_keywords(call: cst.Call, added: list[tuple[str, str, str]], guard: cst.BaseExpression | None) -> cst.Call:
    """``call`` with ``keyword=value`` arguments appended (``added``: (keyword, value, value
    when the guard is false) source triples), as :func:`add_float32_dtype` appends its own."""
    for keyword, value, otherwise in added:
        expr = choose(cst.parse_expression(value), cst.parse_expression(otherwise), guard)
        call = append_keyword(call, keyword, expr)
    return call


def add_float32_dtype(call: cst.Call) -> cst.Call:
    """``call`` with ``dtype=torch.float32`` appended (:func:`append_keyword`)."""
    return append_keyword(call, "dtype", snippets.attr("torch.float32"))


def append_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with ``keyword=value`` as its last argument. After an explicit trailing comma
    (a call written one argument per line) the new argument takes that comma and the one before
    it the separator of the line above, so it lands on a line of its own, indented alike."""
    args = list(call.args)
    new = cst.Arg(
        value=value,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    elif args:
        trailing = args[-1].comma
        separator = args[-2].comma if len(args) > 1 else cst.MaybeSentinel.DEFAULT
        if not isinstance(separator, cst.Comma):
            separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        elif isinstance(
            separator.whitespace_after, cst.ParenthesizedWhitespace
        ):  # the line break and indent, not a comment
            ws = separator.whitespace_after
            separator = separator.with_changes(
                whitespace_after=ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
            )
        args[-1] = args[-1].with_changes(comma=separator)
        new = new.with_changes(comma=trailing)
    args.append(new)
    return call.with_changes(args=args)


def by_hand_update(ctx: FileContext, sites: list[OptimizerSite]) -> cst.CSTNode | None:
    """Where a file that builds no optimizer (``sites`` empty) and updates parameters itself in a
    loop over them (``for p in model.parameters(): p -= lr * p.grad``, ``for p, g in zip(params,
    grads): p -= lr * g`` with ``params = list(model.parameters())``, a zeroth-order
    ``p.data.add_(z, alpha=...)``) gets its gradients: the first ``loss.backward`` or
    ``[gradient_functions]`` call (``torch.autograd.grad``), else the first update; None when it
    does not. gpu-compatible mode keeps the FP32 master weights in the optimizer (Neuron's
    migration guide, "GPU-compatible bf16": FP32 master weights), which such a script has none of
    (BFM017 ``by_hand``)."""
    if sites:
        return None
    held = _names_of_parameters(ctx)
    updates = [
        u
        for loop in ctx.nodes(cst.For)
        if (u := _update_of_its_target(loop, held)) is not None and not _of_a_host_module(ctx, loop)
    ]
    if not updates:
        return None
    gradient_functions = ctx.rules.torch_api.gradient_functions
    for call in ctx.nodes(cst.Call):
        if m.matches(call.func, m.Attribute(attr=m.Name("backward"))):
            return call.func
        if ctx.qualified_names(call.func) & gradient_functions:
            return call.func
    # no gradient: an update made step after step (a zeroth-order estimate, evolution strategies),
    # not one pass over the weights (a quantisation, a rescaling of an inference script)
    repeated = [u for u in updates if _in_a_loop(ctx, ctx.enclosing(u, cst.For))]
    return min(repeated, key=ctx.pos) if repeated else None


def _of_a_host_module(ctx: FileContext, loop: cst.For) -> bool:
    """Whether ``loop`` runs over ``base.parameters()`` of a module the code shows on the host: every binding of
    ``base`` builds it there (a class of the file or of torch.nn called without ``device=``, or a function of the
    file whose body moves nothing and names no device), and none of its reads moves it or hands it on. A host copy
    perturbed to make checkpoints: its update is no training on the device (a hunt's gpu-compatible over-refusal,
    BFM017). Anything the code does not show (a factory of another module) is not one."""
    if not m.matches(loop.iter, _PARAMETERS):
        return False
    assert isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Attribute), "matched _PARAMETERS"
    module = loop.iter.func.value
    if not isinstance(module, cst.Name):
        return False
    scope = ctx.scopes.get(module)
    bindings = [b for b in scope[module.value]] if scope is not None else []
    if not bindings or not all(isinstance(b, Assignment) for b in bindings):
        return False
    for binding in bindings:
        value = assigned_value(ctx, binding.node) if isinstance(binding.node, cst.CSTNode) else None
        if not (isinstance(value, cst.Call) and _built_on_the_host(ctx, value)):
            return False
        for access in binding.references:
            parent = ctx.parent(access.node)
            if isinstance(parent, cst.Attribute) and parent.value is access.node and parent.attr.value in _MOVES:
                return False
            if isinstance(parent, cst.Arg):
                return False  # handed on: a function may move it
    return True


def _built_on_the_host(ctx: FileContext, call: cst.Call) -> bool:
    """Whether ``call`` builds a module on the host: a class of the file or a torch.nn class called without
    ``device=`` (no move chained on it), or a function of the file whose body moves nothing and names no device."""
    if findall(call, _MOVED) or any(a.keyword is not None and a.keyword.value == "device" for a in call.args):
        return False
    found = definitions(ctx, call.func)
    if any(isinstance(d, cst.ClassDef) for d in found):
        return True
    if any(n.startswith("torch.nn.") and n.rsplit(".", 1)[-1][:1].isupper() for n in ctx.qualified_names(call.func)):
        return True
    functions = [d for d in found if isinstance(d, cst.FunctionDef)]
    return len(functions) == 1 and not findall(functions[0].body, _MOVED | m.Arg(keyword=m.Name("device")))


_MOVED = m.Call(func=m.Attribute(attr=m.Name("to") | m.Name("cuda") | m.Name("xla") | m.Name("to_empty")))


_MOVES = frozenset({"to", "cuda", "xla", "to_empty"})


def changes_weights(ctx: FileContext, statement: cst.CSTNode) -> bool:
    """Whether ``statement`` changes parameters in place: an in-place method of a ``.data``
    (``p.data.add_(z)``), or a call of a function of the file that updates the parameters in a loop
    over them (:func:`_update_of_its_target`: ``perturb(params, seed, eps)``). An autocast region must
    not hold one between two forward passes: its cached bf16 copy of the weights (kept until the
    outermost region exits, torch.amp's docs) would hide the change from the second
    (bench/unseen/hunt12/repros/probe_autocast_cache.py)."""
    held = _names_of_parameters(ctx)
    for call in findall(statement, m.Call()):
        assert isinstance(call, cst.Call), "findall of m.Call()"
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _IN_PLACE:
            if m.matches(func.value, m.Attribute(attr=m.Name("data"))):
                return True
        for definition in definitions(ctx, func):
            if isinstance(definition, cst.FunctionDef) and any(
                isinstance(loop, cst.For) and _update_of_its_target(loop, held) is not None
                for loop in findall(definition.body, m.For())
            ):
                return True
    return False


def _in_a_loop(ctx: FileContext, node: cst.CSTNode | None) -> bool:
    """Whether ``node`` runs inside a loop: one around it, or around a call of the function of the
    file it is in (one level)."""
    if node is None:
        return False
    if any(isinstance(a, cst.For | cst.While) for a in ctx.ancestors(ctx.parent(node))):
        return True
    func = ctx.enclosing(node, cst.FunctionDef)
    if func is None:
        return False
    calls = ctx.nodes_named(cst.Call, func.name.value, "func")
    return any(any(isinstance(a, cst.For | cst.While) for a in ctx.ancestors(call)) for call in calls)


_PARAMETERS = m.Call(func=m.Attribute(attr=m.Name("parameters") | m.Name("named_parameters")))


def _names_of_parameters(ctx: FileContext) -> frozenset[str]:
    """Names the file binds to a model's parameters: ``params = list(model.parameters())``,
    ``params = [p for p in model.parameters() if ...]``, ``params = model.parameters()``."""
    names: set[str] = set()
    for assign in ctx.nodes(cst.Assign):
        if findall(assign.value, _PARAMETERS):
            names.update(t.target.value for t in assign.targets if isinstance(t.target, cst.Name))
    return frozenset(names)


_IN_PLACE = frozenset({"sub_", "add_", "copy_", "mul_", "addcdiv_", "addcmul_"})


def _update_of_its_target(loop: cst.For, held: frozenset[str]) -> cst.CSTNode | None:
    """A loop over parameters (``model.parameters()`` or ``named_parameters()``, a name in ``held``
    bound to them, or ``zip`` of either with others: ``zip(params, grads)``) whose body updates the
    parameter (its target's name, the first of a ``zip`` tuple, the last of ``named_parameters``'
    pairs) in place (``p -= ...``, ``p.data -= ...``, ``p.sub_(...)``, ``p.data.add_(...)``): the first
    such update, or None."""

    def over(node: cst.CSTNode) -> bool:
        return m.matches(node, _PARAMETERS) or (isinstance(node, cst.Name) and node.value in held)

    target: cst.BaseExpression = loop.target
    if over(loop.iter):
        if isinstance(target, cst.Tuple) and target.elements:
            target = target.elements[-1].value
    elif m.matches(loop.iter, m.Call(func=m.Name("zip"), args=[m.Arg(value=m.MatchIfTrue(over)), m.ZeroOrMore()])):
        if isinstance(target, cst.Tuple) and target.elements:
            target = target.elements[0].value
    else:
        return None
    if not isinstance(target, cst.Name):
        return None
    name = target.value
    receiver = m.Name(name) | m.Attribute(value=m.Name(name), attr=m.Name("data"))
    in_place = m.Call(func=m.Attribute(value=receiver, attr=m.OneOf(*map(m.Name, _IN_PLACE))))
    found = [*findall(loop.body, m.AugAssign(target=receiver)), *findall(loop.body, in_place)]
    return found[0] if found else None
