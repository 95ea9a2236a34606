"""The records the project hands the codemod about the modules of a script's tree, and what they
need of libcst alone: a module's optimizer factories and optimizer classes (:class:`TreeModule`,
:class:`OptimizerFactory`, :class:`TreeFacts`), what a migrated script asks of a factory
(:class:`FactoryChange`), the optimizer class inside the codemod's own wrapping
(:func:`unwrap_optimizer_class`) and a script's condition in a factory's own names
(:func:`guard_through_call`).

A floor below the file's context (:mod:`.context` holds a :class:`TreeFacts`) and below the
modules that read the tree (:mod:`.tree_facts`) and plan the optimizer (:mod:`.optimizers`,
:mod:`.model_site`): it imports none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import libcst as cst
import libcst.matchers as m

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
    ``torch.optim.Optimizer`` subclasses it defines (``optimizer_classes``), and the buffers and
    parameters its classes register from data that may be float64 (``float64_state``: ``file:line:
    code`` each, :func:`.model_reach.float64_state_calls`)."""

    name: str
    path: str
    factories: tuple[OptimizerFactory, ...] = ()
    optimizer_classes: tuple[str, ...] = ()
    float64_state: tuple[str, ...] = ()


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

    @property
    def float64_state(self) -> str | None:
        """The first buffer or parameter a module of the tree registers from data that may be float64
        (``TreeModule.float64_state``), as ``file:line: code``; None when none does."""
        return next((state for module in self.modules for state in module.float64_state), None)

    def optimizer_class(self, qualified: set[str]) -> TreeModule | None:
        """The module defining the optimizer class one of the ``qualified`` names denotes, or None."""
        for module in self.modules:
            if any(f"{module.name}.{name}" in qualified for name in module.optimizer_classes):
                return module
        return None


@dataclass(frozen=True, order=True)
class ModelHandoff:
    """A function of a module of the tree that a migrated script hands its model to (``predict(model, x)``, with
    ``predict`` from ``helpers``): ``function`` as the script names it (``helpers.predict``; in the module's own
    migration, its name there: ``predict``), the model given at position ``index`` or by ``keyword``. The function
    runs the model's forward passes; in amp the module's migration puts them under autocast, as the script's own
    (:func:`.autocast.handoff_regions`)."""

    function: str
    index: int | None
    keyword: str | None

    def parameter(self, func: cst.FunctionDef) -> cst.Param | None:
        """The parameter of ``func`` the model comes in, or None when the signature has none such."""
        positional = [*func.params.posonly_params, *func.params.params]
        if self.index is not None:
            return positional[self.index] if self.index < len(positional) else None
        named = [*positional, *func.params.kwonly_params]
        return next((p for p in named if p.name.value == self.keyword), None)


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


def guard_through_call(guard: cst.BaseExpression | None, call: cst.Call, factory: OptimizerFactory) -> str | None:
    """``guard`` (the script's condition) in the names of ``factory``'s own parameters: every
    name it reads must be passed to the call as that very name (``build_optimizer(model, cfg)``
    with ``def build_optimizer(model, config)``: ``cfg["precision"] == "bf16"`` becomes
    ``config["precision"] == "bf16"``). None when there is no guard or it cannot be rewritten."""
    if guard is None:
        return None
    renames: dict[str, str] = {}
    for name in variables_read(guard):
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


def variables_read(expr: cst.BaseExpression) -> set[str]:
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
