"""Which loss code a training step runs: the functions and criterion classes of the file that the step
applies to the model's output, and the step's own expressions on the way from that output to the loss.

Under the legacy switch every floating tensor on the XLA device was bf16 (torch_xla/csrc/dtype.cpp,
``MaybeDowncastToXlaDeviceType``), the ones a loss function makes included: in an NT-Xent loss,
``torch.eye(n, device=z.device)`` was a bf16 mask. ``model.to(torch.bfloat16)`` casts the model's
parameters and buffers only (torch ``nn.Module._apply``), so after the migration that mask is f32 and,
by PyTorch's type promotion (docs, "Type Promotion"), the logits it is subtracted from become f32: the
softmax and the cross-entropy run in f32 where the legacy run computed them in bf16, without a crash
or a word. :mod:`.model_code` audits this code as it audits the model's ``forward``; this module
only finds it.

From each call of the model (:func:`~.model_site.model_calls`), its value is followed forward through
the function that makes the call: the names it is bound to, attributes and indexing, arithmetic,
method calls, torch functions and the calls it is passed to, to where the loss leaves the step:
``loss.backward()`` (or ``x.backward(loss)``), a loss call (:func:`~.model_site.is_loss_callee`:
``criterion(...)``, a ``torch.nn.functional`` loss), or, in a function with neither, its ``return``
(a ``train_step`` whose caller runs backward). The nodes from the model's output to one of those are
the step's **loss path** (a metric computed from the output and printed is not on it):

* a function of the file called on that path (``loss = nt_xent(z1, z2, T)``) runs in the step: it is
  audited as ``forward`` is, and what it calls, transitively (:mod:`.model_reach`);
* an instance of a class of the file called on that path (``criterion = ContrastiveLoss(...)``,
  ``self.criterion = LabelSmoothing(...)``): its ``forward`` runs in the step. The class is not cast
  by ``model.to`` (:attr:`~.model_reach.Reached.loss_classes`);
* a tensor the step's function makes itself and that meets a value on that path
  (``sim = z @ z.T - torch.eye(n, device=device) * 1e4``) is audited as one made in ``forward``.

A function or class imported from another module (``from losses import nt_xent``) is not read
here: its qualified name is recorded (:attr:`LossCode.imported`), and when that module is one of
the tree's, the project audits the names the scripts apply as their loss in it
(:mod:`bf16_migrate.tree_modules`, :func:`module_loss_code`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m
from libcst.metadata import ImportAssignment

from .bindings import assigned_values, definitions, self_assigned
from .context import FileContext, findall
from .model_site import ModelCall, is_loss_callee

__all__ = ["LossCode", "callee_targets", "imported_callees", "loss_code", "loss_state", "module_loss_code"]

_PARTIAL = {"functools.partial"}
_NOT_TREE = ("torch.", "builtins.", "functools.")
_MAX_ALIASES = 4


@dataclass
class LossCode:
    """The loss code of a file's training steps (see the module docstring). ``functions``: functions
    of the file the steps call on their loss path; ``classes``: classes of the file whose instances
    they call there; ``steps``: the functions (or the module) that call the model; ``path``: ids of
    the nodes of those functions on a loss path; ``cast_losses``: ids of the loss calls whose other
    floating arguments (the loss targets) the input casts handle (:mod:`.inputs`); ``imported``: the
    qualified names of the imported functions and classes called on a loss path
    (``losses.nt_xent``, ``.losses.NTXent``); ``statements``: ids of the statements of the steps that
    hold a node of a loss path (amp's autocast region runs to the last of them: :mod:`.autocast`);
    ``model_calls``: the model's calls in the steps (where the value its ``forward`` returns goes)."""

    functions: list[cst.FunctionDef] = field(default_factory=list)
    classes: list[cst.ClassDef] = field(default_factory=list)
    steps: list[cst.FunctionDef | cst.Module] = field(default_factory=list)
    path: frozenset[int] = frozenset()
    cast_losses: frozenset[int] = frozenset()
    imported: frozenset[str] = frozenset()
    statements: frozenset[int] = frozenset()
    model_calls: list[cst.Call] = field(default_factory=list)


def loss_code(ctx: FileContext, calls: Iterable[ModelCall]) -> LossCode:
    """The loss code of the steps that make ``calls`` (the model's calls in the file)."""
    by_scope: dict[int, tuple[cst.FunctionDef | cst.Module, list[cst.Call]]] = {}
    calls = list(calls)
    for call in calls:
        scope = ctx.enclosing(call.call, cst.FunctionDef) or ctx.module
        by_scope.setdefault(id(scope), (scope, []))[1].append(call.call)
    found = LossCode()
    path: set[int] = set()
    imported: set[str] = set()
    for scope, starts in by_scope.values():
        follow = _Follow(ctx)
        follow.run(starts)
        on_path = follow.on_path()
        if not on_path:
            continue
        found.steps.append(scope)
        path |= on_path
        for callee, target in follow.callees:
            if id(callee) not in on_path:
                continue
            if isinstance(target, str):
                imported.add(target)
            elif isinstance(target, cst.FunctionDef) and not any(f is target for f in found.functions):
                found.functions.append(target)
            elif isinstance(target, cst.ClassDef) and not any(c is target for c in found.classes):
                found.classes.append(target)
    found.path = frozenset(path)
    found.imported = frozenset(imported)
    found.statements = frozenset(id(ctx.statement_of(ctx.parent_of_id(node))) for node in path)
    found.cast_losses = frozenset(id(loss) for call in calls for loss in call.losses)
    found.model_calls = [call.call for call in calls]
    return found


class _Follow:
    """Forward from the model's calls through one function (see the module docstring): the nodes
    that carry the value and where each goes next, where the loss leaves, and the calls of the
    file's functions and instances met on the way."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.ends = ctx.rules.model_code.ends
        self.host = ctx.rules.model_code.host_functions
        self.succ: dict[int, list[cst.CSTNode]] = {}
        self.sinks: set[int] = set()
        self.returns: set[int] = set()
        self.callees: list[tuple[cst.Call, cst.FunctionDef | cst.ClassDef | str]] = []

    def run(self, starts: Iterable[cst.CSTNode]) -> None:
        queue = list(starts)
        while queue:
            node = queue.pop()
            if id(node) in self.succ:
                continue
            nexts = self._next(node)
            self.succ[id(node)] = nexts
            queue.extend(nexts)

    def on_path(self) -> set[int]:
        """The nodes from which a sink (a backward, a loss call) is reached; without a sink, a
        ``return`` of the function."""
        sinks = self.sinks or self.returns
        preds: dict[int, list[int]] = {}
        for node, nexts in self.succ.items():
            for after in nexts:
                preds.setdefault(id(after), []).append(node)
        seen = set(sinks)
        queue = list(sinks)
        while queue:
            for before in preds.get(queue.pop(), ()):
                if before not in seen:
                    seen.add(before)
                    queue.append(before)
        return seen & set(self.succ)

    def _next(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """What carries the value of ``node`` next."""
        ctx = self.ctx
        parent = ctx.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return self._attribute(node, parent)
        if isinstance(parent, cst.Arg) and parent.value is node:
            return self._argument(node, parent)
        if isinstance(parent, cst.Subscript) and parent.value is node:
            return [parent]
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
            return [parent]
        if isinstance(parent, cst.IfExp) and parent.test is not node:
            return [parent]
        if isinstance(parent, cst.Element):
            container = ctx.parent(parent)
            return [container] if isinstance(container, (cst.Tuple, cst.List)) else []
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is node:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return [read for target in targets for read in self._reads_of(target)]
        if isinstance(parent, cst.AugAssign):  # `loss += term`, `loss *= w`: the name's new value
            return self._reads_of(parent.target)
        if isinstance(parent, cst.Return):
            self.returns.add(id(node))
        return []

    def _attribute(self, node: cst.CSTNode, attribute: cst.Attribute) -> list[cst.CSTNode]:
        name = attribute.attr.value
        call = self.ctx.parent(attribute)
        if isinstance(call, cst.Call) and call.func is attribute:
            if name == "backward":
                self.sinks.add(id(node))
                return []
            return [] if name in self.ends else [call]
        return [] if name in self.ends else [attribute]

    def _argument(self, node: cst.CSTNode, arg: cst.Arg) -> list[cst.CSTNode]:
        call = self.ctx.parent(arg)
        assert isinstance(call, cst.Call), "an Arg belongs to a Call"
        func = call.func
        if m.matches(func, m.Attribute(attr=m.Name("backward"))):  # `accelerator.backward(loss)`
            self.sinks.add(id(node))
            return []
        if self.ctx.qualified_names(func) & self.host:
            return []
        if is_loss_callee(self.ctx, func):
            self.sinks.add(id(call))
        for target in callee_targets(self.ctx, func):
            self.callees.append((call, target))
        for name in imported_callees(self.ctx, func):
            self.callees.append((call, name))
        return [call]

    def _reads_of(self, target: cst.BaseExpression) -> list[cst.CSTNode]:
        """The reads of the names ``target`` binds (a name, or the names of a tuple or list)."""
        names = [target] if isinstance(target, cst.Name) else []
        if isinstance(target, (cst.Tuple, cst.List)):
            names = [e.value for e in target.elements if isinstance(e.value, cst.Name)]
        reads: list[cst.CSTNode] = []
        for name in names:
            assert isinstance(name, cst.Name), "only names are read"
            scope = self.ctx.scopes.get(name)
            if scope is None:
                continue
            for assignment in scope.assignments[name.value]:
                if assignment.node is name:
                    reads.extend(access.node for access in assignment.references)
        return reads


def _held_by_self(ctx: FileContext, func: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The values assigned to ``self.<attr>`` in the class of ``func`` when ``func`` is such an
    attribute (``self.criterion``), none found outside a class; None when ``func`` is not one."""
    if not m.matches(func, m.Attribute(value=m.Name("self"))):
        return None
    assert isinstance(func, cst.Attribute), "matched an Attribute"
    cls = ctx.enclosing(func, cst.ClassDef)
    return self_assigned(ctx, cls, func.attr.value) if cls is not None else []


def callee_targets(ctx: FileContext, func: cst.BaseExpression) -> list[cst.FunctionDef | cst.ClassDef]:
    """What a call of ``func`` runs among the file's definitions: the function a name is bound to
    (``nt_xent``, an alias, ``functools.partial(nt_xent, ...)``), or the class of the instance a name
    or ``self.<attr>`` holds (``criterion = NTXent(0.2).to(device)``); none for anything else."""
    if isinstance(func, cst.Name):
        defs = definitions(ctx, func)
        if defs:
            return [d for d in defs if isinstance(d, cst.FunctionDef)]  # calling a class builds an instance
        values = assigned_values(ctx, func)
    else:
        held = _held_by_self(ctx, func)
        if held is None:
            return []
        values = held
    found: list[cst.FunctionDef | cst.ClassDef] = []
    for value in values:
        for target in _value_targets(ctx, value, 0):
            if not any(t is target for t in found):
                found.append(target)
    return found


def imported_callees(ctx: FileContext, func: cst.BaseExpression) -> list[str]:
    """The qualified names of what a call of ``func`` runs when the file imports it: a function
    (``from losses import nt_xent``, ``losses.nt_xent``) or the class of the instance a name or
    ``self.<attr>`` holds (``criterion = NTXent(0.2)`` with ``NTXent`` imported); torch's own are
    left out (they are no module of a tree)."""
    if isinstance(func, cst.Name) and not _imported(ctx, func):
        values = assigned_values(ctx, func)
    else:
        held = _held_by_self(ctx, func)
        values = [func] if held is None else held
    found: list[str] = []
    for value in values:
        while m.matches(value, m.Call(func=m.Attribute(value=m.Call()))):  # `NTXent(0.2).to(device)`
            assert isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute), "matched"
            value = value.func.value
        named = value.func if isinstance(value, cst.Call) else value
        root = named
        while isinstance(root, cst.Attribute):
            root = root.value
        if isinstance(root, cst.Name) and _imported(ctx, root):
            found += sorted(n for n in ctx.qualified_names(named) if not n.startswith(_NOT_TREE))
    return found


def _imported(ctx: FileContext, name: cst.Name) -> bool:
    """Whether ``name`` is bound by an import where it is read."""
    scope = ctx.scopes.get(name)
    return scope is not None and any(isinstance(a, ImportAssignment) for a in scope[name.value])


def module_loss_code(ctx: FileContext, names: Iterable[str]) -> LossCode:
    """The loss code of a module of the tree that scripts import: its module-level functions and
    classes named ``names`` (what the scripts call on their loss path: :attr:`LossCode.imported`
    with the module's own name taken off)."""
    wanted = set(names)
    found = LossCode()
    for statement in ctx.module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value in wanted:
            found.functions.append(statement)
        elif isinstance(statement, cst.ClassDef) and statement.name.value in wanted:
            found.classes.append(statement)
    return found


def _value_targets(ctx: FileContext, value: cst.BaseExpression, depth: int) -> list[cst.FunctionDef | cst.ClassDef]:
    """The file's function or class behind a value a callable was bound to: ``NTXent(0.2)``,
    ``NTXent(0.2).to(device)``, ``nt_xent``, ``functools.partial(nt_xent, temperature=0.1)``."""
    while m.matches(value, m.Call(func=m.Attribute(value=m.Call()))):  # `NTXent(0.2).to(device)`
        assert isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute), "matched"
        value = value.func.value
    if isinstance(value, cst.Call):
        if ctx.qualified_names(value.func) & _PARTIAL and value.args:
            return _value_targets(ctx, value.args[0].value, depth + 1) if depth < _MAX_ALIASES else []
        return [d for d in definitions(ctx, value.func) if isinstance(d, cst.ClassDef)]
    if isinstance(value, cst.Name):
        defs = definitions(ctx, value)
        if defs:
            return [d for d in defs if isinstance(d, cst.FunctionDef)]
        if depth < _MAX_ALIASES:
            return [t for v in assigned_values(ctx, value) for t in _value_targets(ctx, v, depth + 1)]
    return []


def loss_state(ctx: FileContext, cls: cst.ClassDef) -> list[cst.CSTNode]:
    """The parameters, buffers and weighted layers a class of the loss keeps (``self.w =
    nn.Parameter(...)``, ``self.register_buffer(...)``, ``self.proj = nn.Linear(...)``, a torch loss
    given a ``weight``: ``rules/model_code.toml`` ``[reach] registers``, ``[flow.weighted_layers]``):
    ``model.to(torch.bfloat16)`` casts none of them when the class is not part of the model
    (``[loss]``: the containers of layers, a torch loss given a class weight)."""
    rules = ctx.rules.model_code
    found: list[cst.CSTNode] = []
    for call in findall(cls, m.Call(func=m.Attribute(value=m.Name("self"))), ctx.index):
        assert isinstance(call.func, cst.Attribute), "matched self.<name>(...)"
        if call.func.attr.value in rules.registers:
            found.append(call)
    for assign in findall(cls, m.Assign(), ctx.index):
        assert isinstance(assign, cst.Assign), "findall of Assign"
        if not any(m.matches(t.target, m.Attribute(value=m.Name("self"))) for t in assign.targets):
            continue
        value = assign.value
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and not _is_state(ctx, value):
            value = value.func.value  # `nn.Linear(4, 4).to(device)`
        if isinstance(value, cst.Call) and _is_state(ctx, value):
            found.append(value)
    return sorted(found, key=ctx.pos)


def _is_state(ctx: FileContext, call: cst.Call) -> bool:
    rules = ctx.rules.model_code
    names = ctx.qualified_names(call.func)
    if names & rules.registers or names & set(rules.weighted_layers):
        return True
    if names & rules.loss_containers:
        return any(_is_state(ctx, inner) for inner in findall(call, m.Call()) if inner is not call)
    if any(n.startswith("torch.nn.") and n.endswith("Loss") for n in names):
        positional = bool(names & rules.loss_weight_first) and bool(call.args) and call.args[0].keyword is None
        given = [a.value for a in call.args if a.keyword is not None and a.keyword.value in rules.loss_weight_keywords]
        return positional or any(not m.matches(v, m.Name("None")) for v in given)
    return False
