"""The tensors the script's own code makes on the device, outside the model: bf16, as under the switch.

**What.** A floating tensor factory (``torch.zeros``, ``torch.ones``, ``torch.full(..., 0.5)``,
``torch.randn``, ``torch.tensor(0.0)``...: ``float_factories`` of ``rules/model_code.toml``) with
no ``dtype=`` whose tensor is made on the XLA device (``device=`` a device), in code the audit of
the model's code does not read (:mod:`.model_code`: the model's and its optimizers' classes, the
loss the step applies, the step's own tensors on the way to the loss): an evaluation loop's
accumulator (``total_loss = torch.zeros((), device=device)``), a metric's counter, a scale or a
noise tensor the training loop makes, the same in a function of a tree module the script imports;
and a fresh floating tensor made from an integer or boolean one there (``(pred == y).float().mean()``,
an accuracy), where the code shows it computed on the device.

**Why.** Under ``XLA_USE_BF16`` / ``XLA_DOWNCAST_BF16`` every f32 tensor on the XLA device was bf16
(torch-xla ``torch_xla/csrc/dtype.cpp``, ``MaybeDowncastToXlaDeviceType``), the ones the script
makes for itself included. ``model.to(torch.bfloat16)`` casts the model's parameters and buffers
only: after the migration such a tensor is real f32, and by type promotion what it meets is f32 too
(an accumulator summing bf16 losses sums in f32, a scale multiplying the model's output makes the
product f32). verify's dtype trace names each such line (BFM200: f32 meets bf16).

**Fix.** ``dtype=torch.bfloat16`` on the factory, ``.to(torch.bfloat16)`` for the ``.float()``
(under the condition the switch was set under: ``torch.bfloat16 if <condition> else None``): the
tensor the legacy run made. Where that condition cannot be evaluated (set in ``main``, the factory
in another function) the switch is kept and the line reported: left f32 the tensor would compute in
f32 where the legacy run computed in bf16. The step's loss accumulator is the mode's own
(``fp32-loss-accumulator``: FP32, Neuron's migration guide) and the model's code the audit's; they
are planned before and left to them. A floating host tensor moved to the device (``w.to(device)``
of ``w = torch.rand(8)``: a loss weight, a class weight, a schedule) gets ``dtype=torch.bfloat16``
in the move, as the switch made it there; the model's inputs and the loss's targets are the input
casts' (:mod:`.inputs`). Reported as BFM154.

A device attribute of a class (``self.device = xm.xla_device()`` in ``__init__``, read as
``self.device`` in ``evaluate``) is the XLA device when every assignment of it in the class is one.

A fresh upcast made from the output of a model on the device (``pred = model(x).argmax(-1)``,
``(pred == y).float()``) is made on the device too (``model_calls``). A name is read through the
binding that reaches it in straight-line code (``y = host; x, y = x.to(d), y.to(d)``, then the use:
the device's), tuple assignments included, and a function's parameter through what every call of
the function in the file passes there (``F.one_hot(labels, C).float()`` in ``soft_targets(labels)``,
called with the device's labels; found by verify's trace on fixtures/contract/onehot_targets).
Not yet: ``.double()`` of an integer tensor on the device (bf16 under ``XLA_USE_BF16``), which stays
f64 after the migration (the trace names it).

**Decided at run time.** A floating factory made on a device the code does not tell
(``device=args.device``, a ``self.device`` the class also sets from elsewhere), and a fresh upcast
of a tensor the code shows neither on the device nor on the host (``(a <= 0).float()`` of
activations a forward hook appends to a dict of lists: found by a hunt, whose verify trace named
the line), go through ``bf16_on_xla`` (:mod:`.snippets`), which casts a floating tensor on an XLA
device to bf16 when the line runs and leaves any other: the switch's own rule, applied where the
tensor is (BFM154 ``anywhere``). A dataset's code (a class with ``__getitem__`` or ``__iter__``)
runs on the host and is left. The same for an upcast of a floating tensor whose result is computed
with where it is (``v.float().norm()`` of tensors the code does not place: an EMA's norm, found by
writing one, verify's trace BFM201): on the device the switch made the upcast's f32 bf16. An upcast
copied to the host (``v.float().cpu()``) is float32 there, as the legacy run's, and is left.

**A dtype the code does not tell.** A tensor brought to the device whose dtype the code does not
show (``torch.tensor(values, device=d)`` of values of unknown type, ``torch.from_numpy(x).to(d)``,
``torch.tensor(stats["mean"]).to(d)``) may be floating (then the switch made it bf16 there, f64
included) or integer (then it stayed integer): where the script computes with it on the device (an
operand of arithmetic, an argument of a torch math function) it goes through ``floating_to_bf16``,
the input casts' run-time cast, which decides by the tensor's dtype (BFM154 ``runtime``). Where it is
only compared, indexed or handed to the model or the loss, the input casts decide. A read at the top
of a loop of the tensor its body moves at the end (``baseline = torch.as_tensor(base_np, device=d)``
read by the next pass's loss) is a read of the move too (:func:`_loop_carried_reads`). Under
``XLA_DOWNCAST_BF16`` a float64 one was float32 on the device, not bf16: there the run-time cast is
``downcast_floating`` (float64 to float32, float32 to bf16), as the switch held it (``floating_to_bf16``
made a hunt's float64 table bf16, its standardised columns 9 distinct values of 256: BFM154
``runtime_downcast``; a loss target of unknown dtype likewise, BFM022 ``loss_target_downcast``).
Found by verify's trace on a REINFORCE script whose NumPy returns made the loss float64, and on a
regression script standardising its NumPy batches on the device in f32. The same for a batch a
torch-xla device loader hands over (``for x, y in MpDeviceLoader(...)``) where the loop computes
with it (``(x - mean) / std``), and ``.to(torch.bfloat16)`` for the upcast of such a batch or of a
tensor just moved there (``images.to(device).float() / 255``): under the switch the upcast's f32
was bf16 on the device.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Scope

from . import snippets
from .apply import EditPlan
from .bindings import (
    assigned_value,
    assigned_values,
    bound_by_import,
    definitions,
    dtype_names,
    plain_instance,
    python_float,
    python_number,
    self_assigned,
    unpacked_value,
)
from .conditions import choose, evaluable_like
from .context import FileContext, findall
from .device_use import DEVICE_FUNCTIONS, device_names
from .dtype_flow import FLOAT, INT, UNKNOWN, DtypeFlow
from .leaves import becomes_optimized_leaf
from .model_code import cast_after, casts_after, factory_dtype_class, is_factory
from .model_reach import Reached
from .optimizers import add_keywords
from .outcome import Edge, NotExamined, Refusal
from .unit_examples import HEADER, Example

__all__ = [
    "EXAMPLES",
    "on_device",
    "DeviceTensors",
    "find_device_tensors",
    "float64_on_device",
    "plan_device_tensors",
    "refuse_device_tensors",
    "unknown_arrivals",
]

_BF16 = "torch.bfloat16"
_UPCASTS = frozenset({"float", "to", "type"})  # `x.type(torch.float32)` casts as `.to` does
_F32_NAMES = frozenset({"torch.float32", "torch.float"})
_F64_NAMES = frozenset({"torch.float64", "torch.double"})
_HOST_METHODS = ("cpu", "numpy", "item", "tolist")
_MAX_DEPTH = 6
_MODULE_METHODS = frozenset({"parameters", "named_parameters", "state_dict", "train", "eval", "modules", "buffers"})
_TENSOR_MATH = frozenset(
    f"torch.{name}"
    for name in ("stack", "cat", "matmul", "mm", "bmm", "einsum", "where", "clamp", "exp", "log", "sqrt", "mul", "add")
)
"""The torch functions that compute with a tensor they are handed (a loss target handed to a
criterion is the input casts')."""
_SHAPE_FACTORIES = frozenset(
    f"torch.{name}" for name in ("zeros", "ones", "full", "empty", "rand", "randn", "randint", "arange", "eye")
)
"""Factories made from a shape or bounds alone: on the host unless given a device (``torch.tensor``,
``torch.bernoulli`` of a tensor follow their argument's device)."""
_DEVICE_WORD = "device"
"""A parameter whose name holds this word is taken as the device the function is handed: in a
script that runs under the switch, the XLA device (``def evaluate(model, loader, device)``)."""
_DEVICE_ABBREVIATIONS = frozenset({"dev"})
"""Parameter names taken as the device as :data:`_DEVICE_WORD`'s are (``def batches(n, dev)``: a hunt's generator of
device batches in a sibling module stayed f32, its on-device augmentation computing in f32)."""


@dataclass(frozen=True)
class DeviceTensors:
    """What :func:`find_device_tensors` found: the tensors to make bf16 (``found``: factories, fresh
    upcasts, moves, in the file's order) and the floating ones made where the code does not tell
    the device (``anywhere``: a factory given ``device=args.device``, a fresh upcast of a tensor
    the code does not show on the device or on the host), bf16 only where they are on the XLA
    device, which ``bf16_on_xla`` decides at run time."""

    found: list[cst.BaseExpression] = field(default_factory=list)
    anywhere: list[cst.BaseExpression] = field(default_factory=list)
    promoted: set[int] = field(default_factory=set)
    """Ids of the ``found`` that type promotion makes floating from integer tensors (:func:`_fresh_promotions`):
    cast after them."""
    checkpoint: set[int] = field(default_factory=set)
    """Ids of the ``found`` that read a checkpoint loaded onto the device (:func:`_checkpoint_reads`): cast at
    run time, reported as such."""
    f64_to_f32: bool = False
    """The switch made float64 float32 on the device, not bf16 (XLA_DOWNCAST_BF16): a tensor of a dtype
    the code does not tell goes through ``downcast_floating``, not ``floating_to_bf16``."""
    no_input_casts: bool = False
    """The file has no model of its own whose input casts would cast a tensor handed to a call (a module of the
    tree imported under the switch: its training loop computes a loss with ``y.to(device)``): such a tensor of
    a dtype the code does not tell is cast at run time where it is moved."""


def find_device_tensors(
    ctx: FileContext,
    reached: Reached | None,
    decided: frozenset[int] = frozenset(),
    model_calls: frozenset[int] = frozenset(),
    doubles: bool = False,
    no_input_casts: bool = False,
) -> DeviceTensors:
    """The script's own device tensors (factories, fresh upcasts, moves: see the module docstring)
    outside the code ``reached`` (:mod:`.model_reach`, which :mod:`.model_code` audits; None: no
    model code was read, and every class of the file is left out) and other than the ``decided``
    ones (ids: the step's tensors the audit followed to the loss, ``ModelCodeAudit.decided``), in
    the file's order. ``model_calls``: ids of the calls of the models on the device (their output
    is a device tensor: ``(logits.argmax(-1) == y).float()`` of ``logits = model(x)`` is made there).
    ``doubles``: the switch made f64 bf16 on the device too (``f64_becomes = "bf16"``: XLA_USE_BF16),
    so a fresh ``.double()`` is one of them; under XLA_DOWNCAST_BF16 it was f32 (the double idiom's).
    ``no_input_casts``: :attr:`DeviceTensors.no_input_casts`."""
    # no audit read the model's code: every class is left to it (a model's, an optimizer's)
    holders: list[cst.CSTNode] = list(_audited_nodes(reached) if reached is not None else ctx.nodes(cst.ClassDef))
    classes = frozenset(id(holder) for holder in holders)
    # the step's functions outside the audited classes: only what is floating on the device for sure
    step_functions = _step_functions(ctx, reached, classes)
    steps = frozenset(id(func) for func in step_functions)
    model_helpers = [f for f in (reached.runtime if reached is not None else ()) if id(f) not in steps]
    skip = classes | frozenset(id(func) for func in model_helpers)
    flow = ctx.memo(("device tensors flow",), lambda: DtypeFlow(ctx))
    data = frozenset(id(cls) for cls in ctx.nodes(cst.ClassDef) if _a_data_class(cls))
    out = DeviceTensors(f64_to_f32=not doubles, no_input_casts=no_input_casts)
    for call in ctx.nodes(cst.Call):
        if id(call) not in decided and _inside(ctx, call, skip) and _data_arrival(ctx, flow, call):
            out.anywhere.append(call)  # NumPy data moved to the device in the model's code: decided at run time
            continue
        if id(call) in decided or _inside(ctx, call, skip):
            continue
        fresh = _fresh_upcast(ctx, flow, call, doubles) or (_upcasts(ctx, call, doubles) and _computed_on(ctx, call))
        on_device = fresh and _on_device(ctx, _receiver(call), 0, model_calls)
        if (
            fresh
            and not on_device
            and not _inside(ctx, call, data)
            and not _on_host(ctx, _receiver(call))
            and not _upcast_of_an_arrival(ctx, flow, call)
        ):
            out.anywhere.append(call)  # `(acts <= 0).float()` of what a hook collected: decided at run time
            continue
        if _explicit_factory(ctx, call, doubles) is not None:
            out.found.append(call)  # `torch.tensor(ts, dtype=torch.float32, device=dev)`: bf16 under the switch
            continue
        if _inside(ctx, call, steps):
            device = _device_argument(ctx, call)
            if (
                (_floating_factory(ctx, call) and device is not None and _is_device(ctx, device, 0))
                or on_device
                or _an_optimized_leaf(ctx, flow, call)
            ):
                out.found.append(call)
            elif _floating_factory(ctx, call) and device is not None and not _is_host_device(ctx, device):
                out.anywhere.append(call)
            continue
        if _floating_factory(ctx, call):
            device = _device_argument(ctx, call)
            if device is not None and _is_device(ctx, device, 0):
                out.found.append(call)
            elif device is not None and not _is_host_device(ctx, device):
                out.anywhere.append(call)
        elif (
            on_device
            or (_floating_transfer(ctx, flow, call) and (doubles or not _named_f64(ctx, call)))
            or _upcast_of_an_arrival(ctx, flow, call)
        ):
            out.found.append(call)
        elif _unknown_arrival(ctx, flow, call) and (
            _uses_no_input_cast_follows(ctx, call, no_input_casts) or _returned(ctx, call)
        ):
            # else the input casts' (a model input, a loss target) or a callee's; one also computed
            # with where no input cast reaches is decided once the input casts are planned; one a
            # function hands back is cast where it arrives (its uses are the callers')
            out.found.append(call)
    # `{n: p.detach().float() for n, p in model.named_parameters()}`: an EMA's shadow of the weights, bf16 on the
    # device under the switch; its f32 copy made the EMA f32 with 0 left to do (a hunt's)
    taken = {id(c) for c in out.anywhere}
    out.anywhere.extend(
        c
        for c in ctx.nodes(cst.Call)
        if id(c) not in taken
        and not _inside(ctx, c, skip | decided)
        and _upcasts(ctx, c, doubles)
        and _of_the_weights(ctx, _receiver(c))
    )
    checkpoint_reads = _checkpoint_reads(ctx, skip | decided)
    out.checkpoint.update(map(id, checkpoint_reads))
    out.found.extend(_batch_reads(ctx, skip) + checkpoint_reads)
    out.found.extend(
        division
        for division in ctx.nodes(cst.BinaryOperation)
        if not _inside(ctx, division, skip) and _fresh_division(ctx, flow, division, model_calls)
    )
    for promotion in _fresh_promotions(ctx, flow, skip | decided, model_calls):
        out.found.append(promotion)
        out.promoted.add(id(promotion))
    out.found.sort(key=ctx.pos)
    return out


def _fresh_division(
    ctx: FileContext, flow: DtypeFlow, division: cst.BinaryOperation, model_calls: frozenset[int]
) -> bool:
    """A true division of an integer or boolean tensor on the device by a number, another integer or
    anything not known to be a floating tensor (``(pred == y).sum() / y.numel()``, an accuracy;
    ``torch.arange(W, device=d) / (W - 1)`` of a parameter ``W``): PyTorch's type promotion makes it a fresh float32
    tensor, bf16 under the switch (found by verify's trace on a hunt's script: ``y / 10.0`` of integer
    labels)."""
    if not isinstance(division.operator, cst.Divide) or flow.infer(division.left) != INT:
        return False
    right = division.right
    # whatever it is divided by, the result is floating; only a floating tensor decides its dtype (bf16 once
    # migrated): a size held in a parameter (`torch.arange(W, device=d) / (W - 1)` in a hunt's helper) is none
    numeric = isinstance(right, (cst.Integer, cst.Float)) or flow.infer(right) != FLOAT or python_float(ctx, right)
    counted = isinstance(right, cst.Call) and (
        m.matches(right.func, m.Name("len") | m.Attribute(attr=m.OneOf(m.Name("numel"), m.Name("size"))))
    )
    return (numeric or counted) and _on_device(ctx, division.left, 0, model_calls)


_FLOAT_MATH = frozenset({"sin", "cos", "tan", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt"})
_FLOAT_MATH |= frozenset({"rsqrt", "tanh", "sigmoid", "reciprocal", "erf"})
"""Unary math whose result is floating for an integer input (torch 2.9 docs, "Type Promotion": an integer
tensor's ``sqrt`` is float32, the default dtype), as a tensor method or a ``torch.<name>`` function."""
_PROMOTING = (cst.Add, cst.Subtract, cst.Multiply, cst.Power, cst.Modulo)
_TRUE_DIVISIONS = frozenset({"torch.true_divide", "torch.div", "torch.divide"})
"""The functions of ``/`` (torch 2.9 docs, torch.div: a true division without ``rounding_mode``)."""


def _fresh_promotions(
    ctx: FileContext, flow: DtypeFlow, skip: frozenset[int], model_calls: frozenset[int]
) -> list[cst.BaseExpression]:
    """Floating tensors PyTorch's type promotion makes from integer ones on the device, other than a true
    division's (:func:`_fresh_division`): an integer tensor with a Python float in arithmetic (``2.0 **
    torch.arange(n, device=d)``, ``torch.arange(n, device=d) * 0.25``) or under unary float math
    (``.sqrt()``, ``torch.exp(steps)``). Each is a fresh float32 tensor (torch 2.9 docs, "Type Promotion"),
    bf16 under the switch (a hunt's positional encoding and ramp stayed f32 with 0 left to do; verify's
    trace named them). Outside ``skip`` (ids of the classes and functions other parts decide)."""
    found: list[cst.BaseExpression] = []
    for op in ctx.nodes(cst.BinaryOperation):
        if not isinstance(op.operator, _PROMOTING) or _inside(ctx, op, skip):
            continue
        for tensor, number in ((op.left, op.right), (op.right, op.left)):
            if python_float(ctx, number) and flow.infer(tensor) == INT and _on_device(ctx, tensor, 0, model_calls):
                found.append(op)
                break
    for call in ctx.nodes(cst.Call):
        func = call.func
        if (
            _scalar_where(ctx, call)
            and not _inside(ctx, call, skip)
            and _on_device(ctx, call.args[0].value, 0, model_calls)
        ):
            found.append(call)
            continue
        names = ctx.qualified_names(func)
        if isinstance(func, cst.Attribute) and func.attr.value in _FLOAT_MATH and not call.args:
            operand: cst.BaseExpression | None = func.value
        elif call.args and any(n in {f"torch.{name}" for name in _FLOAT_MATH} for n in names):
            operand = call.args[0].value if len(call.args) == 1 else None
        elif names & _TRUE_DIVISIONS and not any(
            a.keyword is not None and a.keyword.value == "rounding_mode" for a in call.args
        ):
            operand = call.args[0].value if call.args and call.args[0].keyword is None else None
        else:
            operand = None
        if operand is None or _inside(ctx, call, skip):
            continue
        if flow.infer(operand) == INT and _on_device(ctx, operand, 0, model_calls):
            found.append(call)
    return found


def _scalar_where(ctx: FileContext, call: cst.Call) -> bool:
    """``torch.where(cond, 0.2, 1.0)``: both values Python numbers, one a float, so the result is a fresh float32
    tensor on the condition's device (torch 2.9 docs, torch.where: scalars take the default dtype), bf16 under
    the switch (a hunt's per-class sample weights made the loss f32, 0 left to do)."""
    if len(call.args) != 3 or any(a.keyword is not None for a in call.args):
        return False
    if "torch.where" not in ctx.qualified_names(call.func):
        return False
    values = [call.args[1].value, call.args[2].value]
    return all(python_number(ctx, v) for v in values) and any(python_float(ctx, v) for v in values)


def unknown_arrivals(ctx: FileContext, model_calls: frozenset[int] = frozenset()) -> list[cst.BaseExpression]:
    """The tensors of a dtype the code does not tell that the script's own code (outside its
    classes) brings to the XLA device (``torch.from_numpy(y).to(device)``, ``torch.tensor(values,
    device=device)``; never a module), in the file's order, but those only handed to a model (calls
    whose ids are ``model_calls``: its input hook decides): under the switch a float64 one was low
    precision there, which amp's FP32 model must be told (:mod:`.changes.float32_inputs`)."""
    classes = frozenset(id(cls) for cls in ctx.nodes(cst.ClassDef))
    flow = ctx.memo(("device tensors flow",), lambda: DtypeFlow(ctx))
    found = []
    for call in ctx.nodes(cst.Call):
        if _inside(ctx, call, classes) and _data_arrival(ctx, flow, call):
            found.append(call)  # NumPy data moved to the device in a class's code (`forward`)
            continue
        if _kept_for_amp(ctx, call) and _unknown_arrival(ctx, flow, call):
            # `self.sqrt_ac = torch.tensor(np.sqrt(ac), device=d)` of a helper object, a schedule's dict value, a
            # comprehension's item: their reads are the object's and the container's, which the flow does not
            # follow (a hunt's diffusion loss ran in float64)
            found.append(call)
            continue
        if (
            not _unknown_arrival(ctx, flow, call)
            or _inside(ctx, call, classes)
            or isinstance(ctx.parent(call), cst.Expr)
        ):
            continue  # `best.to(device)` as a statement: a module moved in place
        made = _moved_to_the_device(ctx, call) or call
        if isinstance(made, cst.Call) and not _data_of_its_argument(ctx, made):
            continue  # `torch.arange(n, device=device)`: integer or float32, never float64
        uses = _uses(ctx, call)
        if any(_used_as_a_module(ctx, use) for use in uses):
            continue  # a module, which the model's precision decides
        reads = uses[1:] if len(uses) > 1 else uses
        if any(_computes_in_amp(ctx, read, model_calls) for read in reads):
            found.append(call)
    return found + _loader_reads_in_amp(ctx, classes, model_calls)


_LOADS = frozenset({"torch.load"})
"""torch's deserialiser, whose ``map_location`` names the device the checkpoint's tensors are loaded onto
(torch 2.9 docs, "torch.load")."""
_STATE_LOADS = frozenset({"load_state_dict"})
"""The methods that copy a state dict into a module's parameters and buffers, or into an optimizer's state, each
in the dtype of what it copies into (torch's ``Module.load_state_dict`` copies into the existing tensors;
``Optimizer.load_state_dict`` casts floating state to its parameter's dtype: torch/optim/optimizer.py)."""


def _checkpoint_reads(ctx: FileContext, skip: frozenset[int]) -> list[cst.BaseExpression]:
    """The reads of a checkpoint ``torch.load(path, map_location=<the XLA device>)`` loads onto the device
    that compute with it where no input cast reaches (:func:`_computes_uncast`): its entries
    (``ckpt["mean"]`` of ``z = (x - ckpt["mean"]) / ckpt["std"]``, directly or through the names they are
    assigned to), or the checkpoint itself when it is a tensor computed with (``stats = torch.load(...)``;
    ``x - stats``). Under the switch a floating one was bf16 there: each goes through the run-time cast
    (found by a hunt: a classifier's normalisation statistics left f32, every batch normalised in f32).
    An entry handed to ``load_state_dict`` is left to the module or optimizer it is copied into (a master
    weights optimizer keeps its FP32 copies)."""
    out: list[cst.BaseExpression] = []
    for call in ctx.nodes(cst.Call):
        short = call.func.attr if isinstance(call.func, cst.Attribute) else call.func
        if not (isinstance(short, cst.Name) and short.value == "load"):
            continue  # the names first: a qualified name is asked only of a call named `load`
        if not ctx.qualified_names(call.func) & _LOADS or _inside(ctx, call, skip):
            continue
        location = next(
            (a.value for a in call.args if a.keyword is not None and a.keyword.value == "map_location"), None
        )
        positional = [a.value for a in call.args if a.keyword is None]
        location = location if location is not None or len(positional) < 2 else positional[1]
        if location is None or not _is_device(ctx, location, 0):
            continue
        entries: list[cst.BaseExpression] = []
        whole = False
        for use in _uses(ctx, call):
            parent = ctx.parent(use)
            if isinstance(parent, cst.Subscript) and parent.value is use:
                entries.append(parent)
            elif isinstance(parent, cst.Attribute) and parent.value is use and parent.attr.value == "get":
                got = ctx.parent(parent)
                if isinstance(got, cst.Call) and got.func is parent:
                    entries.append(got)
            elif use is not call and _computes_uncast(ctx, use):
                whole = True
        if whole:
            out.append(call)
            continue
        for entry in entries:
            arg = ctx.parent(entry)
            holder = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
            if isinstance(holder, cst.Call) and _method_name(holder) in _STATE_LOADS:
                continue
            if _computes_uncast(ctx, entry) or any(
                _computes_uncast(ctx, read) for name in _assigned_names(ctx, entry) for read in _reads(ctx, name)
            ):
                out.append(entry)
    return out


def _method_name(call: cst.Call) -> str | None:
    """``m`` of ``x.m(...)``, else None."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def _loader_reads_in_amp(
    ctx: FileContext, skip: frozenset[int], model_calls: frozenset[int]
) -> list[cst.BaseExpression]:
    """The reads of a torch-xla device loader's batch (``for x, y in MpDeviceLoader(...)``) that compute where
    amp's FP32 code would meet a float64 one (:func:`_computes_in_amp`: a loss target, arithmetic): a NumPy
    float64 label moved by the loader made the loss float64 under autocast, where its ``.to(device)`` twin was
    made float32 (a hunt's; verify named it, BFM204). Its reads as a model input are the hook's."""
    found: list[cst.BaseExpression] = []
    for loop, _name, bindings in _loader_batches(ctx, skip):
        if len(bindings) != 1:
            continue  # rebound in the loop (`y = y.float()`): a read may be the new binding's
        for access in getattr(bindings[0], "references", ()):
            read = access.node
            if _inside(ctx, read, frozenset({id(loop.body)})) and _computes_in_amp(ctx, read, model_calls):
                found.append(read)
    return found


def _loader_batches(ctx: FileContext, skip: frozenset[int]) -> Iterator[tuple[cst.For, cst.Name, list[Any]]]:
    """Each name a torch-xla device loader's loop outside ``skip`` binds its batch to (``for x, y in
    MpDeviceLoader(...)``), with its loop and the bindings of the name in its scope (flow ignored)."""
    for loop in ctx.nodes(cst.For):
        if _inside(ctx, loop, skip) or not _over_a_device_loader(ctx, loop.iter):
            continue
        for name in findall(_batch_target(ctx, loop), m.Name()):
            assert isinstance(name, cst.Name), "findall of m.Name()"
            scope = ctx.scopes.get(name)
            yield loop, name, list(scope[name.value]) if scope is not None else []


def _computes_in_amp(ctx: FileContext, read: cst.CSTNode, model_calls: frozenset[int]) -> bool:
    """Whether ``read`` computes with the tensor where amp's FP32 code would meet a float64 one: an
    operand of arithmetic, or an argument of a call that is neither a model's (its input hook
    decides) nor a loss over class indices; a comparison, a move (``.to``) or a question of its shape
    computes nothing floating. Read through an index or a view first (``ret[idx] - v[idx]``,
    ``ret.view(-1) * w``: a rollout buffer's minibatch made a PPO loss float64, bench/unseen/hunt22
    amp_np_zeros_f64)."""
    for _ in range(4):
        up = ctx.parent(read)
        if isinstance(up, cst.Subscript) and up.value is read:
            read = up
        elif isinstance(up, cst.Attribute) and up.value is read and up.attr.value in _VIEW_PROPERTIES:
            read = up  # `cent_t.T` of NumPy centroids in a matmul with the model's output (a hunt's k-means)
        elif (
            isinstance(up, cst.Attribute)
            and up.value is read
            and up.attr.value in _VIEWS
            and isinstance(call := ctx.parent(up), cst.Call)
        ):
            read = call
        else:
            break
    parent = ctx.parent(read)
    if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    holder = _argument_of(ctx, read)
    return holder is not None and holder not in model_calls and not _class_index_target(ctx, read)


_VIEW_PROPERTIES = frozenset({"T", "mT", "H", "mH"})
"""Tensor properties that are views of it (torch 2.9 docs, "Tensor.T")."""
"""Tensor methods that re-view a tensor, computing nothing (:func:`_computes_in_amp` reads through them)."""

_CLASS_INDEX_LOSSES = frozenset({"torch.nn.functional.cross_entropy", "torch.nn.functional.nll_loss"})
"""Losses whose target is class indices (an integer tensor): no float64 to make float32 there."""


def _class_index_target(ctx: FileContext, read: cst.CSTNode) -> bool:
    """Whether ``read`` (or a view of it: ``y.reshape(-1)``) is the target of a loss over class indices
    (``F.cross_entropy(logits, y)``, ``target=y``); its ``weight=`` is not."""
    node: cst.CSTNode = read
    while isinstance(ctx.parent(node), cst.Attribute) and isinstance(call := ctx.parent(ctx.parent(node)), cst.Call):
        node = call
    arg = ctx.parent(node)
    holder = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    if not (isinstance(holder, cst.Call) and ctx.qualified_names(holder.func) & _CLASS_INDEX_LOSSES):
        return False
    assert isinstance(arg, cst.Arg), "the holder is a call only through an argument"
    # the target (second positional, or `target=`): `weight=class_w` is a floating tensor the loss computes with
    positional = [a for a in holder.args if a.keyword is None]
    return (arg.keyword is not None and arg.keyword.value == "target") or (len(positional) > 1 and positional[1] is arg)


_DATA_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy", "torch.asarray"})
"""The factories whose dtype is their data's: float64 for a NumPy float64 array (torch 2.9 docs)."""


def _data_of_its_argument(ctx: FileContext, made: cst.Call) -> bool:
    """Whether the call ``made`` (what is brought to the device) may hold float64: a factory of
    :data:`_DATA_FACTORIES`, or a call that is no torch factory (a method, a function of the file);
    the other torch factories make integer or float32 tensors unless given a dtype."""
    names = ctx.qualified_names(made.func)
    if names & _DATA_FACTORIES:
        return True
    return not any(name.startswith("torch.") and name.count(".") == 1 for name in names)


def _argument_of(ctx: FileContext, node: cst.CSTNode) -> int | None:
    """The id of the call ``node`` is an argument of, or None."""
    arg = ctx.parent(node)
    holder = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    return id(holder) if isinstance(holder, cst.Call) else None


def _batch_reads(ctx: FileContext, skip: frozenset[int]) -> list[cst.BaseExpression]:
    """The reads of a batch a torch-xla device loader hands over (``for x, y in
    MpDeviceLoader(...)``: the loop target's own binding) that are an operand of arithmetic on the
    device (``(x - mean) / std``): of a dtype the code does not tell, f32 there where the switch
    made a floating batch bf16. Its upcast is :func:`_upcast_of_an_arrival`'s, its uses as a model
    input or a loss target the input casts'."""
    out: list[cst.BaseExpression] = []
    for loop, name, bindings in _loader_batches(ctx, skip):
        # libcst's scopes are not flow-sensitive: a read after `x = x.float() / 255` in the loop is
        # the new binding's, not the batch's
        rebound = [
            ctx.statement_of(node)
            for b in bindings
            if (node := getattr(b, "node", None)) is not None
            and node is not name
            and _inside(ctx, node, frozenset({id(loop)}))
        ]
        for binding in bindings:
            if getattr(binding, "node", None) is not name:
                continue
            for access in getattr(binding, "references", ()):
                read = access.node
                if not _inside(ctx, read, frozenset({id(loop.body)})):
                    continue
                statement = ctx.statement_of(read)
                if any(at is not None and at is not statement and ctx.pos(at) < ctx.pos(read) for at in rebound):
                    continue  # bound again by an earlier statement of the loop
                if isinstance(ctx.parent(read), (cst.BinaryOperation, cst.UnaryOperation)):
                    out.append(read)
    return out


def refuse_device_tensors(
    ctx: FileContext,
    tensors: DeviceTensors,
    guard: cst.BaseExpression | None,
    guard_at: Sequence[cst.CSTNode],
    anchors: list[tuple[str, cst.CSTNode]],
) -> bool:
    """Whether the switch must be kept for the script's own device tensors: a tensor of
    ``tensors`` (found or anywhere) where ``guard`` (the condition the switch was set under, written
    where the statements ``guard_at`` are) cannot be evaluated, whose dtype cannot be made bf16
    under that condition (BFM154 ``guard``, a place not examined). Then the switch is kept (BFM154
    ``kept`` on each of ``anchors``, the writes) and the file refused
    (:attr:`.outcome.Refusal.DEVICE_TENSOR`): left f32, such a tensor would compute in f32 where the
    legacy run computed in bf16. Nothing is reported when there is none."""
    stuck: list[cst.BaseExpression] = []
    if guard is not None:
        every = sorted([*tensors.found, *tensors.anywhere], key=ctx.pos)
        stuck = [c for c in every if not any(evaluable_like(ctx, guard, where, c) for where in guard_at)]
    if not stuck:
        return False
    for call in stuck:
        assert guard is not None, "a tensor is stuck only under a guard"
        ctx.report("BFM154", call, fixed=False, variant="guard", code=_code(ctx, call), condition=ctx.code(guard))
        ctx.outcome.not_examined.append(NotExamined(Edge.DEVICE_TENSORS, ctx.pos(call)[0], f"`{_code(ctx, call)}`"))
    for variable, anchor in anchors:
        finding = ctx.report(
            "BFM154",
            anchor,
            fixed=False,
            variant="kept",
            variable=variable,
            count=len(stuck),
            code=_code(ctx, stuck[0]),
            line=ctx.pos(stuck[0])[0],
        )
        ctx.outcome.refuse(Refusal.DEVICE_TENSOR, finding)
    return True


def plan_device_tensors(
    ctx: FileContext, plan: EditPlan, tensors: DeviceTensors, guard: cst.BaseExpression | None = None
) -> None:
    """Plan ``dtype=torch.bfloat16`` on each factory of ``tensors.found`` (:func:`find_device_tensors`;
    under ``guard``: ``torch.bfloat16 if <guard> else None``), ``bf16_on_xla(...)`` around each of
    ``tensors.anywhere``, and report each (BFM154). A tensor already edited in ``plan`` (the step's
    FP32 loss accumulator) is left as planned. Marks :attr:`.outcome.Edge.DEVICE_TENSORS` examined."""
    flow = ctx.memo(("device tensors flow",), lambda: DtypeFlow(ctx))
    for call in tensors.anywhere:
        if id(call) in plan.replace:
            continue
        if not any(isinstance(st, cst.FunctionDef) and st.name.value == snippets.BF16_ON_XLA for st in plan.prelude):
            plan.prelude.append(snippets.bf16_on_xla_helper())
        plan.replace[id(call)] = lambda node: snippets.bf16_on_xla_call(node, guard)
        ctx.report("BFM154", call, fixed=True, variant="anywhere", code=_code(ctx, call))
    for call in tensors.found:
        if id(call) in plan.replace:
            continue
        if isinstance(call, cst.BinaryOperation) or id(call) in tensors.promoted:
            # a true division of integers (:func:`_fresh_division`), a promotion (:func:`_fresh_promotions`)
            plan.replace[id(call)] = lambda node: _to_dtype(node, guard)
            ctx.report("BFM154", call, fixed=True, variant="upcast", code=_code(ctx, call))
            continue
        if not isinstance(call, cst.Call) or id(call) in tensors.checkpoint:  # a device loader's, a checkpoint's
            plan.replace[id(call)] = _runtime_cast(plan, tensors.f64_to_f32, guard)
            read = "checkpoint" if id(call) in tensors.checkpoint else "batch"
            variant = "runtime_downcast" if tensors.f64_to_f32 else f"runtime_{read}"
            ctx.report("BFM154", call, fixed=True, variant=variant, code=_code(ctx, call))
            continue
        explicit = _explicit_factory(ctx, call, not tensors.f64_to_f32)
        if explicit is not None:
            plan.replace[id(explicit.value)] = lambda node: choose(snippets.attr(_BF16), node, guard)
            ctx.report("BFM154", call, fixed=True, variant="explicit", code=_code(ctx, call))
            continue
        if _unknown_arrival(ctx, flow, call):
            where_used = _cast_where_used(ctx, plan, call)
            left_to_uses = where_used is True or (
                where_used is None and not _uses_no_input_cast_follows(ctx, call, tensors.no_input_casts)
            )
            if left_to_uses and not _returned(ctx, call):
                continue  # a model input or a loss target, cast where it is used (the input casts)
            plan.replace[id(call)] = _runtime_cast(plan, tensors.f64_to_f32, guard)
            variant = "runtime_downcast" if tensors.f64_to_f32 else "runtime"
            ctx.report("BFM154", call, fixed=True, variant=variant, code=_code(ctx, call))
            continue
        if _is_upcast(ctx, call):
            plan.replace[id(call)] = lambda node: _to_bf16(node, guard)
            variant = "upcast_arrival" if _upcast_of_an_arrival(ctx, flow, call) else "upcast_computed"
            if _fresh_upcast(ctx, flow, call, not tensors.f64_to_f32):
                variant = "upcast"
            ctx.report("BFM154", call, fixed=True, variant=variant, code=_code(ctx, call))
            continue
        moved = isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"
        leaf = _an_optimized_leaf(ctx, flow, call)  # bf16 for all of its uses, the optimizer's too
        where_used = _cast_where_used(ctx, plan, call) if moved and not leaf else None
        if not leaf and (
            where_used is True
            or (
                moved
                and where_used is None
                and _handed_to_a_callable(ctx, call)
                and not _computed_in_callee(ctx, call)
                and not _computed_uncast(ctx, call, handed=False)
            )
        ):
            # a model input or a loss target: the input casts cast it where it is used; an input of
            # another module or function (one kept FP32 on purpose, BFM153, takes it as it is)
            continue
        if casts_after(ctx, call):
            plan.replace[id(call)] = functools.partial(
                cast_after, dtype=choose(snippets.attr(_BF16), cst.parse_expression("torch.get_default_dtype()"), guard)
            )
        else:
            plan.replace[id(call)] = lambda node: add_keywords(node, [("dtype", _BF16, "None")], guard)
        said = "transfer" if moved else "cast_after" if casts_after(ctx, call) else None
        ctx.report("BFM154", call, fixed=True, variant=said, code=_code(ctx, call))
    ctx.outcome.examined.add(Edge.DEVICE_TENSORS)


def float64_on_device(ctx: FileContext, model_calls: frozenset[int] = frozenset()) -> list[cst.CSTNode]:
    """The float64s the code names on the XLA device, in the file's order: the ``dtype=`` value of a
    factory made there (``torch.zeros((), dtype=torch.float64, device=device)``) and the ``.double()``
    call of a tensor the code shows there (``loss.detach().double()``; ``model_calls``: ids of the calls
    of the models on the device, whose outputs are there). Under XLA_USE_BF16 they were bf16 (only
    XLA_DOWNCAST_BF16 kept float64 as float32: torch-xla's torch_xla/csrc/dtype.cpp); left as written
    they are real float64 after the migration (found by a hunt: a loss accumulator summed in f64).
    Outside the file's classes, whose code the model code audit reads."""
    found: list[cst.CSTNode] = []
    for call in ctx.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value == "double" and not call.args:
            if ctx.enclosing(call, cst.ClassDef) is None and _on_device(ctx, func.value, 0, model_calls):
                found.append(call)
            continue
        dtype = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "dtype"), None)
        if dtype is None or not ctx.qualified_names(dtype) & {"torch.float64", "torch.double"}:
            continue
        if ctx.enclosing(call, cst.ClassDef) is not None:
            continue  # a class's code is the model code audit's (its tensors follow what they meet)
        device = _device_argument(ctx, call)
        if device is not None and _is_device(ctx, device, 0):
            found.append(dtype)
    return found


def _to_dtype(node: cst.CSTNode, guard: cst.BaseExpression | None) -> cst.Call:
    """``(node).to(torch.bfloat16)`` (under ``guard``: ``.to(torch.bfloat16 if guard else
    torch.get_default_dtype())``)."""
    assert isinstance(node, cst.BaseExpression), "a division is an expression"
    atomic = isinstance(node, (cst.Call, cst.Attribute, cst.Name, cst.Subscript))
    inner = node if node.lpar or atomic else node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    dtype = choose(snippets.attr(_BF16), cst.parse_expression("torch.get_default_dtype()"), guard)
    return cst.Call(func=cst.Attribute(value=inner, attr=cst.Name("to")), args=[cst.Arg(dtype)])


def _runtime_cast(plan: EditPlan, f64_to_f32: bool, guard: cst.BaseExpression | None):
    """The run-time cast of a tensor of a dtype the code does not tell, its helper put among the plan's
    helpers: ``floating_to_bf16`` (the switch made every floating tensor on the device bf16), or, where it
    made float64 float32 (``f64_to_f32``: XLA_DOWNCAST_BF16), ``downcast_floating``. Returns the edit that
    wraps a node in it (parenthesised under ``guard``)."""
    if not f64_to_f32:
        _need_floating_helper(plan)
        return lambda node: _parenthesised(snippets.floating_to_bf16_call(node, guard))
    if not any(isinstance(st, cst.FunctionDef) and st.name.value == snippets.DOWNCAST_FLOATING for st in plan.prelude):
        plan.prelude.append(snippets.downcast_floating_helper())
    return lambda node: _parenthesised(snippets.downcast_floating_call(node, guard))


def _need_floating_helper(plan: EditPlan) -> None:
    """Put ``floating_to_bf16`` (with the input hook it comes with) among the plan's helpers, unless
    the input casts put it there already."""
    if not any(isinstance(st, cst.FunctionDef) and st.name.value == snippets.BF16_FLOATING for st in plan.prelude):
        plan.prelude.extend(snippets.bf16_inputs_helper())


def _parenthesised(expr: cst.BaseExpression) -> cst.BaseExpression:
    """A conditional cast (``floating_to_bf16(x) if guard else x``) in parentheses, so it stays one
    operand where it is written (``... - mean``)."""
    if isinstance(expr, cst.IfExp):
        return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return expr


def _uses(ctx: FileContext, call: cst.BaseExpression) -> list[cst.CSTNode]:
    """``call`` itself and the reads of the names it is assigned to (``x = t.to(d)``)."""
    uses: list[cst.CSTNode] = [call]
    for name in _assigned_names(ctx, call):
        uses += _reads(ctx, name)
    return uses


def _reads(ctx: FileContext, name: cst.Name) -> list[cst.CSTNode]:
    """The reads of the value an assignment binds to ``name`` (one of its targets): its binding's
    references, and, in a loop, the reads of the name that come before it in the loop
    (:func:`_loop_carried_reads`). Computed once per name."""

    def compute() -> list[cst.CSTNode]:
        scope = ctx.scopes.get(name)
        if scope is None:
            return []
        reads: list[cst.CSTNode] = []
        for binding in scope[name.value]:
            node = getattr(binding, "node", None)
            if node is name:
                reads += [access.node for access in getattr(binding, "references", ())]
            elif isinstance(node, cst.Name) and ctx.pos(node) > ctx.pos(name):
                # `step += 1` reads the value it updates: libcst records its target as an assignment only
                augmented = ctx.parent(node)
                if isinstance(augmented, cst.AugAssign) and augmented.target is node:
                    reads.append(node)
        return reads + _loop_carried_reads(ctx, scope, name)

    return ctx.memo(("reads of a binding", id(name)), compute)


def _loop_carried_reads(ctx: FileContext, scope: Scope, name: cst.Name) -> list[cst.CSTNode]:
    """The reads of ``name`` (an assignment's target in ``scope``) that come before the assignment in a
    loop around it, in that loop's body or a ``while``'s condition: the next pass reads the value it binds
    there (``baseline = torch.as_tensor(base_np, device=d)`` at the end of the body, ``ret - baseline`` at
    its top). libcst's references are not flow-sensitive: a read is bound to the assignments written
    before it only, so these are not among the binding's (found by a hunt: that baseline stayed float64
    on the device; beam scores rebuilt from a list stayed f32).

    The loop that counts for a read is the innermost around both (a ``for``'s iterable is evaluated once:
    not a pass of its own loop). A plain assignment of the name that is a statement of that loop's body
    itself binds it again on every pass: one after the assignment's statement of the body leaves no read
    of the loop this value's, one before a read's statement that read. Reads in a nested function or class
    are their scope's (libcst binds them to every assignment already, as a comprehension's). Each loop
    takes its reads by bisection in the name's accesses sorted once per scope: no walk of a loop's body."""
    loops: list[tuple[cst.For | cst.While, cst.CSTNode]] = []  # innermost first, with the assignment's statement
    statement: cst.CSTNode | None = None
    child: cst.CSTNode = name
    for parent in ctx.ancestors(name):
        if isinstance(parent, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            break
        if isinstance(parent, (cst.For, cst.While)) and child is parent.body and statement is not None:
            loops.append((parent, statement))
        statement, child = child, parent
    if not loops:
        return []
    starts, reads = _accesses_in_order(ctx, scope, name.value)
    at = ctx.span(name)[0]
    found: list[cst.CSTNode] = []
    inner: tuple[tuple[int, int], tuple[int, int]] | None = None  # the passes of the loop inside, decided there
    for loop, assigned_at in loops:
        body = ctx.span(loop.body)
        ranges = [(body[0], at)]
        if isinstance(loop, cst.While):
            ranges.append(ctx.span(loop.test))
        rebound = _rebound_in_the_body(ctx, scope, loop, name.value)
        if rebound is not None:
            first, last = rebound
            if ctx.span(last)[0] > ctx.span(assigned_at)[0]:
                ranges = []  # bound again after it on every pass: no read of this loop is its value
            else:
                ranges[0] = (body[0], min(at, ctx.span(first)[1]))  # reads up to the first rebinding's
        for low, high in ranges:
            cuts = [(low, high)] if inner is None else [(low, min(high, inner[0])), (max(low, inner[1]), high)]
            for a, b in cuts:
                found += reads[bisect.bisect_left(starts, a) : bisect.bisect_left(starts, b)]
        test = ctx.span(loop.test)[0] if isinstance(loop, cst.While) else body[0]
        inner = (min(test, body[0]), body[1])
    return found


def _accesses_in_order(
    ctx: FileContext, scope: Scope, variable: str
) -> tuple[list[tuple[int, int]], list[cst.CSTNode]]:
    """The reads of ``variable`` in ``scope`` itself, in the file's order, and where each starts; once per
    scope and name."""

    def compute() -> tuple[list[tuple[int, int]], list[cst.CSTNode]]:
        nodes: list[cst.CSTNode] = sorted(
            (access.node for access in scope.accesses[variable]), key=lambda n: ctx.span(n)[0]
        )
        return [ctx.span(n)[0] for n in nodes], nodes

    return ctx.memo(("accesses in order", id(scope), variable), compute)


def _rebound_in_the_body(
    ctx: FileContext, scope: Scope, loop: cst.For | cst.While, variable: str
) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """The first and the last plain assignment of ``variable`` that is a statement of ``loop``'s body itself
    (one that runs on every pass; None when there is none), once per loop and name."""

    def compute() -> tuple[cst.CSTNode, cst.CSTNode] | None:
        found = []
        for binding in scope.assignments[variable]:
            statement = ctx.statement_of(getattr(binding, "node", None))
            if isinstance(statement, cst.SimpleStatementLine) and ctx.parent(statement) is loop.body:
                found.append(statement)
        found.sort(key=lambda st: ctx.span(st)[0])
        return (found[0], found[-1]) if found else None

    return ctx.memo(("rebound in a loop's body", id(loop), variable), compute)


def _computed_with(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the tensor ``call`` brings to the device is computed with there: an operand of
    arithmetic (``t - mean``, ``-t``, ``acc += t``) or an argument of a torch function
    (``torch.stack``, ``torch.matmul``). A tensor only indexed, compared or handed on computes
    nothing in a floating dtype of its own."""
    uses = _uses(ctx, call)
    if any(_used_as_a_module(ctx, use) for use in uses):
        return False  # `model = Net().to(device)`: a module, which the model cast decides
    for use in uses:
        parent = ctx.parent(use)
        if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation, cst.AugAssign)):
            return True
        if isinstance(parent, cst.Element) and isinstance(ctx.parent(parent), (cst.List, cst.Tuple)):
            parent = ctx.parent(ctx.parent(parent))  # `torch.stack([lrs, torch.tensor(history, device=dev)])`
        holder = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
        if isinstance(holder, cst.Call) and any(
            _torch_math(name) or _functional_math(ctx, name) for name in ctx.qualified_names(holder.func)
        ):
            return True
    return False


def _functional_math(ctx: FileContext, name: str) -> bool:
    """Whether ``name`` is a function of ``torch.nn.functional`` that computes with what it is handed and is no loss
    (``F.normalize``, ``F.softmax``; ``rules/torch_api.toml`` ``functional_losses`` take a target as the input casts
    decide): NumPy centroids brought back to the device and normalised there met the bf16 embeddings in float64 (a
    hunt's k-means: the matmul raised with "0 left to do")."""
    short = name.rsplit(".", 1)[-1]
    return name.startswith("torch.nn.functional.") and short not in ctx.rules.torch_api.functional_losses


def _torch_math(name: str) -> bool:
    """Whether the function of qualified ``name`` computes with a tensor it is handed: torch's own
    (``torch.stack``, ``torch.xlogy``, ``torch.special.gammaln``: found by a hunt's Poisson deviance),
    not ``torch.nn``'s (a loss takes a target as the input casts decide) nor one that only stores or
    asks (``torch.save``, ``torch.is_tensor``)."""
    return name in _TENSOR_MATH or (
        name.startswith("torch.") and not name.startswith(("torch.nn.", "torch.distributed.")) and name not in _NO_MATH
    )


_NO_MATH = frozenset(
    {
        "torch.save",
        "torch.load",
        "torch.is_tensor",
        "torch.numel",
        "torch.is_floating_point",
        "torch.compile",
        "torch.jit.script",
        "torch.jit.trace",
    }
)


def _used_as_a_module(ctx: FileContext, use: cst.CSTNode) -> bool:
    """Whether ``use`` is called (``model(x)``) or asked for a module's state (``model.parameters()``)."""
    parent = ctx.parent(use)
    if isinstance(parent, cst.Call) and parent.func is use:
        return True
    return isinstance(parent, cst.Attribute) and parent.value is use and parent.attr.value in _MODULE_METHODS


def _handed_to_a_callable(ctx: FileContext, move: cst.Call) -> bool:
    """Whether the moved tensor, or a name it is assigned to, is an argument of a call that is not
    a torch function (a module, a criterion, a function of the file): the callee decides its dtype.
    A tensor's in-place arithmetic (``p.data.add_(z, alpha=eps)``, :data:`_IN_PLACE_ARITHMETIC`) is an op
    on the device, as a torch function is: its operand stays the move's to cast (those ops promote, so a
    bf16 operand into an FP32 tensor is no error; ``index_add_``/``scatter_add_`` would be, and are left to
    their callee's dtype)."""
    for use in _uses(ctx, move):
        arg = ctx.parent(use)
        holder = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(holder, cst.Call):
            continue
        in_place = isinstance(holder.func, cst.Attribute) and holder.func.attr.value in _IN_PLACE_ARITHMETIC
        if in_place or any(n.startswith("torch.") for n in ctx.qualified_names(holder.func)):
            continue
        if _an_imported_function(ctx, holder.func):
            continue  # its code got the tensor bf16 under the switch, as the file's own ops did
        return True
    return False


def _an_imported_function(ctx: FileContext, func: cst.BaseExpression) -> bool:
    """Whether ``func`` is a function of an imported module (``farthest_point_sample``, ``pc_ops.knn``): a
    lower-case name bound by an import (PEP 8 names classes, a module or a criterion among them, in CapWords).
    Its code is not the model's, which the input casts reach: the tensor it is handed must be bf16 as the
    switch made it there (found by a hunt: a NumPy point cloud handed to a sampling helper stayed f32, and the
    Chamfer loss computed in f32)."""
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name[:1].islower() and bound_by_import(ctx, func)


def _an_argument(ctx: FileContext, move: cst.Call) -> bool:
    """Whether the moved tensor, or a name it is assigned to, is an argument of any call, a torch function's
    too (``F.mse_loss(out, y.to(device))``). In a module with no model of its own no input cast reaches such an
    argument: under the switch it was bf16 there (found by a hunt: a loss target in a trainer class of another
    module stayed f32, and the loss raised on mixed dtypes)."""
    for use in _uses(ctx, move):
        arg = ctx.parent(use)
        if isinstance(arg, cst.Arg) and isinstance(ctx.parent(arg), cst.Call):
            return True
    return False


_IN_PLACE_ARITHMETIC = frozenset({"add_", "sub_", "mul_", "div_", "addcmul_", "addcdiv_", "copy_"})
"""A tensor's in-place methods that promote their operand to the tensor's dtype (torch's type
promotion for in-place ops: the result keeps the receiver's dtype)."""


def _assigned_names(ctx: FileContext, move: cst.BaseExpression) -> list[cst.Name]:
    """The names ``move`` is assigned to (``x = t.to(d)``; ``x, y = a.to(d), b``)."""
    parent = ctx.parent(move)
    if isinstance(parent, cst.Element):
        values = ctx.parent(parent)
        assign = ctx.parent(values)
        if not (isinstance(values, cst.Tuple) and isinstance(assign, cst.Assign) and len(assign.targets) == 1):
            return []
        target = assign.targets[0].target
        if not (isinstance(target, cst.Tuple) and len(target.elements) == len(values.elements)):
            return []
        index = next(i for i, element in enumerate(values.elements) if element is parent)
        found = [target.elements[index].value]
    elif isinstance(parent, cst.Assign):
        found = [t.target for t in parent.targets]
    else:
        return []
    return [name for name in found if isinstance(name, cst.Name)]


def _cast_where_used(ctx: FileContext, plan: EditPlan, move: cst.Call) -> bool | None:
    """Whether the reads of a name ``move`` is assigned to are cast by ``plan`` already (the input
    casts: ``model(x.to(torch.bfloat16))``, ``criterion(logits, floating_to_bf16(y))``): True when
    one is and every other read that computes with the tensor is too; False when one is but
    another, handed to a function of the file (a metric, ``dice_score(logits, y)``) or an operand
    of arithmetic, is not: the tensor is then cast where it is moved, once for all of its uses, as
    the switch made it bf16 for all of them (found by verify's trace on a hunt of our own); None
    when none is."""
    cast, uncast = False, False
    for name in _assigned_names(ctx, move):
        for read in _reads(ctx, name):
            if id(read) in plan.replace:
                cast = True
            elif _computes_uncast(ctx, read):
                uncast = True
    return (not uncast) if cast else None


_HANDED_BACK = (cst.Element, cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp, cst.Return, cst.IfExp, cst.Lambda)
"""The nodes a returned value may sit in on its way to ``return`` (``return x``, ``return x, y``,
``return [torch.as_tensor(a, device=d) for a in arrays]``), or to a lambda's result (``tree_map(lambda t: t.to(dev)
if torch.is_tensor(t) else t, batch)``: a hunt's nested batch, whose targets met a dict of lambda losses f32)."""


def _returned(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the tensor ``call`` brings to the device is handed back by its function: returned
    as it is, in a tuple or list, or in a comprehension's elements, directly or through a name it is
    assigned to (``t = torch.as_tensor(a, device=d)``; ``return t``). Its uses are the callers'
    (``obs, rew = buffer.sample(device)``, then ``rew + gamma * q``), which a reading of the function
    cannot see: under the switch it was bf16 wherever they are if floating, so the run-time cast
    makes it so where it arrives (found by a hunt: a replay buffer's method moving NumPy batches)."""
    for use in _uses(ctx, call):
        node: cst.CSTNode | None = use
        parent = ctx.parent(node)
        while isinstance(parent, _HANDED_BACK):
            if isinstance(parent, cst.Return):
                return True
            if isinstance(parent, cst.Lambda):
                return parent.body is node
            if isinstance(parent, (cst.ListComp, cst.GeneratorExp)) and parent.elt is not node:
                break
            if isinstance(parent, cst.IfExp) and parent.test is node:
                break
            node, parent = parent, ctx.parent(parent)
    return False


def _an_instance(ctx: FileContext, value: cst.BaseExpression) -> bool:
    """Whether ``value`` is an object built by a class (``Net(...)``, ``nn.GRU(...)``: a class of
    the file, or a callee named in CapWords, PEP 8's class names), or a name bound only to one."""
    values = [value] if isinstance(value, cst.Call) else _bound_values(ctx, value)
    if not values:
        return False
    for built in values:
        if not isinstance(built, cst.Call):
            return False
        callee = built.func.attr.value if isinstance(built.func, cst.Attribute) else getattr(built.func, "value", "")
        if not (isinstance(callee, str) and callee[:1].isupper()) and not any(
            isinstance(d, cst.ClassDef) for d in definitions(ctx, built.func)
        ):
            return False
    return True


def _uses_no_input_cast_follows(ctx: FileContext, call: cst.Call, no_input_casts: bool) -> bool:
    """Whether the tensor of unknown dtype ``call`` brings to the device is used where no input cast of the
    model's or the loss's reaches (computed with where it is made, kept in an attribute or a container, an item of a
    comprehension...; with ``no_input_casts``, handed to any call): it is cast where it is made."""
    return (
        _computed_here(ctx, call)
        or _computed_uncast(ctx, call)
        or _computed_in_callee(ctx, call)
        or _kept(ctx, call)
        or _filled_with_an_unknown(ctx, call)
        or (no_input_casts and _an_argument(ctx, call))
    )


def _kept_in_an_attribute(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the tensor ``call`` brings to the device is stored in an attribute where it is made
    (``self.count = torch.tensor(eps, device=device)``): its uses are the object's methods' and its
    callers', which no input cast reaches (a running normaliser's count met its bf16 batch sizes in f32;
    a hunt's value-function fit). Only a torch factory's tensor: ``self.model = model.to(device)`` moves a
    module."""
    if not any(name.startswith("torch.") for name in ctx.qualified_names(call.func)):
        return False
    kept: cst.BaseExpression = call
    parent = ctx.parent(call)
    wrapper = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
    if isinstance(wrapper, cst.Call) and ctx.qualified_names(wrapper.func) & _PARAMETER_CLASSES:
        kept, parent = wrapper, ctx.parent(wrapper)  # `self.step = nn.Parameter(torch.tensor(init, device=d))`
    assign = ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else parent
    if isinstance(assign, cst.AnnAssign):
        return isinstance(assign.target, cst.Attribute) and assign.value is kept
    return (
        isinstance(assign, cst.Assign)
        and assign.value is kept
        and any(isinstance(t.target, cst.Attribute) for t in assign.targets)
    )


def _kept(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the tensor ``call`` brings to the device is kept in an attribute, a container display or a
    comprehension's items where it is made."""
    return _kept_in_an_attribute(ctx, call) or _kept_in_a_container(ctx, call) or _a_comprehensions_item(ctx, call)


def _kept_for_amp(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the tensor ``call`` brings to the device is kept in an attribute or a container display where it is
    made, or is an item of a comprehension kept in an attribute (``self.coefs = [torch.tensor(v, device=d) for v in
    tables]``); a batch's comprehension (``{k: v.to(dev) for k, v in batch.items()}``) goes to the model, whose
    input hook decides."""
    if _kept_in_an_attribute(ctx, call) or _kept_in_a_container(ctx, call):
        return True
    if not _a_comprehensions_item(ctx, call):
        return False
    kinds = (cst.ListComp, cst.DictComp, cst.SetComp, cst.GeneratorExp)
    comprehension = next((a for a in ctx.ancestors(call) if isinstance(a, kinds)), None)
    assign = ctx.parent(comprehension) if comprehension is not None else None
    return isinstance(assign, cst.Assign) and any(isinstance(t.target, cst.Attribute) for t in assign.targets)


def _kept_in_a_container(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the tensor ``call`` brings to the device is put in a dict, list or tuple display that is not handed
    to a call where it is made (``sched = {"sqrt_ac": torch.tensor(np.sqrt(ac), device=d), ...}``, a schedule a
    function returns): its uses are the container's reads (``sched["sqrt_ac"]``), which no input cast follows; a
    float64 one stayed float64 on the device where the legacy run had it f32 or bf16 (a hunt's diffusion
    schedule)."""
    node: cst.CSTNode = call
    parent = ctx.parent(node)
    inside = False
    while isinstance(parent, (cst.Element, cst.DictElement, cst.List, cst.Tuple, cst.Dict, cst.Set)):
        if isinstance(parent, cst.DictElement) and parent.key is node:
            return False
        inside = True
        node, parent = parent, ctx.parent(parent)
    if isinstance(parent, cst.Assign) and any(isinstance(t.target, (cst.Tuple, cst.List)) for t in parent.targets):
        return False  # `x, y = a.to(dev), b.to(dev)`: unpacked, each bound to its own name
    return inside and not isinstance(parent, cst.Arg)


_PARAMETER_CLASSES = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
"""``nn.Parameter(data)``: a tensor of ``data``'s dtype (torch 2.9 docs, torch.nn.parameter.Parameter)."""


def _a_comprehensions_item(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the tensor ``call`` brings to the device is an item a comprehension builds (``{k: v.to(dev) for k, v
    in sd.items()}``, ``[t.to(dev) for t in parts]``): its uses are the container's reads, which no input cast
    follows; under the switch a floating one was bf16 wherever they are (a hunt's checkpoint fold computed in f32
    on a state dict moved tensor by tensor)."""
    item: cst.BaseExpression = call
    parent = ctx.parent(call)
    same = ctx.rules.torch_api.same_dtype_methods - {"cpu", "pin_memory"}  # on the device still
    while isinstance(parent, cst.Attribute) and parent.value is item and parent.attr.value in same:
        chained = ctx.parent(parent)  # `{k: v.to(dev).clone() for ...}`: the item has the move's dtype
        if not (isinstance(chained, cst.Call) and chained.func is parent):
            break
        item, parent = chained, ctx.parent(chained)
    if isinstance(parent, cst.DictComp):
        return parent.value is item
    return isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp)) and parent.elt is item


def _filled_with_an_unknown(ctx: FileContext, call: cst.Call) -> bool:
    """Whether ``call`` is ``torch.full(size, value, device=<xla>)`` of a fill whose type the code does not tell
    (``cfg["tau"]``, a parameter): torch.full's dtype is its fill's (torch 2.9 docs), a float's bf16 under the
    switch. A fill is a setting, not a model input or a loss target the input casts would reach: it goes
    through the run-time cast where it is made (a learnable temperature outside the model, a hunt's)."""
    return any(n in ("torch.full",) for n in ctx.qualified_names(call.func)) and factory_dtype_class(ctx, call) == (
        UNKNOWN
    )


def _computed_here(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the tensor ``call`` brings to the device is computed with by the script's own code
    and handed to no callable that would decide its dtype."""
    return _computed_with(ctx, call) and not _handed_to_a_callable(ctx, call)


def _computed_in_callee(ctx: FileContext, move: cst.Call) -> bool:
    """Whether the tensor ``move`` brings to the device is handed to a plain function of the file
    (directly or through a name it is assigned to) that computes with it where no input cast reaches
    (:func:`_param_computes`): a Langevin sampler's ``x - step * g`` on the ``x`` it is handed, which
    the model's pre-hook casts only for the model (found by verify's trace on a hunt's energy-based
    model: the chain, and the gradient with respect to it, f32 where the legacy run had bf16)."""
    for use in _uses(ctx, move):
        arg = ctx.parent(use)
        holder = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if not isinstance(holder, cst.Call) or not isinstance(arg, cst.Arg) or arg.star:
            continue
        for func in definitions(ctx, holder.func):
            if not isinstance(func, cst.FunctionDef) or isinstance(ctx.parent(ctx.parent(func)), cst.ClassDef):
                continue
            param = _parameter_for(func, holder, arg)
            if param is not None and _param_computes(ctx, func, param, 0):
                return True
        for method in _plain_methods(ctx, holder.func):
            # `metric.update(logits, y.to(device))`: a method of a plain class of the file (a hunt's Brier score
            # computed its squared error in f32 with the target left as moved)
            param = _parameter_for(method.with_changes(params=_without_self(method.params)), holder, arg)
            if param is not None and _param_computes(ctx, method, param, 0):
                return True
    return False


def _plain_methods(ctx: FileContext, func: cst.BaseExpression) -> list[cst.FunctionDef]:
    """The method ``m`` of ``obj.m`` where ``obj`` is an instance of a plain class of the file
    (:func:`plain_instance`), or its ``__call__`` where the instance itself is called (``norm(b)`` of a
    normaliser: a hunt's second batch met the device statistics in f32)."""
    if isinstance(func, cst.Attribute) and plain_instance(ctx, func.value):
        instance, method = func.value, func.attr.value
    elif isinstance(func, cst.Name) and plain_instance(ctx, func):
        instance, method = func, "__call__"
    else:
        return []
    assert isinstance(instance, cst.Name), "a plain instance is a name"
    found: list[cst.FunctionDef] = []
    for value in assigned_values(ctx, instance):
        for cls in definitions(ctx, value.func) if isinstance(value, cst.Call) else ():
            if isinstance(cls, cst.ClassDef):
                found += [st for st in cls.body.body if isinstance(st, cst.FunctionDef) and st.name.value == method]
    return found


def _without_self(params: cst.Parameters) -> cst.Parameters:
    """A method's parameters without its first (``self``), as a call through an instance binds them."""
    if params.posonly_params:
        return params.with_changes(posonly_params=params.posonly_params[1:])
    return params.with_changes(params=params.params[1:])


def _parameter_for(func: cst.FunctionDef, call: cst.Call, arg: cst.Arg) -> cst.Param | None:
    """The parameter of ``func`` that ``arg`` of ``call`` binds (by keyword or position)."""
    params = [*func.params.posonly_params, *func.params.params]
    if arg.keyword is not None:
        named = [*params, *func.params.kwonly_params]
        return next((p for p in named if p.name.value == arg.keyword.value), None)
    index = [a for a in call.args if a.keyword is None].index(arg)
    return params[index] if index < len(params) else None


_SAME_TENSOR = frozenset({"detach", "requires_grad_", "contiguous", "clone"})
"""Methods whose result is the tensor again, in its dtype: a name bound to one is followed."""


def _param_computes(ctx: FileContext, func: cst.FunctionDef, param: cst.Param | cst.Name, depth: int) -> bool:
    """Whether ``func`` computes with the tensor bound to ``param`` (a parameter, or a name bound to
    it again: ``x = x.detach().requires_grad_(True)``) where no input cast reaches
    (:func:`_computes_uncast`), names followed 3 deep."""
    if depth > 3:
        return False
    name = param.name if isinstance(param, cst.Param) else param
    scope = ctx.scopes.get(name) if isinstance(param, cst.Name) else ctx.scopes.get(func.body)
    if scope is None:
        return False
    for binding in scope[name.value]:
        if getattr(binding, "node", None) is not param and getattr(binding, "node", None) is not name:
            continue
        for access in getattr(binding, "references", ()):
            read = access.node
            if _computes_uncast(ctx, read):
                return True
            node, parent = read, ctx.parent(read)
            while isinstance(parent, cst.Attribute) and parent.attr.value in _SAME_TENSOR:
                call = ctx.parent(parent)
                if not isinstance(call, cst.Call):
                    break
                node, parent = call, ctx.parent(call)
            if node is not read and isinstance(parent, cst.Assign):
                for target in parent.targets:
                    if isinstance(target.target, cst.Name) and _param_computes(ctx, func, target.target, depth + 1):
                        return True
    return False


def _computed_uncast(ctx: FileContext, move: cst.Call, handed: bool = True) -> bool:
    """Whether a read of a name ``move`` is assigned to computes with it where no input cast reaches
    (:func:`_computes_uncast`; ``handed`` False: an argument of a function of the file does not count,
    :func:`_computed_in_callee` asks what the function does with it)."""
    uses = _uses(ctx, move)
    if any(_used_as_a_module(ctx, use) for use in uses):
        return False  # `net = make_net().to(device)`: a module, which the model cast decides
    return any(_computes_uncast(ctx, use, handed) for use in uses[1:])


_NOT_COMPUTING = frozenset(
    {"shape", "size", "dim", "ndim", "numel", "device", "dtype", "is_floating_point", "requires_grad", "to"}
    | {"reshape", "view", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "contiguous", "long", "int"}
    | {"detach", "clone", "expand", "T", "t", "chunk", "split", "unbind", "bool", "argmax", "argmin", "eq", "ne"}
)
"""A tensor's attributes and methods that compute nothing in its floating dtype: what it is, a
view or copy of it (``targets.reshape(-1)``, handed on to a loss as the input casts decide), an
integer or boolean result, or a move (``.to(...)``, whose own reads are asked in turn); the host
exits are :data:`_HOST_METHODS`."""
_VIEWS = frozenset(
    {"reshape", "view", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "contiguous", "detach", "clone"}
    | {"expand", "T", "t"}
)
"""Of :data:`_NOT_COMPUTING`, the views and copies of the floating tensor itself: what reads one decides."""


def _computes_uncast(ctx: FileContext, use: cst.CSTNode, handed: bool = True) -> bool:
    """Whether the read ``use`` computes with the tensor where no input cast reaches: an argument
    of a plain function of the file, an operand of arithmetic, or the receiver of a tensor method
    or an index (``y = x.sum(1, keepdim=True)``, ``x[:, 0]``: a hand-written loss target computed
    from a model input, which the input cast at the model's call leaves f32; found by verify's
    trace on a hunt's repro), an operand of a comparison with a floating value (``x > 0.5``: it read the
    bf16 values under the switch), not a question of its shape or dtype, nor a host exit.
    ``handed`` False: an argument of a function or of a plain class's method of the file is not asked."""
    parent = ctx.parent(use)
    if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    if isinstance(parent, (cst.Comparison, cst.ComparisonTarget)):
        # `x > 0.5` compares the values the switch had rounded to bf16 (0.5009765625 > 0.5 was False under
        # it, True in f32: a binarised input a hunt's verify run found wholly different); `preds == labels`
        # of integer class ids compares what no rounding changed
        comparison = parent if isinstance(parent, cst.Comparison) else ctx.parent(parent)
        assert isinstance(comparison, cst.Comparison), "a comparison target sits in a comparison"
        flow = ctx.memo(("device tensors flow",), lambda: DtypeFlow(ctx))
        operands = [comparison.left, *(target.comparator for target in comparison.comparisons)]
        return any(operand is not use and flow.infer(operand) == FLOAT for operand in operands)
    if isinstance(parent, cst.Subscript) and parent.value is use:
        return True
    if isinstance(parent, cst.Attribute) and parent.value is use:
        if parent.attr.value in _VIEWS:
            # a view computes what its own reader computes (`scores.unsqueeze(1) + logp`: a hunt's beam step)
            call = ctx.parent(parent)
            view = call if isinstance(call, cst.Call) and call.func is parent else parent
            return _computes_uncast(ctx, view, handed)
        return parent.attr.value not in _NOT_COMPUTING and parent.attr.value not in _HOST_METHODS
    holder = ctx.parent(parent) if handed and isinstance(parent, cst.Arg) else None
    if not isinstance(holder, cst.Call):
        return False
    callee = holder.func.value if isinstance(holder.func, cst.Attribute) else holder.func
    if plain_instance(ctx, callee):
        return True  # `norm.update(x)`, `norm(x)`: a method of a plain class of the file computes with it
    return any(
        isinstance(d, cst.FunctionDef) and not isinstance(ctx.parent(ctx.parent(d)), cst.ClassDef)
        for d in definitions(ctx, holder.func)
    )


def _is_upcast(ctx: FileContext, call: cst.Call) -> bool:
    """``x.float()``, ``x.double()`` or ``x.to(torch.<dtype>)``, or ``x.to(DTYPE)`` of a name or call the
    code shows a floating dtype (``DTYPE = torch.float32``, ``torch.get_default_dtype()``: rewritten as a
    move, ``y.to(DTYPE, dtype=torch.bfloat16)`` raised a TypeError, a hunt's); a transfer ``x.to(device)``
    is not one."""
    if not isinstance(call.func, cst.Attribute):
        return False
    if call.func.attr.value in ("float", "double"):
        return True
    return call.func.attr.value in ("to", "type") and (
        (len(call.args) == 1 and not _is_dtype_free(call.args[0])) or _upcasts(ctx, call, doubles=True)
    )


def _is_dtype_free(arg: cst.Arg) -> bool:
    return not (isinstance(arg.value, cst.Attribute) and m.matches(arg.value.value, m.Name("torch")))


def _to_bf16(node: cst.Call, guard: cst.BaseExpression | None) -> cst.Call:
    """``x.float()`` / ``x.double()`` / ``x.to(torch.float32)`` -> ``x.to(torch.bfloat16)`` (under
    ``guard``: ``x.to(torch.bfloat16 if guard else <the dtype it named>)``)."""
    assert isinstance(node.func, cst.Attribute), "an upcast is a method call"
    named = {"float": snippets.attr("torch.float32"), "double": snippets.attr("torch.float64")}.get(
        node.func.attr.value
    )
    dtype = choose(snippets.attr(_BF16), named if named is not None else node.args[0].value, guard)
    return node.with_changes(func=node.func.with_changes(attr=cst.Name("to")), args=[cst.Arg(dtype)])


def _code(ctx: FileContext, call: cst.BaseExpression) -> str:
    code = ctx.code(call)
    if len(code) <= 60 or not isinstance(call, cst.Call):
        return code
    return ctx.code(call.func) + "(...)"


def _audited_nodes(reached: Reached | None) -> list[cst.CSTNode]:
    """The classes whose tensors the audit of the model's code decides: the model's, its optimizers'
    and its losses', and the ``__init__`` it reads. The functions the step runs are the audit's too
    (:func:`find_device_tensors` adds them), except, for what the audit leaves undecided, the step's
    own helpers (:func:`_step_functions`)."""
    if reached is None:
        return []
    return [*reached.classes, *reached.optimizers, *reached.loss_classes, *reached.init]


def _step_functions(ctx: FileContext, reached: Reached | None, audited: frozenset[int]) -> list[cst.FunctionDef]:
    """The functions of the file the step runs (``reached.runtime``) that only the step's own code
    calls: module-level, every call of them by name outside the audited classes (``audited``: ids).
    Such a function (a rollout's ``env_step`` handed a model's sample, a ``gae`` handed its values)
    is the audit's only for the tensors it decides: a floating factory on the device or a fresh
    upcast there that it does not follow (one that meets the other, neither the model's dtype) is a
    device tensor of the script's, bf16 under the switch whatever it meets (left f32 before: found by
    verify's trace on an actor-critic's reward, bench/unseen/hunt8 a2c_gae). A helper the model's
    ``forward`` calls (a position table) is the model's code, whose f32 the audit follows to where it
    meets the model's tensors, or reports."""
    if reached is None:
        return []
    calls = ctx.memo(("device tensors: calls by name",), lambda: _calls_by_name(ctx))
    return [
        func
        for func in reached.runtime
        if isinstance(ctx.parent(func), cst.Module)
        and calls.get(func.name.value)
        and not any(_inside(ctx, call, audited) for call in calls[func.name.value])
    ]


def _inside(ctx: FileContext, node: cst.CSTNode, holders: frozenset[int]) -> bool:
    """Whether ``node`` is inside one of the nodes whose ids are ``holders`` (a walk up its parents)."""
    if not holders:
        return False
    parent = ctx.parent(node)
    while parent is not None:
        if id(parent) in holders:
            return True
        parent = ctx.parent(parent)
    return False


def _explicit_factory(ctx: FileContext, call: cst.Call, doubles: bool) -> cst.Arg | None:
    """The ``dtype=`` argument of a torch factory that asks for float32 (float64 too with ``doubles``: a
    switch that made it bf16, XLA_USE_BF16) on the XLA device (``torch.tensor(ts, dtype=torch.float32,
    device=dev)``): under the switch the tensor was bf16 all the same (torch-xla
    ``torch_xla/csrc/dtype.cpp``), and left f32 it computed in f32 where the legacy run computed in bf16
    (verify's trace on a hunt's ODE integrator: BFM201 at ``h / 2``); None for any other call."""
    dtype = next((a for a in call.args if a.keyword is not None and a.keyword.value == "dtype"), None)
    if _a_new_tensor(call) and dtype is not None:
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        names = dtype_names(ctx, dtype.value)
        doubles_ok = _F32_NAMES | (_F64_NAMES if doubles else frozenset())
        if receiver is not None and names and names <= doubles_ok and _on_device(ctx, receiver, 0):
            return None if _an_accumulator(ctx, call) else dtype
        return None
    if _a_move(call):
        if _a_module_moved(ctx, call):
            return None  # `vae.to(device=d, dtype=torch.float32)`: a module kept FP32 on purpose (BFM153)
        dtype, device = _moved_with_a_dtype(call)
    elif dtype is None or not (is_factory(ctx, call) or _like_input(ctx, call) is not None):
        return None
    else:
        device = _device_argument(ctx, call)
    if dtype is None:
        return None
    names = dtype_names(ctx, dtype.value)
    if not names or not names <= (_F32_NAMES | (_F64_NAMES if doubles else frozenset())):
        return None
    if _an_accumulator(ctx, call):
        return None
    like = _like_input(ctx, call) if device is None else None
    if like is not None and _on_device(ctx, like, 0):
        return dtype  # `torch.ones_like(ids, dtype=torch.float)`: made on its input's device
    if device is None or not _is_device(ctx, device, 0):
        return None
    return dtype


def _like_input(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    """The input of a ``torch.*_like`` factory (``rules/torch_api.toml`` ``[factories]`` "like"), whose
    device (and, without ``dtype=``, dtype) the result takes (torch 2.9 docs, "torch.zeros_like"); else None."""
    names = ctx.qualified_names(call.func)
    factories = ctx.rules.torch_api.factories
    if not any(n.startswith("torch.") and factories.get(n[6:]) == "like" for n in names):
        return None
    return next((a.value for a in call.args if a.keyword is None), None)


def _a_module_moved(ctx: FileContext, move: cst.Call) -> bool:
    """Whether ``move`` moves a module, not a tensor: a statement (``vae.to(device, torch.float32)``: a module
    moves in place, a tensor's move would be lost), a receiver that is a class of the file or of ``torch.nn``
    built there, or a name the move binds that is called or asked for its parameters."""
    if isinstance(ctx.parent(move), cst.Expr):
        return True
    receiver = move.func.value if isinstance(move.func, cst.Attribute) else None
    built = receiver.func if isinstance(receiver, cst.Call) else None
    if built is not None and (
        any(isinstance(d, cst.ClassDef) for d in definitions(ctx, built))
        or any(n.startswith("torch.nn.") and n.rsplit(".", 1)[-1][:1].isupper() for n in ctx.qualified_names(built))
    ):
        return True
    return any(_used_as_a_module(ctx, use) for use in _uses(ctx, move)[1:])


_NEW_TENSORS = frozenset({"new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"})
"""``Tensor.new_*``: a tensor on the receiver's device, of the ``dtype=`` named (torch 2.9 docs)."""


def _a_new_tensor(call: cst.Call) -> bool:
    """``t.new_zeros(n, dtype=torch.float)``: a factory on ``t``'s device (:data:`_NEW_TENSORS`)."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in _NEW_TENSORS


def _a_move(call: cst.Call) -> bool:
    """``t.to(...)``: a method call named ``to``."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"


def _moved_with_a_dtype(call: cst.Call) -> tuple[cst.Arg | None, cst.BaseExpression | None]:
    """The dtype and the device of a move that names both (``t.to(device, torch.float32)``, ``t.to(device,
    dtype=torch.float32)``, ``t.to(device=d, dtype=...)``: torch 2.9 docs, ``Tensor.to(device=None,
    dtype=None, non_blocking=False, ...)``); (None, None) for any other move. Under the switch such a
    tensor was bf16 on the device all the same (a hunt's per-sample loss weight stayed f32, while the same
    request through a factory was rewritten)."""
    positional = [a for a in call.args if a.keyword is None]
    keyword = {a.keyword.value: a for a in call.args if a.keyword is not None}
    device = keyword["device"].value if "device" in keyword else positional[0].value if positional else None
    if "dtype" in keyword:
        dtype: cst.Arg | None = keyword["dtype"]
    elif "device" not in keyword and len(positional) >= 2:
        dtype = positional[1]
    else:
        dtype = None
    return (dtype, device) if dtype is not None and device is not None else (None, None)


def _an_accumulator(ctx: FileContext, call: cst.Call) -> bool:
    """Whether a name ``call`` is assigned to is summed into (``total += loss.detach()``): an accumulator
    written in f32 is left so (the modes keep a loss accumulator FP32, Neuron's migration guide; the
    fp32-loss-accumulator change gives one made without a dtype ``dtype=torch.float32``, so a second run
    must not make it bf16)."""
    names = {(name.value, id(ctx.scopes.get(name))) for name in _assigned_names(ctx, call)}
    if not names:
        return False
    return any(
        isinstance(aug.target, cst.Name) and (aug.target.value, id(ctx.scopes.get(aug.target))) in names
        for aug in ctx.nodes(cst.AugAssign)
    )


def _floating_factory(ctx: FileContext, call: cst.Call) -> bool:
    """A torch factory without ``dtype=`` whose tensor is floating for sure."""
    if any(a.keyword is not None and a.keyword.value == "dtype" for a in call.args):
        return False
    return factory_dtype_class(ctx, call) == "float"


def _floating_transfer(ctx: FileContext, flow: DtypeFlow, call: cst.Call) -> bool:
    """``t.to(device)`` (or ``device=device``) of a tensor the code shows floating (``torch.rand(8)``,
    ``torch.tensor([1.0, 2.0])``, ``x.float()``) with no dtype: a loss weight, a class weight, a
    schedule, moved to the device where the switch made it bf16. What the model's inputs and the
    loss's targets get is the input casts' (planned before: :mod:`.inputs`)."""
    moved = _moved_to_the_device(ctx, call)
    return moved is not None and flow.infer(moved) == FLOAT


def _an_optimized_leaf(ctx: FileContext, flow: DtypeFlow, call: cst.Call) -> bool:
    """A floating tensor moved to the device (:func:`_floating_transfer`) or made there
    (:func:`_floating_factory`) that an optimizer is built over through copies of it
    (``img = content.clone().requires_grad_(True)``, ``Adam([img])``: :mod:`.leaves`). Under the switch
    it was a bf16 leaf, updated in bf16; the input casts would cast only its copies at the model
    (found by writing a style transfer: verify's trace named the move, BFM201 at the step). Made bf16
    where it comes to the device, whatever else it is handed to."""
    made = _floating_transfer(ctx, flow, call) or (
        _floating_factory(ctx, call) and _device_argument(ctx, call) is not None
    )
    return made and becomes_optimized_leaf(ctx, call)


def _named_f64(ctx: FileContext, move: cst.Call) -> bool:
    """Whether the tensor ``move`` brings to the device is named float64 where it is made
    (``torch.zeros(1, dtype=torch.double).to(device)``, ``x.double().to(device)``): under a switch that
    made f64 f32 on the device (XLA_DOWNCAST_BF16) it was f32 there, not bf16 (the double idiom's)."""
    moved = _moved_to_the_device(ctx, move)
    if not isinstance(moved, cst.Call):
        return False
    if isinstance(moved.func, cst.Attribute) and moved.func.attr.value == "double":
        return True
    named = [a.value for a in moved.args if a.keyword is not None and a.keyword.value == "dtype"]
    if isinstance(moved.func, cst.Attribute) and moved.func.attr.value == "to":
        named += [a.value for a in moved.args if a.keyword is None]
    return any(ctx.qualified_names(value) & _F64_NAMES for value in named)


def _moved_to_the_device(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    """``t`` of ``t.to(device)`` (or ``device=device``) with no dtype, the device the XLA one; else None."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "to"):
        return None
    if any(a.keyword is not None and a.keyword.value == "dtype" for a in call.args):
        return None
    devices = [a.value for a in call.args if a.keyword is None or a.keyword.value == "device"]
    if len(devices) != 1 or not _is_device(ctx, devices[0], 0):
        return None
    return call.func.value


def _data_arrival(ctx: FileContext, flow: DtypeFlow, call: cst.Call) -> bool:
    """``torch.from_numpy(a).to(x.device)`` (a data factory of :data:`_DATA_FACTORIES`, of data the code
    does not tell, moved to the device without a dtype): in the model's code the audit cannot tell
    whether it is floating, so it made nothing of it, and a NumPy float64 one stayed f64 on the device
    where the switch made it bf16 (a hunt's ALiBi slopes computed in ``forward``). The run-time cast
    decides, on the device it is moved to (``bf16_on_xla``; amp: ``float64_to_float32``)."""
    moved = _moved_to_the_device(ctx, call) if _unknown_arrival(ctx, flow, call) else None
    return isinstance(moved, cst.Call) and bool(ctx.qualified_names(moved.func) & _DATA_FACTORIES)


_SENDS = frozenset({"torch_xla.core.xla_model.send_cpu_data_to_device"})
"""torch-xla's move of host data (a tensor, or containers of them) to the device (torch_xla/core/xla_model.py):
under the switch its floating tensors were bf16 there (a hunt's sample weights made the loss f32)."""


def _unknown_arrival(ctx: FileContext, flow: DtypeFlow, call: cst.Call) -> bool:
    """A tensor of a dtype the code does not tell, brought to the XLA device without a dtype:
    ``t.to(device)`` of a ``t`` neither floating nor integer for sure (``torch.from_numpy(x)``,
    ``torch.tensor(stats["mean"])``), or ``torch.tensor(values, device=device)`` of such values (a
    NumPy array of returns, a list read from a file). If it is floating the switch made it bf16
    there; if integer it stayed so: the run-time cast decides."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "to":
        moved = _moved_to_the_device(ctx, call)
        return (
            moved is not None
            and flow.infer(moved) == UNKNOWN
            and not _an_instance(ctx, moved)
            and not _a_module_moved(ctx, call)  # `teacher = teacher.to(dev)` then `teacher.eval()`: BFM150's
        )
    if ctx.qualified_names(call.func) & _SENDS:
        return True  # `xm.send_cpu_data_to_device(batch, device)`: the host data's tensors, moved as they are
    if factory_dtype_class(ctx, call) != UNKNOWN:
        return False
    device = _device_argument(ctx, call)
    return device is not None and _is_device(ctx, device, 0)


def _upcast_of_an_arrival(ctx: FileContext, flow: DtypeFlow, call: cst.Call) -> bool:
    """``x.float()`` (or ``x.to(torch.float32)``) of a tensor just brought to the device whose dtype
    the code does not tell (``batch["pixels"].to(device).float() / 255``, or a name bound only to
    such a move): whatever it held, under the switch the upcast made it bf16 there (f32 on the
    device was bf16); a deliberate f32 copy of the model's output is not one (BFM089)."""
    if not _upcasts(ctx, call):
        return False
    receiver = _receiver(call)
    if isinstance(receiver, cst.Name) and _a_device_loaders_batch(ctx, receiver):
        return True
    values = [receiver] if isinstance(receiver, cst.Call) else _bound_values(ctx, receiver)
    return bool(values) and all(
        isinstance(value, cst.Call) and (_unknown_arrival(ctx, flow, value) or _made_floating_on_the_device(ctx, value))
        for value in values
    )


def _made_floating_on_the_device(ctx: FileContext, call: cst.Call) -> bool:
    """Whether ``call`` is a torch factory making a floating tensor on the XLA device without a dtype (``w =
    torch.tensor(n / (2.0 * np.bincount(y)), device=dev)``): its ``w.float()`` was bf16 under the switch too, and
    left f32 it met the bf16 logits as a loss's class weight, which takes no promotion (a hunt's churn model raised
    "expected scalar type BFloat16 but found Float" under XLA_DOWNCAST_BF16)."""
    device = _device_argument(ctx, call)
    return _floating_factory(ctx, call) and device is not None and _is_device(ctx, device, 0)


_DEVICE_LOADERS = frozenset(
    {"torch_xla.distributed.parallel_loader.MpDeviceLoader", "torch_xla.distributed.parallel_loader.ParallelLoader"}
)
"""torch-xla's loaders that hand each batch over on the device (torch_xla/distributed/parallel_loader.py)."""


def _a_device_loaders_batch(ctx: FileContext, name: cst.Name) -> bool:
    """Whether ``name`` is bound by the target of a ``for`` over a torch-xla device loader
    (``for images, labels in pl.MpDeviceLoader(loader, device)``, through ``enumerate`` too), and
    otherwise only to values computed from itself (``images = images.float() / 255``): a batch
    tensor on the device, of a dtype the code does not tell."""
    scope = ctx.scopes.get(name)
    bindings = list(scope[name.value]) if scope is not None else []
    from_loader = False
    for binding in bindings:
        node = getattr(binding, "node", None)
        loop = next((a for a in ctx.ancestors(node) if isinstance(a, cst.For)), None) if node is not None else None
        if (
            loop is not None
            and node is not None
            and _inside_target(node, _batch_target(ctx, loop))
            and _over_a_device_loader(ctx, loop.iter)
        ):
            from_loader = True
            continue
        target = ctx.parent(node) if node is not None else None
        assign = ctx.parent(target) if target is not None else None
        if not (isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign)):
            return False
        if not any(read.value == name.value for read in findall(assign.value, m.Name())):
            return False  # bound to something else too
    return from_loader


def _batch_target(ctx: FileContext, loop: cst.For) -> cst.BaseExpression:
    """The part of ``loop``'s target the batches are bound to: the second element of ``for i, batch in
    enumerate(...)`` (the first is the index, an int: docs.python.org, ``enumerate``), else the whole target.
    Found by a hunt: the index of a device loader's loop was cast as a batch (``floating_to_bf16(i)``)."""
    target, iterable = loop.target, loop.iter
    if (
        isinstance(iterable, cst.Call)
        and ctx.qualified_names(iterable.func) & {"enumerate", "builtins.enumerate"}
        and isinstance(target, (cst.Tuple, cst.List))
        and len(target.elements) == 2
    ):
        return target.elements[1].value
    return target


def _inside_target(node: cst.CSTNode, target: cst.BaseExpression) -> bool:
    return node is target or any(node is found for found in findall(target, m.Name()))


def _over_a_device_loader(ctx: FileContext, iterable: cst.BaseExpression, depth: int = 0) -> bool:
    """``MpDeviceLoader(...)`` / ``ParallelLoader(...).per_device_loader(...)``, or ``enumerate`` of one, or a
    name every plain assignment of which is one (``loader = pl.MpDeviceLoader(...)``, then ``for xb, yb in
    loader``: its batches stayed f32 and f64, a hunt's)."""
    if isinstance(iterable, cst.Name) and depth < 3:
        values = assigned_values(ctx, iterable)
        return bool(values) and all(_over_a_device_loader(ctx, v, depth + 1) for v in values)
    if not isinstance(iterable, cst.Call):
        return False
    if ctx.qualified_names(iterable.func) & {"enumerate", "builtins.enumerate"} and iterable.args:
        return _over_a_device_loader(ctx, iterable.args[0].value, depth)
    if ctx.qualified_names(iterable.func) & _DEVICE_LOADERS:
        return True
    func = iterable.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "per_device_loader"
        and isinstance(func.value, cst.Call)
        and bool(ctx.qualified_names(func.value.func) & _DEVICE_LOADERS)
    )


def _upcasts(ctx: FileContext, call: cst.Call, doubles: bool = False) -> bool:
    """``x.float()`` or ``x.to(torch.float32)`` (a positional dtype, nothing else); with ``doubles``
    (a switch that made f64 bf16 on the device too: XLA_USE_BF16) ``x.double()`` and
    ``x.to(torch.float64)`` as well."""
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value not in (
        _UPCASTS | ({"double"} if doubles else set())
    ):
        return False
    if call.func.attr.value in ("float", "double"):
        return not call.args
    names = _F32_NAMES | (_F64_NAMES if doubles else frozenset())
    positional = [a for a in call.args if a.keyword is None]
    others = [a for a in call.args if a.keyword is not None]
    if len(positional) != 1 or any(a.keyword is not None and a.keyword.value not in _COPY_FLAGS for a in others):
        return False
    return bool(dtype_names(ctx, positional[0].value) & names)


_COPY_FLAGS = frozenset({"copy", "non_blocking", "memory_format"})
"""``Tensor.to``'s keywords that change nothing of the dtype (torch 2.9 docs, "Tensor.to")."""


_MOVES_AND_CASTS = frozenset({*_HOST_METHODS, "to", "cuda", "type", "float", "double", "half", "bfloat16", "detach"})


def _computed_on(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the upcast ``call``'s result is computed with where it is: an operand of arithmetic,
    or the receiver of a tensor method that computes (``v.float().norm()``), not of a copy to the host
    (``logits.float().cpu()``: float32 on the host, as the legacy run's) nor of another move or cast.
    On the XLA device the legacy switch made such an upcast's f32 bf16 (an EMA's norm, a metric). Views of it
    are it (``a.gather(0, t).float()[:, None] * x0``, a diffusion schedule's coefficient broadcast onto a batch)."""
    node: cst.CSTNode = call
    parent = ctx.parent(call)
    while True:
        if isinstance(parent, cst.Subscript) and parent.value is node:
            node, parent = parent, ctx.parent(parent)
            continue
        viewed = isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _VIEWS
        outer = ctx.parent(parent) if viewed else None
        if isinstance(outer, cst.Call) and outer.func is parent:
            node, parent = outer, ctx.parent(outer)
            continue
        break
    if isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)):
        return True
    return isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value not in _MOVES_AND_CASTS


def _receiver(call: cst.Call) -> cst.BaseExpression:
    assert isinstance(call.func, cst.Attribute), "an upcast is a method call"
    return call.func.value


_WEIGHT_ITERATORS = frozenset({"parameters", "named_parameters", "buffers", "named_buffers", "values", "items"})
"""What iterates over a module's tensors: its parameters and buffers, or its state dict's values (torch.nn.Module)."""
_SAME_VALUES = frozenset({"detach", "clone", "data", "contiguous"})


def _of_the_weights(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` is a module's parameter or buffer, or a copy of one (``p.detach()``, ``p.data.clone()``):
    a name bound by a ``for`` or a comprehension over ``model.parameters()``, ``model.named_parameters()``,
    ``model.state_dict().items()`` and the like."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args:
            if expr.func.attr.value not in _SAME_VALUES:
                return False
            expr = expr.func.value
        elif isinstance(expr, cst.Attribute) and expr.attr.value in _SAME_VALUES:
            expr = expr.value
        else:
            break
    if not isinstance(expr, cst.Name):
        return False
    scope = ctx.scopes.get(expr)
    if scope is None:
        return False
    found = False
    for assignment in scope[expr.value]:
        node = getattr(assignment, "node", None)
        loop = next((a for a in ctx.ancestors(node) if isinstance(a, (cst.For, cst.CompFor))), None) if node else None
        if loop is None or not any(n is node for n in _target_names(loop.target)):
            return False
        iterable = loop.iter
        if not (
            isinstance(iterable, cst.Call)
            and isinstance(iterable.func, cst.Attribute)
            and iterable.func.attr.value in _WEIGHT_ITERATORS
        ):
            return False
        found = True
    return found


def _target_names(target: cst.BaseExpression) -> list[cst.Name]:
    """The names a loop target binds (``p``, ``n, p``)."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _target_names(e.value)]
    return []


def _fresh_upcast(ctx: FileContext, flow: DtypeFlow, call: cst.Call, doubles: bool = False) -> bool:
    """``x.float()`` or ``x.to(torch.float32)`` (and, with ``doubles``, ``x.double()``: an accuracy's
    ``(preds == labels).double()``) of an integer or boolean tensor ``x`` (``(pred == y)``,
    ``mask.eq(0)``, ``idx.long()``): a fresh floating tensor, f32 (f64) where the switch made it bf16."""
    if not _upcasts(ctx, call, doubles):
        return False
    receiver = _receiver(call)
    return isinstance(receiver, cst.Comparison) or flow.infer(receiver) == INT


def on_device(ctx: FileContext, expr: cst.BaseExpression, model_calls: frozenset[int] = frozenset()) -> bool:
    """Whether the code shows ``expr`` computed on the XLA device (:func:`_on_device`; ``model_calls``: ids
    of the calls of the models on the device, whose outputs are there)."""
    return _on_device(ctx, expr, 0, model_calls)


def _on_device(
    ctx: FileContext,
    expr: cst.BaseExpression,
    depth: int,
    model_calls: frozenset[int] = frozenset(),
    reading: frozenset[tuple[int, str]] = frozenset(),
) -> bool:
    """Whether the code shows ``expr`` computed on the XLA device: it moves a tensor there
    (``y.to(device)``), makes one there (``device=``) or calls a model on the device (ids in
    ``model_calls``), or reads a name bound only to such a value, and brings nothing back to the host
    (``.cpu()``, ``.numpy()``, ``.item()``). A name read again inside its own binding (``finished =
    finished[src] | done`` in a loop: ``reading``, the names being read) counts as on the device, so
    the name is when every other binding of it is (a beam search's mask, found by a hunt)."""
    if depth > _MAX_DEPTH:
        return False
    calls = list(findall(expr, m.Call())) + ([expr] if isinstance(expr, cst.Call) else [])
    for call in calls:
        if m.matches(call.func, m.Attribute(attr=m.OneOf(*map(m.Name, _HOST_METHODS)))):
            return False
    if any(isinstance(c, cst.Call) and _call_on_device(ctx, c, depth, model_calls, reading) for c in calls):
        return True
    for name in findall(expr, m.Name()):
        parent = ctx.parent(name)
        if isinstance(parent, cst.Attribute) and parent.attr is name:
            continue
        assert isinstance(name, cst.Name), "findall of m.Name()"
        key = (id(ctx.scopes.get(name)), name.value)
        if key in reading:  # read inside its own binding: on the device when its other bindings are
            others = _bindings_not_reading_itself(ctx, name)
            if others and all(_on_device(ctx, value, depth + 1, model_calls, reading) for value in others):
                return True
            continue
        values = _bound_values(ctx, name)
        if values and all(_on_device(ctx, value, depth + 1, model_calls, reading | {key}) for value in values):
            return True
    return False


def _call_on_device(
    ctx: FileContext, call: cst.Call, depth: int, model_calls: frozenset[int], reading: frozenset[tuple[int, str]]
) -> bool:
    """Whether ``call`` itself puts its result on the device (:func:`_on_device`): a model's call, a
    move or a factory given the device (or the default device), a function of the file whose
    returns all are."""
    if id(call) in model_calls or ctx.qualified_names(call.func) & _SENDS:
        return True
    for arg in call.args:
        moved = arg.keyword is None and m.matches(call.func, m.Attribute(attr=m.Name("to")))
        if (moved or (arg.keyword is not None and arg.keyword.value == "device")) and _is_device(
            ctx, arg.value, depth + 1
        ):
            return True
    made_by_default = factory_dtype_class(ctx, call) is not None and not any(
        arg.keyword is not None and arg.keyword.value == "device" for arg in call.args
    )
    default = _default_device(ctx, call) if made_by_default else None
    if default is not None and _is_device(ctx, default, depth + 1):
        return True  # `torch.tensor(ints)` after `torch.set_default_device(xla)`
    returned = _returned_values(ctx, call)
    # `fitness(model, x, y)`, a function of the file returning the model's loss
    return bool(returned) and all(_on_device(ctx, v, depth + 1, model_calls, reading) for v in returned)


def _bindings_not_reading_itself(ctx: FileContext, name: cst.Name) -> list[cst.BaseExpression]:
    """The values of every binding of ``name`` in its scope (flow ignored) that do not read
    ``name`` itself (``finished = torch.zeros(...)``, not ``finished = finished[src] | done``);
    empty when one cannot be told."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return []
    values: list[cst.BaseExpression] = []
    for binding in scope[name.value]:
        node = getattr(binding, "node", None)
        value = (assigned_value(ctx, node) or unpacked_value(ctx, node)) if node is not None else None
        if value is None:
            return []
        if not any(isinstance(n, cst.Name) and n.value == name.value for n in findall(value, m.Name())):
            values += _list_items(ctx, name, value) if isinstance(value, cst.List) else [value]
    return values


def _bound_values(ctx: FileContext, name: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values a name is bound to: by plain assignments, by an element of a tuple assigned a tuple
    of as many (``x, y = x.to(device), y.to(device)``), by a name unpacked from a value (the whole
    value: ``logits, labels = model(x)``, on the device where the value is), and, for a parameter of a function of the
    file, the arguments every call of it in the file passes there (``soft_targets(y)``); empty when
    any binding is another kind, or a call's argument cannot be told."""
    if not isinstance(name, cst.Name):
        return []
    scope = ctx.scopes.get(name)
    if scope is None:
        return []
    values = []
    for binding in _reaching(ctx, name, list(scope[name.value])):
        node = getattr(binding, "node", None)
        if node is not None and isinstance(ctx.parent(node), cst.AugAssign):
            continue  # `hist += torch.bincount(...)`: in place, where the tensor already is
        value = (
            _passed_values(ctx, node)
            if isinstance(node, cst.Param)
            else (
                [v]
                if node is not None and (v := assigned_value(ctx, node) or unpacked_value(ctx, node)) is not None
                else []
            )
        )
        if not value:
            return []
        for v in value:  # a list the code fills (`scores = []` then `scores.append(...)`): its items
            values += _list_items(ctx, name, v) if isinstance(v, cst.List) else [v]
    return values


def _list_items(ctx: FileContext, name: cst.Name, literal: cst.List) -> list[cst.BaseExpression]:
    """The items a list bound to ``name`` holds: the literal's elements and the values appended to
    it (``name.append(x)``, in the same function); empty when it holds none the code shows (a
    starred element, an ``extend``)."""
    items: list[cst.BaseExpression] = []
    for element in literal.elements:
        if not isinstance(element, cst.Element):
            return []
        items.append(element.value)
    function = ctx.enclosing(name, cst.FunctionDef)
    receiver = m.Attribute(value=m.Name(name.value), attr=m.Name("append") | m.Name("extend") | m.Name("insert"))
    for call in ctx.nodes_in(cst.Call, function):
        if m.matches(call.func, receiver):
            assert isinstance(call.func, cst.Attribute), "matched an Attribute"
            if call.func.attr.value != "append" or len(call.args) != 1:
                return []
            items.append(call.args[0].value)
    return items


def _returned_values(ctx: FileContext, call: cst.Call) -> list[cst.BaseExpression]:
    """What a function of the file called by ``call`` returns (each ``return`` of its own body);
    empty when it is not one, or one of its returns has no value."""
    functions = [d for d in definitions(ctx, call.func) if isinstance(d, cst.FunctionDef)]
    if len(functions) != 1:
        return []
    returns = [r for r in findall(functions[0].body, m.Return()) if ctx.enclosing(r, cst.FunctionDef) is functions[0]]
    values = [r.value for r in returns if isinstance(r, cst.Return) and r.value is not None]
    return values if values and len(values) == len(returns) else []


def _reaching(ctx: FileContext, use: cst.Name, bindings: list) -> list:
    """The binding of ``bindings`` that reaches ``use`` where the code shows it: the last one before
    it in the file whose statement's block holds ``use`` too (straight-line code: ``y = ...`` then
    ``y = y.to(device)`` then the use); else all of them (a binding in a branch, or none before)."""
    before = [b for b in bindings if (n := getattr(b, "node", None)) is not None and ctx.pos(n) < ctx.pos(use)]
    if not before:
        return bindings
    last = max(before, key=lambda b: ctx.pos(b.node))
    statement = ctx.enclosing(last.node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    block = ctx.parent(statement) if statement is not None else None
    if block is not None and any(a is block for a in ctx.ancestors(use)):
        return [last]
    return bindings


def _passed_values(ctx: FileContext, param: cst.Param) -> list[cst.BaseExpression]:
    """The arguments every call of the function of ``param`` in the file passes to it (a plain
    function called by its name; a method, ``*args`` or a call that unpacks: none)."""
    params = ctx.parent(param)
    function = ctx.parent(params) if isinstance(params, cst.Parameters) else None
    if not (isinstance(params, cst.Parameters) and isinstance(function, cst.FunctionDef)):
        return []
    if param not in params.params:
        return []
    body = ctx.parent(function)
    cls = ctx.parent(body) if body is not None else None
    at = list(params.params).index(param)
    if isinstance(cls, cst.ClassDef):
        method = function
        calls = ctx.memo(("device tensors: method calls", id(method)), lambda: _method_calls(ctx, cls, method))
        if calls is None or at == 0:
            return []  # a call through an object the code does not show to be the class's
        at -= 1  # `self` is the object
    else:
        calls = ctx.memo(("device tensors: calls by name",), lambda: _calls_by_name(ctx)).get(function.name.value, [])
    values = []
    for call in calls:
        if any(a.star for a in call.args):
            return []
        keyword = next((a.value for a in call.args if a.keyword and a.keyword.value == param.name.value), None)
        positional = [a.value for a in call.args if a.keyword is None]
        value = keyword if keyword is not None else (positional[at] if at < len(positional) else None)
        if value is None:
            return []
        values.append(value)
    return values


def _method_calls(ctx: FileContext, cls: cst.ClassDef, method: cst.FunctionDef) -> list[cst.Call] | None:
    """The calls of ``method`` of the plain class ``cls`` in the file (a metric's ``meter.update(logits,
    y)``): ``<name>.<method>(...)`` on a name bound only to ``cls(...)``, and ``self.<method>(...)``
    in the class. None when a call of that name goes through an object the code does not show to be
    the class's or not (a parameter, an attribute of another object), or the class is an
    ``nn.Module`` (its instances are called through the model, which the audit reads)."""
    if cls.bases or any(
        m.matches(d.decorator, m.Name("staticmethod") | m.Name("classmethod")) for d in method.decorators
    ):
        return None  # a subclass (an nn.Module's, another class's), or no `self` first
    name = method.name.value
    found: list[cst.Call] = []
    for call in ctx.nodes(cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == name):
            continue
        receiver = func.value
        if m.matches(receiver, m.Name("self")):
            if ctx.enclosing(call, cst.ClassDef) is not cls:
                return None
            found.append(call)
            continue
        made = _bound_values(ctx, receiver) if isinstance(receiver, cst.Name) else []
        if not made:
            if ctx.qualified_names(receiver):  # a module's object (`os.environ.update`): not the class's
                continue
            return None
        ours = [isinstance(v, cst.Call) and m.matches(v.func, m.Name(cls.name.value)) for v in made]
        if all(ours):
            found.append(call)
        elif any(ours) or any(isinstance(v, cst.Call) for v in made):
            return None  # maybe the class's (a factory function may return one)
    return found


def _calls_by_name(ctx: FileContext) -> dict[str, list[cst.Call]]:
    """The file's calls of a plain name, by the name."""
    out: dict[str, list[cst.Call]] = {}
    for call in ctx.nodes(cst.Call):
        if isinstance(call.func, cst.Name):
            out.setdefault(call.func.value, []).append(call)
    return out


def _device_argument(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    """The ``device=`` of a factory, else the device it is made on by a default the code sets (the
    ``X`` of an enclosing ``with torch.device(X):``, or of ``torch.set_default_device(X)`` earlier
    in the same function or at module level: torch 2.9 docs, "torch.set_default_device"), or None.
    A tensor made on the host and moved (``torch.randn(8, 4).to(device)``) is data, which the input
    casts handle where it meets the model (:mod:`.inputs`): made in bf16 on the host instead, its
    random values would not be the legacy run's."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            return arg.value
    return _default_device(ctx, call)


def _default_device(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    """The device a factory without ``device=`` is made on by the code's default (see
    :func:`_device_argument`): found on verify's trace of a hunt's script whose model and loss
    weights were made in ``with torch.device(xla):`` (bf16 under the switch, left f32)."""
    block = _device_block(ctx, call)
    if block is not None:
        return block
    where = _enclosing_function(ctx, call)
    if where is not None and ctx.memo(("device blocks",), lambda: _has_device_blocks(ctx)):
        blocked = ctx.memo(("device block of the calls of", id(where)), lambda: _device_block_of_calls(ctx, where))
        if blocked is not None:
            return blocked
    setters = ctx.memo(("default device setters",), lambda: _default_device_setters(ctx))
    if not setters:
        return None
    at = ctx.pos(call)
    found = None
    for setter in setters:
        home = _enclosing_function(ctx, setter)
        if home is where and ctx.pos(setter) < at:
            found = setter.args[0].value  # earlier in the same function (or both at module level)
        elif where is not None and home is not where and (home is None or ctx.pos(setter) < at or len(setters) == 1):
            # another function's factory: it runs when called, after the default was set (a class a
            # `main` that sets it builds: a metric's `torch.zeros(())`, bench/unseen/hunt10 lrfind_actions)
            found = setter.args[0].value
    return found


def _device_block(ctx: FileContext, node: cst.CSTNode) -> cst.BaseExpression | None:
    """``X`` of the innermost ``with torch.device(X):`` around ``node``, or None."""
    for anc in ctx.ancestors(node):
        if isinstance(anc, cst.With) and anc.body is not node:
            for item in anc.items:
                made = item.item
                if (
                    isinstance(made, cst.Call)
                    and len(made.args) == 1
                    and "torch.device" in ctx.qualified_names(made.func)
                    and not _inside(ctx, node, frozenset({id(item)}))
                ):
                    return made.args[0].value
    return None


def _device_block_of_calls(ctx: FileContext, function: cst.FunctionDef) -> cst.BaseExpression | None:
    """``X`` when every call of ``function`` in the file (by its name) is inside ``with torch.device(X):``
    blocks naming one device: its factories without ``device=`` run there (a batch helper called in the
    training loop's block made its tensors on the XLA device, f32 where the legacy run had bf16: a hunt's);
    None otherwise."""
    found: list[cst.BaseExpression] = []
    calls = ctx.memo(("calls of the file's functions",), lambda: _calls_by_function(ctx))
    for call in calls.get(id(function), []):
        block = _device_block(ctx, call) if _enclosing_function(ctx, call) is not function else None
        if block is None:
            return None
        found.append(block)
    codes = {ctx.code(d) for d in found}
    return found[0] if len(codes) == 1 else None


def _has_device_blocks(ctx: FileContext) -> bool:
    """Whether the file has a ``with torch.device(...):`` block (most have none: their calls are not gathered)."""
    return any(
        isinstance(item.item, cst.Call) and "torch.device" in ctx.qualified_names(item.item.func)
        for block in ctx.nodes(cst.With)
        for item in block.items
    )


def _calls_by_function(ctx: FileContext) -> dict[int, list[cst.Call]]:
    """The calls of the file by the id of the function of the file they call (one pass over the file's calls)."""
    found: dict[int, list[cst.Call]] = {}
    for call in ctx.nodes(cst.Call):
        if isinstance(call.func, cst.Name):
            for target in definitions(ctx, call.func):
                if isinstance(target, cst.FunctionDef):
                    found.setdefault(id(target), []).append(call)
    return found


def _default_device_setters(ctx: FileContext) -> list[cst.Call]:
    """The file's ``torch.set_default_device(X)`` calls, in the file's order."""
    return [
        call
        for call in ctx.nodes(cst.Call)
        if len(call.args) == 1 and "torch.set_default_device" in ctx.qualified_names(call.func)
    ]


def _enclosing_function(ctx: FileContext, node: cst.CSTNode) -> cst.FunctionDef | None:
    return next((a for a in ctx.ancestors(node) if isinstance(a, cst.FunctionDef)), None)


def _is_host_device(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` names a device other than the XLA one in the code itself: a string
    (``"cpu"``, ``"cuda:0"``) or ``torch.device`` of one, a host tensor's ``.device``
    (:func:`_host_tensor`), or a name bound only to such."""
    if isinstance(expr, cst.SimpleString):
        return True  # an "xla..." string is the XLA device: _is_device said so first
    if isinstance(expr, cst.Attribute) and expr.attr.value == "device":
        return _host_tensor(ctx, expr.value)
    if isinstance(expr, cst.Call) and ctx.qualified_names(expr.func) & {"torch.device"} and expr.args:
        return isinstance(expr.args[0].value, cst.SimpleString)
    values = _bound_values(ctx, expr)
    return bool(values) and all(_is_host_device(ctx, value) for value in values)


def _is_device(ctx: FileContext, expr: cst.BaseExpression, depth: int) -> bool:
    """Whether ``expr`` is the XLA device: ``torch_xla.device()`` / ``xm.xla_device()`` or a name
    bound to one, ``torch.device("xla")`` / ``"xla:0"``, a tensor's ``.device``, or a parameter named
    for a device; a name bound only to such. A host device (``"cpu"``) or one the code does not
    tell (``args.device``) is not."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Call):
        if ctx.qualified_names(expr.func) & DEVICE_FUNCTIONS:
            return True
        if ctx.qualified_names(expr.func) & {"torch.device"} and expr.args:
            return _is_device(ctx, expr.args[0].value, depth + 1)
        return False
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return isinstance(value, str) and value.startswith("xla")
    if isinstance(expr, cst.Attribute):
        if expr.attr.value == "device" and not m.matches(expr.value, m.Name("self") | m.Name("args")):
            return not _host_tensor(ctx, expr.value)  # a tensor's .device
        values = _self_attribute_values(ctx, expr)
        return bool(values) and all(_is_device(ctx, value, depth + 1) for value in values)
    if not isinstance(expr, cst.Name):
        return False
    return expr.value in device_names(ctx) or _a_name_bound_to_the_device(ctx, expr, depth)


def _host_tensor(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """Whether the code shows ``expr`` a tensor on the host: a name whose every value (a function's
    parameter: what every call passes) is brought back by ``.cpu()`` as its last move
    (``corrupt(x.cpu(), gen)``; ``torch.rand(x.shape, device=x.device)`` in ``corrupt`` is a host
    tensor, which the switch left f32: found by a hunt)."""
    values = _bound_values(ctx, expr) if isinstance(expr, cst.Name) else [expr]
    return bool(values) and all(_last_move(value) == "cpu" for value in values)


def _on_host(ctx: FileContext, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether the code shows ``expr`` computed on the host: it brings a tensor back (``.cpu()``,
    ``.numpy()``, ``.item()``, ``.tolist()``), makes one from a shape with no device where none is set
    by default (``torch.arange(n) < k``), or reads a name whose every value is such (a function's
    parameter: what every call passes)."""
    if depth > _MAX_DEPTH:
        return False
    for call in [*findall(expr, m.Call()), *([expr] if isinstance(expr, cst.Call) else [])]:
        assert isinstance(call, cst.Call), "findall of m.Call()"
        if m.matches(call.func, m.Attribute(attr=m.OneOf(*map(m.Name, _HOST_METHODS)))):
            return True
        if ctx.qualified_names(call.func) & _SHAPE_FACTORIES:
            device = _device_argument(ctx, call)
            if device is None or _is_host_device(ctx, device):
                return True
    for name in findall(expr, m.Name()):
        parent = ctx.parent(name)
        if isinstance(name, cst.Name) and not (isinstance(parent, cst.Attribute) and parent.attr is name):
            values = _bound_values(ctx, name)
            if values and all(_on_host(ctx, value, depth + 1) for value in values):
                return True
    return False


def _a_data_class(cls: cst.ClassDef) -> bool:
    """Whether ``cls`` is a dataset (it defines ``__getitem__`` or ``__iter__``): its code runs on the
    host, in the data loader's workers, and hands the host's tensors to the loop."""
    return any(isinstance(st, cst.FunctionDef) and st.name.value in ("__getitem__", "__iter__") for st in cls.body.body)


def _last_move(expr: cst.BaseExpression) -> str | None:
    """The last of ``.cpu()`` / ``.to(...)`` / ``.cuda()`` in ``expr``'s method chain (``x.cpu().float()``:
    ``"cpu"``), or None."""
    node: cst.BaseExpression = expr
    while isinstance(node, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            if node.func.attr.value in ("cpu", "to", "cuda"):
                return node.func.attr.value
            node = node.func.value
        elif isinstance(node, cst.Call):
            return None
        else:
            node = node.value
    return None


def _a_name_bound_to_the_device(ctx: FileContext, name: cst.Name, depth: int) -> bool:
    """Whether every binding of ``name`` is a parameter named for a device or an assignment of
    the XLA device (:func:`_is_device`), and there is one."""
    scope = ctx.scopes.get(name)
    bindings = list(scope[name.value]) if scope is not None else []
    if not bindings:
        return False
    for binding in bindings:
        node = getattr(binding, "node", None)
        if isinstance(node, cst.Param):
            named = node.name.value.lower()
            if _DEVICE_WORD not in named and named not in _DEVICE_ABBREVIATIONS:
                return False
            continue
        target = ctx.parent(node) if node is not None else None
        assign = ctx.parent(target) if target is not None else None
        if not (isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign)):
            return False
        if not _is_device(ctx, assign.value, depth + 1):
            return False
    return True


def _self_attribute_values(ctx: FileContext, expr: cst.Attribute) -> list[cst.BaseExpression]:
    """The values ``self.<attr>`` is assigned in its class (``self.device = xm.xla_device()`` in
    ``__init__``, read as ``self.device`` in ``evaluate``), when ``expr`` is such a read in a method
    of the class (:func:`.bindings.self_assigned`); empty otherwise."""
    if not m.matches(expr.value, m.Name("self")):
        return []
    cls = ctx.enclosing(expr, cst.ClassDef)
    return self_assigned(ctx, cls, expr.attr.value) if cls is not None else []


# -- the unit's examples (tests/test_unit_examples.py) -------------------------------------------------
_LOOP = """
def evaluate(model, batches, device):
    total = torch.zeros((), device=device)
    for x, y in batches:
        total += torch.nn.functional.cross_entropy(model(x.to(device)), y.to(device))
    return total.item()


device = torch_xla.device()
model = torch.nn.Linear(4, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batches = [(torch.randn(2, 4), torch.tensor([0, 1]))]
print(evaluate(model, batches, device))
"""

_TRAINER = """
class Trainer:
    def __init__(self, model):
        self.device = torch_xla.device()
        self.model = model.to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def evaluate(self, batches):
        total = torch.zeros((), device=self.device)
        for x, y in batches:
            total += torch.nn.functional.cross_entropy(self.model(x), y)
        return total.item()


trainer = Trainer(torch.nn.Linear(4, 3))
print(trainer.evaluate([(torch.randn(2, 4), torch.tensor([0, 1]))]))
"""

EXAMPLES = (
    Example(
        "a trainer class's accumulator on its own device attribute",
        HEADER + _TRAINER,
        False,
        ("        total = torch.zeros((), device=self.device, dtype=torch.bfloat16)",),
        ("BFM154",),
    ),
    Example(
        "a trainer class whose device attribute is also set from outside the code's view: decided at run time",
        HEADER
        + _TRAINER.replace("        self.optimizer =", "        self.device = pick_device()\n        self.optimizer ="),
        False,
        ("        total = bf16_on_xla(torch.zeros((), device=self.device))",),
        ("BFM154",),
    ),
    Example(
        "an evaluation loop's accumulator on the device",
        HEADER + _LOOP,
        False,
        ("    total = torch.zeros((), device=device, dtype=torch.bfloat16)",),
        ("BFM154",),
    ),
    Example(
        "the accumulator on the host",
        HEADER + _LOOP.replace("torch.zeros((), device=device)", "torch.zeros(())"),
        True,
        ("    total = torch.zeros(())",),
        (),
    ),
    Example(
        "the accumulator given its dtype",
        HEADER + _LOOP.replace("torch.zeros((), device=device)", "torch.zeros((), device=device, dtype=torch.float32)"),
        True,
        ("    total = torch.zeros((), device=device, dtype=torch.float32)",),
        (),
    ),
    Example(
        # float64 on the device was bf16 under XLA_USE_BF16 (BFM048 use_bf16, :func:`float64_on_device`)
        "the accumulator named float64: bf16, as under the switch",
        HEADER + _LOOP.replace("torch.zeros((), device=device)", "torch.zeros((), device=device, dtype=torch.float64)"),
        False,
        ("    total = torch.zeros((), device=device, dtype=torch.bfloat16)",),
        (),
    ),
    Example(
        "an accuracy computed on the device",
        HEADER
        + _LOOP.replace(
            "    return total.item()",
            "    hits = (model(x.to(device)).argmax(-1) == y.to(device)).float().mean()\n"
            "    return total.item(), hits.item()",
        ),
        False,
        (
            "    total = torch.zeros((), device=device, dtype=torch.bfloat16)",
            "    hits = (model(x.to(device)).argmax(-1) == y.to(device)).to(torch.bfloat16).mean()",
        ),
        ("BFM154", "BFM154"),
    ),
)
