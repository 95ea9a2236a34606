"""Find the models of a training script and where they are used.

A model is an object whose ``.parameters()`` feed an optimizer (``torch.optim.Optimizer(params)``:
the parameters it updates are the model's). From each optimizer
construction we take the model expression (``model``, ``self.model``), the statement before which
a cast must go (the cast goes before the optimizer is built: torch `nn.Module._apply`: a cast
after the optimizer is built leaves the optimizer holding the old parameters unless swapped), the
places the model is called, the loss computed from its output, and the loss accumulators.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment, ComprehensionScope

from .bindings import argument, assigned_values, definitions, self_assigned, unpacked_value
from .context import FileContext, findall
from .tree_types import OptimizerFactory, TreeModule, unwrap_optimizer_class

_OPTIMIZER_HINTS = ("optim", "sgd", "adam", "lamb", "lion", "adafactor", "rmsprop", "adagrad")


@dataclass
class OptimizerSite:
    """One optimizer construction ``Opt(<model>.parameters(), ...)``.

    ``model`` is the model expression (None when the parameters do not all come from one
    model's ``parameters()`` / ``named_parameters()``), ``statement`` the simple statement line
    holding the call.
    """

    call: cst.Call
    statement: cst.SimpleStatementLine | None
    model: cst.BaseExpression | None
    qualified: set[str]
    factory: tuple[TreeModule, OptimizerFactory] | None = None
    """For a call of an optimizer factory of the tree (``build_optimizer(model, cfg)``, the
    optimizer built in a sibling module: :mod:`.tree_facts`), its module and its facts."""
    models: tuple[cst.BaseExpression, ...] = ()
    """The models the parameters come from, each once, when they are several (``Adam(list(enc.parameters())
    + list(dec.parameters()))``: an encoder and a decoder, a GAN's two halves trained by one optimizer),
    each a name or an attribute; ``model`` is then None. Each is cast before the optimizer, as one
    model is (under the switch all their parameters were bf16 on the device)."""

    def all_models(self) -> tuple[cst.BaseExpression, ...]:
        """``(model,)``, or :attr:`models`."""
        return (self.model,) if self.model is not None else self.models


@dataclass
class ModelCall:
    """One call of a model: ``call`` is ``model(...)``; ``outputs`` the names bound to its
    result; ``losses`` the loss calls computed from those outputs (or enclosing the call);
    ``loss_names`` the names the losses are assigned to."""

    call: cst.Call
    statement: cst.SimpleStatementLine | None
    outputs: list[str] = field(default_factory=list)
    losses: list[cst.Call] = field(default_factory=list)
    loss_statements: list[cst.SimpleStatementLine] = field(default_factory=list)
    loss_names: list[str] = field(default_factory=list)
    through: bool = False
    """``call`` is a function that runs the model (``[model_callers]``: ``functional_call``)."""

    @property
    def inputs(self) -> list[cst.Arg]:
        """The arguments the model's forward pass is given: the call's own, or for a function that
        runs the model with other parameters (``functional_call(model, params, (x,))``:
        ``[model_callers]``) the elements of its ``args`` tuple; that tuple not written out
        (``functional_call(model, params, batch)``) is one starred argument, of a dtype not told."""
        if not self.through:
            return list(self.call.args)
        given = argument(self.call, 2, "args")
        if isinstance(given, cst.Tuple):
            return [
                cst.Arg(value=e.value, star="*" if isinstance(e, cst.StarredElement) else "") for e in given.elements
            ]
        return [cst.Arg(value=given, star="*")] if given is not None else []


_Def = TypeVar("_Def", cst.FunctionDef, cst.ClassDef)

_PARAMETERS = m.Call(func=m.Attribute(attr=m.Name("parameters") | m.Name("named_parameters")))
_MAX_TRACE = 4
_CALL_OR_NAME = m.Call() | m.Name()
_CALL_OF_NAME = m.Call(func=m.Name())


def _parameters_receivers(ctx: FileContext, expr: cst.BaseExpression, depth: int = 0) -> list[cst.BaseExpression]:
    """The ``X`` of every ``X.parameters()`` / ``X.named_parameters()`` the parameters in
    ``expr`` come from: inside ``expr`` itself, through the names it reads (assigned in this
    file: ``param_optimizer = list(model.named_parameters())`` then the weight-decay groups
    ``[{"params": [p for n, p in param_optimizer if ...]}, ...]``), and through functions
    defined in the file that build the groups from a parameter (``get_groups(model)``)."""
    # once per (expression, depth): the names followed branch out (a name bound twice, each
    # value read by the next name...), and every call of the file with an argument asks
    return list(ctx.memo(("receivers", expr, depth), lambda: _receivers(ctx, expr, depth)))


def parameter_sources(ctx: FileContext, call: cst.Call) -> list[cst.BaseExpression]:
    """The ``X`` of every ``X.parameters()`` the parameters handed to the optimizer ``call`` (its
    first argument or ``params=``) come from (:func:`_parameters_receivers`), as written."""
    params = next(
        (
            a.value
            for i, a in enumerate(call.args)
            if (a.keyword is None and i == 0) or (a.keyword is not None and a.keyword.value == "params")
        ),
        None,
    )
    return [] if params is None else _parameters_receivers(ctx, params)


def _receivers(ctx: FileContext, expr: cst.BaseExpression, depth: int) -> list[cst.BaseExpression]:
    """:func:`_parameters_receivers` unremembered: the receivers of the ``.parameters()`` calls in
    ``expr``, then, below ``_MAX_TRACE``, those through its names and through its calls of the
    file's functions, in that order."""
    inside = findall(expr, _CALL_OR_NAME)  # one walk for the three questions below
    found = [
        c.func.value
        for c in inside
        if isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute) and m.matches(c, _PARAMETERS)
    ]
    if depth >= _MAX_TRACE:
        return found
    for name in (n for n in inside if isinstance(n, cst.Name)):
        found.extend(_receivers_through_name(ctx, name, depth))
    for call in (c for c in inside if isinstance(c, cst.Call) and m.matches(c, _CALL_OF_NAME)):
        found.extend(_receivers_through_call(ctx, call))
    return found


def _receivers_through_name(ctx: FileContext, name: cst.Name, depth: int) -> list[cst.BaseExpression]:
    """The receivers of the parameters in the values assigned (``X = value``) to the variable
    ``name`` reads, where the value can hold parameters (:func:`_collects_parameters`); none for
    an attribute's name (``.attr``) or a name without scope."""
    parent = ctx.parent(name)
    if isinstance(parent, cst.Attribute) and parent.attr is name:
        return []
    scope = ctx.scopes.get(name)
    if scope is None:
        return []
    bindings = scope[name.value]

    def assigned() -> tuple[object, list[cst.BaseExpression]]:
        values = []
        for a in bindings:
            if not isinstance(a, Assignment) or not isinstance(a.node, cst.Name):
                continue
            target = ctx.parent(a.node)
            assign = ctx.parent(target)
            if isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign):
                values.append(assign.value)
        return bindings, values

    # the values once per set of bindings (kept alive with them): a name bound many times
    # (``import torch`` in each of many scripts pasted into one file) is read at each use
    _, values = ctx.memo(("assigned values", id(bindings), len(bindings)), assigned) if bindings else (None, [])
    found: list[cst.BaseExpression] = []
    for value in values:
        if _collects_parameters(ctx, value):
            found.extend(_parameters_receivers(ctx, value, depth + 1))
    return found


def _receivers_through_call(ctx: FileContext, call: cst.Call) -> list[cst.BaseExpression]:
    """The arguments of ``call``, a call of a function defined in the file, that the function
    calls ``.parameters()`` on (``def get_groups(model): ... model.named_parameters()`` called
    as ``get_groups(net)`` gives ``net``): by position or by keyword."""
    func = _local_def(ctx, call.func, cst.FunctionDef)
    if func is None:
        return []
    found: list[cst.BaseExpression] = []
    for receiver in ctx.memo(
        ("parameters of", func),
        lambda func=func: [
            c.func.value for c in findall(func.body, _PARAMETERS, ctx.index) if isinstance(c.func, cst.Attribute)
        ],
    ):
        param = next(
            (
                i
                for i, p in enumerate(list(func.params.posonly_params) + list(func.params.params))
                if isinstance(receiver, cst.Name) and p.name.value == receiver.value
            ),
            None,
        )
        if param is not None and param < len(call.args) and call.args[param].keyword is None:
            found.append(call.args[param].value)
        for arg in call.args:
            if arg.keyword is not None and isinstance(receiver, cst.Name) and arg.keyword.value == receiver.value:
                found.append(arg.value)
    return found


def _callee_name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return ""


_COLLECTIONS = {
    "builtins.list",
    "builtins.tuple",
    "builtins.filter",
    "builtins.sorted",
    "builtins.set",
    "itertools.chain",
}


def _collects_parameters(ctx: FileContext, value: cst.BaseExpression) -> bool:
    """Whether an assigned value can hold parameters themselves (a list, dict, comprehension,
    ``list(...)``, ``.parameters()``, a function of the file) rather than an object built from
    them (an optimizer, a scheduler), which tracing must not pass through."""
    if not isinstance(value, cst.Call):
        return True
    if m.matches(value, _PARAMETERS) or ctx.qualified_names(value.func) & _COLLECTIONS:
        return True
    return isinstance(value.func, cst.Name) and _local_def(ctx, value.func, cst.FunctionDef) is not None


def find_optimizers(ctx: FileContext) -> list[OptimizerSite]:
    """Every call whose first argument (or ``params=``) takes parameters from ``X.parameters()``
    or ``X.named_parameters()`` (directly or through parameter groups), excluding the
    calls listed as ``not_optimizers`` in ``rules/torch_api.toml`` (``clip_grad_norm_``...)."""
    return list(ctx.memo(("optimizers",), lambda: _find_optimizers(ctx)))


def _find_optimizers(ctx: FileContext) -> list[OptimizerSite]:
    sites = []
    for call in ctx.nodes(cst.Call):
        tree_site = _tree_factory_site(ctx, call)
        if tree_site is not None:
            sites.append(tree_site)
            continue
        func = unwrap_optimizer_class(call.func)
        name = _callee_name(func)
        if not name or name in ctx.rules.torch_api.not_optimizers:
            continue
        params = None
        for i, arg in enumerate(call.args):
            if (arg.keyword is None and i == 0) or (arg.keyword is not None and arg.keyword.value == "params"):
                params = arg.value
                break
        if params is None:
            continue
        # the cheap question first: most calls of a file do not look like an optimizer
        qualified = ctx.qualified_names(func)
        looks_like = (
            bool(qualified & ctx.rules.torch_api.stock_optimizers)
            or any(h in name.lower() for h in _OPTIMIZER_HINTS)
            or name[:1].isupper()
        )
        if not looks_like:
            continue
        receivers = [whole_model(ctx, r) for r in _parameters_receivers(ctx, params)]
        if not receivers:
            continue
        model = receivers[0] if isinstance(receivers[0], (cst.Name, cst.Attribute)) else None
        several: tuple[cst.BaseExpression, ...] = ()
        if model is not None and not all(same_model(ctx, model, other) for other in receivers[1:]):
            model = None  # parameters of several models: each is cast (when each is a name or attribute)
            several = _distinct_models(ctx, receivers)
        if model is not None and _host_only(ctx, model):
            continue  # an optimizer of a module that stays on the host: nothing of it was bf16
        stmt = ctx.statement_of(call)
        line = stmt if isinstance(stmt, cst.SimpleStatementLine) else None
        sites.append(OptimizerSite(call, line, model, qualified, models=several))
    return sites


_MOVES = frozenset({"to", "cuda", "xla", "to_empty", "share_memory"})


def _moves_others(ctx: FileContext, function: cst.FunctionDef | cst.Module) -> bool:
    """Whether ``function`` (or the whole module) moves something to a device it names (``tower.to(device)``,
    ``x.to(xm.xla_device())``): the code places its tensors and modules itself, so a module it never
    moves stays where it is made."""
    for call in ctx.nodes(cst.Call) if isinstance(function, cst.Module) else ctx.nodes_in(cst.Call, function):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "to" and call.args:
            words = {n.value for n in findall(call.args[0].value, m.Name()) if isinstance(n, cst.Name)}
            words |= {a.attr.value for a in findall(call.args[0].value, m.Attribute()) if isinstance(a, cst.Attribute)}
            if any("device" in w for w in words):
                return True
    return False


def _host_only(ctx: FileContext, model: cst.BaseExpression) -> bool:
    """Whether the code shows the module ``model`` staying on the host: a name bound once, in a
    function, to a constructor call that names no device and moves nothing (``emb = HostEmbeddings()``),
    whose class (when the file defines it) names no device, never moved (``.to``, ``.cuda``...) nor
    handed to anything (only its methods and its own calls are read), in a file that sets no default
    device and moves other things to a device itself. Under the switch its parameters and its
    optimizer's state stayed float32 on the host (the switch acts on XLA tensors only: torch-xla's
    torch_xla/csrc/dtype.cpp); cast, they became bf16 there (found by hunts: a CPU embedding table
    trained by SparseAdam beside a tower on the device; an ensemble's members trained on the host by a
    helper that returns their state dicts)."""
    function = ctx.enclosing(model, cst.FunctionDef)
    # the code places things itself: in this function, or elsewhere in the file (a helper that trains
    # a module on the host and hands back its state dict, another that loads it onto the device)
    if not isinstance(model, cst.Name) or function is None:
        return False
    if not _moves_others(ctx, function) and not _moves_others(ctx, ctx.module):
        return False
    scope = ctx.scopes.get(model)
    sets_default = ctx.memo(  # once per file: each model asks
        ("sets a default device",),
        lambda: any(
            isinstance(c.func, (cst.Name, cst.Attribute))
            and (c.func.value if isinstance(c.func, cst.Name) else c.func.attr.value) == "set_default_device"
            for c in ctx.nodes(cst.Call)
        ),
    )
    if scope is None or sets_default:
        return False
    bindings = [a for a in scope.assignments[model.value]]
    if len(bindings) != 1 or not isinstance(bindings[0], Assignment) or not isinstance(bindings[0].node, cst.Name):
        return False
    target = bindings[0].node
    assign = ctx.parent(ctx.parent(target))
    if not (isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call)):
        return False
    value = assign.value
    names = {n.value for n in findall(value, m.Name()) if isinstance(n, cst.Name)}
    names |= {a.attr.value for a in findall(value, m.Attribute()) if isinstance(a, cst.Attribute)}
    if names & (_MOVES | {"device"}) or not isinstance(value.func, (cst.Name, cst.Attribute)):
        return False
    if any(isinstance(w, cst.With) for w in ctx.ancestors(assign)):
        return False  # `with torch.device(xla):` may make it on the device
    cls = _local_def(ctx, value.func, cst.ClassDef)
    if cls is not None and (
        {n.value for n in findall(cls, m.Name()) if isinstance(n, cst.Name)} & {"device", "xla_device"}
        or findall(cls, m.Call(func=m.Attribute(attr=m.OneOf(*map(m.Name, _MOVES)))))
    ):
        return False  # a class that names a device or moves something itself (`self.to(d)`)
    for access in bindings[0].references:
        node = access.node
        parent = ctx.parent(node)
        if isinstance(parent, cst.Call) and parent.func is node:
            continue  # its own call: `emb(users, items)`
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value not in _MOVES:
            holder = ctx.parent(parent)
            if isinstance(holder, cst.Call) and holder.func is parent:
                continue  # a method of it: `emb.parameters()`, `emb.train()`
            if parent.attr.value not in ("weight", "bias") and not isinstance(holder, (cst.Attribute, cst.Subscript)):
                return False
            continue  # a submodule or a weight read (`emb.user.weight[rows]`)
        if isinstance(parent, cst.Return) and parent.value is node and _steps_here(function):
            continue  # handed back trained (`return net` after its loop): its caller's moves are the caller's
        return False
    return True


def _steps_here(function: cst.FunctionDef) -> bool:
    """Whether ``function`` makes training steps itself (calls ``.backward()`` or ``.step()``): a
    module it returns comes back trained, and what its caller does with it (a move to the device,
    then its cast there) comes after its training."""
    return bool(findall(function, m.Call(func=m.Attribute(attr=m.Name("backward") | m.Name("step")))))


def _distinct_models(ctx: FileContext, receivers: list[cst.BaseExpression]) -> tuple[cst.BaseExpression, ...]:
    """The receivers, each model once, when every one is a name or an attribute; else none."""
    if not all(isinstance(r, (cst.Name, cst.Attribute)) for r in receivers):
        return ()
    out: list[cst.BaseExpression] = []
    for receiver in receivers:
        if not any(same_model(ctx, receiver, known) for known in out):
            out.append(receiver)
    return tuple(out)


def _tree_factory_site(ctx: FileContext, call: cst.Call) -> OptimizerSite | None:
    """``build_optimizer(model, cfg)`` where ``build_optimizer`` is an optimizer factory of the
    tree (:class:`.tree_facts.OptimizerFactory`): the model is the argument the factory builds
    the optimizer over (the receiver of ``X.parameters()`` when it takes parameters)."""
    if ctx.tree is None or not isinstance(call.func, (cst.Name, cst.Attribute)):
        return None
    found = ctx.tree.factory(ctx.qualified_names(call.func))
    if found is None:
        return None
    factory = found[1]
    arg = next(
        (
            a.value
            for i, a in enumerate(call.args)
            if (a.keyword is None and not a.star and i == factory.index)
            or (a.keyword is not None and a.keyword.value == factory.param)
        ),
        None,
    )
    if arg is None:
        return None
    model: cst.BaseExpression | None = arg
    if factory.takes == "parameters":
        receivers = [whole_model(ctx, r) for r in _parameters_receivers(ctx, arg)]
        model = receivers[0] if receivers and isinstance(receivers[0], (cst.Name, cst.Attribute)) else None
        if model is not None and not all(same_model(ctx, model, other) for other in receivers[1:]):
            model = None
    elif not isinstance(arg, (cst.Name, cst.Attribute)) or (factory.submodules and not _is_called(ctx, arg)):
        model = None  # an argument the factory takes submodules of is the model only where it is called
    stmt = ctx.statement_of(call)
    line = stmt if isinstance(stmt, cst.SimpleStatementLine) else None
    return OptimizerSite(call, line, model, ctx.qualified_names(call.func), found)


def whole_model(ctx: FileContext, receiver: cst.BaseExpression) -> cst.BaseExpression:
    """The model ``receiver`` (the ``X`` of ``X.parameters()``) is a submodule of: the nearest
    expression it is an attribute of (``model`` for ``model.deep``, ``self.net`` for
    ``self.net.encoder``) that the file calls as a model (:func:`model_calls`: its forward pass is
    run) while ``receiver`` itself is not called; ``receiver`` otherwise (``self`` is never taken).

    An optimizer built over ``model.deep.parameters()`` updates part of ``model``, and the legacy
    switch ran *all* of ``model`` in bf16 (torch-xla's ``XLA_USE_BF16`` maps every f32 tensor to bf16
    on the device, whichever optimizer updates it): the migration casts the whole model, before the
    first optimizer built over any of its parts, so a part no optimizer updates (``model.wide`` with
    an optimizer over ``model.deep`` only) is bf16 as it was, and the forward pass of ``model``
    never mixes f32 and bf16 weights."""
    if not isinstance(receiver, cst.Attribute) or _is_called(ctx, receiver):
        return receiver
    owner: cst.BaseExpression = receiver.value
    while isinstance(owner, (cst.Name, cst.Attribute)) and not m.matches(owner, m.Name("self")):
        if _is_called(ctx, owner):
            return owner
        if not isinstance(owner, cst.Attribute):
            break
        owner = owner.value
    return receiver


def _is_called(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """Whether the file calls ``expr`` as a model (:func:`model_calls`)."""
    return bool(ctx.memo(("called as a model", expr), lambda: bool(model_calls(ctx, expr, through=True))))


def same_model(ctx: FileContext, a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    """Whether two expressions denote the same model object: the same name bound by the same
    assignments (ScopeProvider), or ``self.<attr>`` inside the same class."""
    if isinstance(a, cst.Name) and isinstance(b, cst.Name):
        if a.value != b.value:
            return False
        sa, sb = ctx.scopes.get(a), ctx.scopes.get(b)
        if sa is None or sb is None:
            return False
        return {id(x) for x in sa[a.value]} == {id(x) for x in sb[b.value]}
    if isinstance(a, cst.Attribute) and isinstance(b, cst.Attribute):
        # the attribute names first (the same code has the same last name): a file's calls are
        # all compared with the model, and rendering each one's code costs
        if a.attr.value != b.attr.value or ctx.code(a) != ctx.code(b):
            return False
        if m.matches(a, m.Attribute(value=m.Name("self"))):
            return ctx.enclosing(a, cst.ClassDef) is ctx.enclosing(b, cst.ClassDef)
        return same_model(ctx, _root(a), _root(b))
    return False


def model_key(ctx: FileContext, expr: cst.BaseExpression) -> tuple | None:
    """What :func:`same_model` compares, as a value: equal for two expressions it holds for
    (None: it holds for none). A name: its name and the set of bindings its scope resolves it
    to (a scope's own set, by identity; an unbound name has none); an attribute: its last name
    and, for ``self.<attr>``, its class, else its root's key."""
    if isinstance(expr, cst.Name):
        scope = ctx.scopes.get(expr)
        if scope is None:
            return None
        bindings = scope[expr.value]
        return ("name", expr.value, id(bindings) if bindings else None)
    if isinstance(expr, cst.Attribute):
        if isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return ("self", expr.attr.value, id(ctx.enclosing(expr, cst.ClassDef)))
        return ("attribute", expr.attr.value, model_key(ctx, _root(expr)))
    return None


def _root(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Attribute):
        expr = expr.value
    return expr


# -- stand-ins: what else names a model where it is called or handed on ------------------------------
# A wrapper keeps the module it wraps as `.module` (DistributedDataParallel, DataParallel, AveragedModel:
# torch/nn/parallel/distributed.py, torch/optim/swa_utils.py); `ema.module(x)`, `evaluate(ema.module, x)`
# run the module `ema` copies (or a submodule of the model: cast with it), so they count as the model's.
_WRAPPED = "module"


def _iterated(ctx: FileContext, expr: cst.BaseExpression, depth: int = 0) -> list | None:
    """The items a ``for`` over ``expr`` yields when ``expr`` is written out: a
    tuple, list or set literal, a dict literal's ``.items()`` / ``.values()`` / keys, ``enumerate`` or
    ``zip`` of such, or a name bound only to one of them (``nets = {"live": model, "ema": ema.module}``);
    None otherwise. An item is an expression, a tuple of items (a pair of ``dict.items()``, ``enumerate``,
    ``zip``) or None (not told)."""
    if depth > 2:
        return None
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return [e.value for e in expr.elements if not isinstance(e, cst.StarredElement)]
    if isinstance(expr, cst.Dict):
        return [e.key for e in expr.elements if isinstance(e, cst.DictElement)]
    if isinstance(expr, cst.Name):
        values = assigned_values(ctx, expr)
        return _iterated(ctx, values[0], depth + 1) if len(values) == 1 else None
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("items", "values") and not expr.args:
        held = func.value
        if isinstance(held, cst.Name):
            values = assigned_values(ctx, held)
            held = values[0] if len(values) == 1 else held
        if not isinstance(held, cst.Dict):
            return None
        pairs = [e for e in held.elements if isinstance(e, cst.DictElement)]
        return [(e.key, e.value) if func.attr.value == "items" else e.value for e in pairs]
    names = ctx.qualified_names(func)
    positional = [a.value for a in expr.args if a.keyword is None and not a.star]
    if "builtins.enumerate" in names and positional:
        inner = _iterated(ctx, positional[0], depth + 1)
        return None if inner is None else [(None, item) for item in inner]
    if "builtins.zip" in names and positional and len(positional) == len(expr.args):
        columns = [_iterated(ctx, p, depth + 1) for p in positional]
        if any(c is None for c in columns):
            return None
        return [tuple(row) for row in zip(*columns)]
    return None


def _bind(target: cst.BaseExpression, item: object, out: list[tuple[cst.Name, cst.BaseExpression]]) -> None:
    """The names of the ``for`` target ``target`` with the expression each is bound to by ``item``
    (:func:`_iterated`): a name takes the item; a tuple of names a tuple item (or a tuple literal) of as many."""
    if isinstance(target, cst.Name):
        if isinstance(item, cst.BaseExpression):
            out.append((target, item))
        return
    if not isinstance(target, (cst.Tuple, cst.List)) or any(isinstance(e, cst.StarredElement) for e in target.elements):
        return
    if isinstance(item, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in item.elements):
        item = tuple(e.value for e in item.elements)
    if isinstance(item, tuple) and len(item) == len(target.elements):
        for element, part in zip(target.elements, item):
            _bind(element.value, part, out)


Loop = cst.For | cst.CompFor
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def _loop_body(ctx: FileContext, loop: Loop) -> cst.CSTNode | None:
    """Where ``loop``'s variables are read: a ``for`` statement's body, a comprehension's whole
    expression (its element, conditions and inner loops)."""
    if isinstance(loop, cst.For):
        return loop.body
    return next((a for a in ctx.ancestors(loop) if isinstance(a, _COMPREHENSIONS)), None)


def _literal_loops(ctx: FileContext) -> list[tuple[Loop, cst.Name, list[cst.BaseExpression]]]:
    """Every ``for`` (statement or comprehension) over a written-out collection (:func:`_iterated`), with
    each name of its target and the expressions it is bound to, once per file."""

    def scan() -> list[tuple[Loop, cst.Name, list[cst.BaseExpression]]]:
        found: list[tuple[Loop, cst.Name, list[cst.BaseExpression]]] = []
        loops: list[Loop] = [*ctx.nodes(cst.For), *ctx.nodes(cst.CompFor)]
        for loop in loops:
            items = _iterated(ctx, loop.iter)
            if not items:
                continue
            bound: list[tuple[cst.Name, cst.BaseExpression]] = []
            for item in items:
                _bind(loop.target, item, bound)
            by_name: dict[int, tuple[cst.Name, list[cst.BaseExpression]]] = {}
            for name, value in bound:
                by_name.setdefault(id(name), (name, []))[1].append(value)
            found.extend((loop, name, values) for name, values in by_name.values())
        return found

    return ctx.memo(("model_site: literal loops",), scan)


def _wrapped_of(ctx: FileContext, expr: cst.BaseExpression, models: list[cst.BaseExpression]) -> bool:
    """Whether ``expr`` is one of ``models`` or the module one of them wraps (``ema.module``, :data:`_WRAPPED`)."""
    while True:
        if any(same_model(ctx, expr, x) for x in models):
            return True
        if not (isinstance(expr, cst.Attribute) and expr.attr.value == _WRAPPED):
            return False
        expr = expr.value


def reads_wrapped(ctx: FileContext, model: cst.BaseExpression) -> cst.Attribute | None:
    """The first ``<model>.module`` the file reads (:data:`_WRAPPED`): the module ``model`` wraps, run on
    its own there (``ema.module(x)``, ``evaluate(ema.module, x)``), without ``model``'s forward hooks."""
    key = ("attribute", _WRAPPED, model_key(ctx, _root(model)))
    by_key = ctx.nodes_grouped(cst.Attribute, "model key of attribute", lambda a: (model_key(ctx, a),))
    return next((a for a in by_key.get(key, ()) if same_model(ctx, a.value, model)), None)


def loop_stand_ins(ctx: FileContext, models: list[cst.BaseExpression]) -> list[tuple[Loop, cst.Name]]:
    """The ``for`` loops over a written-out collection one of whose items is one of ``models`` (or the
    module it wraps), each with the target's name bound to it: ``m`` of ``for name, m in (("live", model),
    ("ema", ema.module))``, of ``for m in (model, ema)``, of ``for k, m in {"live": model}.items()``, of
    ``[m(x) for m in (model, ema)]``. In that loop's body a call of ``m`` may be a call of the model,
    and ``m`` handed on may be the model."""
    return [
        (loop, name) for loop, name, values in _literal_loops(ctx) if any(_wrapped_of(ctx, v, models) for v in values)
    ]


def _stand_in_keys(ctx: FileContext, models: list[cst.BaseExpression], loops: list[tuple[Loop, cst.Name]]) -> set:
    """The :func:`model_key` of ``models``, of the modules they wrap (``.module``) and of the loop
    variables ``loops``: the calls and arguments to ask :func:`_stands_for` about."""
    keys = {model_key(ctx, x) for x in models}
    keys |= {("attribute", _WRAPPED, model_key(ctx, _root(x))) for x in models}
    keys |= {model_key(ctx, name) for _, name in loops}
    return keys - {None}


def _stands_for(
    ctx: FileContext,
    expr: cst.BaseExpression,
    models: list[cst.BaseExpression],
    loops: list[tuple[Loop, cst.Name]],
) -> bool:
    """Whether ``expr`` denotes one of ``models`` where it is read: the model itself, the module it
    wraps (:func:`_wrapped_of`), or in the body of one of ``loops`` that loop's variable (or what it
    wraps), read where the loop binds it (the same scope, not bound again in the body)."""
    if _wrapped_of(ctx, expr, models):
        return True
    while isinstance(expr, cst.Attribute) and expr.attr.value == _WRAPPED:
        expr = expr.value
    if not isinstance(expr, cst.Name) or not loops:
        return False
    scope = ctx.scopes.get(expr)
    for loop, name in loops:
        if name.value != expr.value or scope is None or ctx.scopes.get(name) is not scope:
            continue
        body = _loop_body(ctx, loop)
        if any(a is body for a in ctx.ancestors(expr)) and not _rebound_in(ctx, body, name):
            return True
    return False


def _rebound_in(ctx: FileContext, body: cst.CSTNode | None, name: cst.Name) -> bool:
    """Whether ``body`` (a loop's) binds ``name`` again (then a read there may be another value)."""
    scope = ctx.scopes.get(name)
    if scope is None or body is None:
        return True
    return any(
        isinstance(a, Assignment) and a.node is not name and any(anc is body for anc in ctx.ancestors(a.node))
        for a in scope[name.value]
    )


def model_calls(
    ctx: FileContext, model: cst.BaseExpression, also: list[cst.BaseExpression] | None = None, through: bool = False
) -> list[ModelCall]:
    """The calls of ``model`` (and of ``also``, the names its forward pass is called by through
    wrappers such as ``torch.compile``) in this file, following it one level out of the function
    that builds and returns it (:func:`returned_as`) and one level into functions defined in
    the file that receive it as an argument (``train_one_epoch(model, loader, optimizer)``) or keep it
    (:func:`held_by`). ``through``: also the calls of functions that run the model's forward pass
    (``[model_callers]``: ``functional_call(model, params, (x,))``), for amp, which puts them under
    autocast; a mode that casts the model leaves them to its pre-hook, which fires there, and to
    the audit of the model's code, which does not follow what they are handed."""
    models = [model, *returned_as(ctx, model), *(also or [])]
    # same_model(a, b) holds only where model_key(a) == model_key(b): the calls under the
    # models' keys are the ones to ask (a file of many models and many calls); with them the calls of
    # the module the model wraps (`ema.module(x)`) and of a loop variable over a collection holding it
    loops = loop_stand_ins(ctx, models)
    keys = _stand_in_keys(ctx, models, loops)
    by_func = ctx.nodes_grouped(cst.Call, "model key of func", lambda c: (model_key(ctx, c.func),))
    named = ctx.in_order(cst.Call, (c for key in keys for c in by_func.get(key, ())))
    calls = [c for c in named if _stands_for(ctx, c.func, models, loops)]
    # a part of a container model called by key or index (`net["head"](h)` of an nn.ModuleDict, `blocks[0](x)` of an
    # nn.ModuleList): the model's pre-hook does not fire there (a hunt's: its input stayed f32 and the bf16 part raised)
    by_part = ctx.nodes_grouped(cst.Call, "model key of a subscripted func", _subscripted_key(ctx))
    parts = ctx.in_order(cst.Call, (c for key in keys for c in by_part.get(key, ())))
    calls += [c for c in parts if isinstance(c.func, cst.Subscript) and _stands_for(ctx, c.func.value, models, loops)]
    calls += [c for c in _part_calls(ctx) if _a_part_of(ctx, c.func, models, loops)]
    calls += _constructor_part_calls(ctx, models)
    # one level into local functions that receive the model as a positional/keyword argument, and the
    # closures they define over it (an L-BFGS `closure()` calling `model(t)`)
    for func, param in handed_to(ctx, models):
        for inner in findall(func.body, m.Call(func=m.Name(param)), ctx.index):
            assert isinstance(inner, cst.Call), "findall of m.Call()"
            if _the_parameter(ctx, inner.func, func):
                calls.append(inner)
    # a function that runs the model's forward pass with other parameters (`functional_call(model, params, (x,))`),
    # here or in a function of the file handed the model
    runners = _runners(ctx, models, keys) if through else []
    # one level into classes of the file built with the model, which keep it (a trainer's `self.model(x)`)
    for cls, attr in held_by(ctx, models):
        held = m.Call(func=m.Attribute(value=m.Name("self"), attr=m.Name(attr)))
        calls.extend(inner for inner in findall(cls.body, held, ctx.index) if ctx.enclosing(inner, cst.ClassDef) is cls)
    calls.extend(_dataclass_calls(ctx, models))
    calls.extend(_self_calls(ctx, model))
    described = [describe_call(ctx, c) for c in calls]
    for call in ctx.in_order(cst.Call, dict.fromkeys(runners)):
        described.append(replace(describe_call(ctx, call), through=True))
    return described


def _constructor_part_calls(ctx: FileContext, models: list[cst.BaseExpression]) -> list[cst.Call]:
    """The calls of a module the model is built from, by the name it was built under (``encoder(bank_x)`` of
    ``model = nn.Sequential(encoder, head).to(dev)``, ``SimCLR(backbone=encoder)``), made after the model is built:
    the module is the model's part, cast with it, and the model's pre-hook does not fire there (a hunt's k-NN probe
    met the bf16 encoder with an f32 bank; in amp it ran outside autocast)."""
    found: list[cst.Call] = []
    for model in models:
        if not isinstance(model, cst.Name):
            continue
        for value in assigned_values(ctx, model):
            built = _under_self_returning(ctx, value)
            if not (isinstance(built, cst.Call) and _holds_its_arguments(ctx, built)):
                continue
            for arg in built.args:
                part = arg.value
                parts = assigned_values(ctx, part) if isinstance(part, cst.Name) and not arg.star else []
                if not parts or not all(_built_module(ctx, v) for v in parts):
                    continue
                if any(same_model(ctx, part, other) for other in models):
                    continue  # a model of its own: its calls are already the model's
                assert isinstance(part, cst.Name), "assigned_values of a name"
                after = ctx.pos(built)
                found.extend(
                    c
                    for c in ctx.nodes_named(cst.Call, part.value, "func")
                    if ctx.pos(c) > after and same_model(ctx, c.func, part)
                )
    return found


_MODULE_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})
"""torch.nn's containers, which hold the modules they are built from (torch 2.9 docs)."""


def _holds_its_arguments(ctx: FileContext, built: cst.Call) -> bool:
    """Whether the module ``built`` makes keeps the modules it is handed as its parts: a torch.nn container
    (:data:`_MODULE_CONTAINERS`) or a class of the file (its ``__init__`` stores them). A library wrapper may copy them
    instead (``AveragedModel`` deep-copies its module)."""
    if ctx.qualified_names(built.func) & _MODULE_CONTAINERS:
        return True
    return any(isinstance(d, cst.ClassDef) for d in definitions(ctx, built.func))


_PART_ITERATIONS = frozenset({"children", "values"})
"""A container module's methods that hand out its parts (torch.nn.Module.children, torch.nn.ModuleDict.values:
torch 2.9 docs)."""


def _part_calls(ctx: FileContext) -> list[cst.Call]:
    """The file's calls of a plain name bound only where it may be a part of a container (unpacked from a value,
    a subscript, a ``for`` target): the candidates :func:`_a_part_of` asks about (once per file)."""

    def find() -> list[cst.Call]:
        found = []
        for call in ctx.nodes(cst.Call):
            if not isinstance(call.func, cst.Name):
                continue
            scope = ctx.scopes.get(call.func)
            bindings = list(scope[call.func.value]) if scope is not None else []
            if bindings and all(isinstance(b, Assignment) and _part_binding(ctx, b.node) is not None for b in bindings):
                found.append(call)
        return found

    return ctx.memo(("calls of container parts",), find)


def _part_binding(ctx: FileContext, target: cst.CSTNode) -> cst.BaseExpression | None:
    """The container a name is bound to a part of: ``enc, head = towers`` (``towers``), ``head = net["head"]``
    (``net``), ``for blk in blocks`` / ``blocks.children()`` / ``heads.values()`` (``blocks``, ``heads``);
    None for any other binding."""
    parent = ctx.parent(target)
    if isinstance(parent, (cst.For, cst.CompFor)) and parent.target is target:
        source = parent.iter
        if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and not source.args:
            return source.func.value if source.func.attr.value in _PART_ITERATIONS else None
        return source
    value = unpacked_value(ctx, target)
    if value is not None:
        return value
    values = assigned_values(ctx, target) if isinstance(target, cst.Name) else []
    if len(values) == 1 and isinstance(values[0], cst.Subscript):
        return values[0].value
    return None


def _a_part_of(
    ctx: FileContext, func: cst.BaseExpression, models: list[cst.BaseExpression], loops: list[tuple[Loop, cst.Name]]
) -> bool:
    """Whether the callee ``func`` (a name :func:`_part_calls` found) is a part of one of ``models`` wherever it is
    bound (:func:`_part_binding`): its call runs that part, which the model's cast made bf16, and the model's
    pre-hook does not fire there (a hunt's ``enc, head = towers`` of an nn.ModuleList)."""
    scope = ctx.scopes.get(func) if isinstance(func, cst.Name) else None
    if scope is None or not isinstance(func, cst.Name):
        return False
    containers = [_part_binding(ctx, b.node) for b in scope[func.value] if isinstance(b, Assignment)]
    return bool(containers) and all(c is not None and _stands_for(ctx, c, models, loops) for c in containers)


def _subscripted_key(ctx: FileContext):
    """The grouping key of a call whose callee is a subscript: the :func:`model_key` of what is subscripted."""

    def key(call: cst.Call) -> tuple:
        return (model_key(ctx, call.func.value) if isinstance(call.func, cst.Subscript) else None,)

    return key


def runner_calls(ctx: FileContext, model: cst.BaseExpression) -> list[cst.Call]:
    """The calls of functions that run ``model``'s forward with inputs of their own (``rules/torch_api.toml``
    ``[model_callers]``: ``torch.func.functional_call(model, params, (x,))``, ``torch.jit.trace(model, sample)``),
    here or in a function of the file handed the model."""
    models = [model, *returned_as(ctx, model)]
    return _runners(ctx, models, {model_key(ctx, x) for x in models} - {None}, tracers=True)


def _runners(ctx: FileContext, models: list[cst.BaseExpression], keys: set, tracers: bool = False) -> list[cst.Call]:
    """The calls of ``[model_callers]`` functions handed one of ``models`` first; with ``tracers`` also those of
    its ``tracers`` (``torch.jit.trace(model, sample)``), which a pre-hook reaches and autocast must not wrap."""
    api = ctx.rules.torch_api
    callers = api.model_callers | api.model_tracers if tracers else api.model_callers
    runners: list[cst.Call] = []
    short = {name.rsplit(".", 1)[-1] for name in callers}
    if not ctx.memo(  # the cheap question first, once per file: most files call none of them
        ("calls a model caller", tracers),
        lambda: any(
            (c.func.attr.value if isinstance(c.func, cst.Attribute) else getattr(c.func, "value", None)) in short
            for c in ctx.nodes(cst.Call)
        ),
    ):
        return runners
    for key in keys:
        for call in _calls_by_arg_keys(ctx).get(key, ()):
            if ctx.qualified_names(call.func) & callers and call.args:
                if any(same_model(ctx, call.args[0].value, x) for x in models):
                    runners.append(call)
    for func, param in handed_to(ctx, models):
        for inner in findall(func.body, m.Call(args=[m.Arg(value=m.Name(param)), m.ZeroOrMore()]), ctx.index):
            assert isinstance(inner, cst.Call), "findall of m.Call()"
            if ctx.qualified_names(inner.func) & callers and _the_parameter(ctx, inner.args[0].value, func):
                runners.append(inner)  # in `func` or a function nested in it (a per-sample loss `torch.func.vmap`s)
    return runners


def _self_calls(ctx: FileContext, model: cst.BaseExpression) -> list[cst.Call]:
    """Where the model is ``self`` of a method of its own class (a Lightning-style module whose
    ``configure_optimizers`` builds ``AdamW(self.parameters())``): the class's own forward passes,
    ``self(x)`` in its other methods (``training_step``), which run as the script calls them (found by a
    hunt: amp said ``self`` was never called)."""
    if not m.matches(model, m.Name("self")):
        return []
    cls = ctx.enclosing(model, cst.ClassDef)
    if cls is None:
        return []
    calls = []
    for call in findall(cls.body, m.Call(func=m.Name("self")), ctx.index):
        func = ctx.enclosing(call, cst.FunctionDef)
        if ctx.enclosing(call, cst.ClassDef) is cls and func is not None and func.name.value != "forward":
            assert isinstance(call, cst.Call), "findall of m.Call()"
            calls.append(call)
    return calls


_CONTAINERS = (cst.Tuple, cst.List, cst.Set, cst.Dict)


def one_line(code: str, width: int = 60) -> str:
    """``code`` on one line, cut to ``width`` characters (a collection named in a finding)."""
    one = " ".join(code.split())
    return one if len(one) <= width else one[: width - 3] + "..."


def _held_by_containers(ctx: FileContext) -> dict[object, list[cst.BaseExpression]]:
    """The file's tuple, list, set and dict literals by the :func:`model_key` of each element (each dict
    value), once per file."""

    def keys(node: cst.BaseExpression) -> list[object]:
        if isinstance(node, cst.Dict):
            return [model_key(ctx, e.value) for e in node.elements if isinstance(e, cst.DictElement)]
        assert isinstance(node, (cst.Tuple, cst.List, cst.Set)), "the kinds asked for"
        return [model_key(ctx, e.value) for e in node.elements]

    grouped: dict[object, list[cst.BaseExpression]] = {}
    for kind in _CONTAINERS:
        for key, nodes in ctx.nodes_grouped(kind, "model keys of elements", keys).items():
            grouped.setdefault(key, []).extend(nodes)
    return grouped


def _iterated_by(ctx: FileContext, node: cst.CSTNode) -> Loop | None:
    """The ``for`` (statement or comprehension) whose iterable ``node`` is part of, if any."""
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, (cst.For, cst.CompFor)):
            return anc if anc.iter is child else None
        if isinstance(anc, (cst.BaseStatement, cst.BaseSmallStatement)):
            return None
        child = anc
    return None


def _unseen_use(ctx: FileContext, node: cst.CSTNode, followed: set[int]) -> bool:
    """Whether ``node`` (a collection holding the model, or a name bound to one) is iterated by a loop
    :func:`loop_stand_ins` does not follow (``for m in nets[::-1]``, ``for pair in pairs: pair[1](x)``), or
    indexed and called (``nets["ema"](x)``): the model may run there, where no call of it is seen."""
    loop = _iterated_by(ctx, node)
    if loop is not None:
        return id(loop) not in followed and _runs_its_items(ctx, loop)
    parent = ctx.parent(node)
    return isinstance(parent, cst.Subscript) and parent.value is node and isinstance(ctx.parent(parent), cst.Call)


_NOT_RUNNERS = ("builtins.", "torch.", "copy.")


def _runs_its_items(ctx: FileContext, loop: Loop) -> bool:
    """Whether ``loop``'s body may run what it iterates: calls a name its target binds (``m(x)``,
    ``pair[1](x)``) or hands one to a call other than the builtins', torch's or ``copy``'s
    (``evaluate(m, x)``); ``for m in nets + extra: m.eval()`` does not."""
    names = {n.value for n in findall(loop.target, m.Name()) if isinstance(n, cst.Name)}
    body = _loop_body(ctx, loop)
    if body is None:
        return True
    for call in findall(body, m.Call(), ctx.index):
        assert isinstance(call, cst.Call), "findall of m.Call()"
        func = call.func
        while isinstance(func, cst.Subscript):
            func = func.value
        if isinstance(func, cst.Name) and func.value in names:
            return True
        qualified = ctx.qualified_names(call.func)
        if qualified and all(q.startswith(_NOT_RUNNERS) for q in qualified):
            continue
        if any(isinstance(a.value, cst.Name) and a.value.value in names for a in call.args):
            return True
    return False


def unseen_reach(ctx: FileContext, model: cst.BaseExpression) -> cst.CSTNode | None:
    """Where ``model`` (or the module it wraps) sits in a written-out collection whose use may call it
    unseen (:func:`_unseen_use`): the collection itself, or a read of the one name it is bound to. The
    modes that cast the model then cast its inputs at run time (the forward pre-hook); amp reports it (a
    forward it cannot put under autocast). None when every use of such a collection is followed."""
    return ctx.memo(("model_site: unseen reach", model), lambda: _unseen_reach(ctx, model))


def _unseen_reach(ctx: FileContext, model: cst.BaseExpression) -> cst.CSTNode | None:
    models = [model, *returned_as(ctx, model)]
    keys = _stand_in_keys(ctx, models, [])
    grouped = _held_by_containers(ctx)
    followed = {id(loop) for loop, _ in loop_stand_ins(ctx, models)}
    containers = {id(c): c for key in keys for c in grouped.get(key, ())}
    found: list[cst.CSTNode] = []
    for container in sorted(containers.values(), key=ctx.pos):  # in source order: the first one is reported
        if isinstance(container, cst.Dict):
            elements = [e.value for e in container.elements if isinstance(e, cst.DictElement)]
        else:
            assert isinstance(container, (cst.Tuple, cst.List, cst.Set)), "the kinds grouped"
            elements = [e.value for e in container.elements]
        if not any(_wrapped_of(ctx, e, models) for e in elements):
            continue
        if _unseen_use(ctx, container, followed):
            found.append(container)
            continue
        assign = ctx.parent(container)
        if not (
            isinstance(assign, cst.Assign)
            and assign.value is container
            and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)
        ):
            continue
        name = assign.targets[0].target
        scope = ctx.scopes.get(name)
        bindings = [a for a in scope.assignments[name.value] if a.node is name] if scope is not None else []
        found.extend(r.node for b in bindings for r in b.references if _unseen_use(ctx, r.node, followed))
    return min(found, key=ctx.pos, default=None)


def _the_parameter(ctx: FileContext, name: cst.BaseExpression, func: cst.FunctionDef) -> bool:
    """Whether ``name`` reads the parameter of ``func`` it is named after, in ``func`` or in a function
    nested in it that does not bind the name again (a closure)."""
    if not isinstance(name, cst.Name):
        return False
    scope = ctx.scopes.get(name)
    if scope is None:
        return False
    bindings = [getattr(a, "node", None) for a in scope[name.value]]
    return (
        len(bindings) == 1
        and isinstance(bindings[0], cst.Param)
        and ctx.enclosing(bindings[0], cst.FunctionDef) is func
    )


def _calls_by_arg_keys(ctx: FileContext) -> dict:
    """The file's calls by the model keys of their arguments (any callee: ``torch.func.functional_call``)."""
    return ctx.nodes_grouped(
        cst.Call, "model keys of any call's args", lambda c: [model_key(ctx, a.value) for a in c.args]
    )


def _calls_by_argument_key(ctx: FileContext) -> dict[object, list[cst.Call]]:
    """The calls of a name (``Trainer(model, ...)``, ``fit(model)``, ``partial(...)``) and of ``functools.partial``
    grouped by the model keys of their arguments (:func:`model_key`), once per file."""
    return ctx.nodes_grouped(
        cst.Call,
        "model keys of args",
        lambda c: (
            [model_key(ctx, a.value) for a in c.args]
            if isinstance(c.func, cst.Name) or (isinstance(c.func, cst.Attribute) and c.func.attr.value == "partial")
            else ()
        ),
    )


def held_by(ctx: FileContext, models: list[cst.BaseExpression]) -> list[tuple[cst.ClassDef, str]]:
    """The classes defined in the file that one of ``models`` is handed to when built
    (``RangeTest(model, opt, ...)``), each with the attribute its ``__init__`` keeps it in
    (``self.model = model``, ``self.model, self.opt = model, opt``), in the order of the calls: a
    trainer whose methods call ``self.model(x)`` runs the model's forward pass there (found by a hunt:
    amp said the model was never called in the file)."""
    keys = {model_key(ctx, x) for x in models} - {None}
    by_arg = _calls_by_argument_key(ctx)
    found: list[tuple[cst.ClassDef, str]] = []
    for call in ctx.in_order(cst.Call, (c for key in keys for c in by_arg.get(key, ()))):
        cls = _local_def(ctx, call.func, cst.ClassDef)
        init = _method(cls, "__init__") if cls is not None else None
        if cls is None or init is None:
            continue
        for i, arg in enumerate(call.args):
            if not any(same_model(ctx, arg.value, x) for x in models):
                continue
            param = _param_for(init, i + 1, arg)  # after `self`
            attr = _kept_as(init, param) if param is not None else None
            if attr is not None and (cls, attr) not in found:
                found.append((cls, attr))
    return found


def _dataclass_calls(ctx: FileContext, models: list[cst.BaseExpression]) -> list[cst.Call]:
    """The calls ``state.model(x)`` of a model kept in a field of a dataclass of the file
    (``state = TrainState(model, opt)``, ``TrainState(model=model, ...)``; the fields are its annotated
    class attributes, in order: the generated ``__init__``'s parameters, Python docs of ``dataclasses``),
    in the scope of the binding of ``state`` (a hunt's training state: amp said the model was never
    called)."""
    keys = {model_key(ctx, x) for x in models} - {None}
    by_arg = _calls_by_argument_key(ctx)
    found: list[cst.Call] = []
    for call in ctx.in_order(cst.Call, (c for key in keys for c in by_arg.get(key, ()))):
        cls = _local_def(ctx, call.func, cst.ClassDef)
        if cls is None or not any("dataclass" in ctx.code(d.decorator) for d in cls.decorators):
            continue
        body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
        fields = [
            small.target.value
            for line in body
            if isinstance(line, cst.SimpleStatementLine)
            for small in line.body
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name)
        ]
        assign = ctx.parent(call)
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1):
            continue
        holder = assign.targets[0].target
        if not isinstance(holder, cst.Name):
            continue
        for i, arg in enumerate(call.args):
            if not any(same_model(ctx, arg.value, x) for x in models):
                continue
            field = arg.keyword.value if arg.keyword is not None else fields[i] if i < len(fields) else None
            if field is None:
                continue
            held = m.Call(func=m.Attribute(value=m.Name(holder.value), attr=m.Name(field)))
            scope = ctx.enclosing(call, cst.FunctionDef) or ctx.module
            found.extend(
                c for c in findall(scope, held, ctx.index) if (ctx.enclosing(c, cst.FunctionDef) or ctx.module) is scope
            )
    return found


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return next((st for st in body if isinstance(st, cst.FunctionDef) and st.name.value == name), None)


def _kept_as(init: cst.FunctionDef, param: str) -> str | None:
    """The attribute of ``self`` that ``init`` assigns the parameter ``param`` to, alone or in a tuple
    assigned a tuple of as many; None when there is none."""
    for assign in findall(init.body, m.Assign()):
        assert isinstance(assign, cst.Assign), "findall of m.Assign()"
        for target in assign.targets:
            pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = [(target.target, assign.value)]
            if isinstance(target.target, cst.Tuple) and isinstance(assign.value, cst.Tuple):
                if len(target.target.elements) == len(assign.value.elements):
                    pairs = [(t.value, v.value) for t, v in zip(target.target.elements, assign.value.elements)]
            for left, right in pairs:
                if (
                    m.matches(left, m.Attribute(value=m.Name("self")))
                    and m.matches(right, m.Name(param))
                    and isinstance(left, cst.Attribute)
                ):
                    return left.attr.value
    return None


_PARTIALS = frozenset({"functools.partial"})
"""Python's partial application (functools docs): ``partial(f, *args)`` calls ``f`` with ``args`` first."""


def handed_to(ctx: FileContext, models: list[cst.BaseExpression]) -> list[tuple[cst.FunctionDef, str]]:
    """The functions defined in the file that one of ``models`` is handed to as a positional or
    keyword argument (``train_one_epoch(model, loader, optimizer)``), each with the name of the
    parameter that receives it there, in the order of the calls. Handed as the module it wraps
    (``evaluate(ema.module, x)``) or as a loop variable over a collection holding it (``for m in (model,
    ema): evaluate(m, x)``: :func:`loop_stand_ins`) counts: the function may run it (found by a hunt)."""
    loops = loop_stand_ins(ctx, models)
    keys = _stand_in_keys(ctx, models, loops)
    by_arg = _calls_by_argument_key(ctx)
    found: list[tuple[cst.FunctionDef, str]] = []
    for call in ctx.in_order(cst.Call, (c for key in keys for c in by_arg.get(key, ()))):
        # `functools.partial(compute_loss, model, losses)`: the model is handed to `compute_loss`, which its calls run
        # (a hunt's amp training forward stayed f32 behind one)
        partial = bool(call.args) and bool(ctx.qualified_names(call.func) & _PARTIALS)
        for i, arg in enumerate(call.args):
            if not _stands_for(ctx, arg.value, models, loops):  # the model, `ema.module`, a loop's `m`
                continue
            func = _local_def(ctx, call.args[0].value if partial else call.func, cst.FunctionDef)
            param = _param_for(func, i - 1 if partial else i, arg) if func is not None else None
            if func is not None and param is not None and not any(f is func and p == param for f, p in found):
                found.append((func, param))
    return found


def _under_self_returning(ctx: FileContext, expr: cst.BaseExpression) -> cst.BaseExpression:
    """The receiver under a chain of the module methods that return the module itself
    (``model.to(device).eval()`` -> ``model``; rules/device_modules.toml ``returns_self``)."""
    returns_self = ctx.rules.device_modules.returns_self
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in returns_self:
        expr = expr.func.value
    return expr


def bound_results(ctx: FileContext, func: cst.FunctionDef) -> list[tuple[cst.Call, cst.Name]] | None:
    """The calls of ``func`` (a function of the file) with the name each result is assigned to
    (``teacher = build(device)``); None when one of its calls is not a plain assignment to one
    name (its result used in place, returned, unpacked), or when there is none."""
    out: list[tuple[cst.Call, cst.Name]] = []
    for call in ctx.nodes_named(cst.Call, func.name.value, "func"):
        if not (isinstance(call.func, cst.Name) and _local_def(ctx, call.func, cst.FunctionDef) is func):
            continue
        assign = ctx.parent(call)
        if not (
            isinstance(assign, cst.Assign)
            and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name)
        ):
            return None
        out.append((call, assign.targets[0].target))
    return out or None


def returned_as(ctx: FileContext, model: cst.BaseExpression) -> list[cst.Name]:
    """The names that receive ``model`` from the function defined in this file that builds and
    returns it: ``model, optimizer = build(args)`` where every ``return`` of ``build`` is
    ``model, optimizer`` (the same position each time) or ``return model`` (or
    ``return model.to(device).eval()``, :func:`_under_self_returning`). Only a plain
    assignment of the call to a name, or to a tuple of names, is followed."""
    if not isinstance(model, cst.Name):
        return []
    func = ctx.enclosing(model, cst.FunctionDef)
    if func is None:
        return []
    positions: set[int | str | None] = set()
    for ret in findall(func.body, m.Return(), ctx.index):
        if ctx.enclosing(ret, cst.FunctionDef) is not func:
            continue
        if ret.value is not None and same_model(ctx, _under_self_returning(ctx, ret.value), model):
            positions.add(None)
        elif isinstance(ret.value, cst.Tuple):
            hits = [
                i
                for i, e in enumerate(ret.value.elements)
                if not isinstance(e, cst.StarredElement) and same_model(ctx, e.value, model)
            ]
            positions.add(hits[0] if len(hits) == 1 else "unknown")
        else:
            positions.add("unknown")
    if len(positions) != 1 or "unknown" in positions:
        return []
    (position,) = positions
    names: list[cst.Name] = []
    for call in ctx.nodes_named(cst.Call, func.name.value, "func"):  # the calls of that name only
        if not (
            isinstance(call.func, cst.Name)
            and call.func.value == func.name.value
            and _local_def(ctx, call.func, cst.FunctionDef) is func
        ):
            continue
        assign = ctx.parent(call)
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            continue
        target: cst.BaseExpression = assign.targets[0].target
        if isinstance(position, int):  # else None: the model is returned alone
            elements = target.elements if isinstance(target, (cst.Tuple, cst.List)) else ()
            if any(isinstance(e, cst.StarredElement) for e in elements) or position >= len(elements):
                continue
            target = elements[position].value
        if isinstance(target, cst.Name):
            names.append(target)
    return names


def _local_def(ctx: FileContext, name: cst.BaseExpression, kind: type[_Def]) -> _Def | None:
    """The one function (or class, with ``kind``) of the file ``name`` is bound to (its scope's only
    binding of it), or None (not a name, bound otherwise or more than once)."""
    if not isinstance(name, cst.Name):
        return None
    scope = ctx.scopes.get(name)
    if scope is None:
        return None
    defs = [a.node for a in scope[name.value] if isinstance(a, Assignment) and isinstance(a.node, kind)]
    return defs[0] if len(defs) == 1 else None


def _param_for(func: cst.FunctionDef, index: int, arg: cst.Arg) -> str | None:
    params = list(func.params.posonly_params) + list(func.params.params)
    if arg.keyword is not None:
        names = {p.name.value for p in params + list(func.params.kwonly_params)}
        return arg.keyword.value if arg.keyword.value in names else None
    return params[index].name.value if index < len(params) else None


def is_loss_callee(ctx: FileContext, func: cst.BaseExpression) -> bool:
    """A loss: a ``torch.nn.*Loss`` instance, a ``torch.nn.functional`` loss, a callable whose name
    says loss/criterion (``loss_fn``, ``self.criterion``), or a function of the file whose result
    the step backpropagates (:func:`backpropagated_only`)."""
    return _named_loss(ctx, func) or backpropagated_only(ctx, func)


def backpropagated_only(ctx: FileContext, func: cst.BaseExpression) -> bool:
    """A loss known only by what the step does with its result: a function of the file, named for
    no loss, whose result ``backward`` is called on (``mdn_nll``, ``elbo_terms``:
    :func:`_backpropagated_functions`). Its arguments may be hyperparameters as well as targets."""
    return isinstance(func, cst.Name) and func.value in _backpropagated_functions(ctx) and not _named_loss(ctx, func)


def _named_loss(ctx: FileContext, func: cst.BaseExpression) -> bool:
    api = ctx.rules.torch_api
    for qn in ctx.qualified_names(func):
        if qn.startswith("torch.nn.functional.") and qn.rsplit(".", 1)[1] in api.functional_losses:
            return True
    name = _callee_name(func).lower()
    return name in api.functional_losses or "loss" in name or "criterion" in name or loss_module(ctx, func)


def loss_module(ctx: FileContext, func: cst.BaseExpression) -> bool:
    """``func`` is a ``torch.nn`` loss module whatever its name: ``nn.MSELoss()(out, y)``, or a name or
    ``self.<attr>`` every binding of which builds one (``mse = nn.MSELoss()``, ``self.l1 = nn.L1Loss()``:
    a hunt's regression left its target f32 under ``mse``, where ``criterion`` was cast)."""
    if not ctx.memo(("model_site: builds a loss module",), lambda: "Loss(" in ctx.text()):
        return False  # a cheap test first: no `...Loss(` anywhere in the file
    values: list[cst.BaseExpression]
    if isinstance(func, cst.Call):
        values = [func]
    elif isinstance(func, cst.Name):
        values = assigned_values(ctx, func)
    elif isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name):
        # `criteria[k](out[k], tgt[k])` of `criteria = {"cls": nn.CrossEntropyLoss(), "reg": nn.MSELoss()}`
        held = assigned_values(ctx, func.value)
        values = [
            e.value for d in held if isinstance(d, cst.Dict) for e in d.elements if isinstance(e, cst.DictElement)
        ]
        if not held or not all(isinstance(d, cst.Dict) for d in held):
            return False
    elif m.matches(func, m.Attribute(value=m.Name("self"))) and (cls := ctx.enclosing(func, cst.ClassDef)) is not None:
        assert isinstance(func, cst.Attribute), "matched an attribute of self"
        values = self_assigned(ctx, cls, func.attr.value)
    else:
        return False
    return bool(values) and all(
        isinstance(v, cst.Call)
        and any(
            qn.startswith("torch.nn.") and qn.rsplit(".", 1)[1].endswith("Loss") for qn in ctx.qualified_names(v.func)
        )
        for v in values
    )


def _backpropagated_functions(ctx: FileContext) -> frozenset[str]:
    """The names of the file's own functions whose result the step backpropagates, whatever their
    name (``loss = mdn_nll(*model(x), y)``, or ``rec, kl = elbo_terms(...)`` then ``loss = rec + kl``
    in the same block, then ``loss.backward()``): what ``backward`` is called on is the loss, so
    what computes it is a loss function (its other arguments the targets)."""

    def scan() -> frozenset[str]:
        defined = {d.name.value for d in ctx.nodes(cst.FunctionDef)}
        backward = backward_names(ctx)
        found: set[str] = set()
        for call in ctx.nodes(cst.Call):
            if not (isinstance(call.func, cst.Name) and call.func.value in defined):
                continue
            statement = ctx.statement_of(call)
            if not isinstance(statement, cst.SimpleStatementLine):
                continue
            names = set(_assigned_names(statement))
            if names & backward or _feeds_later(ctx, statement, names, backward):
                found.add(call.func.value)
        return frozenset(found)

    return ctx.memo(("model_site: backpropagated functions",), scan)


def _feeds_later(ctx: FileContext, statement: cst.SimpleStatementLine, names: set[str], backward: set[str]) -> bool:
    """Whether a later statement of ``statement``'s block assigns one of ``backward`` from ``names``."""
    block = ctx.block_of(statement)
    if block is None or not names:
        return False
    start = ctx.index_in_block(block, statement)
    for later in block.body[start + 1 :]:
        if not isinstance(later, cst.SimpleStatementLine):
            continue
        if set(_assigned_names(later)) & backward and any(n.value in names for n in findall(later, m.Name())):
            return True
    return False


def describe_call(ctx: FileContext, call: cst.Call) -> ModelCall:
    """``call`` (a call of the model, or of one of its own methods) with its statement, the names its
    result is assigned to and the loss calls computed from them (:class:`ModelCall`)."""
    stmt = ctx.statement_of(call)
    info = ModelCall(call, stmt if isinstance(stmt, cst.SimpleStatementLine) else None)
    # a model call nested in a loss call: loss_fn(model(x), y)
    for anc in ctx.ancestors(call):
        if isinstance(anc, cst.Call) and is_loss_callee(ctx, anc.func):
            info.losses.append(anc)
            if info.statement is not None:
                info.loss_statements.append(info.statement)
                info.loss_names.extend(_assigned_names(info.statement))
            return info
        if isinstance(anc, cst.BaseStatement):
            break
    if info.statement is None:
        return info
    info.outputs = _assigned_names(info.statement)
    block = ctx.block_of(info.statement)
    if block is None or not info.outputs:
        return info
    # the losses are those of the first later statement of the block with a loss call that
    # reads one of the outputs
    losses, by_name = _block_losses(ctx, block)
    start = ctx.index_in_block(block, info.statement)
    hits = [k for k in (_first_after(by_name.get(name, ()), start) for name in set(info.outputs)) if k is not None]
    if not hits:
        return info
    later = block.body[min(hits)]
    for loss, used in losses[min(hits)]:
        if used & set(info.outputs):
            info.losses.append(loss)
            if isinstance(later, cst.SimpleStatementLine) and later not in info.loss_statements:
                info.loss_statements.append(later)
                info.loss_names.extend(_assigned_names(later))
    return info


def _block_losses(
    ctx: FileContext, block: cst.Module | cst.IndentedBlock
) -> tuple[dict[int, list[tuple[cst.Call, set[str]]]], dict[str, list[int]]]:
    """For the statements of ``block`` (by index): the loss calls in each with the names their
    arguments read, and for each name the indices of the statements with a loss that reads it.
    Once per block: every model call of the block looks for its loss there, and scanning the
    block again for each made a file with many calls in one function quadratic."""

    def scan():
        losses: dict[int, list[tuple[cst.Call, set[str]]]] = {}
        by_name: dict[str, list[int]] = {}
        for k, statement in enumerate(block.body):
            for loss in findall(statement, m.Call(), ctx.index):
                if not is_loss_callee(ctx, loss.func):
                    continue
                used = {n.value for a in loss.args for n in findall(a.value, m.Name())}
                if isinstance(loss.func, cst.Attribute):  # `dist.log_prob(y)`: a method of what the model returned
                    used |= {n.value for n in findall(loss.func.value, m.Name())}
                losses.setdefault(k, []).append((loss, used))
                for name in used:
                    if not by_name.get(name) or by_name[name][-1] != k:
                        by_name.setdefault(name, []).append(k)
        return losses, by_name

    return ctx.memo(("losses of block", block), scan)


def _first_after(indices, start: int) -> int | None:
    """The first of the sorted ``indices`` greater than ``start``."""
    k = bisect_right(indices, start)
    return indices[k] if k < len(indices) else None


def _assigned_names(stmt: cst.SimpleStatementLine) -> list[str]:
    """The names the statement's assignments bind."""
    names: list[str] = []
    for small in stmt.body:
        if isinstance(small, cst.Assign):
            for t in small.targets:
                names.extend(n.value for n in findall(t.target, m.Name()))
        elif isinstance(small, cst.AnnAssign):
            names.extend(n.value for n in findall(small.target, m.Name()))
    return names


def backward_names(ctx: FileContext) -> set[str]:
    """The names the file calls ``.backward()`` on (``loss.backward()``): losses, whatever computed
    them (a criterion of the file, a functional loss of logits the step derives from the model's
    output), for :func:`loss_accumulators`."""
    return {
        call.func.value.value
        for call in ctx.nodes(cst.Call)
        if isinstance(call.func, cst.Attribute)
        and isinstance(call.func.value, cst.Name)
        and call.func.attr.value == "backward"
    }


def loss_accumulators(ctx: FileContext, loss_names: set[str]) -> list[cst.Call]:
    """``torch.zeros(...)`` / ``torch.tensor(0.0, ...)`` calls without ``dtype=`` that create a
    tensor the loss is summed into (``acc += loss.detach()``, ``acc = acc + loss``); Neuron's
    guide keeps such accumulators in FP32 (Neuron's migration guide from XLA_DOWNCAST_BF16)."""
    found: list[cst.Call] = []
    for aug in ctx.nodes(cst.AugAssign):
        accumulator = aug.target
        if not (isinstance(aug.operator, cst.AddAssign) and isinstance(accumulator, cst.Name)):
            continue
        used = {n.value for n in findall(aug.value, m.Name())}
        if not used & loss_names:
            continue
        scope = ctx.scopes.get(accumulator)
        if scope is None:
            continue
        for a in scope[accumulator.value]:
            if not isinstance(a, Assignment):
                continue
            target_parent = ctx.parent(a.node)
            if not isinstance(target_parent, cst.AssignTarget):
                continue
            assign = ctx.parent(target_parent)
            assert isinstance(assign, cst.Assign), "an AssignTarget belongs to an Assign"
            factory = _factory_call(ctx, assign.value)
            if factory is not None and factory not in found:
                found.append(factory)
    return found


def _factory_call(ctx: FileContext, expr: cst.BaseExpression) -> cst.Call | None:
    """The ``torch.zeros``/``torch.tensor`` call at the root of ``expr`` (through ``.to(...)``),
    when it has no ``dtype=`` argument."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "to":
        if any(
            a.keyword is None and ctx.qualified_names(a.value) & {"torch.float32", "torch.float", "torch.bfloat16"}
            for a in expr.args
        ):
            return None
        expr = expr.func.value
    if not isinstance(expr, cst.Call):
        return None
    if not ctx.qualified_names(expr.func) & {"torch.zeros", "torch.tensor"}:
        return None
    if any(a.keyword is not None and a.keyword.value == "dtype" for a in expr.args):
        return None
    return expr


def cast_anchor(
    ctx: FileContext,
    model: cst.BaseExpression,
    sites: list[OptimizerSite],
    before: list[cst.BaseStatement] | None = None,
    rebinds: frozenset[int] = frozenset(),
) -> list[cst.BaseStatement] | None:
    """Where ``<model>.to(torch.bfloat16)`` goes: before the first of the optimizer
    constructions ``sites`` of that model and of the statements ``before`` (the model's wraps,
    the reads of its dtype: :func:`dtype_reads`), lifted to the block that holds them all, so
    that an ``if``/``elif`` chain choosing the optimizer gets one cast before it, not one per
    branch.

    Returns the statements to insert the cast before (one, or one per site when the model is
    bound inside the lifted statement, and one more for each site after the model's name is bound
    to a new module), or None when a site is not a simple statement line."""
    statements: list[cst.BaseStatement] = [s.statement for s in sites if s.statement is not None]
    if not statements or len(statements) < len(sites):
        return None
    statements = list(dict.fromkeys([*(before or []), *statements]))
    chains = [_block_chain(ctx, st) for st in statements]
    for block, _ in chains[0]:
        if not all(any(b is block for b, _ in chain) for chain in chains[1:]):
            continue
        candidates = [next(st for b, st in chain if b is block) for chain in chains]
        first = min(candidates, key=lambda st: ctx.pos(st))
        if isinstance(first, (cst.FunctionDef, cst.ClassDef)) or _binds(ctx, first, model, rebinds):
            break
        if _in_a_loop_after(ctx, first, model, rebinds):
            # a site made at every step (a hand-written update `sgd_step(params, lr)` after the forward and
            # backward of the model bound before the loop): its cast goes before the loop, not after the
            # step's first forward (which would meet the bf16 input with the f32 model)
            continue
        # a site after the name is bound to a new model (a resume: `model = Fit().to(device)` again,
        # its own optimizer) builds from another module, which needs its own cast
        later = [st for st in candidates if _bound_before(ctx, model, st, rebinds) > ctx.pos(first)]
        return list(dict.fromkeys([first, *later]))
    return list(dict.fromkeys(statements))


def _in_a_loop_after(
    ctx: FileContext, stmt: cst.BaseStatement, model: cst.BaseExpression, rebinds: frozenset[int]
) -> bool:
    """Whether ``stmt`` lies in a ``for``/``while`` loop of its function that begins after ``model``'s
    name was last bound (the model made before the loop, the statement run at every iteration)."""
    func = ctx.enclosing(stmt, cst.FunctionDef)
    for anc in ctx.ancestors(stmt):
        if anc is func or isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return False
        if isinstance(anc, (cst.For, cst.While)):
            bound = _bound_before(ctx, model, stmt, rebinds)
            return bound != (0, 0) and bound < ctx.pos(anc)
    return False


def comprehension_variable(ctx: FileContext, model: cst.BaseExpression) -> bool:
    """Whether ``model``'s root name is a comprehension's variable (``part`` of ``{name:
    Adam(part.parameters()) for name, part in parts.items()}``): no statement outside the
    comprehension can name that module, to cast it or hook its inputs (found by a hunt: a cast
    inserted before the comprehension raised NameError)."""
    root = _root(model)
    if not isinstance(root, cst.Name):
        return False
    scope = ctx.scopes.get(root)
    return isinstance(scope, ComprehensionScope) and any(
        isinstance(a, Assignment) for a in scope.assignments[root.value]
    )


def dtype_reads(
    ctx: FileContext, model: cst.BaseExpression, sites: list[OptimizerSite], rebinds: frozenset[int] = frozenset()
) -> list[cst.BaseStatement]:
    """The statements that read ``model``'s dtype before the first optimizer ``sites`` is built,
    in the same function and after the model is bound there: ``next(model.parameters()).dtype``,
    ``model.dtype``, a call passing the model to a function whose name says dtype
    (``get_dtype(model)``, HF's ``get_parameter_dtype``) or to a function of the file that reads
    ``.dtype`` off it. After the migration the parameters' dtype is the precision (under the
    legacy switch torch reported float32 whatever the device held), so the cast goes before
    them: a logged dtype or a run directory named after it says bfloat16, as the legacy run's
    reading of the variable did. Also the statements that keep a copy of the weights once the
    model is on the device (:func:`_copies_weights`: an EMA's dict of ``p.detach().clone()``), which
    the switch made bf16 there. ``rebinds``: ids of values that rebind the model's name to
    the same model (``model = DDP(model)``), which do not end the model's life."""
    first = min((s.statement for s in sites if s.statement is not None), key=ctx.pos, default=None)
    if first is None:
        return []
    scope = ctx.enclosing(first, cst.FunctionDef)
    start = _bound_before(ctx, model, first, rebinds)
    found: list[cst.BaseStatement] = []
    moved: tuple[int, int] | None = None
    runners: list[cst.FunctionDef] | None = None
    parts: set[int] | None = None
    for node in ctx.nodes_in(cst.SimpleStatementLine, scope):  # the lines of that function only
        if not start <= ctx.pos(node) < ctx.pos(first):
            continue
        if moved is not None and runners is None:
            runners = _forward_runners(ctx, model)
            # the calls of a part the model is built from (`encoder(x)` of `nn.Sequential(encoder, head)`): their
            # inputs are cast as the model's, so the cast goes before them too
            parts = {id(c) for c in _constructor_part_calls(ctx, [model])}
        if ctx.pos(node) > start and (
            _reads_dtype(ctx, node, model)
            or (moved is not None and _copies_weights(ctx, node, model))
            or (moved is not None and _runs_forward(ctx, node, model, runners or [], parts or set()))
            or (moved is not None and _computes_with_parts(ctx, node, model))
        ):
            found.append(node)
        if moved is None and _moves_to_a_device(ctx, node, model, start):
            moved = ctx.pos(node)
    return found


def modules_put_into(ctx: FileContext, model: cst.BaseExpression, after: cst.CSTNode) -> list[cst.SimpleStatementLine]:
    """The statement lines after ``after`` in its function (or at module level) that put a module built there
    into ``model``: ``model.head = nn.Linear(8, 3).to(device)``, ``model[2] = Block()``,
    ``model.add_module("head", Head())``, or that register a tensor on it (``model.register_buffer("B", t)``). A
    cast of ``model`` made before them does not reach that module or tensor: under the switch it was bf16 on the
    device all the same (found by a hunt: a second stage's fresh head stayed f32, its matmul f32 and its bf16 input
    raising on a CPU)."""
    scope = ctx.enclosing(after, cst.FunctionDef)
    found: list[cst.SimpleStatementLine] = []
    for line in ctx.nodes_in(cst.SimpleStatementLine, scope):
        if ctx.pos(line) < ctx.pos(after):
            continue  # the line the cast goes before may put a module in itself: cast again after it
        for small in line.body:
            if isinstance(small, cst.Assign) and _built_module(ctx, small.value):
                targets = [t.target for t in small.targets]
                if any(
                    isinstance(t, (cst.Attribute, cst.Subscript)) and same_model(ctx, t.value, model) for t in targets
                ):
                    found.append(line)
                    break
            call = small.value if isinstance(small, cst.Expr) else None
            if (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "add_module"
                and same_model(ctx, call.func.value, model)
                and len(call.args) == 2
                and _built_module(ctx, call.args[1].value)
            ):
                found.append(line)
                break
            if (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in ("append", "insert")
                and isinstance(call.func.value, cst.Attribute)
                and same_model(ctx, _root(call.func.value), _root(model))
                and call.args
                and _built_module(ctx, call.args[-1].value)
            ):
                found.append(line)  # `model.heads.append(nn.Linear(16, 2).to(dev))`: a part of a part
                break
            if (
                isinstance(call, cst.Call)
                and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in ("register_buffer", "register_parameter")
                and same_model(ctx, call.func.value, model)
                and len(call.args) >= 2
            ):
                # `model.register_buffer("B", torch.randn(2, 16).to(dev))` after the cast: a tensor of its own dtype,
                # bf16 on the device under the switch (a hunt's Fourier features stayed f32 and met the bf16 input)
                found.append(line)
                break
    return found


def _built_module(ctx: FileContext, value: cst.BaseExpression) -> bool:
    """Whether ``value`` builds a module: a call of a class (``nn.Linear(8, 3)``: named in CapWords, PEP 8's
    class names, or a class of the file), under a chain of the module methods that return it (``.to(device)``)."""
    value = _under_self_returning(ctx, value)
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name[:1].isupper() or any(isinstance(d, cst.ClassDef) for d in definitions(ctx, func))


def _forward_runners(ctx: FileContext, model: cst.BaseExpression) -> list[cst.FunctionDef]:
    """The functions of the file that are handed ``model`` and call the parameter it is bound to (a dry run's
    ``def probe(net): net(torch.zeros(1, 4, device=d))``: :func:`handed_to`)."""
    return [
        func for func, param in handed_to(ctx, [model]) if findall(func.body, m.Call(func=m.Name(param)), ctx.index)
    ]


def _runs_forward(
    ctx: FileContext,
    stmt: cst.SimpleStatementLine,
    model: cst.BaseExpression,
    runners: list[cst.FunctionDef],
    parts: set[int],
) -> bool:
    """Whether ``stmt`` runs ``model``'s forward pass: calls it (a dry run of a lazy module, a shape check, a
    baseline evaluation before the optimizer is built), or hands it to one of ``runners``. Once the model is on
    the device, its inputs are cast to bf16 from the first call on (the input casts), so its own cast goes
    before that call: after it, the first forward met a bf16 input with f32 weights (raised on a CPU or GPU, ran
    in f32 on the XLA device where the legacy run computed in bf16; found by a hunt)."""
    for call in findall(stmt, m.Call(), ctx.index):
        assert isinstance(call, cst.Call), "findall of m.Call()"
        if same_model(ctx, call.func, model) or id(call) in parts:
            return True
        if runners and any(_local_def(ctx, call.func, cst.FunctionDef) is func for func in runners):
            return True
    return False


_MOVES_ONLY = frozenset({"to", "cuda", "cpu", "xla", "train", "eval", "requires_grad_", "zero_grad", "share_memory"})
"""A module's methods that move it or set a flag (torch.nn.Module, torch 2.9 docs): no computation with its tensors."""


def _computes_with_parts(ctx: FileContext, stmt: cst.SimpleStatementLine, model: cst.BaseExpression) -> bool:
    """Whether ``stmt`` reaches into ``model`` for a part of it, a tensor or a submodule (``model[2].weight.data
    .mul_(0.001)``, ``F.interpolate(model.pos.reshape(...), ...)``, ``nn.init.zeros_(model.head.bias)``,
    ``model.apply(init_fn)``), other than to move it or set a flag (:data:`_MOVES_ONLY`). Once the model is on the
    device its tensors were bf16 under the switch: what such a line computes before the cast is f32 (a hunt's
    position-embedding resampling and head-init scaling ran in f32, verify FAILed them), so the cast goes before it.
    An initialisation is not one (``torch.nn.init.*``, ``model.apply(fn)``): random either way, and some run kernels
    without bf16 (``orthogonal_``'s QR, "geqrf_cpu"), which under the switch saw float32."""
    if any(n.startswith("torch.nn.init.") for c in findall(stmt, m.Call(), ctx.index) for n in _call_names(ctx, c)):
        return False
    for node in findall(stmt, m.Attribute() | m.Subscript(), ctx.index):
        assert isinstance(node, (cst.Attribute, cst.Subscript)), "findall of Attribute or Subscript"
        if not same_model(ctx, node.value, model):
            continue
        call = ctx.parent(node)
        if isinstance(call, cst.AssignTarget):
            continue  # `model.fc = nn.Linear(16, 2).to(dev)`: a part put in, no computation (modules_put_into's)
        if isinstance(node, cst.Attribute) and isinstance(call, cst.Call) and call.func is node:
            if node.attr.value in _MOVES_ONLY or node.attr.value in _WEIGHT_READS or node.attr.value == "apply":
                continue  # a move, a flag or an initialisation; a read of the weights is the copies' rule
        if isinstance(call, cst.Attribute) and call.attr.value in _MOVES_ONLY:
            if isinstance(ctx.parent(call), cst.Call):
                continue  # a part's flag (`model[2].requires_grad_(True)`, a hunt's fine-tuned head): nothing computed
        if _puts_in(ctx, node):
            continue  # `model.add_module("head", head)`, `model.heads.append(head)`: a part put in
        return True
    return False


_PUTS = frozenset({"add_module", "register_module", "register_buffer", "register_parameter", "append", "extend"})
"""The methods that put a module or a tensor into a module (torch.nn.Module, ModuleList: torch 2.9 docs)."""


def _puts_in(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Whether ``node`` (``model`` or a part of it, ``model.heads``) is the receiver, through attributes, of one of
    :data:`_PUTS` called on it."""
    outer: cst.CSTNode = node
    parent = ctx.parent(outer)
    while isinstance(parent, cst.Attribute) and parent.value is outer:
        outer, parent = parent, ctx.parent(parent)
    return (
        isinstance(outer, cst.Attribute)
        and isinstance(parent, cst.Call)
        and parent.func is outer
        and outer.attr.value in _PUTS
    )


def _call_names(ctx: FileContext, call: cst.CSTNode) -> set[str]:
    return set(ctx.qualified_names(call.func)) if isinstance(call, cst.Call) else set()


_WEIGHT_READS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers", "state_dict"})
_COPIES = frozenset({"clone", "detach", "copy_", "deepcopy", "data"})


def _copies_weights(ctx: FileContext, stmt: cst.SimpleStatementLine, model: cst.BaseExpression) -> bool:
    """Whether ``stmt`` keeps a copy of ``model``'s weights: it reads them (``model.named_parameters()``,
    ``model.state_dict()``...) and copies (``p.detach().clone()``, ``copy.deepcopy``, ``.data``), or
    keeps the state dict itself (``init = model.state_dict()``, whose tensors are the weights before
    the cast replaces them): ``shadow = {n: p.detach().clone() for n, p in model.named_parameters()}``;
    or it hands the model to a function or class of the file that does so with it (``ema = EMA(model)``).
    Under the switch the copy of weights on the device was bf16; made before the cast, it is f32 and
    what it computes after (an EMA's ``shadow[n].mul_(d).add_(p)``) is f32 (found by writing an EMA
    of a dict of parameter copies)."""
    if _keeps_weights(ctx, stmt, lambda e: same_model(ctx, e, model)):
        return True
    for call in findall(stmt, m.Call(), ctx.index):
        assert isinstance(call, cst.Call), "findall of m.Call()"
        for i, arg in enumerate(call.args):
            if not same_model(ctx, arg.value, model):
                continue
            func, shift = _local_def(ctx, call.func, cst.FunctionDef), 0
            cls = _local_def(ctx, call.func, cst.ClassDef) if func is None else None
            if cls is not None:
                inits = [st for st in cls.body.body if isinstance(st, cst.FunctionDef) and st.name.value == "__init__"]
                func, shift = (inits[0], 1) if inits else (None, 0)
            param = _param_for(func, i + shift if arg.keyword is None else i, arg) if func is not None else None
            if func is None or param is None:
                continue
            lines = [n for n in findall(func.body, m.SimpleStatementLine()) if isinstance(n, cst.SimpleStatementLine)]
            is_param = _the_name(param)
            if any(_keeps_weights(ctx, line, is_param) for line in lines):
                return True
    return False


def _the_name(name: str) -> Callable[[cst.BaseExpression], bool]:
    """A test of an expression: is it the name ``name``."""
    return lambda expr: isinstance(expr, cst.Name) and expr.value == name


def _keeps_weights(
    ctx: FileContext, stmt: cst.SimpleStatementLine, is_model: Callable[[cst.BaseExpression], bool]
) -> bool:
    """Whether ``stmt`` reads the weights of a module ``is_model`` accepts and copies them, or keeps
    its state dict (:func:`_copies_weights`)."""
    reads = [
        c
        for c in findall(stmt, m.Call(func=m.Attribute(attr=m.OneOf(*map(m.Name, _WEIGHT_READS)))))
        if isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute) and is_model(c.func.value)
    ]
    if not reads:
        return False
    if any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "state_dict" for c in reads):
        return isinstance(stmt.body[0], cst.Assign) or _copy_named(stmt)
    return _copy_named(stmt)


def _copy_named(stmt: cst.SimpleStatementLine) -> bool:
    """Whether ``stmt`` names a copy (``.clone()``, ``.detach()``, ``copy.deepcopy``, ``.data``)."""
    return any(
        isinstance(n, (cst.Name, cst.Attribute)) and (n.value if isinstance(n, cst.Name) else n.attr.value) in _COPIES
        for n in findall(stmt, m.Name() | m.Attribute())
    )


def _moves_to_a_device(
    ctx: FileContext, stmt: cst.SimpleStatementLine, model: cst.BaseExpression, start: tuple[int, int]
) -> bool:
    """Whether ``stmt`` moves ``model`` to a device: ``model.to(device)``, ``model.cuda()``, or the binding
    of the model at ``start`` itself (``model = Net().to(device)``)."""
    for call in findall(stmt, m.Call(func=m.Attribute(attr=m.Name("to") | m.Name("cuda"))), ctx.index):
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute), "matched a method call"
        if same_model(ctx, call.func.value, model) or ctx.pos(stmt) <= start:
            return True
    return False


def _bound_before(
    ctx: FileContext, model: cst.BaseExpression, stmt: cst.BaseStatement, rebinds: frozenset[int]
) -> tuple[int, int]:
    """Where the last binding of ``model``'s root name before ``stmt`` is, leaving out those
    whose value is in ``rebinds`` ((0, 0) when none is seen: an attribute, a parameter)."""
    root = _root(model)
    if not isinstance(root, cst.Name) or root.value == "self":
        return (0, 0)
    scope = ctx.scopes.get(root)
    if scope is None:
        return (0, 0)
    positions = [
        ctx.pos(a.node)
        for a in scope[root.value]
        if isinstance(a, Assignment)
        and isinstance(a.node, cst.CSTNode)
        and ctx.pos(a.node) < ctx.pos(stmt)
        and not _rebinding(ctx, a.node, rebinds)
    ]
    return max(positions, default=(0, 0))


def _rebinding_target(ctx: FileContext, target: cst.AssignTarget, rebinds: frozenset[int]) -> bool:
    """Whether the assignment of ``target`` assigns one of the values ``rebinds``."""
    assign = ctx.parent(target)
    return isinstance(assign, cst.Assign) and id(assign.value) in rebinds


def _rebinding(ctx: FileContext, target: cst.CSTNode, rebinds: frozenset[int]) -> bool:
    """Whether the name ``target`` is assigned one of the values ``rebinds``."""
    assign = ctx.parent(ctx.parent(target))
    return isinstance(assign, cst.Assign) and id(assign.value) in rebinds


def _reads_dtype(ctx: FileContext, stmt: cst.SimpleStatementLine, model: cst.BaseExpression) -> bool:
    for attr in _dtype_attributes(stmt):
        used = findall(attr.value, m.Name() | m.Attribute())
        if any(isinstance(e, (cst.Name, cst.Attribute)) and same_model(ctx, e, model) for e in used):
            return True
    for call in findall(stmt, m.Call(), ctx.index):
        for i, arg in enumerate(call.args):
            if not same_model(ctx, arg.value, model):
                continue
            if "dtype" in _callee_name(call.func).lower():
                return True
            func = _local_def(ctx, call.func, cst.FunctionDef)
            param = _param_for(func, i, arg) if func is not None else None
            if func is not None and param is not None and _function_reads_dtype(func, param):
                return True
    return False


def _function_reads_dtype(func: cst.FunctionDef, param: str) -> bool:
    """Whether ``func`` reads ``.dtype`` off an expression that uses its parameter ``param``."""
    return any(
        any(isinstance(n, cst.Name) and n.value == param for n in findall(attr.value, m.Name()))
        for attr in _dtype_attributes(func.body)
    )


def _dtype_attributes(node: cst.CSTNode) -> list[cst.Attribute]:
    """The ``X.dtype`` attributes inside ``node``."""
    return [a for a in findall(node, m.Attribute(attr=m.Name("dtype"))) if isinstance(a, cst.Attribute)]


def _block_chain(
    ctx: FileContext, stmt: cst.BaseStatement
) -> list[tuple[cst.Module | cst.IndentedBlock, cst.BaseStatement]]:
    """(block, statement of that block holding ``stmt``), innermost block first."""
    chain: list[tuple[cst.Module | cst.IndentedBlock, cst.BaseStatement]] = []
    current: cst.BaseStatement | None = stmt
    while current is not None:
        parent = ctx.parent(current)
        if isinstance(parent, (cst.Module, cst.IndentedBlock)):
            chain.append((parent, current))
            if isinstance(parent, cst.Module):
                break
            current = ctx.statement_of(ctx.parent(parent))
        else:
            current = ctx.statement_of(parent) if parent is not None else None
    return chain


def _binds(
    ctx: FileContext, stmt: cst.BaseStatement, model: cst.BaseExpression, rebinds: frozenset[int] = frozenset()
) -> bool:
    """Whether ``stmt`` is a compound statement that (re)binds ``model`` inside it, to another
    value than one of ``rebinds`` (a wrap of the same module: ``if flags.ddp: model = DDP(model)``
    keeps the module a cast before the ``if`` has cast)."""
    if not isinstance(stmt, cst.BaseCompoundStatement):
        return False
    code = ctx.code(model)
    for target in findall(stmt, m.AssignTarget() | m.For() | m.WithItem()):
        bound: cst.BaseExpression | None
        if isinstance(target, cst.AssignTarget) and _rebinding_target(ctx, target, rebinds):
            continue
        if isinstance(target, (cst.AssignTarget, cst.For)):
            bound = target.target
        else:
            assert isinstance(target, cst.WithItem), "the matcher names three classes"
            bound = target.asname.name if target.asname else None
        if bound is not None and any(ctx.code(n) == code for n in [bound, *findall(bound, m.Name() | m.Attribute())]):
            return True
    return False
