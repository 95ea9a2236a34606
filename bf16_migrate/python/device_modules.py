"""Every module that reaches the XLA device, migrated: one rule, its places as data.

Under the legacy switch every floating tensor on the device was bf16 (torch-xla 2.9,
``torch_xla/csrc/dtype.cpp``, ``MaybeDowncastToXlaDeviceType``), whichever module held it. The
optimizer's model is found by :mod:`.model_site`; this rule finds the others a script puts on the
device: a teacher, a frozen backbone, the model of an inference script without an optimizer
(``model.to(device).eval()``), and the copies of a module (``copy.deepcopy(model)``,
``AveragedModel(model)``, ``type(model)(...)`` then moved). The ways a module gets there and the
ways one is made from another are rows of ``rules/device_modules.toml`` (``[[entry]]``,
``[[copy]]``), read here and nowhere else.

The check (:func:`find_device_modules`, :meth:`OnDevice.settle`): each module that reaches the
device beyond the optimizer's models, the statement its cast goes right after (its entry: the move,
the build on the device, the copy), and whether it needs one (a copy made after its source's cast
is bf16 already). A module whose reaching the device the code does not show (bound from
``build(cfg, device=device)`` of another module, moved to a device the code cannot tell) is a
finding at its line, never a guess (BFM151): the switch is kept.

The fix, in the modes that cast the model (:func:`plan_device_modules`): ``<module>.to(torch.bfloat16)``
right after the entry, and its calls' floating inputs cast as the model's are (:mod:`.inputs`); the
Planner audits each module's forward with the model's (:mod:`.model_code`). In amp
(:func:`device_module_regions`) the modules stay FP32, as the model does, and their forward passes
go under ``torch.autocast`` like the training step's, evaluation and teacher passes outside the step
included: amp's whole replacement of the switch is autocast, and a forward left outside it runs
every matmul in f32 where the legacy run ran bf16 (torch-xla ``torch_xla/csrc/autocast_mode.cpp``
lists the ops autocast runs in bf16 on XLA; a forward under ``torch.no_grad()`` is autocast alike).

VALID (nothing for this rule to add) and INVALID (with their stochastic-mode fix) examples are at
the end of the module (:data:`EXAMPLES`); ``tests/test_device_modules.py`` runs them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from ..rules import ArgumentAt, ModuleCopy
from . import snippets
from .apply import EditPlan
from .autocast import Problem, Region, autocast_regions
from .bindings import assigned_values, bound_by_import, definitions, plain_class, self_assigned
from .conditions import evaluable_like
from .context import FileContext, findall
from .inputs import InputCasts
from .loss_reach import loss_state
from .model_reach import module_classes
from .model_site import (
    ModelCall,
    bound_results,
    handed_to,
    is_loss_callee,
    model_calls,
    model_key,
    returned_as,
    same_model,
    unseen_reach,
)
from .optimizers import add_keywords
from .outcome import Edge, NotExamined, Refusal
from .wrappers import aliases, dynamo_callers

# torch.nn.Module methods that return the module itself (torch/nn/modules/module.py): a chain of them
# after a constructor (``Net().to(device).eval()``) still denotes the module.
_DEPTH = 4


@dataclass
class DeviceModule:
    """A module that reaches the device, beyond the optimizer's models.

    ``expr``: the name (or ``self.<attr>``) it is used by; ``idiom``: the rules row it was found by;
    ``entry``: the call that puts it there (a move, a build, a copy); ``anchor``: the statement its
    cast goes right after; ``source``: for a copy, the module copied; ``cast``: False for a copy made
    after its source's cast (bf16 already); ``hooks``: the copy keeps its source's forward
    pre-hooks."""

    expr: cst.BaseExpression
    idiom: str
    entry: cst.Call
    anchor: cst.SimpleStatementLine
    source: cst.BaseExpression | None = None
    cast: bool = True
    hooks: bool = False
    calls: list[ModelCall] = field(default_factory=list)
    methods: list[cst.Call] = field(default_factory=list)
    """Calls of its other methods (``vae.encode(x)``): they run without the forward pre-hook."""


@dataclass
class Unplaced:
    """A module the rule cannot migrate: ``node`` where to report, ``module`` its code, the
    finding's ``variant`` (None: bound from a call handed the device) and template ``fields``
    (BFM151)."""

    node: cst.CSTNode
    module: str
    variant: str | None
    fields: dict[str, object] = field(default_factory=dict)


@dataclass
class OnDevice:
    """What the check found: the ``modules`` to migrate (one per entry) and the ``unplaced`` ones."""

    modules: list[DeviceModule] = field(default_factory=list)
    unplaced: list[Unplaced] = field(default_factory=list)
    criteria: list[DeviceModule] = field(default_factory=list)
    """Criteria on the device that keep tensors of their own (a class of the file applied as the
    loss, with a buffer, a parameter or a weighted layer: :func:`.loss_reach.loss_state`). Under the
    switch those tensors were bf16 on the device; the model cast does not reach them, so each is cast
    right after its entry, in the modes that cast the model (their inputs are the model's outputs and
    the loss targets, which the input casts see to). amp leaves them FP32 with the model; their
    calls are inside the loss, under autocast with it."""
    as_written: list[tuple[cst.Call, cst.BaseExpression, cst.BaseExpression]] = field(default_factory=list)
    """Modules put on the device with a dtype the script names (``vae.to(device, dtype=torch.float32)``):
    (the call, the module, the dtype), kept as written (BFM153)."""
    own_device: list[tuple[cst.Call, cst.BaseExpression, cst.BaseExpression]] = field(default_factory=list)
    """Parts a module's method builds or moves to the device of one of the module's own tensors (``self.head =
    nn.Linear(16, n, device=self.body.weight.device)``): (the call, the part, that tensor). Given its dtype in the
    modes that cast the model (BFM150 ``own_device``): bf16 once the model is cast, whenever the method runs."""

    def unique(self, ctx: FileContext) -> list[DeviceModule]:
        """The modules, each once (the first entry of each, :func:`.model_site.same_model`)."""
        out: list[DeviceModule] = []
        for module in self.modules:
            if not any(same_model(ctx, module.expr, o.expr) for o in out):
                out.append(module)
        return out

    def exprs(self, ctx: FileContext) -> list[cst.BaseExpression]:
        """The expressions the modules and the criteria are used by, each once (what the model-code
        audit reads: a criterion cast with the model is read as the model's code)."""
        return [module.expr for module in [*self.unique(ctx), *self.criteria]]

    def calls(self, ctx: FileContext) -> list[ModelCall]:
        """Every call of the modules in the file."""
        return [call for module in self.unique(ctx) for call in module.calls]

    def settle(
        self,
        ctx: FileContext,
        models: list[cst.BaseExpression],
        model_anchors: list[list[cst.BaseStatement] | None],
        guard: cst.BaseExpression | None,
        guard_at: Sequence[cst.CSTNode] = (),
    ) -> None:
        """Decide, once the models' casts are placed (``model_anchors``: per model, the statements
        its cast goes before), whether each copy needs a cast of its own: a copy made after its
        source's cast (same function, the cast on its path) is bf16 already; one made before it, or
        where that cannot be told, gets one (a cast of a bf16 module changes nothing). Under a
        ``guard`` (the condition bf16 was on under, written where the statements ``guard_at`` are:
        the legacy writes, the models' casts), a cast whose place does not see its names bound as
        there is unplaced (BFM151)."""
        for module in self.modules:
            if module.source is None:
                continue
            casts: list[tuple[cst.BaseStatement, bool]] = []  # (statement, cast before it)
            for model, anchors in zip(models, model_anchors):
                if same_model(ctx, model, module.source):
                    casts += [(a, True) for a in anchors or ()]
            for other in self.modules:
                if other is not module and same_model(ctx, other.expr, module.source):
                    casts.append((other.anchor, False))
            module.cast = not any(_runs_before(ctx, at, before, module.anchor) for at, before in casts)
        if guard is None:
            return
        for held in (self.modules, self.criteria):
            for module in list(held):
                if module.cast and not any(evaluable_like(ctx, guard, where, module.anchor) for where in guard_at):
                    held.remove(module)
                    self.unplaced.append(
                        Unplaced(module.entry, ctx.code(module.expr), "guard", {"condition": ctx.code(guard)})
                    )


def find_device_modules(ctx: FileContext, models: list[cst.BaseExpression]) -> OnDevice:
    """The modules of the file that reach the XLA device, the optimizer's ``models`` left out (the
    Planner casts those) but their copies in: each ``[[entry]]`` of ``rules/device_modules.toml``
    applied to a module, each ``[[copy]]`` of a module on the device. Their calls are filled in;
    :meth:`OnDevice.settle` decides the copies' casts."""
    return _Finder(ctx, models).run()


class _Finder:
    """One file's search (:func:`find_device_modules`)."""

    def __init__(self, ctx: FileContext, models: list[cst.BaseExpression]) -> None:
        self.ctx, self.models = ctx, models
        self.rules = ctx.rules.device_modules
        self.found = OnDevice()
        self.model_entries: list[cst.Call] = []  # the optimizer models' own moves to the device
        classes, _ = module_classes(ctx)
        self.classes = classes
        self.devices = self._device_codes()

    # -- the device ---------------------------------------------------------------------------
    def _device_codes(self) -> set[str]:
        """The code of every name or attribute the file binds to the XLA device (``device =
        torch_xla.device()``, ``self.device = device``), to a fixed point."""
        codes: set[str] = set()
        assigns = self.ctx.nodes(cst.Assign)
        changed = True
        while changed:
            changed = False
            for assign in assigns:
                if not self._is_device(assign.value, codes):
                    continue
                for target in assign.targets:
                    if isinstance(target.target, (cst.Name, cst.Attribute)):
                        code = self.ctx.code(target.target)
                        if code not in codes:
                            codes.add(code)
                            changed = True
        return codes

    def _is_device(self, expr: cst.BaseExpression | None, codes: set[str] | None = None) -> bool:
        """Whether ``expr`` denotes the XLA device: a call of a device function, ``torch.device("xla")``,
        the string ``"xla"`` / ``"xla:N"``, or a name or attribute bound to one."""
        if expr is None:
            return False
        ctx = self.ctx
        if isinstance(expr, cst.Call):
            names = ctx.qualified_names(expr.func)
            if names & self.rules.device_functions:
                return True
            if "torch.device" in names and expr.args:
                return self._is_device(expr.args[0].value, codes)
            return False
        if isinstance(expr, cst.SimpleString):
            value = expr.evaluated_value
            return isinstance(value, str) and value.split(":")[0] == self.rules.device_type
        if isinstance(expr, (cst.Name, cst.Attribute)):
            return ctx.code(expr) in (self.devices if codes is None else codes)
        return False

    def _is_host(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` names a device that is not the XLA device (``"cpu"``, ``torch.device("cpu")``)."""
        if isinstance(expr, cst.Call) and "torch.device" in self.ctx.qualified_names(expr.func) and expr.args:
            return self._is_host(expr.args[0].value)
        if isinstance(expr, cst.SimpleString):
            value = expr.evaluated_value
            return isinstance(value, str) and value.split(":")[0] != self.rules.device_type
        return False

    # -- modules ------------------------------------------------------------------------------
    def is_module(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether ``expr`` is a torch.nn.Module: built by a module class (of the file, or of the
        rules' packages and builders), a copy of a module, a module method's chain, or a name the
        file calls (a tensor is not callable) or calls a module-only method on."""
        return bool(self.ctx.memo(("is module", expr, depth), lambda: self._is_module(expr, depth)))

    def _is_module(self, expr: cst.BaseExpression, depth: int) -> bool:
        ctx = self.ctx
        if depth > _DEPTH:
            return False
        if isinstance(expr, cst.Call):
            return self._builds_module(expr, depth)
        if not isinstance(expr, (cst.Name, cst.Attribute)):
            return False
        if any(same_model(ctx, expr, model) for model in self.models):
            return True
        if any(self.is_module(value, depth + 1) for value in _values_of(ctx, expr)):
            return True
        return self._used_as_module(expr)

    def _builds_module(self, call: cst.Call, depth: int) -> bool:
        ctx, rules = self.ctx, self.rules
        func = call.func
        names = ctx.qualified_names(func)
        if names & rules.module_builders:
            return True
        if any(n.startswith(p) and n.rsplit(".", 1)[-1][:1].isupper() for n in names for p in rules.module_packages):
            return True
        if names and all(_imported_class(n) for n in names) and bound_by_import(ctx, func):
            return True  # a class of another module of the project or a library (torch's own named above)
        if isinstance(func, cst.Attribute) and func.attr.value in rules.module_builder_methods:
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in self.rules.returns_self:
            return self.is_module(func.value, depth + 1)
        if any(isinstance(d, cst.ClassDef) and any(d is c for c in self.classes) for d in definitions(ctx, func)):
            return True
        if any(isinstance(d, cst.FunctionDef) and self._returns_module(d, depth) for d in definitions(ctx, func)):
            return True  # `load_checkpoint(path)` of the file building and returning `SegNet()`
        copy = self._copy_row(call)
        if copy is not None:
            source = self._source(call, copy)
            return source is not None and self.is_module(source, depth + 1)
        return False

    def _returns_module(self, func: cst.FunctionDef, depth: int) -> bool:
        """Whether every ``return`` of the file's function ``func`` hands back a module (found by a hunt:
        an evaluation script's model came from its own ``load_checkpoint`` and was refused as having
        no model)."""
        returns = [
            r.value
            for r in findall(func.body, m.Return(), self.ctx.index)
            if isinstance(r, cst.Return) and self.ctx.enclosing(r, cst.FunctionDef) is func
        ]
        return bool(returns) and all(v is not None and self.is_module(v, depth + 1) for v in returns)

    def _used_as_module(self, expr: cst.BaseExpression) -> bool:
        """Whether the file calls ``expr`` (not as a loss) or a module-only method on it."""
        ctx = self.ctx
        return any(same_model(ctx, used, expr) for used in self._module_uses().get(ctx.code(expr), ()))

    def _module_uses(self) -> dict[str, list[cst.BaseExpression]]:
        """By their code, the expressions the file calls (not as a loss) or calls a module-only
        method on: one walk for every question of :meth:`_used_as_module`."""

        def index() -> dict[str, list[cst.BaseExpression]]:
            ctx = self.ctx
            uses: dict[str, list[cst.BaseExpression]] = {}
            for call in ctx.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value in self.rules.module_methods:
                    receiver = func.value
                    uses.setdefault(ctx.code(receiver), []).append(receiver)
                    # `model.to(device).eval()`: the methods that return the module itself lead to it
                    while m.matches(
                        receiver, m.Call(func=m.Attribute(attr=m.OneOf(*map(m.Name, self.rules.returns_self))))
                    ):
                        receiver = receiver.func.value  # type: ignore[attr-defined]
                        uses.setdefault(ctx.code(receiver), []).append(receiver)
                if isinstance(func, (cst.Name, cst.Attribute)) and not is_loss_callee(ctx, func):
                    uses.setdefault(ctx.code(func), []).append(func)
            return uses

        return self.ctx.memo(("module uses",), index)

    def _copy_row(self, call: cst.Call) -> ModuleCopy | None:
        """The ``[[copy]]`` row ``call`` matches, or None."""
        names = self.ctx.qualified_names(call.func)
        for row in self.rules.copies:
            if row.functions & names:
                return row
            if row.form == "type" and _type_call(self.ctx, call.func) is not None:
                return row
        return None

    def _source(self, call: cst.Call, row: ModuleCopy) -> cst.BaseExpression | None:
        if row.form == "type":
            return _type_call(self.ctx, call.func)
        return row.source.of(call)

    # -- the search ---------------------------------------------------------------------------
    def run(self) -> OnDevice:
        ctx = self.ctx
        copies: list[tuple[cst.Call, ModuleCopy, cst.BaseExpression, cst.BaseExpression]] = []
        for call in ctx.nodes(cst.Call):
            self._entry(call)
            row = self._copy_row(call)
            if row is None or row.on != "source":
                continue
            source, target = self._source(call, row), _bound_to(ctx, call)
            if source is not None and target is not None and self.is_module(source):
                copies.append((call, row, source, target))
        self._copies(copies)
        self._built_elsewhere()
        found = self.found
        written = [w for _, w, _ in found.as_written]
        found.modules = [m for m in found.modules if not any(same_model(ctx, m.expr, w) for w in written)]
        found.criteria = [m for m in found.modules if is_loss_callee(ctx, m.expr) and self._keeps_state(m)]
        found.modules = [m for m in found.modules if not is_loss_callee(ctx, m.expr)]
        for module in found.modules:
            calls = model_calls(ctx, module.expr, aliases(ctx, module.expr))
            module.calls = [c for c in calls if not _before_its_move(ctx, c.call, module)]
            module.methods = self._methods(module.expr)
        return found

    def _keeps_state(self, module: DeviceModule) -> bool:
        """Whether ``module`` (a criterion on the device) is built from a class of the file that
        keeps tensors of its own (:func:`.loss_reach.loss_state`)."""
        ctx = self.ctx
        built = _constructor(module.entry)  # `Focal(alpha).to(device)`: the constructor under the moves
        classes = [d for d in definitions(ctx, built.func) if isinstance(d, cst.ClassDef)]
        if not classes:
            classes = [
                d
                for value in (assigned_values(ctx, module.expr) if isinstance(module.expr, cst.Name) else [])
                if isinstance(value, cst.Call)
                for d in definitions(ctx, _constructor(value).func)
                if isinstance(d, cst.ClassDef)
            ]
        return any(loss_state(ctx, cls) for cls in classes)

    def _unpickled_module(self, receiver: cst.BaseExpression, bound: cst.BaseExpression | None) -> bool:
        """``teacher = torch.load(path, weights_only=False).to(device).eval()``, or ``backbone =
        load_pretrained().to(device)`` of a function of another module: a whole module
        unpickled (``torch.load``, whose result the file then uses as a module: calls it, or a
        module-only method on it), moved to the device. Under the switch its weights were bf16 there
        like any module's; taken for no module, it computed in f32 (a hunt's teacher)."""
        if bound is None or not isinstance(receiver, cst.Call):
            return False
        names = self.ctx.qualified_names(receiver.func)
        # so is one a function of another module of the project returns (`backbone = load_pretrained().to(dev)`, its
        # result called and frozen): a hunt's frozen backbone computed its cached features in f32, in every mode
        imported = (
            bool(names) and bound_by_import(self.ctx, receiver.func) and not any(n.startswith(_LIBRARY) for n in names)
        )
        if "torch.load" not in names and not imported:
            return False
        return self.is_module(bound)

    def _methods(self, expr: cst.BaseExpression) -> list[cst.Call]:
        return method_calls(self.ctx, expr)

    def _entry(self, call: cst.Call) -> None:
        """``call`` as an ``[[entry]]``: a module moved to the device or built there."""
        ctx = self.ctx
        for row in self.rules.entries:
            if row.method is not None:
                if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == row.method):
                    continue
                receiver = call.func.value
                module = receiver if isinstance(receiver, (cst.Name, cst.Attribute)) else _bound_to(ctx, call)
                device = row.device.of(call) if row.device is not None else None
                if device is None or not (self.is_module(receiver) or self._unpickled_module(receiver, module)):
                    continue
                if module is None:
                    statement = ctx.statement_of(call)
                    if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[-1], cst.Return):
                        self._returned(call, receiver, row.idiom, device)
                        return
                    continue  # handed on (a wrapper's argument: `FSDP(Net().to(device))`), the wrapper's business
            else:
                assert row.keyword is not None, "the loader lets an entry have a method or a keyword"
                device = ArgumentAt(None, row.keyword).of(call)
                module = _bound_to(ctx, call)
                returns_module = (
                    isinstance(call.func, cst.Attribute) and call.func.attr.value in self.rules.returns_self
                )
                if device is None or module is None or returns_module or not self._builds_module(call, 0):
                    continue
            dtype = _named_dtype(ctx, call)
            if dtype is not None and not _follows_the_switch(ctx, dtype):
                if self._is_device(device) and not any(same_model(ctx, module, model) for model in self.models):
                    self.found.as_written.append((call, module, dtype))
                return
            if self._is_device(device) and _comprehension_variable(ctx, call, module):
                # `[m.to(device).eval() for m in members]`: a statement after it cannot name `m`
                self.found.unplaced.append(Unplaced(call, ctx.code(module), "comprehension"))
                return
            self._arrives(call, module, row.idiom, device)
            return

    def _arrives(self, call: cst.Call, module: cst.BaseExpression, idiom: str, device: cst.BaseExpression) -> None:
        ctx = self.ctx
        is_model = any(same_model(ctx, module, model) for model in self.models)
        if self._is_device(device):
            if is_model:
                self.model_entries.append(call)
            elif self._placeable(call, module):
                self._add(DeviceModule(module, idiom, call, *self._anchor(call)))
        elif not is_model and (tensor := _own_tensor(ctx, module, device)) is not None:
            self.found.own_device.append((call, module, tensor))
        elif not is_model and not self._is_host(device):
            self.found.unplaced.append(Unplaced(call, ctx.code(module), "device", {"device": ctx.code(device)}))

    def _returned(self, call: cst.Call, receiver: cst.BaseExpression, idiom: str, device: cst.BaseExpression) -> None:
        """A module built and put on the device in a ``return`` (``return Net().to(device)``): it
        arrives where each call of the function binds its result (``teacher = build(device)``); when
        one does not, no statement can hold its cast: unplaced."""
        ctx = self.ctx
        if not self._is_device(device):
            return
        func = ctx.enclosing(call, cst.FunctionDef)
        bound = bound_results(ctx, func) if func is not None else None
        if bound is None:
            self.found.unplaced.append(Unplaced(call, ctx.code(receiver), "returned"))
            return
        for caller, target in bound:
            self._arrives(caller, target, idiom, device)

    def _anchor(self, call: cst.Call) -> tuple[cst.SimpleStatementLine]:
        statement = self.ctx.statement_of(call)
        assert isinstance(statement, cst.SimpleStatementLine), "_placeable checks the statement first"
        return (_past_dtype_setters(self.ctx, statement, call),)

    def _add(self, module: DeviceModule) -> None:
        """Record ``module`` unless an earlier entry of it already puts it on the device on the
        path to this one (``m = Net().to(device)`` then ``m.to(device)`` again)."""
        ctx = self.ctx
        for other in self.found.modules:
            if same_model(ctx, other.expr, module.expr) and _runs_before(ctx, other.anchor, False, module.anchor):
                if not _rebound_between(ctx, module.expr, other.anchor, module.anchor):
                    return
        self.found.modules.append(module)

    def _copies(self, copies: list[tuple[cst.Call, ModuleCopy, cst.BaseExpression, cst.BaseExpression]]) -> None:
        """The copies on their source's device: of an optimizer model or a module found on the device
        (to a fixed point: a copy of a copy), not made before the source's first move there in the
        same function; or given a ``device=`` argument that names it."""
        ctx = self.ctx
        pending = list(copies)
        changed = True
        while changed:
            changed = False
            for item in list(pending):
                call, row, source, target = item
                moved = row.device.of(call) if row.device is not None else None
                on_source = self._on_device(source, call)
                if not (on_source or self._is_device(moved)):
                    continue
                pending.remove(item)
                changed = True
                if any(same_model(ctx, target, model) for model in self.models):
                    continue
                if self._placeable(call, target):
                    self._add(
                        DeviceModule(target, row.idiom, call, *self._anchor(call), source=source, hooks=row.hooks)
                    )

    def _on_device(self, source: cst.BaseExpression, call: cst.Call) -> bool:
        """Whether ``source`` is on the device where ``call`` copies it: an optimizer model (the
        model the switch trained on the device) or a module found there, unless all of its moves in
        ``call``'s function come after ``call``."""
        ctx = self.ctx
        is_model = any(same_model(ctx, source, model) for model in self.models)
        entries = [e for e in self.model_entries if is_model and _same_target(ctx, e, source)]
        entries += [d.entry for d in self.found.modules if same_model(ctx, d.expr, source)]
        if not is_model and not entries:
            return False
        function = ctx.enclosing(call, cst.FunctionDef)
        here = [e for e in entries if ctx.enclosing(e, cst.FunctionDef) is function]
        return not here or any(ctx.pos(e) < ctx.pos(call) for e in here)

    def _placeable(self, call: cst.Call, module: cst.BaseExpression) -> bool:
        statement = self.ctx.statement_of(call)
        if isinstance(statement, cst.SimpleStatementLine) and self.ctx.block_of(statement) is not None:
            return True
        self.found.unplaced.append(Unplaced(call, self.ctx.code(module), "statement"))
        return False

    def _built_elsewhere(self) -> None:
        """Modules bound from a call that hands the device to code outside the file
        (``teacher = load_teacher(path, device=device)``, ``torch.load(path, map_location=device)``)
        and then used as modules here: they reach the device in a way this file does not show."""
        ctx = self.ctx
        by_key: dict[object, list[cst.BaseExpression]] = {}  # same_model holds only under one model key
        for model in self.models:
            by_key.setdefault(model_key(ctx, model), []).append(model)
        for call in ctx.nodes(cst.Call):
            target = _bound_to(ctx, call)
            if target is None or any(same_model(ctx, target, m) for m in by_key.get(model_key(ctx, target), ())):
                continue
            if self._copy_row(call) is not None or self._builds_module(call, 0):
                continue
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in self.rules.returns_self:
                continue
            # a function of the file, or a plain class of it (a running normaliser holding `torch.zeros(dim,
            # device=device)`, no module: a hunt's, BFM151 kept the switch): its own moves are entries here
            if any(isinstance(d, cst.FunctionDef) or plain_class(d) for d in definitions(ctx, call.func)):
                continue
            device = next(
                (
                    a.value
                    for a in call.args
                    if (a.keyword is None or a.keyword.value in self.rules.device_keywords) and self._is_device(a.value)
                ),
                None,
            )
            if device is None or not self._used_as_module(target):
                continue
            if any(same_model(ctx, target, d.expr) for d in self.found.modules):
                continue
            self.found.unplaced.append(
                Unplaced(call, ctx.code(target), None, {"call": ctx.code(call.func), "device": ctx.code(device)})
            )


_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def _comprehension_variable(ctx: FileContext, node: cst.CSTNode, expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` is a name a comprehension around ``node`` binds (``m`` in ``[m.to(device) for m
    in members]``): it exists only inside the comprehension."""
    if not isinstance(expr, cst.Name):
        return False
    comp = ctx.enclosing(node, _COMPREHENSIONS)
    while comp is not None:
        clause: cst.CompFor | None = comp.for_in
        while clause is not None:
            if any(isinstance(n, cst.Name) and n.value == expr.value for n in findall(clause.target, m.Name())):
                return True
            clause = clause.inner_for_in
        comp = ctx.enclosing(comp, _COMPREHENSIONS)
    return False


def _imported_class(qualified: str) -> bool:
    """A capitalised name imported from outside torch (``models.AutoEncoder``): a class of another
    module; torch's tensor classes (``torch.Tensor``) are not modules."""
    return "." in qualified and qualified.rsplit(".", 1)[-1][:1].isupper() and not qualified.startswith("torch")


def _type_call(ctx: FileContext, func: cst.BaseExpression) -> cst.BaseExpression | None:
    """The ``X`` of ``type(X)`` or ``X.__class__`` when ``func`` is one, else None."""
    if isinstance(func, cst.Call) and "builtins.type" in ctx.qualified_names(func.func) and len(func.args) == 1:
        return func.args[0].value
    if isinstance(func, cst.Attribute) and func.attr.value == "__class__":
        return func.value
    return None


def _named_dtype(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    """The dtype a move or a build names (``.to(device, torch.float32)``, ``dtype=``), or None:
    the script chose the module's precision itself."""
    api = ctx.rules.torch_api
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "dtype":
            return arg.value
        if arg.keyword is None and any(
            n.startswith("torch.") and n[6:] in api.float_dtypes for n in ctx.qualified_names(arg.value)
        ):
            return arg.value
    return None


def _follows_the_switch(ctx: FileContext, dtype: cst.BaseExpression) -> bool:
    """Whether a module moved or built in the dtype ``dtype`` names is one on the device like any other (BFM150:
    cast with the model, or under autocast), not one kept as written: float32 (``torch.float32``, ``torch.float``) or
    a value the code does not tell was bf16 on the device under the legacy switch all the same
    (torch_xla/csrc/dtype.cpp); kept FP32 it met the bf16 tensors the migration makes (a frozen feature extractor
    ``nn.Sequential(...).to(device=dev, dtype=torch.float32)`` raised "mat1 and mat2 must have the same dtype":
    bench/unseen/hunt44). A low-precision dtype (the script's own precision code, BFM013 when it still sets the
    switch) and float64 (the FP32 idiom of XLA_DOWNCAST_BF16, BFM048) are the script's own."""
    names = ctx.qualified_names(dtype)
    kept = {f"torch.{n}" for n in ("bfloat16", "float16", "half", "float64", "double")}
    return not (names & kept)


def _bound_to(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    """The name (or attribute) the value of ``call`` is assigned to, through a chain of module
    methods that return the module (``teacher = Net().to(device).eval()``), or None."""
    node: cst.CSTNode = call
    while True:
        parent = ctx.parent(node)
        returns_self = ctx.rules.device_modules.returns_self
        if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in returns_self:
            outer = ctx.parent(parent)
            if isinstance(outer, cst.Call) and outer.func is parent:
                node = outer
                continue
        break
    parent = ctx.parent(node)
    if isinstance(parent, cst.Element):  # `q1_targ, q2_targ = QNet().to(device), QNet().to(device)`
        return _unpacked_into(ctx, parent)
    if isinstance(parent, cst.Assign) and parent.value is node and len(parent.targets) == 1:
        target = parent.targets[0].target
    elif isinstance(parent, cst.AnnAssign) and parent.value is node:
        target = parent.target
    else:
        return None
    if isinstance(target, cst.Name) or m.matches(target, m.Attribute(value=m.Name("self"))):
        return target
    return None


def _unpacked_into(ctx: FileContext, element: cst.Element) -> cst.BaseExpression | None:
    """The target an element of a tuple assigned to a tuple of as many names is bound to (the name
    at the same place), or None (a target of modules moved in a tuple assignment was left f32:
    bench/unseen/hunt9 sac_tanh's target networks)."""
    values = ctx.parent(element)
    assign = ctx.parent(values)
    if not (isinstance(values, (cst.Tuple, cst.List)) and isinstance(assign, cst.Assign) and assign.value is values):
        return None
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, (cst.Tuple, cst.List)):
        return None
    targets = assign.targets[0].target.elements
    if len(targets) != len(values.elements) or any(isinstance(e, cst.StarredElement) for e in values.elements):
        return None
    target = targets[list(values.elements).index(element)].value
    if isinstance(target, cst.Name) or m.matches(target, m.Attribute(value=m.Name("self"))):
        return target
    return None


def _values_of(ctx: FileContext, expr: cst.Name | cst.Attribute) -> list[cst.BaseExpression]:
    """The values assigned to the name (its scope's assignments) or ``self.<attr>`` (in its class)."""
    if isinstance(expr, cst.Name):
        scope = ctx.scopes.get(expr)
        if scope is None:
            return []
        values = []
        for a in scope[expr.value]:
            if not isinstance(a, Assignment) or not isinstance(a.node, cst.Name):
                continue
            target, assign = ctx.parent(a.node), ctx.parent(ctx.parent(a.node))
            if isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign):
                values.append(assign.value)
            elif isinstance(target, cst.AnnAssign) and target.value is not None:
                values.append(target.value)
        return values
    if m.matches(expr, m.Attribute(value=m.Name("self"))):
        cls = ctx.enclosing(expr, cst.ClassDef)
        return self_assigned(ctx, cls, expr.attr.value) if cls is not None else []
    return []


def _same_target(ctx: FileContext, entry: cst.Call, expr: cst.BaseExpression) -> bool:
    """Whether the move ``entry`` moves ``expr`` (its receiver, or the name its value is bound to)."""
    func = entry.func
    if isinstance(func, cst.Attribute) and same_model(ctx, func.value, expr):
        return True
    bound = _bound_to(ctx, entry)
    return bound is not None and same_model(ctx, bound, expr)


def _runs_before(ctx: FileContext, at: cst.BaseStatement, before: bool, statement: cst.BaseStatement) -> bool:
    """Whether something placed right before (``before``) or right after ``at`` has run whenever
    ``statement`` runs: same function, ``at``'s block holds ``statement``, and it comes first."""
    if ctx.enclosing(at, cst.FunctionDef) is not ctx.enclosing(statement, cst.FunctionDef):
        return False
    block = ctx.block_of(at)
    if block is None or not (block is statement or any(a is block for a in ctx.ancestors(statement))):
        return False
    return ctx.pos(at) <= ctx.pos(statement) if before else ctx.pos(at) < ctx.pos(statement)


def _rebound_between(ctx: FileContext, expr: cst.BaseExpression, first: cst.CSTNode, last: cst.CSTNode) -> bool:
    """Whether the name ``expr`` (or its root) is assigned after ``first`` and up to ``last``."""
    root = expr
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name):
        return True
    scope = ctx.scopes.get(root)
    if scope is None:
        return True
    return any(
        isinstance(a, Assignment)
        and isinstance(a.node, cst.CSTNode)
        and ctx.pos(first) < ctx.pos(a.node) <= ctx.pos(last)
        for a in scope[root.value]
    )


def passed_out(ctx: FileContext, expr: cst.BaseExpression) -> cst.Call | None:
    """A call that hands the module ``expr`` to code outside the file (whose forward pass may run
    there), or None: an argument of a call of anything but a function of the file or a module's own
    method."""
    key = model_key(ctx, expr)
    if key is None:
        return None
    # same_model holds only between equal keys: the calls passing an argument of this key
    by_arg = ctx.nodes_grouped(cst.Call, "model keys of every arg", lambda c: [model_key(ctx, a.value) for a in c.args])
    for call in by_arg.get(key, ()):
        if not any(same_model(ctx, arg.value, expr) for arg in call.args):
            continue
        if any(isinstance(d, cst.FunctionDef) for d in definitions(ctx, call.func)):
            continue
        if isinstance(call.func, cst.Attribute) and not ctx.qualified_names(call.func):
            continue  # a method of an object of the file (`ema.update_parameters(model)`)
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in _PART_INSERTS and _of_a_module(ctx, call):
            continue  # `model.heads.append(head)`: a part of another module, its forward run by that module's
        if ctx.qualified_names(call.func) & {"builtins.print", "builtins.isinstance", "builtins.id", "builtins.type"}:
            continue
        if ctx.rules.device_modules.copies and any(
            row.functions & ctx.qualified_names(call.func) for row in ctx.rules.device_modules.copies
        ):
            continue
        return call
    return None


_LIBRARY = ("torch.", "torch_xla.", "builtins.", "copy.", "numpy.")
"""Qualified names of functions that are no module of the project (:meth:`_Finder._unpickled_module`)."""

_PART_INSERTS = frozenset({"append", "extend", "insert", "add_module", "register_module"})
"""The methods that put a module into a module (torch.nn.Module.add_module, ModuleList.append: torch 2.9 docs)."""


def _of_a_module(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the receiver of the method ``call`` (``model.heads`` of ``model.heads.append(head)``) is a module
    or a part of one: its root a name bound only to a module built there (a class of the file or of torch.nn,
    under ``.to(device)``)."""
    assert isinstance(call.func, cst.Attribute), "a method call"
    root: cst.BaseExpression = call.func.value
    while isinstance(root, cst.Attribute):
        root = root.value
    values = assigned_values(ctx, root) if isinstance(root, cst.Name) else []
    return bool(values) and all(_builds_a_module(ctx, v) for v in values)


def _builds_a_module(ctx: FileContext, value: cst.BaseExpression) -> bool:
    while (
        isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and isinstance(value.func.value, cst.Call)
    ):
        value = value.func.value  # `MultiHead().to(dev)`
    if not isinstance(value, cst.Call):
        return False
    if any(isinstance(d, cst.ClassDef) for d in definitions(ctx, value.func)):
        return True
    return any(
        n.startswith("torch.nn.") and n.rsplit(".", 1)[-1][:1].isupper() for n in ctx.qualified_names(value.func)
    )


# -- the fix ------------------------------------------------------------------------------------
def refuse_unplaced(ctx: FileContext, found: OnDevice, anchors: list[tuple[str, cst.CSTNode]]) -> bool:
    """Report each unplaced module (BFM151, needs a hand) and refuse the migration on each write
    (``anchors``: (variable, node)): a module left f32 on the device computes in f32 where the
    legacy run computed in bf16. Returns whether there was any."""
    if not found.unplaced:
        return False
    for item in found.unplaced:
        ctx.report("BFM151", item.node, fixed=False, variant=item.variant, module=item.module, **item.fields)
    first = found.unplaced[0]
    for variable, anchor in anchors:
        ctx.outcome.refuse(
            Refusal.DEVICE_MODULE,
            ctx.report(
                "BFM151",
                anchor,
                fixed=False,
                variant="kept",
                variable=variable,
                module=first.module,
                line=ctx.pos(first.node)[0],
                count=len(found.unplaced),
            ),
        )
    return True


def plan_device_modules(
    ctx: FileContext,
    plan: EditPlan,
    found: OnDevice,
    inputs: InputCasts | None,
    guard: cst.BaseExpression | None,
) -> None:
    """The fix in a mode that casts the model: ``<module>.to(torch.bfloat16)`` right after each
    entry of a module that needs it (under ``guard``), with what its calls' inputs need right after
    (the run-time pre-hook: :class:`.inputs.InputCasts`, ``inputs`` None in a mode without input
    casts). A module neither called in the file nor handed out of it runs no forward pass: no hook.
    A copy that keeps its source's pre-hooks and is made after its source's cast gets none of its
    own. Marks the device's modules examined (:class:`.outcome.Edge`)."""
    done: list[DeviceModule] = []
    for module in found.modules:
        first = not any(same_model(ctx, module.expr, d.expr) for d in done)
        done.append(module)
        after: list[cst.BaseStatement] = []
        # called, handed out of the file, or held in a collection whose calls are not followed
        reached = module.calls or passed_out(ctx, module.expr) is not None or unseen_reach(ctx, module.expr)
        if first and inputs is not None and reached:
            inherited = module.hooks and not module.cast
            needs = inputs.needs_hook(module.calls)
            if not (inherited and needs):
                after = inputs.plan_model(module.expr, module.calls, dynamo_callers(ctx, module.expr))
        if first and inputs is not None:
            for call in module.methods:
                inputs.plan_method(call)
        statements = [snippets.model_cast_statement(module.expr)] if module.cast else []
        statements += after
        if statements:
            plan.insert_after.setdefault(id(module.anchor), []).extend(snippets.guarded(statements, guard))
        if module.cast:
            _report_cast(ctx, module)
    for criterion in found.criteria:
        cast = snippets.model_cast_statement(criterion.expr)
        plan.insert_after.setdefault(id(criterion.anchor), []).extend(snippets.guarded([cast], guard))
        ctx.report("BFM086", criterion.entry, fixed=True, variant="cast", criterion=ctx.code(criterion.expr))
    _plan_own_device(ctx, plan, found, guard)
    _report_as_written(ctx, found)
    ctx.outcome.examined.add(Edge.DEVICE_MODULES)


def _own_tensor(ctx: FileContext, module: cst.BaseExpression, device: cst.BaseExpression) -> cst.BaseExpression | None:
    """The tensor of ``self`` whose device ``device`` is (``self.body.weight.device``) when ``module`` is built in a
    method of a ``torch.nn.Module`` subclass (``self.head = ...``, a block ``grow()`` appends to ``self.extra``): it
    goes where the module's own tensors are, so it takes their dtype as well; else None."""
    if not (
        m.matches(device, m.Attribute(attr=m.Name("device")))
        and isinstance(device, cst.Attribute)
        and isinstance(device.value, cst.Attribute)
    ):
        return None
    root: cst.BaseExpression = device.value
    while isinstance(root, cst.Attribute):
        root = root.value
    cls = ctx.enclosing(module, cst.ClassDef)
    if not (isinstance(root, cst.Name) and root.value == "self" and cls is not None):
        return None
    modules = any(n.startswith("torch.nn.") for base in cls.bases for n in ctx.qualified_names(base.value))
    return device.value if modules else None


def _plan_own_device(ctx: FileContext, plan: EditPlan, found: OnDevice, guard: cst.BaseExpression | None) -> None:
    """``dtype=<tensor>.dtype`` on each part built or moved to the device of the module's own tensor (BFM150
    ``own_device``): torch.nn's layers take ``dtype`` with ``device`` (torch 2.9 docs, "factory_kwargs"), as
    ``Module.to`` does."""
    for call, module, tensor in found.own_device:
        plan.replace[id(call)] = functools.partial(_with_dtype, dtype=f"{ctx.code(tensor)}.dtype", guard=guard)
        ctx.report("BFM150", call, fixed=True, variant="own_device", module=ctx.code(module), tensor=ctx.code(tensor))


def _with_dtype(node: cst.CSTNode, dtype: str, guard: cst.BaseExpression | None) -> cst.CSTNode:
    assert isinstance(node, cst.Call), "the entry is a call"
    return add_keywords(node, [("dtype", dtype, "None")], guard)


def _constructor(call: cst.Call) -> cst.Call:
    """The call under a chain of module methods (``Focal(alpha).to(device).train()`` -> ``Focal(alpha)``)."""
    while isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Call):
        call = call.func.value
    return call


def _report_as_written(ctx: FileContext, found: OnDevice) -> None:
    """BFM153 at each module the script puts on the device in a dtype it names, other than bf16."""
    for call, module, dtype in found.as_written:
        if "torch.bfloat16" not in ctx.qualified_names(dtype):
            ctx.report("BFM153", call, fixed=True, module=ctx.code(module), dtype=ctx.code(dtype))


def _report_cast(ctx: FileContext, module: DeviceModule) -> None:
    if module.source is None:
        ctx.report("BFM150", module.entry, fixed=True, module=ctx.code(module.expr), idiom=module.idiom)
    else:
        ctx.report(
            "BFM150",
            module.entry,
            fixed=True,
            variant="copy",
            module=ctx.code(module.expr),
            idiom=module.idiom,
            source=ctx.code(module.source),
        )


_DTYPE_SETTERS = frozenset({"float", "double", "half", "bfloat16", "to", "type"})


def _past_dtype_setters(
    ctx: FileContext, statement: cst.SimpleStatementLine, move: cst.Call
) -> cst.SimpleStatementLine:
    """The statement the module ``move`` puts on the device is cast after: ``statement``, or the last of the
    statements right after it that set the same module's dtype (``model.to(device)`` then ``model.float()``:
    a cast written between them was undone, and the bf16 inputs met f32 weights: a hunt's)."""
    body = statement.body[0] if len(statement.body) == 1 else None
    target = body.targets[0].target if isinstance(body, cst.Assign) and len(body.targets) == 1 else None
    module = target if target is not None else move.func.value if isinstance(move.func, cst.Attribute) else None
    block = ctx.block_of(statement)
    if module is None or block is None:
        return statement
    anchor = statement
    for later in list(block.body)[ctx.index_in_block(block, statement) + 1 :]:
        expr = later.body[0] if isinstance(later, cst.SimpleStatementLine) and len(later.body) == 1 else None
        call = expr.value if isinstance(expr, cst.Expr) else None
        if not (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value in _DTYPE_SETTERS
            and same_model(ctx, call.func.value, module)
        ):
            break
        assert isinstance(later, cst.SimpleStatementLine), "matched a one-statement line"
        anchor = later
    return anchor


def _before_its_move(ctx: FileContext, call: cst.Call, module: DeviceModule) -> bool:
    """Whether ``call`` of ``module`` runs before the module reaches the device: in the same function (or at
    module level) as the statement that puts it there, and earlier. The switch acts on XLA tensors only, so that
    forward ran on the host in float32 (a label pass before the move); an input cast there met the module's f32
    weights on the CPU and raised (found by a hunt)."""
    scope = ctx.enclosing(module.anchor, cst.FunctionDef)
    return ctx.enclosing(call, cst.FunctionDef) is scope and ctx.pos(call) < ctx.pos(module.anchor)


def method_calls(ctx: FileContext, expr: cst.BaseExpression) -> list[cst.Call]:
    """The calls of the module ``expr``'s own methods, not torch.nn.Module's (``rules/device_modules.toml``
    ``module_api``) nor private ones (``vae.encode(x)``, ``model.decode(z)``): they run the module's
    computation without its forward pre-hook and outside the autocast regions of its calls."""
    api = ctx.rules.device_modules.module_api
    by_receiver = ctx.nodes_grouped(
        cst.Call,
        "model key of a method's receiver",
        lambda c: (model_key(ctx, c.func.value),) if isinstance(c.func, cst.Attribute) else (),
    )
    found = []
    # the module, and the names the function that builds and returns it hands it to (`net = load_model()`: a
    # server's route calling `net.body(net.norm(x))` left its f32 input to a hook that never fires there, a hunt's)
    for target in [expr, *returned_as(ctx, expr)]:
        key = model_key(ctx, target)
        found += [
            call
            for call in (by_receiver.get(key, ()) if key is not None else ())
            if isinstance(call.func, cst.Attribute)
            and call.func.attr.value not in api
            and not call.func.attr.value.startswith("_")
            and same_model(ctx, call.func.value, target)
        ]
    # one level into the file's functions it is handed to (``generate(model, ...)`` calling
    # ``model.step(token)``), as its forward calls are followed (:func:`.model_site.handed_to`)
    for func, param in handed_to(ctx, [expr]):
        pattern = m.Call(func=m.Attribute(value=m.Name(param)))
        for call in findall(func.body, pattern, ctx.index):
            assert isinstance(call.func, cst.Attribute), "matched an Attribute"
            name = call.func.attr.value
            if name not in api and not name.startswith("_") and ctx.enclosing(call, cst.FunctionDef) is func:
                found.append(call)
    return found


def method_names(ctx: FileContext, exprs: Iterable[cst.BaseExpression]) -> frozenset[str]:
    """The names of the own methods of the modules ``exprs`` the script calls (:func:`method_calls`)."""
    return frozenset(
        call.func.attr.value
        for expr in exprs
        for call in method_calls(ctx, expr)
        if isinstance(call.func, cst.Attribute)
    )


def method_forward_calls(ctx: FileContext, expr: cst.BaseExpression) -> list[ModelCall]:
    """:func:`method_calls` of ``expr`` as forward passes to put under autocast."""
    return [_method_call(ctx, call) for call in method_calls(ctx, expr)]


def _method_call(ctx: FileContext, call: cst.Call) -> ModelCall:
    """A method call of a module (``vae.encode(x)``) as a forward pass to put under autocast."""
    statement = ctx.statement_of(call)
    return ModelCall(call, statement if isinstance(statement, cst.SimpleStatementLine) else None)


def device_module_regions(
    ctx: FileContext, found: OnDevice, loss_statements: frozenset[int]
) -> tuple[list[Region], list[Problem]]:
    """amp: the autocast regions of the modules' forward passes (:func:`.autocast.autocast_regions`,
    the loss code's statements ``loss_statements``), and the problems of those that cannot be
    wrapped. A module called nowhere in the file but handed to code outside it is not examined
    there: reported (BFM152, needs a hand) and recorded in the outcome. Marks the device's modules
    examined."""
    regions: list[Region] = []
    problems: list[Problem] = []
    for module in found.unique(ctx):
        calls = [*module.calls, *(_method_call(ctx, call) for call in module.methods)]
        if calls:
            found_regions, failed = autocast_regions(ctx, module.expr, calls, loss_statements)
            regions += found_regions
            problems += failed
            if not failed:
                ctx.report(
                    "BFM150",
                    module.entry,
                    fixed=True,
                    variant="autocast",
                    module=ctx.code(module.expr),
                    idiom=module.idiom,
                    line=ctx.pos(calls[0].call)[0],
                )
            continue
        returned = _returned(ctx, module)
        if returned is not None:  # the callers' forward passes, not followed: amp cannot wrap them here
            fields = {"model": ctx.code(module.expr), "line": ctx.pos(returned)[0]}
            problems.append(("BFM021", module.entry, "returned", fields))
            continue
        out = passed_out(ctx, module.expr)
        if out is not None:
            line = ctx.pos(out)[0]
            ctx.report("BFM152", out, fixed=False, module=ctx.code(module.expr), call=ctx.code(out.func), line=line)
            ctx.outcome.not_examined.append(
                NotExamined(
                    Edge.DEVICE_MODULES, line, f"the forward of `{ctx.code(module.expr)}` in `{ctx.code(out.func)}`"
                )
            )
    _report_as_written(ctx, found)
    ctx.outcome.examined.add(Edge.DEVICE_MODULES)
    return regions, problems


def handed_out(ctx: FileContext, found: OnDevice) -> list[tuple[cst.BaseExpression, cst.Call]]:
    """(module, the call it is handed to) for each module on the device called nowhere in this file and handed
    to code outside it (BFM152): a ``Trainer(model, device)`` of another module that builds the optimizer and
    runs every forward pass."""
    out = []
    for module in found.unique(ctx):
        if module.calls or module.methods or _returned(ctx, module) is not None:
            continue
        call = passed_out(ctx, module.expr)
        if call is not None:
            out.append((module.expr, call))
    return out


def _returned(ctx: FileContext, module: DeviceModule) -> cst.Return | None:
    """The ``return`` that hands ``module`` (called nowhere in its function) to the function's callers:
    ``return net.to(device).eval()``, or ``return net`` after its move; None otherwise."""
    key = model_key(ctx, module.expr)
    for node in [module.entry, *ctx.ancestors(module.entry)]:
        if isinstance(node, cst.Return):
            return node
        if isinstance(node, (cst.SimpleStatementLine, cst.FunctionDef)):
            break
    function = ctx.enclosing(module.entry, cst.FunctionDef)
    for ret in ctx.nodes_in(cst.Return, function) if function is not None else ():
        if ret.value is not None and key is not None and model_key(ctx, ret.value) == key:
            return ret
    return None


# -- examples -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Example:
    """A script with the legacy switch (``before``) migrated in the rules' default mode (the first
    of ``rules/modes.toml``, which casts the model with stochastic rounding) or, with ``autocast``,
    in the first mode that autocasts. VALID (``after`` None): this rule finds nothing to do in it
    (none of :data:`CODES` is reported). INVALID: the migration is ``after`` exactly and reports
    ``codes`` among its findings."""

    name: str
    autocast: bool
    before: str
    after: str | None = None
    codes: tuple[str, ...] = ()


CODES = ("BFM150", "BFM151", "BFM152", "BFM153")
"""The codes of this rule."""

_HEADER = 'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\nimport torch_xla\n'
_MIGRATED = 'import os\nos.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"\nimport torch\nimport torch_xla\n'
_DOWNCAST_HEADER = 'import os\nos.environ["XLA_DOWNCAST_BF16"] = "1"\nimport torch\nimport torch_xla\n'

EXAMPLES = (
    Example(
        "valid: a module kept on the CPU (augmentation before the transfer)",
        False,
        _HEADER
        + """
device = torch_xla.device()
augment = torch.nn.Dropout(0.1)
model = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(augment(torch.randn(4, 8)).to(device)).sum()
loss.backward()
optimizer.step()
""",
    ),
    Example(
        "valid: a copy made after the model's cast is bf16 already",
        False,
        "import copy\n"
        + _HEADER
        + """
device = torch_xla.device()
model = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
ema = copy.deepcopy(model)
x = torch.randn(4, 8).to(device)
model(x).sum().backward()
optimizer.step()
""",
    ),
    Example(
        "valid: a copy made on the CPU before the model is moved stays on the CPU",
        False,
        "import copy\n"
        + _HEADER
        + """

def main():
    model = torch.nn.Linear(8, 2)
    reference = copy.deepcopy(model)
    model.to(torch_xla.device())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 8)
    model(x.to(torch_xla.device())).sum().backward()
    optimizer.step()
    print(reference(x))
""",
    ),
    Example(
        "invalid: an inference script, no optimizer",
        False,
        _HEADER
        + """
model = torch.nn.Linear(8, 2)
model.to(torch_xla.device()).eval()
with torch.no_grad():
    print(model(torch.randn(4, 8).to(torch_xla.device())).argmax(-1))
""",
        _MIGRATED
        + """
model = torch.nn.Linear(8, 2)
model.to(torch_xla.device()).eval()
model.to(torch.bfloat16)
with torch.no_grad():
    print(model(torch.randn(4, 8).to(torch_xla.device()).to(torch.bfloat16)).argmax(-1))
""",
        ("BFM150",),
    ),
    Example(
        "invalid: a model loaded by code of another file, told a module by `.to(device).eval()`",
        False,
        _HEADER
        + """from checkpoints import load

model, config = load("run-3")
model.to(torch_xla.device()).eval()
with torch.no_grad():
    print(model.encode(torch.randn(4, 8).to(torch_xla.device())).argmax(-1))
""",
        _MIGRATED
        + """from checkpoints import load

model, config = load("run-3")
model.to(torch_xla.device()).eval()
model.to(torch.bfloat16)
with torch.no_grad():
    print(model.encode(torch.randn(4, 8).to(torch_xla.device()).to(torch.bfloat16)).argmax(-1))
""",
        ("BFM150",),
    ),
    Example(
        "invalid: an EMA copy made before the model's cast",
        False,
        "import copy\n"
        + _HEADER
        + """
device = torch_xla.device()
model = torch.nn.Linear(8, 2).to(device)
ema = copy.deepcopy(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8).to(device)
model(x).sum().backward()
optimizer.step()
print(ema(x))
""",
        "import copy\n"
        + _MIGRATED
        + """
device = torch_xla.device()
model = torch.nn.Linear(8, 2).to(device)
ema = copy.deepcopy(model)
ema.to(torch.bfloat16)
model.to(torch.bfloat16)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8).to(device, dtype=torch.bfloat16)
model(x).sum().backward()
optimizer.step()
print(ema(x))
""",
        ("BFM150",),
    ),
    Example(
        "invalid: a teacher built on the device in a branch (the cast stays in the branch)",
        False,
        _HEADER
        + """

def main(distill):
    device = torch_xla.device()
    student = torch.nn.Linear(8, 2).to(device)
    if distill:
        teacher = torch.nn.Linear(8, 2, device=device)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    x = torch.randn(4, 8).to(device)
    loss = student(x).sum()
    if distill:
        loss = loss + (student(x) - teacher(x)).pow(2).mean()
    loss.backward()
    optimizer.step()
""",
        _MIGRATED
        + """

def main(distill):
    device = torch_xla.device()
    student = torch.nn.Linear(8, 2).to(device)
    if distill:
        teacher = torch.nn.Linear(8, 2, device=device)
        teacher.to(torch.bfloat16)
    student.to(torch.bfloat16)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    x = torch.randn(4, 8).to(device, dtype=torch.bfloat16)
    loss = student(x).sum()
    if distill:
        loss = loss + (student(x) - teacher(x)).pow(2).mean()
    loss.backward()
    optimizer.step()
""",
        ("BFM150",),
    ),
    Example(
        "invalid: amp keeps the teacher FP32 and autocasts its forward outside the training step",
        True,
        _HEADER
        + """
device = torch_xla.device()
teacher = torch.nn.Linear(8, 2).to(device).eval()
student = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
x = torch.randn(4, 8).to(device)
with torch.no_grad():
    target = teacher(x)
loss = torch.nn.functional.mse_loss(student(x), target)
loss.backward()
optimizer.step()
""",
        """import os
import torch
import torch_xla

device = torch_xla.device()
teacher = torch.nn.Linear(8, 2).to(device).eval()
student = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
x = torch.randn(4, 8).to(device)
with torch.no_grad():
    with torch.autocast("xla", dtype=torch.bfloat16):
        target = teacher(x)
with torch.autocast("xla", dtype=torch.bfloat16):
    loss = torch.nn.functional.mse_loss(student(x), target)
loss.backward()
optimizer.step()
""",
        ("BFM150",),
    ),
    Example(
        "invalid: a module of another file, run through a method of its own (no forward pre-hook there)",
        False,
        _HEADER
        + """from models import AutoEncoder

device = torch_xla.device()
autoencoder = AutoEncoder().to(device)
with torch.no_grad():
    codes = autoencoder.encode(torch.rand(4, 3, 8, 8).to(device))
""",
        _MIGRATED
        + """from models import AutoEncoder

device = torch_xla.device()
autoencoder = AutoEncoder().to(device)
autoencoder.to(torch.bfloat16)
with torch.no_grad():
    codes = autoencoder.encode(torch.rand(4, 3, 8, 8).to(device).to(torch.bfloat16))
""",
        ("BFM150",),
    ),
    Example(
        "invalid: amp, a module's own method runs its computation: under autocast like a forward",
        True,
        _HEADER
        + """from models import AutoEncoder

device = torch_xla.device()
autoencoder = AutoEncoder().to(device)
with torch.no_grad():
    codes = autoencoder.encode(torch.rand(4, 3, 8, 8).to(device))
""",
        """import os
import torch
import torch_xla
from models import AutoEncoder

device = torch_xla.device()
autoencoder = AutoEncoder().to(device)
with torch.no_grad():
    with torch.autocast("xla", dtype=torch.bfloat16):
        codes = autoencoder.encode(torch.rand(4, 3, 8, 8).to(device))
""",
        ("BFM150",),
    ),
    Example(
        "invalid: a module the script puts on the device as float64, XLA_DOWNCAST_BF16's FP32, is kept in that FP32",
        False,
        _DOWNCAST_HEADER
        + """
device = torch_xla.device()
encoder = torch.nn.Linear(8, 8).to(device, dtype=torch.float64)
head = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
with torch.no_grad():
    features = encoder(torch.randn(4, 8, dtype=torch.float64).to(device)).float()
loss = head(features).sum()
loss.backward()
optimizer.step()
""",
        _MIGRATED
        + """
device = torch_xla.device()
encoder = torch.nn.Linear(8, 8).to(device, dtype=torch.float32)
head = torch.nn.Linear(8, 2).to(device)
head.to(torch.bfloat16)
optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
with torch.no_grad():
    features = encoder(torch.randn(4, 8, dtype=torch.float32).to(device)).to(torch.bfloat16)
loss = head(features.to(torch.bfloat16)).sum()
loss.backward()
optimizer.step()
""",
        ("BFM153",),
    ),
    Example(
        "invalid: a module the script puts on the device as float32 was bf16 there, and is cast as any other",
        False,
        _HEADER
        + """
device = torch_xla.device()
encoder = torch.nn.Linear(8, 8).to(device, dtype=torch.float32)
head = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
with torch.no_grad():
    features = encoder(torch.randn(4, 8, device=device))
loss = head(features).sum()
loss.backward()
optimizer.step()
""",
        _MIGRATED
        + "\n"
        + snippets.BF16_INPUTS_SOURCE
        + """

device = torch_xla.device()
encoder = torch.nn.Linear(8, 8).to(device, dtype=torch.float32)
encoder.to(torch.bfloat16)
head = torch.nn.Linear(8, 2).to(device)
head.to(torch.bfloat16)
head.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
optimizer = torch.optim.SGD(head.parameters(), lr=0.1)
with torch.no_grad():
    features = encoder(torch.randn(4, 8, device=device).to(torch.bfloat16))
loss = head(features).sum()
loss.backward()
optimizer.step()
""",
        ("BFM150",),
    ),
    Example(
        "invalid: a teacher built by a function of another module that is handed the device: the switch is kept",
        False,
        _HEADER
        + """from zoo import load_teacher

device = torch_xla.device()
teacher = load_teacher("teacher.pt", device=device)
student = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
x = torch.randn(4, 8).to(device)
(student(x) - teacher(x)).pow(2).mean().backward()
optimizer.step()
""",
        _HEADER
        + """from zoo import load_teacher

device = torch_xla.device()
teacher = load_teacher("teacher.pt", device=device)
student = torch.nn.Linear(8, 2).to(device)
optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
x = torch.randn(4, 8).to(device)
(student(x) - teacher(x)).pow(2).mean().backward()
optimizer.step()
""",
        ("BFM151",),
    ),
    Example(
        "invalid: amp, an EMA copy whose forward runs in another module's function",
        True,
        "import copy\n"
        + _HEADER
        + """from metrics import evaluate

device = torch_xla.device()
model = torch.nn.Linear(8, 2).to(device)
ema = copy.deepcopy(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8).to(device)
loss = model(x).sum()
loss.backward()
optimizer.step()
evaluate(ema, x)
""",
        """import copy
import os
import torch
import torch_xla
from metrics import evaluate

device = torch_xla.device()
model = torch.nn.Linear(8, 2).to(device)
ema = copy.deepcopy(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(4, 8).to(device)
with torch.autocast("xla", dtype=torch.bfloat16):
    loss = model(x).sum()
loss.backward()
optimizer.step()
evaluate(ema, x)
""",
        ("BFM152",),
    ),
)
"""The rule's examples, run by ``tests/test_device_modules.py``."""
