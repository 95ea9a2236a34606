"""A tensor the model makes in ``forward`` and hands to a submodule of ``self``: an RNN's initial state.

Under the legacy switch ``h0 = torch.zeros(layers, b, hidden, device=x.device)`` was bf16 on the
device (torch_xla/csrc/dtype.cpp, ``MaybeDowncastToXlaDeviceType``). After ``model.to(torch.bfloat16)``
the submodule's parameters are bf16 (torch ``nn.Module._apply`` casts every submodule's parameters) and
``h0`` stays f32 unless it is given a dtype; handed to ``self.rnn(x, (h0, c0))`` it meets those
parameters. The dtype it takes is theirs, written in one of two forms:

* ``dtype=x.dtype``, the floating input beside the state, when the submodule is a recurrent torch.nn
  layer (``rules/model_code.toml`` ``[flow] state_layers``) and that input is a plain name: torch
  requires the input to have the parameters' dtype (torch/nn/modules/rnn.py ``check_input``) and makes
  its own default state in the input's dtype (``torch.zeros(..., dtype=input.dtype)``), so the name
  says the same dtype, the way torch's own code does (not for a name bound twice, nor in a file that
  packs sequences: see :func:`_input_beside`).
* ``dtype=next(self.rnn.parameters()).dtype`` otherwise: correct for any module that holds
  parameters (``model.to`` cast all of them to one dtype), where an attribute such as
  ``weight_ih_l0`` exists on an LSTM only. An input beside that is an expression (``self.embed(src)``)
  is not hoisted into a name: that would reorder the code.

A submodule the model's cast may not reach keeps the old outcome (the tensor leaves the function
unfollowed: BFM081, the switch is kept): one not assigned, everywhere in its class, a recurrent
torch.nn layer or a module class of the file that surely holds parameters (anything else is unknown:
``next(m.parameters())`` of a module without parameters raises), and one the file casts to f32 or f64
by name (``self.rnn.float()``, ``model.encoder.rnn.to(torch.float32)``: kept f32 on purpose, so its
parameters are not what the switch made bf16).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from .bindings import definitions, self_assigned
from .context import FileContext, findall
from .model_reach import module_classes

__all__ = ["Receiver", "casts_an_attribute_to_full_precision", "receiver"]

_STATE = "state"
_MODULE = "module"
_MAX_DEPTH = 4


@dataclass(frozen=True)
class Receiver:
    """The submodule call ``call`` (``self.<attr>(...)``) a tensor is handed to. ``parameters``: the
    code of a tensor with the dtype of the submodule's parameters (``next(self.rnn.parameters())``);
    ``beside``: the plain-name floating input beside the handed tensor, whose dtype is the
    parameters' (for a recurrent torch.nn layer only), else None."""

    call: cst.Call
    parameters: str
    beside: cst.Name | None


def receiver(ctx: FileContext, call: cst.Call, handed: cst.Arg) -> Receiver | None:
    """The submodule of ``self`` that ``call`` calls, when the model's cast surely reaches its
    parameters, with ``handed`` one of the call's arguments (the tensor itself or a tuple holding
    it); None for anything else (see the module docstring)."""
    func = call.func
    if isinstance(func, cst.Name):
        return _loop_receiver(ctx, call, func)
    if not m.matches(func, m.Attribute(value=m.Name("self"))):
        return None
    assert isinstance(func, cst.Attribute), "matched an Attribute"
    cls = ctx.enclosing(func, cst.ClassDef)
    if cls is None:
        return None
    attr = func.attr.value
    values = self_assigned(ctx, cls, attr)
    kinds = {_module_kind(ctx, value, 0) for value in values}
    if not values or None in kinds or _cast_to_full_precision(ctx, attr):
        return None
    beside = _input_beside(ctx, call, handed) if kinds == {_STATE} else None
    return Receiver(call, f"next(self.{attr}.parameters())", beside)


_CONTAINERS = frozenset({"torch.nn.ModuleList", "torch.nn.modules.container.ModuleList"})


def _loop_receiver(ctx: FileContext, call: cst.Call, func: cst.Name) -> Receiver | None:
    """``blk(x, mask)`` in ``for blk in self.blocks:``, where every assignment of ``self.blocks``
    in the class is a ``torch.nn.ModuleList`` of module classes of the file that hold parameters
    (``nn.ModuleList(Block(d) for _ in range(n))``, a list of them): the transformer's stack of
    blocks. Its parameters' dtype is ``next(self.blocks.parameters())``'s (``model.to`` casts every
    block); a loop over anything else is unknown (None)."""
    scope = ctx.scopes.get(func)
    bindings = list(scope[func.value]) if scope is not None else []
    node = getattr(bindings[0], "node", None) if len(bindings) == 1 else None  # a builtin's binding has none
    loop = ctx.parent(node) if node is not None else None
    if not (isinstance(loop, cst.For) and loop.target is node):
        return None
    over = loop.iter
    cls = ctx.enclosing(call, cst.ClassDef)
    if cls is None or not m.matches(over, m.Attribute(value=m.Name("self"))):
        return None
    assert isinstance(over, cst.Attribute), "matched an Attribute"
    attr = over.attr.value
    values = self_assigned(ctx, cls, attr)
    elements = [e for value in values for e in _container_elements(ctx, value)]
    if not values or len(elements) < len(values) or _cast_to_full_precision(ctx, attr):
        return None
    if any(_module_kind(ctx, element, 0) != _MODULE for element in elements):
        return None
    return Receiver(call, f"next(self.{attr}.parameters())", None)


def _container_elements(ctx: FileContext, value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The modules a ``torch.nn.ModuleList(...)`` call is built from: a comprehension's or a
    generator's element, or a list's or a tuple's elements; empty for anything else."""
    if not (isinstance(value, cst.Call) and ctx.qualified_names(value.func) & _CONTAINERS and len(value.args) == 1):
        return []
    built = value.args[0].value
    if isinstance(built, (cst.ListComp, cst.GeneratorExp)):
        return [built.elt]
    if isinstance(built, (cst.List, cst.Tuple)) and not any(isinstance(e, cst.StarredElement) for e in built.elements):
        return [e.value for e in built.elements]
    return []


def _module_kind(ctx: FileContext, value: cst.BaseExpression, depth: int) -> str | None:
    """``"state"`` for a recurrent torch.nn layer, ``"module"`` for a torch.nn attention layer
    (``parameter_layers``) or a module class of the file that holds parameters, None for anything else
    (unknown)."""
    if not isinstance(value, cst.Call):
        return None
    rules = ctx.rules.model_code
    names = ctx.qualified_names(value.func)
    if names & rules.state_layers:
        return _STATE
    if names & rules.parameter_layers:
        return _MODULE  # an attention layer: its mask meets its parameters' dtype
    modules = ctx.memo(("module classes",), lambda: module_classes(ctx)[0])
    for node in definitions(ctx, value.func):
        if isinstance(node, cst.ClassDef) and any(node is c for c in modules) and _holds_parameters(ctx, node, depth):
            return _MODULE
    return None


def _holds_parameters(ctx: FileContext, cls: cst.ClassDef, depth: int) -> bool:
    """Whether ``cls`` surely has a parameter: it assigns ``self.<x>`` a ``torch.nn.Parameter``, a
    recurrent layer, a matmul or embedding layer (they always hold a weight), or a module class of
    the file that has one; or it calls ``self.register_parameter``."""
    if depth > _MAX_DEPTH:
        return False
    rules = ctx.rules.model_code
    always = (
        rules.state_layers
        | rules.parameter_layers
        | {name for name, kind in rules.weighted_layers.items() if kind != "elementwise"}
    )
    if findall(cls, m.Call(func=m.Attribute(value=m.Name("self"), attr=m.Name("register_parameter"))), ctx.index):
        return True
    for assign in findall(cls, m.Assign(), ctx.index):
        assert isinstance(assign, cst.Assign), "found an Assign"
        if not any(m.matches(t.target, m.Attribute(value=m.Name("self"))) for t in assign.targets):
            continue
        value = assign.value
        if not isinstance(value, cst.Call):
            continue
        names = ctx.qualified_names(value.func)
        if names & (rules.registers | always) or _module_kind(ctx, value, depth + 1) is not None:
            return True
    return False


def casts_an_attribute_to_full_precision(ctx: FileContext) -> bool:
    """Whether the file casts anything named by an attribute (``self.rnn``, ``model.encoder.rnn``, a tensor
    attribute too) to f32 or f64 by name: a module it may keep in full precision on purpose, whose
    parameters are then not what the switch made bf16."""
    return _cast_to_full_precision(ctx, None)


def _cast_to_full_precision(ctx: FileContext, attr: str | None) -> bool:
    """Whether the file casts a module named ``attr`` (``self.rnn``, ``model.encoder.rnn``; None: any
    attribute) to f32 or f64 anywhere: ``.float()``, ``.double()``, ``.to(torch.float32)``,
    ``.type(torch.float64)``."""
    rules = ctx.rules.model_code
    full = rules.f32_dtypes | rules.f64_dtypes
    for call in ctx.memo(
        ("attribute method calls",), lambda: findall(ctx.module, m.Call(func=m.Attribute()), ctx.index)
    ):
        assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute), "matched a method call"
        receiver_expr = call.func.value
        if not (isinstance(receiver_expr, cst.Attribute) and attr in (None, receiver_expr.attr.value)):
            continue
        method = call.func.attr.value
        if method in rules.upcast_methods and not call.args:
            return True
        if method in ("to", "type") and any(
            (a.keyword is None or a.keyword.value == "dtype") and ctx.qualified_names(a.value) & full for a in call.args
        ):
            return True
    return False


def _input_beside(ctx: FileContext, call: cst.Call, handed: cst.Arg) -> cst.Name | None:
    """The layer's input (its first positional argument, or ``input=``) when it is a plain name, not
    the handed argument itself, bound once in its scope (``x = self.embed(x)`` rebinds token ids: at
    the line that makes the state ``x`` may be the ids), and the file packs no sequence (a
    ``PackedSequence`` input has no ``.dtype``: ``rules/model_code.toml`` ``packed_sequences``)."""
    positional = [a for a in call.args if a.keyword is None]
    keyword = [a for a in call.args if a.keyword is not None and a.keyword.value == "input"]
    first = positional[0] if positional else (keyword[0] if keyword else None)
    if first is None or first is handed or not isinstance(first.value, cst.Name):
        return None
    name = first.value
    scope = ctx.scopes.get(name)
    if scope is None or len(scope.assignments[name.value]) != 1 or _packs_sequences(ctx):
        return None
    return name


def _packs_sequences(ctx: FileContext) -> bool:
    """Whether the file names one of ``rules/model_code.toml`` ``packed_sequences``."""
    packed = ctx.rules.model_code.packed_sequences

    def compute() -> bool:
        return any(
            ctx.qualified_names(node) & packed for node in findall(ctx.module, m.Name() | m.Attribute(), ctx.index)
        )

    return bool(ctx.memo(("packs sequences",), compute))
