"""The model's inputs after ``model.to(torch.bfloat16)``: floating ones cast, integer ones left.

Under the legacy switch every floating tensor on the device was bf16, inputs included, while
integer tensors (token ids, labels) stayed integer (torch-xla
``torch_xla/csrc/dtype.cpp``, ``MaybeDowncastToXlaDeviceType``). A bf16 model fed an f32 tensor
crashes (``Input type (float) and bias type (c10::BFloat16) should be the same`` for conv, ``input must have the type
torch.bfloat16`` for RNNs, the HLO verifier's "mixed precision is disallowed" for linear at
sync). So once the model is cast, every floating input must be cast too:

* where :class:`~.dtype_flow.DtypeFlow` tells each argument of each model call, the floating
  ones get a visible ``.to(torch.bfloat16)`` at the call and the integer ones nothing;
* where it cannot tell one of them, or the model is called outside this file, a forward
  pre-hook on the model casts the floating tensors of every call at run time (integers
  untouched), which is what PyTorch Lightning's bf16-true precision does with
  ``convert_input`` after ``convert_module``. One hook covers every call site: training and
  evaluation loops, calls made in other modules, positional and keyword arguments.
* a floating loss target is cast where it is known to be floating; where it cannot be told it
  goes through the same run-time helper as the hook (``floating_to_bf16(target)``);
* under a switch that kept f64 as f32 on the device (XLA_DOWNCAST_BF16), a floating tensor moved to
  the device and then upcast in the loss (``yb.double()``, the idiom for "compute this in fp32")
  held bf16 values there: the upcast widened a bf16-rounded tensor. Once ``.double()`` becomes
  ``.float()`` the tensor would be the full f32 one, so the loss would be computed against a
  different target from the first step; it is rounded the way the switch rounded it
  (``yb.to(torch.bfloat16).double()``, then ``.float()``).

A model is never cast with its inputs left to crash.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeGuard

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from . import snippets
from .apply import EditPlan
from .bindings import assigned_value, assigned_values, bound_by_import, python_number
from .conditions import evaluable_like
from .context import FileContext, findall
from .device_use import DEVICE_FUNCTIONS
from .dtype_flow import FLOAT, INT, DtypeFlow
from .model_site import (
    ModelCall,
    backpropagated_only,
    describe_call,
    one_line,
    reads_wrapped,
    runner_calls,
    same_model,
    unseen_reach,
)
from .optimizers import add_keywords
from .outcome import Refusal

_NOT_CALLERS = ("torch.", "torch_xla.", "copy.", "builtins.")


"""Packages whose functions a model is handed to without its forward being run with new inputs
(``copy.deepcopy(model)``, ``torch.compile(model)``, ``print(model)``): no run-time input cast for them."""


_SIZE_READS = frozenset({"shape", "size", "device", "ndim", "dim", "numel", "is_floating_point"})
"""Attributes of a tensor whose read computes nothing in its dtype (:meth:`InputCasts._computes_nothing`)."""

_ARITHMETIC = m.BinaryOperation()
_BACKWARD = m.Call(func=m.Attribute(attr=m.Name("backward")))


_RETURNS_SELF = frozenset({"cpu", "cuda", "to", "eval", "train", "float", "half", "bfloat16", "double"})
"""nn.Module methods that return the module itself (torch/nn/modules/module.py): ``model.cpu().eval()`` is ``model``."""


def _the_module(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` without the calls of :data:`_RETURNS_SELF` methods on it (``model.cpu().eval()``: ``model``)."""
    while m.matches(expr, m.Call(func=m.Attribute(attr=m.Name()))):
        assert isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute), "matched"
        if expr.func.attr.value not in _RETURNS_SELF:
            break
        expr = expr.func.value
    return expr


def scripted_by(ctx: FileContext, model: cst.BaseExpression) -> cst.Call | None:
    """The call of a ``rules/torch_api.toml`` ``[model_callers] scripters`` function (``torch.jit.script``)
    that compiles ``model``: handed it (``torch.jit.script(model.cpu().eval())``) or the one that made it
    (``model = torch.jit.script(Net()).to(device)``); None when there is none. TorchScript compiles a module's
    forward pre-hooks with its forward and refuses a ``with_kwargs`` one, and a ScriptModule takes no Python
    hook ("register_forward_pre_hook is not supported on ScriptModules", torch/jit/_script.py): the run-time
    input cast cannot be had for such a model."""
    scripters = ctx.rules.torch_api.model_scripters
    short = {name.rsplit(".", 1)[-1] for name in scripters}

    def named(func: cst.BaseExpression) -> str | None:  # a plain test: every call of the file is looked at
        return (
            func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        )

    calls = ctx.memo(
        ("scripter calls",),
        lambda: [
            c
            for c in ctx.nodes(cst.Call)
            if named(c.func) in short and c.args and ctx.qualified_names(c.func) & scripters
        ],
    )
    if not calls:
        return None
    for call in calls:
        if same_model(ctx, _the_module(call.args[0].value), model):
            return call
    if isinstance(model, cst.Name):
        for value in assigned_values(ctx, model):
            made = _the_module(value)
            if any(made is c for c in calls):
                assert isinstance(made, cst.Call), "one of the calls"
                return made
    return None


def arithmetic_partners(ctx: FileContext, call: ModelCall) -> list[cst.BaseExpression]:
    """The names a model's output meets in arithmetic before the backward pass, in the block of
    the call: ``y`` and ``w`` of ``pred = model(x)`` then ``loss = (w * (pred - y) ** 2).mean()``.

    A loss written as arithmetic rather than a loss call (:attr:`ModelCall.losses` holds those)
    has the same operands a loss call has: under the legacy switch a floating one moved to the
    device was bf16 like the output (torch-xla ``torch_xla/csrc/dtype.cpp``), and left f32 after
    ``model.to(torch.bfloat16)`` it promotes the bf16 output to f32 (PyTorch's type promotion),
    so the loss and its gradient run in f32 where the legacy run computed them in bf16, without
    a crash. The output flows through the names assigned from it in the later statements of the
    block (``diff = pred - y``), up to the statement that calls ``.backward()``, and from the call's
    own statement (``loss = (model(x) - x).pow(2).mean()``: found by a hunt of our own). Only plain names
    and upcasts of plain names (``y.double()``) are returned; the caller keeps the floating tensors
    moved to the device among them."""
    stmt = call.statement
    block = ctx.block_of(stmt) if stmt is not None else None
    if stmt is None or block is None:
        return []
    partners: list[cst.BaseExpression] = []
    own = call.call
    for op in findall(stmt, _ARITHMETIC):  # the call's own statement: `loss = (model(x) - x).pow(2).mean()`
        assert isinstance(op, cst.BinaryOperation), "_ARITHMETIC matches binary operations"
        for side, other in ((op.left, op.right), (op.right, op.left)):
            if _partner_name(other, set()) and any(node is own for node in findall(side, m.Call())):
                partners.append(other)
    if not call.outputs:
        return partners
    flowing = set(call.outputs)
    for later in block.body[ctx.index_in_block(block, stmt) + 1 :]:
        if not isinstance(later, cst.SimpleStatementLine):
            break  # a loop or a branch: what runs after it is not followed
        for op in findall(later, _ARITHMETIC):
            assert isinstance(op, cst.BinaryOperation), "_ARITHMETIC matches binary operations"
            for side, other in ((op.left, op.right), (op.right, op.left)):
                if _partner_name(other, flowing) and _reads(side, flowing):
                    partners.append(other)
        targets = [n for small in later.body if isinstance(small, cst.Assign) for n in _assigned_in(small)]
        if targets and _reads(later, flowing):
            flowing.update(targets)
        if findall(later, _BACKWARD):
            break
    return partners


def _partner_name(other: cst.BaseExpression, flowing: set[str]) -> bool:
    """Whether ``other`` is a name, or a name's ``.double()``, not among the ``flowing`` ones."""
    if m.matches(other, m.Call(func=m.Attribute(value=m.Name(), attr=m.Name("double")), args=[])):
        assert isinstance(other, cst.Call) and isinstance(other.func, cst.Attribute), "matched above"
        other = other.func.value
    return isinstance(other, cst.Name) and other.value not in flowing


def _reads(node: cst.CSTNode, names: set[str]) -> bool:
    return any(n.value in names for n in findall(node, m.Name()))


def _assigned_in(assign: cst.Assign) -> list[str]:
    return [n.value for t in assign.targets for n in findall(t.target, m.Name())]


class InputCasts:
    """Plans the input casts of the models of one file into ``plan``; every change is made
    under ``guard`` (the condition bf16 is on under, None when unconditional)."""

    def __init__(
        self,
        ctx: FileContext,
        flow: DtypeFlow,
        plan: EditPlan,
        guard: cst.BaseExpression | None,
        round_upcasts: bool = False,
        guard_at: Sequence[cst.CSTNode] = (),
    ) -> None:
        """``round_upcasts``: the file ran under a switch that made f32 on the device bf16 and f64
        f32 (XLA_DOWNCAST_BF16, ``f64_becomes = "f32"`` in its rule file), so a ``.double()`` of
        a floating tensor moved to the device widened bf16-rounded values (:meth:`_rounded_upcast`).
        ``guard_at``: the statements where ``guard`` is written (the writes); a cast planned where its
        names do not denote the same bindings (another function's) is recorded in ``unguarded``:
        written there it would raise NameError, so the planner keeps the switch (BFM041)."""
        self.ctx, self.flow, self.plan, self.guard = ctx, flow, plan, guard
        self.guard_at = list(guard_at)
        self.unguarded: list[cst.CSTNode] = []
        self.round_upcasts = round_upcasts
        self.helper_added = False

    def plan_model(
        self,
        model: cst.BaseExpression,
        calls: list[ModelCall],
        compiled: list[cst.BaseExpression] | None = None,
    ) -> list[cst.BaseStatement]:
        """Plan the casts for ``model`` called at ``calls``; returns the statements to put right
        after the model cast (the pre-hook registration, when the run-time path is needed).
        ``compiled``: the names the model is called by through ``torch.compile``; a floating
        input of such a call is cast where it is moved to the device when that can be found
        (:meth:`_transfer_of`), since a cast on the device just before a dynamo graph is one more
        XLA graph to compile (``rules/torch_api.toml`` ``[model_wrappers]``). So is a floating input
        of a model whose inputs the pre-hook casts: the hook's cast runs on the device, where the
        switch converted the tensor in the move itself; a graph split before the model (an op that
        falls back to the CPU, ``nn.EmbeddingBag`` with ``per_sample_weights``) then compiled the cast
        alone once per batch shape (measured, torch-xla 2.9 on the XLA CPU device: 3 graphs per new
        shape against 1, the weights cast in the move; bench/unseen/hunt10 counts_compose)."""
        after = self._plan_arguments(model, calls, compiled or [])
        model_nodes = {id(c.call) for c in calls}
        # the names the model's calls are assigned to, by the function they are in (one pass)
        by_function: dict[int, set[str]] = {}
        for c in calls:
            by_function.setdefault(id(self.ctx.enclosing(c.call, cst.FunctionDef)), set()).update(c.outputs)
        for call in calls:
            outputs = frozenset(by_function[id(self.ctx.enclosing(call.call, cst.FunctionDef))])
            for loss in call.losses:
                moved_only = backpropagated_only(self.ctx, loss.func)
                for arg in loss.args:
                    self._loss_target(call, arg.value, model_nodes, outputs, moved_only)
            for partner in arithmetic_partners(self.ctx, call):
                # a tensor moved to the device (a Python number of the same flow is not a tensor)
                if self._cast_in_its_move(partner):
                    continue
                if self._transfer_of(partner, partner) is not None and self._kind(partner) == FLOAT:
                    shared = self._shared_transfer(partner, model_nodes)
                    if shared is not None:
                        self._cast_moved(shared, True)
                    else:
                        self._cast(partner)
                elif (moved := self._rounded_upcast(partner)) is not None:
                    self._cast_inside(moved)
        return after

    def _plan_arguments(
        self, model: cst.BaseExpression, calls: list[ModelCall], compiled: list[cst.BaseExpression]
    ) -> list[cst.BaseStatement]:
        """The casts of the arguments of ``model``'s ``calls`` (:meth:`plan_model`); returns the pre-hook's
        registration when the run-time path is needed. An argument moved to the device and read elsewhere
        too is cast in the move (:meth:`_shared_transfer`): every read saw bf16 under the switch."""
        unknown, static = self._arguments(calls, compiled)
        model_nodes = {id(c.call) for c in calls}
        moves = self._downcast_moves(model, calls, unknown)
        if moves:
            # under XLA_DOWNCAST_BF16 a float64 input was float32 on the device, a float32 one bf16: the bf16 hook
            # would round a NumPy float64 batch to bf16 (a hunt's standardised columns, legacy f32): each input
            # bound by a move goes through `downcast_floating` there, as a loss target of unknown dtype does
            for move in moves:
                self._cast_moved(move, False)
            unknown = []
        reason = self.hook_reason(model, calls, unknown)
        if reason is not None:
            for _, transfer, _ in static:
                if transfer is not None:  # the hook's cast would run on the device: cast in the move instead
                    self._cast_at_transfer(transfer)
            for expr in unknown:
                if (shared := self._shared_transfer(expr, model_nodes)) is not None:
                    self._cast_moved(shared, False)
            return self._pre_hook(model, *reason)
        for expr, transfer, through_dynamo in static:
            if (shared := self._shared_transfer(expr, model_nodes)) is not None:
                self._cast_moved(shared, True)
            elif transfer is None or not through_dynamo:
                self._cast(expr)
            else:
                self._cast_at_transfer(transfer)
        return []

    def _arguments(
        self, calls: list[ModelCall], compiled: list[cst.BaseExpression]
    ) -> tuple[list[cst.BaseExpression], list[tuple[cst.BaseExpression, cst.Call | None, bool]]]:
        """The arguments of the model's ``calls`` whose dtype cannot be told, and the floating ones,
        each with the move to the device that last bound it (:meth:`_transfer_of`; None: none found)
        and whether its call goes through ``torch.compile`` (one of the ``compiled`` names)."""
        unknown: list[cst.BaseExpression] = []
        static: list[tuple[cst.BaseExpression, cst.Call | None, bool]] = []
        for call in calls:
            through_dynamo = any(same_model(self.ctx, call.call.func, c) for c in compiled)
            for arg in call.inputs:
                kind = self._input_kind(arg.value) if not arg.star else "unknown"
                if kind == FLOAT:
                    value = arg.value
                    moved = value if _a_transfer(value, self.flow) else self._transfer_of(value, call.call)
                    static.append((value, moved, through_dynamo))
                elif kind == "unknown":
                    unknown.append(arg.value)
                    # a name bound elsewhere too (`w` unpacked from a batch, then `w = w.float().to(device)`):
                    # floating where the move that last bound it says so
                    transfer = self._transfer_of(arg.value, call.call)
                    if transfer is not None and self.flow.infer(transfer) == FLOAT:  # (a name bound once is FLOAT)
                        static.append((arg.value, transfer, through_dynamo))
        return unknown, static

    def _downcast_moves(
        self, model: cst.BaseExpression, calls: list[ModelCall], unknown: list[cst.BaseExpression]
    ) -> list[cst.Call]:
        """Under a switch that made f64 f32 (``round_upcasts``), the moves that bind each of the ``unknown`` inputs
        of ``model``'s ``calls``, when every one is bound by one and nothing else asks for the hook; else empty."""
        if not (self.round_upcasts and unknown):
            return []
        moves = [expr if _a_transfer(expr, self.flow) else self._transfer_of(expr, expr) for expr in unknown]
        if not all(moves) or self.hook_reason(model, calls, []) is not None:
            return []
        return [move for move in moves if move is not None]

    def run_time_reason(
        self, model: cst.BaseExpression, calls: list[ModelCall], uncalled: bool = True
    ) -> tuple[cst.CSTNode, str] | None:
        """:meth:`hook_reason` for the arguments of ``calls`` as planning decides it (no hook where each input
        is cast in its move under XLA_DOWNCAST_BF16): whether ``model`` will get a run-time pre-hook."""
        unknown = self.unknown_inputs(calls)
        if self._downcast_moves(model, calls, unknown):
            return None
        return self.hook_reason(model, calls, unknown, uncalled)

    def hook_reason(
        self,
        model: cst.BaseExpression,
        calls: list[ModelCall],
        unknown: list[cst.BaseExpression],
        uncalled: bool = True,
    ) -> tuple[cst.CSTNode, str] | None:
        """Why the inputs of ``model`` (called at ``calls``, with the arguments ``unknown`` of a dtype
        the code does not tell) must be cast at run time, by a forward pre-hook, with the node a
        finding points at: an input of an unknown dtype, the model handed to code of another file
        (:meth:`_handed_elsewhere`), run by a function that calls it with inputs of its own
        (``[model_callers]``: ``torch.func.functional_call(model, params, (x,))``, whose ``x`` no cast at
        a call reaches: a hunt's SAM step), held in a collection whose calls are not followed
        (:func:`.model_site.unseen_reach`), or, with ``uncalled``, no call of it in this file; None when
        every input is told."""
        ctx = self.ctx
        if unknown:
            codes = list(dict.fromkeys(ctx.code(e) for e in unknown))
            shown = ", ".join(f"`{c}`" for c in codes[:3]) + (" ..." if len(codes) > 3 else "")
            return unknown[0], f"the dtype of {shown} cannot be told from the code"
        if not calls:
            return (model, "it is not called in this file") if uncalled else None
        handed = self._handed_elsewhere(model)
        if handed is not None:
            return handed, f"it is handed to `{ctx.code(handed.func)}`, code of another file that may call it"
        runner = next(iter(runner_calls(ctx, model)), None)
        if runner is not None:  # `functional_call(model, params, (x,))` calls the module: the hook fires there
            return runner, f"`{ctx.code(runner.func)}` runs its forward with inputs of its own"
        held = unseen_reach(ctx, model)
        if held is not None:  # `nets = [model, ema]; nets[0](x)`: a call the file makes that the codemod cannot see
            return held, f"it is held in `{one_line(ctx.code(held))}`, whose calls the codemod does not follow"
        return None

    def unknown_inputs(self, calls: list[ModelCall]) -> list[cst.BaseExpression]:
        """The arguments of ``calls`` whose dtype the code does not tell (an unpacked one included)."""
        return self._arguments(calls, [])[0]

    def _pre_hook(self, model: cst.BaseExpression, anchor: cst.CSTNode, why: str) -> list[cst.BaseStatement]:
        """The registration of the run-time pre-hook on ``model`` (the helper planned with it), reported
        (BFM022) at ``anchor`` with ``why`` (:meth:`hook_reason`); and on the module it wraps when the file
        reads that (``ema.module``, :func:`.model_site.reads_wrapped`): ``ema.module(x)`` runs without
        ``ema``'s hooks, and an ``AveragedModel`` copied the model before its hook was registered."""
        ctx = self.ctx
        self._need_helper()
        ctx.report("BFM022", anchor, fixed=True, model=ctx.code(model), hook=snippets.BF16_INPUTS_HOOK, why=why)
        hooked = [ctx.code(model)]
        wrapped = reads_wrapped(ctx, model)
        if wrapped is not None:
            hooked.append(ctx.code(model) + "." + wrapped.attr.value)
        return [snippets.forward_pre_hook_statement(h, snippets.BF16_INPUTS_HOOK) for h in hooked]

    def _loss_target(
        self,
        call: ModelCall,
        target: cst.BaseExpression,
        model_nodes: set[int],
        outputs: frozenset[str] = frozenset(),
        moved_only: bool = False,
    ) -> None:
        """A loss argument of ``call``: the model's output (of this call or another, ``criterion(model(v1),
        model(v2))``, or a name another call's output is assigned to: ``outputs``) left as it is; a
        floating target cast, one of unknown dtype cast at run time, the upcast of a tensor moved to
        the device rounded as the switch rounded it. ``moved_only``: a loss known only by its result
        being backpropagated, whose arguments may be hyperparameters (``args.temperature``): one of
        unknown dtype is cast only where it was moved to the device (:meth:`_transfer_of`)."""
        names = {n.value for n in findall(target, m.Name())}
        if names & (set(call.outputs) | set(outputs)) or any(id(a) in model_nodes for a in findall(target, m.Call())):
            return
        if self._a_number(target) or self._cast_in_its_move(target):
            return  # a Python number (`beta=1 / 9` of smooth_l1_loss), a string, a size; or cast already
        if self._drawn(target):
            return  # a distribution's own draw (`dist.log_prob(dist.sample())`): its dtype is the model's, or integer
        kind = self._kind(target)
        shared = self._shared_transfer(target, model_nodes) if kind in (FLOAT, "unknown") else None
        if shared is not None:
            self._cast_moved(shared, kind == FLOAT)
        elif kind == FLOAT:
            self._cast(target)
        elif kind == "unknown" and (not moved_only or self._transfer_of(target, target) is not None):
            self._runtime(target)
        elif (moved := self._rounded_upcast(target)) is not None:
            self._cast_inside(moved)

    def _drawn(self, target: cst.BaseExpression) -> bool:
        """Whether ``target`` is a name every binding of which is a draw, ``<dist>.sample()`` or
        ``.rsample()``: what the model's distribution gives, already in its dtype (or integer)."""
        values = assigned_values(self.ctx, target) if isinstance(target, cst.Name) else []
        return bool(values) and all(
            m.matches(v, m.Call(func=m.Attribute(attr=m.Name("sample") | m.Name("rsample")))) for v in values
        )

    def _handed_elsewhere(self, model: cst.BaseExpression) -> cst.Call | None:
        """The first call that hands ``model`` itself to code this file does not define (a function
        of an imported module: ``predict_proba(model, loader)``), which may call it with inputs
        the file never sees: the inputs are then cast at run time. torch's, torch-xla's, ``copy``'s
        and the builtins' functions are not such code (they do not run the forward with new inputs)."""
        if not isinstance(model, cst.Name):
            return None
        ctx = self.ctx
        local = ctx.memo(
            ("inputs: the file's functions",),
            lambda: (
                {d.name.value for d in ctx.nodes(cst.FunctionDef)} | {d.name.value for d in ctx.nodes(cst.ClassDef)}
            ),
        )
        # the file's calls by the plain names they are handed, once per file (a file of many models asks for each)
        by_name = ctx.nodes_grouped(
            cst.Call,
            "calls by name arguments",
            lambda c: {a.value.value for a in c.args if isinstance(a.value, cst.Name)},
        )
        for call in by_name.get(model.value, ()):
            if not any(same_model(ctx, a.value, model) for a in call.args if isinstance(a.value, cst.Name)):
                continue
            if not bound_by_import(ctx, call.func) or (isinstance(call.func, cst.Name) and call.func.value in local):
                continue  # a method of an object, or the file's own function: the file's calls are read
            names = ctx.qualified_names(call.func)
            if not names or any(n.startswith(_NOT_CALLERS) for n in names):
                continue
            if ctx.tree is not None and ctx.tree.factory(names) is not None:
                continue  # an optimizer factory of the tree (read): it builds over the parameters
            return call
        return None

    def needs_hook(self, calls: list[ModelCall]) -> bool:
        """Whether :meth:`plan_model` would register the run-time pre-hook for a model called at
        ``calls``: it is called nowhere in the file, or an input's dtype cannot be told."""
        return not calls or any(
            arg.star or self._input_kind(arg.value) == "unknown" for call in calls for arg in call.inputs
        )

    def plan_method(self, call: cst.Call) -> None:
        """The floating arguments of ``call``, a method of a module on the device that runs its
        computation without the forward pre-hook (``vae.encode(x)``, ``model.generate(ids)``):
        cast where known floating, at run time (floating tensors only) where the dtype cannot be
        told; integer ones left."""
        assert isinstance(call.func, cst.Attribute), "a method call"
        for arg in call.args:
            if arg.star:
                continue
            kind = self._input_kind(arg.value)
            if kind == FLOAT:
                self._cast(arg.value)
            elif kind == "unknown":
                self._runtime(arg.value, method=self.ctx.code(call.func))
        # the losses computed from what it returns take their targets as a forward call's do
        # (`F.binary_cross_entropy_with_logits(model.decode(z), x)`, `model.likelihood(z).log_prob(x)`:
        # left f32, the target promoted the loss to f32 where the legacy run computed it in bf16)
        described = describe_call(self.ctx, call)
        for loss in described.losses:
            moved_only = backpropagated_only(self.ctx, loss.func)
            for loss_arg in loss.args:
                self._loss_target(described, loss_arg.value, {id(call)}, frozenset(described.outputs), moved_only)

    # -- helpers ---------------------------------------------------------------------------
    def _a_device(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is the XLA device (``torch_xla.device()``, a name only ever bound to it)
        or ``torch.device(...)``: an argument that is no tensor."""
        ctx = self.ctx
        if isinstance(expr, cst.Call):
            return bool(ctx.qualified_names(expr.func) & (DEVICE_FUNCTIONS | {"torch.device"}))
        values = assigned_values(ctx, expr) if isinstance(expr, cst.Name) else []
        return bool(values) and all(isinstance(v, cst.Call) and self._a_device(v) for v in values)

    def _kind(self, expr: cst.BaseExpression) -> str:
        """FLOAT (cast it), INT or "explicit" (leave it), or "unknown"."""
        if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float, cst.Lambda)) or m.matches(
            expr, m.Name("None") | m.Name("True") | m.Name("False")
        ):
            return "explicit"
        if m.matches(
            expr,
            m.Call(
                func=m.Attribute(attr=m.Name("float") | m.Name("double") | m.Name("half") | m.Name("bfloat16")), args=[]
            ),
        ):
            return "explicit"  # a dtype the script chose (e.g. a loss computed in fp32 on purpose)
        if self._a_device(expr):
            return "explicit"  # `flow.sample(2048, device)`: no tensor
        if (
            isinstance(expr, cst.Call)
            and m.matches(expr.func, m.Attribute(attr=m.Name("to")))
            and any(self.flow._dtype_class(a.value) is not None for a in expr.args)
        ):
            return "explicit"
        if m.matches(expr, m.Call(func=m.Name(snippets.BF16_FLOATING))):
            return "explicit"  # already migrated
        kind = self.flow.infer(expr)
        return kind if kind in (FLOAT, INT) else "unknown"

    def _input_kind(self, expr: cst.BaseExpression) -> str:
        """:meth:`_kind` of an argument of the cast model's forward or of a method of it, where a cast of the
        script's to full precision (``obs.float()``, ``x.double()``, ``x.to(torch.float32)``:
        ``upcast_methods``, ``f32_dtypes`` and ``f64_dtypes`` of ``rules/model_code.toml``) is FLOAT, cast at
        the call: under the switch that cast on the device gave bf16 (torch-xla
        ``torch_xla/csrc/dtype.cpp``, ``MaybeDowncastToXlaDeviceType``), and left f32 it meets the bf16
        weights, which raises (a policy network's ``agent(obs.float())``). Before a loss the same cast is the
        script's choice of an f32 loss, and :meth:`_kind` leaves it."""
        return FLOAT if self._full_precision_cast(expr) else self._kind(expr)

    def _full_precision_cast(self, expr: cst.BaseExpression) -> bool:
        if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Attribute):
            return False
        rules = self.ctx.rules.model_code
        method = expr.func.attr.value
        if method in rules.upcast_methods:
            return not expr.args
        if method not in ("to", "type"):
            return False
        wide = rules.f32_dtypes | rules.f64_dtypes
        return any(
            (arg.keyword is None or arg.keyword.value == "dtype") and self.ctx.qualified_names(arg.value) & wide
            for arg in expr.args
        )

    def _rounded_upcast(self, expr: cst.BaseExpression) -> cst.Name | None:
        """The name ``y`` of an upcast ``y.double()`` whose ``y`` is a tensor moved to the device
        with no dtype (``y = y.to(device)``), floating or of a dtype the code does not tell, in a file
        where such a tensor, when floating, was bf16 on the device and its ``.double()`` f32
        (torch-xla ``torch_xla/csrc/dtype.cpp``, ``MaybeDowncastToXlaDeviceType``); None otherwise."""
        if not (
            self.round_upcasts
            and m.matches(expr, m.Call(func=m.Attribute(value=m.Name(), attr=m.Name("double")), args=[]))
        ):
            return None
        assert isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute), "matched above"
        name = expr.func.value
        assert isinstance(name, cst.Name), "matched above"
        if self._transfer_of(name, name) is None or self._kind(name) not in (FLOAT, "unknown"):
            return None
        return name

    def _transfer_of(self, expr: cst.BaseExpression, call: cst.CSTNode) -> cst.Call | None:
        """The ``x.to(device)`` that last bound the name ``expr`` before ``call`` (a model call,
        or the name's own use), in the same function (``images = images.to(device)``, or an
        element of ``images, labels = images.to(device), labels.to(device)``), when it names no
        dtype; else None."""
        ctx = self.ctx
        if not isinstance(expr, cst.Name):
            return None
        scope = ctx.scopes.get(expr)
        if scope is None:
            return None
        function = ctx.enclosing(call, cst.FunctionDef)
        before = [
            a.node
            for a in scope[expr.value]
            if isinstance(a, Assignment)
            and isinstance(a.node, cst.Name)
            and ctx.pos(a.node) < ctx.pos(call)
            and ctx.enclosing(a.node, cst.FunctionDef) is function
        ]
        if not before:
            return None
        value = assigned_value(ctx, max(before, key=ctx.pos))
        if value is None or not _a_transfer(value, self.flow):
            return None
        return value

    def _shared_transfer(self, expr: cst.BaseExpression, model_nodes: set[int]) -> cst.Call | None:
        """The move to the device that bound the name ``expr`` (:meth:`_transfer_of`) when what it bound is
        read elsewhere too, other than as an argument of the model's calls (``model_nodes``: their ids),
        which are cast at the call or by the hook: ``y = y.to(dev)``, then ``nll(mu, logvar, y)`` and
        ``F.gaussian_nll_loss(mu, y, var)``. Under the switch every read saw bf16, so the cast goes in the
        move, not at one read (a hunt's heteroscedastic regression: its second loss met an f32 target).
        None otherwise."""
        transfer = self._transfer_of(expr, expr)
        scope = self.ctx.scopes.get(expr) if transfer is not None else None
        if transfer is None or scope is None or not isinstance(expr, cst.Name):
            return None
        for binding in scope[expr.value]:
            if isinstance(binding, Assignment) and isinstance(binding.node, cst.Name):
                if assigned_value(self.ctx, binding.node) is transfer:
                    others = [ref.node for ref in binding.references if ref.node is not expr]
                    return transfer if any(not self._computes_nothing(n, model_nodes) for n in others) else None
        return None

    def _a_number(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a Python number the code shows (:func:`.bindings.python_number`: ``1 / 9``,
        ``-(0.5)``, a module constant) or a ``math`` function or constant (``math.sqrt(2.0)``): a loss's
        hyperparameter, no tensor."""
        if python_number(self.ctx, expr):
            return True
        node = expr.func if isinstance(expr, cst.Call) else expr
        return any(name.startswith("math.") for name in self.ctx.qualified_names(node))

    def _cast_in_its_move(self, expr: cst.BaseExpression) -> bool:
        """Whether the move to the device that bound the name ``expr`` is already rewritten (cast there)."""
        transfer = self._transfer_of(expr, expr)
        return transfer is not None and id(transfer) in self.plan.replace

    def _computes_nothing(self, node: cst.CSTNode, model_nodes: set[int]) -> bool:
        """Whether the read ``node`` computes nothing in its dtype beyond what the input casts see: an
        argument of one of the model's calls (ids ``model_nodes``: cast there, or by the hook), an operand
        of a comparison (``logits.argmax(-1) == labels``: a bool), an index, or a read of its size or
        device (``x.shape``, ``x.size(0)``, ``x.device``)."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Arg):
            return id(self.ctx.parent(parent)) in model_nodes
        if isinstance(parent, cst.Attribute) and parent.value is node:
            return parent.attr.value in _SIZE_READS
        return isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.Index))

    def _cast_moved(self, transfer: cst.Call, floating: bool) -> None:
        """Cast where ``transfer`` moves a tensor to the device, once, reported as a tensor brought to the
        device is (BFM154): ``dtype=torch.bfloat16`` in it when the tensor is floating, else the run-time
        helper around it (``downcast_floating`` under a switch that made float64 float32)."""
        ctx = self.ctx
        if id(transfer) in self.plan.replace:
            return
        if floating:
            self._cast_at_transfer(transfer)
            ctx.report("BFM154", transfer, fixed=True, variant="transfer", code=ctx.code(transfer))
            return
        guard = self._guard_for(transfer)
        if self.round_upcasts:
            self.plan.replace[id(transfer)] = lambda node: snippets.downcast_floating_call(node, guard)
            self._need_downcast_helper()
        else:
            self.plan.replace[id(transfer)] = lambda node: snippets.floating_to_bf16_call(node, guard)
            self._need_helper()
        variant = "runtime_downcast" if self.round_upcasts else "runtime"
        ctx.report("BFM154", transfer, fixed=True, variant=variant, code=ctx.code(transfer))

    def _guard_for(self, node: cst.CSTNode) -> cst.BaseExpression | None:
        """The guard to write at ``node``; a place where it cannot be evaluated is recorded."""
        guard = self.guard
        if guard is not None and self.guard_at:
            if not any(evaluable_like(self.ctx, guard, where, node) for where in self.guard_at):
                self.unguarded.append(node)
        return guard

    def _cast_at_transfer(self, transfer: cst.Call) -> None:
        guard = self._guard_for(transfer)
        self.plan.replace[id(transfer)] = lambda node: add_keywords(node, [("dtype", "torch.bfloat16", "None")], guard)

    def _cast(self, expr: cst.BaseExpression) -> None:
        """``expr.to(torch.bfloat16)`` (under a guard, only where it holds); an upcast method of the script's
        without a guard (``obs.float()``) becomes the cast (``obs.to(torch.bfloat16)``)."""
        guard = self._guard_for(expr)
        if guard is None and isinstance(expr, cst.Call) and not expr.args and self._full_precision_cast(expr):
            self.plan.replace[id(expr)] = _receiver_to_bf16
            return
        self.plan.replace[id(expr)] = lambda node: snippets.cast_to_bf16(node, guard)

    def _cast_inside(self, name: cst.Name) -> None:
        """``name.to(torch.bfloat16)`` where ``name`` is the value of an attribute (``name.double()``),
        or ``floating_to_bf16(name)`` (floating tensors only, at run time) where its dtype cannot be
        told; under a guard the conditional cast is parenthesised."""
        guard, floating = self._guard_for(name), self._kind(name) == FLOAT
        if not floating:
            self._need_helper()

        def cast(node: cst.CSTNode) -> cst.CSTNode:
            assert isinstance(node, cst.BaseExpression), "a name is an expression"
            if floating:
                casted = snippets.cast_to_bf16(node, guard)
            else:
                casted = snippets.floating_to_bf16_call(node, guard)
            if isinstance(casted, cst.IfExp):
                return casted.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return casted

        self.plan.replace[id(name)] = cast

    def _runtime(self, expr: cst.BaseExpression, method: str | None = None) -> None:
        """The run-time cast of ``expr``, an argument of a model method (``method``) or a loss target of a
        dtype the code does not tell: ``floating_to_bf16``; a loss target under a switch that made float64
        float32 on the device (``round_upcasts``: XLA_DOWNCAST_BF16) ``downcast_floating``, which does so
        (a NumPy float64 target was f32 in the legacy loss: verify's trace on a hunt's forecaster)."""
        if id(expr) in self.plan.replace:
            return  # the target of two models' loss (`mse(decoder(adapter(x)), x)`): cast and said once
        guard = self._guard_for(expr)
        fields = {"variant": "loss_target"} if method is None else {"variant": "method", "method": method}
        if method is None and self.round_upcasts:
            self.plan.replace[id(expr)] = lambda node: snippets.downcast_floating_call(node, guard)
            self._need_downcast_helper()
            fields = {"variant": "loss_target_downcast"}
            helper = snippets.DOWNCAST_FLOATING
        else:
            self.plan.replace[id(expr)] = lambda node: snippets.floating_to_bf16_call(node, guard)
            self._need_helper()
            helper = snippets.BF16_FLOATING
        self.ctx.report("BFM022", expr, fixed=True, target=self.ctx.code(expr), helper=helper, **fields)

    def _need_downcast_helper(self) -> None:
        if not any(
            isinstance(st, cst.FunctionDef) and st.name.value == snippets.DOWNCAST_FLOATING for st in self.plan.prelude
        ):
            self.plan.prelude.append(snippets.downcast_floating_helper())

    def _need_helper(self) -> None:
        if not self.helper_added:
            self.plan.prelude.extend(snippets.bf16_inputs_helper())
            self.helper_added = True


def _receiver_to_bf16(node: cst.CSTNode) -> cst.BaseExpression:
    """``x.to(torch.bfloat16)`` for the upcast ``x.float()``."""
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute), "an upcast method call"
    return snippets.cast_to_bf16(node.func.value)


def _a_transfer(expr: cst.BaseExpression, flow: DtypeFlow) -> TypeGuard[cst.Call]:
    """Whether ``expr`` is a move that names no dtype (``x.to(device)``, ``x.float().to(device)``)."""
    return (
        isinstance(expr, cst.Call)
        and m.matches(expr.func, m.Attribute(attr=m.Name("to")))
        and bool(expr.args)
        and not any(a.keyword is not None and a.keyword.value == "dtype" for a in expr.args)
        and not any(flow._dtype_class(a.value) is not None for a in expr.args)
    )


def refuse_scripted(
    inputs: InputCasts,
    models: Sequence[cst.BaseExpression],
    calls: Sequence[list[ModelCall]],
    anchors: Sequence[tuple[str, cst.CSTNode]],
    hook: str,
    uncalled: bool,
) -> bool:
    """Report (BFM024, at each of ``anchors``: (variable, node)) and refuse the migration where one of ``models``
    (called at the matching ``calls``) needs the run-time pre-hook ``hook`` (:meth:`InputCasts.run_time_reason`;
    ``uncalled``: also one the file never calls) and is compiled by ``torch.jit.script`` (:func:`scripted_by`):
    TorchScript compiles a module's forward pre-hooks and refuses a ``with_kwargs`` one, and a ScriptModule takes
    none, so the migrated script would raise where the legacy one ran (a crash is worse than the switch kept).
    Returns whether it refused."""
    ctx = inputs.ctx
    for model, its_calls in zip(models, calls):
        script = scripted_by(ctx, model)
        if script is None:
            continue
        reason = inputs.run_time_reason(model, its_calls, uncalled)
        if reason is None:
            continue
        for variable, anchor in anchors:
            finding = ctx.report(
                "BFM024",
                anchor,
                fixed=False,
                variable=variable,
                model=ctx.code(model),
                hook=hook,
                why=reason[1],
                script=ctx.code(script.func),
                line=ctx.pos(script)[0],
            )
            ctx.outcome.refuse(Refusal.SCRIPTED, finding)
        return True
    return False
