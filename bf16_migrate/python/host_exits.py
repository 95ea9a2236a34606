"""The host edge: a floating tensor that leaves the device gets float32 back, as under the switch.

**What.** Every place a value leaves the XLA device for the host (``rules/host_exits.toml``: a
copy to the host, a checkpoint, a reduction across processes, a logging call that makes NumPy of
it) where the legacy run handed the host float32. One rule reads every row of that table.

**Why.** Under the legacy switch every floating tensor on the device was bf16, and every floating
tensor that left it was float32 holding bf16-rounded values (torch-xla reports the logical dtype:
``.cpu()`` returns float32). After ``model.to(torch.bfloat16)`` the same code hands the host
bf16: ``.numpy()`` raises ``TypeError: Got unsupported ScalarType BFloat16``, checkpoints on disk
become bf16 (and so does whatever reads them), host arithmetic runs in bf16, TensorBoard makes
float16 of it on the device. Under ``torch.autocast`` (the model FP32) what an autocast region
computes leaves the device as bf16 too; the model's and the optimizer's state stay FP32.

**Fix.** At each exit, by what the code tells of the value:

* a floating tensor copied to the host (``t.cpu()``, ``t.to("cpu")``): ``.float()`` after the
  copy, so the cast runs on the host and adds no XLA graph (measured with torch-xla 2.9:
  ``t.cpu().float()`` compiles nothing, ``t.float().cpu()`` one more graph);
* a value whose dtype the code does not tell (a model's output, a state dict, a checkpoint's
  dict): the run-time ``host_float32(...)`` (:mod:`.snippets`), which copies bf16 tensors to
  the host as float32 and leaves everything else, integer tensors included;
* nothing for integer tensors (labels, argmax predictions), Python numbers (``.item()``,
  ``.tolist()``: the same Python floats in every run), a value cast already, a copy consumed as
  Python numbers (``t.cpu().tolist()``), and in a mode that keeps the model FP32 a saved state
  dict; nothing at exits that take host tensors only (``.numpy()``, ``np.asarray``: they raise for
  a device tensor in the legacy run too);
* a module moved to the host (``model.cpu()``): reported (BFM161), since ``.float()`` is right
  only if it never returns to the device.

Each fixed exit is reported (BFM160); :attr:`.outcome.Outcome.host_edge_examined` records that
the file's host edge was examined.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from ..rules import HostExit, Mode
from . import snippets
from .apply import EditPlan
from .context import FileContext
from .dtype_flow import FLOAT, INT, DtypeFlow
from .model_reach import module_classes
from .model_site import same_model

_MAX_DEPTH = 6
_CASTS = frozenset({"float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char", "type"})
"""Tensor methods that give an explicit dtype (after them, the value's dtype is the script's choice)."""
_METADATA = frozenset({"shape", "ndim", "device", "size", "dim", "numel", "is_floating_point"})
"""What of a host copy is metadata, not its values (``t.cpu().shape``); not its dtype, which the legacy run
reported float32 (``str(probs.cpu().dtype)`` in a report: a hunt's)."""
_HOST_CALLS = frozenset(
    {
        "builtins.len",
        "builtins.float",
        "builtins.int",
        "builtins.round",
        "builtins.bool",
        "builtins.str",
        "builtins.abs",
    }
)
_SHOWN = 60


_FILLS = frozenset({"append", "extend", "insert"})
"""The list methods that put a value into the container they are called on (``insert``'s value is its last
argument)."""


@dataclass(frozen=True)
class Example:
    """A rule example: lines appended to :data:`HARNESS` (a script under the legacy switch with a
    model, its output ``logits``, a loss, a label tensor ``y``), and the same lines once migrated
    (``fixed``; None: the rule leaves them as they are). ``when``: the modes it holds for,
    ``"always"``, ``"model cast"`` (the modes that cast the model) or ``"autocast"``. ``codes``:
    what it reports."""

    code: str
    fixed: str | None = None
    when: str = "always"
    codes: tuple[str, ...] = ()

    def applies(self, mode: Mode) -> bool:
        """Whether the example holds for ``mode``."""
        return self.when == "always" or (mode.casts_model if self.when == "model cast" else mode.autocast)


HARNESS = """import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch
import torch_xla
import torch_xla.core.xla_model as xm

device = torch_xla.device()
model = torch.nn.Linear(4, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 4).to(device)
y = torch.randint(0, 3, (8,)).to(device)
logits = model(x)
loss = torch.nn.functional.cross_entropy(logits, y)
"""

INVALID = (
    Example(
        "best, _ = torch.softmax(logits, dim=-1).max(dim=-1)\nkept = best.cpu()\n",
        "best, _ = torch.softmax(logits, dim=-1).max(dim=-1)\nkept = best.cpu().float()\n",
        codes=("BFM160",),
    ),
    Example(
        "probs = torch.softmax(logits, dim=-1).cpu().numpy()\n",
        "probs = torch.softmax(logits, dim=-1).cpu().float().numpy()\n",
        codes=("BFM160",),
    ),
    Example("scores = logits.detach().cpu()\n", "scores = host_float32(logits.detach().cpu())\n", codes=("BFM160",)),
    Example(
        'kept = torch.sigmoid(logits).to("cpu")\n',
        'kept = torch.sigmoid(logits).to("cpu").float()\n',
        codes=("BFM160",),
    ),
    Example(
        'xm.save(model.state_dict(), "model.pt")\n',
        'xm.save(host_float32(model.state_dict()), "model.pt")\n',
        when="model cast",
        codes=("BFM160",),
    ),
    Example(
        'torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 3}, "last.pt")\n',
        'torch.save(host_float32({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 3}, '
        'back_to_device=True), "last.pt")\n',
        when="model cast",
        codes=("BFM160",),
    ),
    Example(
        'cpu_data = xm._maybe_convert_to_cpu({"model": model.state_dict(), "epoch": 1})\n'
        'torch.save(cpu_data, "last.pt")\n',
        'cpu_data = xm._maybe_convert_to_cpu(host_float32({"model": model.state_dict(), "epoch": 1}))\n'
        'torch.save(cpu_data, "last.pt")\n',
        when="model cast",
        codes=("BFM160",),
    ),
    Example(
        'mean_loss = xm.mesh_reduce("loss", loss.detach(), lambda losses: sum(losses) / len(losses))\n',
        'mean_loss = xm.mesh_reduce("loss", host_float32(loss.detach()), lambda losses: sum(losses) / len(losses))\n',
        codes=("BFM160",),
    ),
    Example(
        'writer.add_scalar("val/confidence", torch.sigmoid(logits).mean(), 0)\n',
        'writer.add_scalar("val/confidence", host_float32(torch.sigmoid(logits).mean()), 0)\n',
        codes=("BFM160",),
    ),
    Example(
        'writer.add_histogram("head/weight", model.weight.grad, 0)\n',
        'writer.add_histogram("head/weight", host_float32(model.weight.grad), 0)\n',
        codes=("BFM160",),
    ),
    Example(  # a report of the host copy's dtype: "torch.float32" in the legacy run
        'report = {"prob_dtype": str(torch.softmax(logits, dim=-1).cpu().dtype)}\n',
        'report = {"prob_dtype": str(torch.softmax(logits, dim=-1).cpu().float().dtype)}\n',
        codes=("BFM160",),
    ),
)
"""Exits the rule changes, with the fixed text."""

VALID = (
    Example("labels = y.cpu().numpy()\n"),
    Example('writer.add_scalar("train/loss", loss.item(), 0)\n'),
    Example('writer.add_scalar("train/loss", loss, 0)\n'),  # dtype unknown: left (the row's `unknown`)
    Example("predicted = logits.argmax(dim=-1).cpu()\n"),
    Example("_, predicted = logits.max(dim=-1)\npicked = predicted.cpu()\n"),  # the indices of (values, indices)
    Example("top = torch.softmax(logits, dim=-1).topk(2).indices.cpu()\n"),
    Example("values = logits.tolist()\n"),
    Example("top = torch.softmax(logits, dim=-1).cpu().tolist()\n"),
    Example('accuracy = xm.mesh_reduce("accuracy", 100.0 * loss.item() / 8, np.mean)\n'),
    Example("wide = logits.detach().cpu().double()\n"),
    Example("kept = logits.float().cpu()\n"),
    Example('print(f"loss {loss.item():.4f}")\n'),
    Example('xm.save(model.state_dict(), "model.pt")\n', when="autocast"),
    Example("model.cpu()\n", when="model cast", codes=("BFM161",)),
    Example("model.cpu()\n", when="autocast"),
)
"""Exits the rule leaves as they are (a module moved to the host is reported, not changed)."""


def plan_host_exits(
    ctx: FileContext,
    plan: EditPlan,
    mode: Mode,
    flow: DtypeFlow,
    models: list[cst.BaseExpression],
    *,
    f64_was_f32: bool = False,
) -> None:
    """Plan the casts of the file's host exits into ``plan`` and report them (BFM160; BFM161 for
    what needs a hand). ``models``: the migrated models (a ``.cpu()`` of one is a module leaving
    the device). ``f64_was_f32``: the switch kept float64 tensors as f32 on the device and reported
    them float64 (XLA_DOWNCAST_BF16): a copy of a value computed from a ``.double()`` tensor gets
    ``.double()`` on the host, the float64 the legacy run handed it (its ``np.save`` wrote float64).
    Records ``ctx.outcome.host_edge_examined``."""
    edge = _HostEdge(ctx, plan, mode, flow, models)
    edge.f64_was_f32 = f64_was_f32
    edge.run()
    ctx.outcome.host_edge_examined = True


class _HostEdge:
    def __init__(
        self, ctx: FileContext, plan: EditPlan, mode: Mode, flow: DtypeFlow, models: list[cst.BaseExpression]
    ) -> None:
        self.ctx, self.plan, self.mode, self.flow, self.models = ctx, plan, mode, flow, models
        rows = ctx.rules.host_exits
        self.by_method: dict[str, list[HostExit]] = {}
        for r in rows:  # a row with a condition first: `.numpy(force=True)` before `.numpy()`
            if r.method is not None:
                self.by_method.setdefault(r.method, []).append(r)
        for found in self.by_method.values():
            found.sort(key=lambda r: r.device is None and r.when_true is None)
        self.by_function = {name: r for r in rows for name in r.functions}
        self.needs_nothing = {r.method for r in rows if r.method is not None and r.hands in ("python", "integer")}
        # a method of the file's own classes is theirs, not a logging library's (`self.log.add_scalar`)
        self.own_methods = _method_names(ctx)
        self.helper = False
        self.current: cst.Call | None = None  # the exit being examined
        self.f64_was_f32 = False

    def run(self) -> None:
        for call in self.ctx.nodes(cst.Call):
            row = self._row(call)
            if row is None or row.hands != "float32":
                continue
            self.current = call
            if row.argument is None:
                self._receiver_exit(call, row)
            else:
                self._argument_exit(call, row)

    # -- which row --------------------------------------------------------------------------
    def _row(self, call: cst.Call) -> HostExit | None:
        """The exit ``call`` is, or None."""
        for name in self.ctx.qualified_names(call.func):
            if name in self.by_function:
                return self.by_function[name]
        if not isinstance(call.func, cst.Attribute):
            return None
        for row in self.by_method.get(call.func.attr.value, []):
            if row.argument is not None and row.method in self.own_methods:
                continue
            if row.device is not None:
                device = _argument(call, *row.device)
                if device is None or not self._names_host(device.value, 0) or _names_dtype(self, call):
                    continue
            if row.when_true is not None:
                flag = _argument(call, *row.when_true)
                if flag is None or not m.matches(flag.value, m.Name("True")):
                    continue
            return row
        return None

    def _names_host(self, expr: cst.BaseExpression, depth: int) -> bool:
        """``"cpu"``, ``torch.device("cpu")``, or a name bound only to one of them."""
        if isinstance(expr, cst.SimpleString):
            return str(expr.evaluated_value).split(":")[0] == "cpu"
        if isinstance(expr, cst.Call) and "torch.device" in self.ctx.qualified_names(expr.func):
            return bool(expr.args) and self._names_host(expr.args[0].value, depth + 1)
        values = self._bound_values(expr) if depth < _MAX_DEPTH else None
        return bool(values) and all(self._names_host(v, depth + 1) for v in values or ())

    # -- the two kinds of exit ----------------------------------------------------------------
    def _receiver_exit(self, call: cst.Call, row: HostExit) -> None:
        """``value.cpu()``: ``.float()`` after it for a floating value, ``host_float32(...)``
        around it for one of unknown dtype; nothing when what follows takes Python numbers or
        a dtype; a bf16 module is reported."""
        ctx = self.ctx
        assert isinstance(call.func, cst.Attribute), "a receiver exit is a method call"
        value = call.func.value
        if self._consumed_as_host_values(call) or self._explicit(value):
            return
        if self._module(value):
            if self.mode.casts_model:  # an FP32 model (autocast) reaches the host as the legacy one did
                ctx.report("BFM161", call, fixed=False, value=_shown(ctx, value), exit=row.exit)
            return
        kind = self.flow.infer(value)
        if kind == INT:
            return
        if row.copies:  # `t.numpy(force=True)`: no tensor comes back, the receiver is cast on its way
            self._replace(value, snippets.host_float_before if kind == FLOAT else snippets.host_float32_call)
            if kind != FLOAT:
                self._need_helper()
            more = {"variant": "copied"} if kind == FLOAT else {"variant": "runtime", "helper": _HELPER}
            ctx.report("BFM160", call, fixed=True, value=_shown(ctx, value), exit=row.exit, **more)
            return
        if kind == FLOAT:
            if self.f64_was_f32 and self._from_double(value):
                self._replace(call, snippets.double_after)
                ctx.report("BFM160", call, fixed=True, variant="float64", value=_shown(ctx, value), exit=row.exit)
                return
            self._replace(call, snippets.float_after)
            ctx.report("BFM160", call, fixed=True, value=_shown(ctx, value), exit=row.exit)
            return
        self._replace(call, snippets.host_float32_call)
        self._need_helper()
        ctx.report(
            "BFM160", call, fixed=True, variant="runtime", value=_shown(ctx, value), exit=row.exit, helper=_HELPER
        )

    def _argument_exit(self, call: cst.Call, row: HostExit) -> None:
        """An argument carries the value (a checkpoint, a reduction, a logging call): it goes
        through ``host_float32(...)`` unless the code tells it holds no bf16 tensor."""
        ctx = self.ctx
        assert row.argument is not None, "an argument exit names its argument"
        arg = _argument(call, *row.argument)
        if arg is None:
            starred = next((a for a in call.args if a.star), None)
            if starred is not None:
                ctx.report(
                    "BFM161", starred, fixed=False, variant="unpacked", value=_shown(ctx, starred), exit=row.exit
                )
            return
        value = arg.value
        if self._holds_no_bf16(value, row):
            return
        self._replace(value, lambda node: snippets.host_float32_call(node, row.keeps_device))
        self._need_helper()
        variant = "saved" if row.saved else "runtime"
        ctx.report(
            "BFM160", value, fixed=True, variant=variant, value=_shown(ctx, value), exit=row.exit, helper=_HELPER
        )

    # -- what the code tells of the value -------------------------------------------------------
    def _consumed_as_host_values(self, call: cst.Call) -> bool:
        """Whether what follows the host copy ``call`` takes Python numbers from it, a dtype of its
        own, or its metadata (``t.cpu().tolist()``, ``float(t.cpu())``, ``t.cpu().double()``,
        ``t.cpu().shape``), through methods and indexing that keep the values as they are."""
        ctx, same = self.ctx, self.ctx.rules.torch_api.same_dtype_methods
        node: cst.CSTNode = call
        while True:
            parent = ctx.parent(node)
            if isinstance(parent, cst.Subscript) and parent.value is node:
                node = parent
                continue
            if isinstance(parent, cst.Arg):
                outer = ctx.parent(parent)
                if not isinstance(outer, cst.Call):
                    return False
                row = next(
                    (self.by_function[n] for n in ctx.qualified_names(outer.func) if n in self.by_function), None
                )
                return row is not None and row.hands in ("python", "integer")
            if not (isinstance(parent, cst.Attribute) and parent.value is node):
                return False
            name, outer = parent.attr.value, ctx.parent(parent)
            if name in _METADATA:
                return True
            if not (isinstance(outer, cst.Call) and outer.func is parent):
                return name not in ("data", "T", "mT", "dtype")  # its dtype: float32 in the legacy run
            if name in self.needs_nothing or name in _CASTS or (name == "to" and _names_dtype(self, outer)):
                return True
            if name == "to" or name not in same:
                return False
            node = outer

    def _from_double(self, value: cst.BaseExpression) -> bool:
        """Whether ``value`` reads a name every binding of which ends in ``.double()`` (``z =
        model(x).double()``): a float64 tensor in the legacy code, so what is computed from it was
        float64 too (type promotion), whatever the migration made of the ``.double()``."""
        for name in m.findall(value, m.Name()):
            assert isinstance(name, cst.Name)
            parent = self.ctx.parent(name)
            if isinstance(parent, cst.Attribute) and parent.attr is name:
                continue
            values = self._bound_values(name)
            if values and all(m.matches(v, m.Call(func=m.Attribute(attr=m.Name("double")), args=[])) for v in values):
                return True
        return False

    def _explicit(self, value: cst.BaseExpression) -> bool:
        """A value whose dtype the script chose (``t.float()``, ``t.to(torch.float32)``) or that is
        migrated already (``host_float32(...)``)."""
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            name = value.func.attr.value
            return name in _CASTS or (name == "to" and _names_dtype(self, value))
        return m.matches(value, m.Call(func=m.Name(_HELPER)))

    def _holds_no_bf16(self, value: cst.BaseExpression, row: HostExit) -> bool:
        """What an argument exit may leave as it is: Python numbers, an integer tensor, a value of
        an explicit dtype, what another exit handed the host (given float32 there), a value of
        unknown dtype at an exit whose row leaves those (``unknown_left``), and under autocast
        (the model FP32) a saved state dict."""
        if self._explicit(value) or self._host_value(value, 0) or self._from_an_exit(value, 0):
            return True
        kind = self.flow.infer(value)
        if kind == INT or (kind != FLOAT and row.unknown_left):
            return True
        return row.saved and not self.mode.casts_model and self._state_dicts(value, 0)

    def _from_an_exit(self, expr: cst.BaseExpression, depth: int) -> bool:
        """The result of an exit this rule gives float32 (``cpu_data = xm._maybe_convert_to_cpu(data)``,
        then ``torch.save(cpu_data, path)``), directly or through a name bound only to one."""
        if isinstance(expr, cst.Call):
            row = self._row(expr)
            return row is not None and row.hands == "float32"
        if isinstance(expr, (cst.DictComp, cst.ListComp)):
            # `{k: v.cpu() for k, v in model.state_dict().items()}`: each element an exit of its own
            element = expr.value if isinstance(expr, cst.DictComp) else expr.elt
            return depth < _MAX_DEPTH and self._from_an_exit(element, depth + 1)
        values = self._bound_values(expr) if depth < _MAX_DEPTH else None
        return bool(values) and all(self._from_an_exit(v, depth + 1) for v in values or ())

    def _host_value(self, expr: cst.BaseExpression, depth: int) -> bool:
        """Python numbers, strings and NumPy values, as far as the code tells: literals, ``.item()``,
        ``.tolist()``, ``.numpy()``, ``len``/``float``/``int``..., NumPy functions, arithmetic of
        them, containers of them, and names bound only to them."""
        if isinstance(expr, (cst.BaseNumber, cst.BaseString)) or m.matches(
            expr, m.Name("True") | m.Name("False") | m.Name("None")
        ):
            return True
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.BinaryOperation):
            return self._host_value(expr.left, depth + 1) and self._host_value(expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self._host_value(expr.expression, depth + 1)
        if isinstance(expr, (cst.Tuple, cst.List)):
            return all(self._host_value(e.value, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.Dict):
            return all(isinstance(e, cst.DictElement) and self._host_value(e.value, depth + 1) for e in expr.elements)
        if isinstance(expr, cst.Call):
            names = self.ctx.qualified_names(expr.func)
            if names & _HOST_CALLS or any(n.startswith("numpy.") for n in names):
                return True
            if self._fresh_module_state(expr):
                return True
            return isinstance(expr.func, cst.Attribute) and expr.func.attr.value in {
                *self.needs_nothing,
                "numpy",
                *_METADATA,
            }
        if isinstance(expr, cst.Attribute) and expr.attr.value in _METADATA:
            return True
        if isinstance(expr, cst.Subscript):
            return self._host_value(expr.value, depth + 1)
        param = self._parameter(expr)
        if param is not None:  # what the file's calls pass (`logger.log(step, loss.item())`)
            passed = self._passed(param)
            return bool(passed) and all(self._host_value(v, depth + 1) for v in passed)
        # the name rebound by the exit's own result (`acc = xm.mesh_reduce("acc", acc, np.mean)`) tells nothing
        values = [v for v in self._bound_values(expr) or () if v is not self.current]
        return bool(values) and all(self._host_value(v, depth + 1) for v in values)

    def _fresh_module_state(self, call: cst.Call) -> bool:
        """``Embedder().state_dict()`` or ``Teacher()``: a module built right there (or its state), a
        class of the file that is a ``torch.nn.Module`` (:func:`.model_reach.module_classes`), never
        moved: host tensors (``torch.save(Teacher(), path)`` went through ``host_float32``: a hunt's)."""
        func = call.func
        built: cst.BaseExpression = call
        if isinstance(func, cst.Attribute) and func.attr.value == "state_dict":
            built = func.value
        if not (isinstance(built, cst.Call) and isinstance(built.func, cst.Name)):
            return False
        ctx = self.ctx
        classes = ctx.memo(("host exits: module classes",), lambda: {c.name.value for c in module_classes(ctx)[0]})
        return built.func.value in classes

    def _state_dicts(self, expr: cst.BaseExpression, depth: int) -> bool:
        """``x.state_dict()``, or a literal container (or a name bound only to one) holding state
        dicts and no value the code tells is a floating tensor."""
        if m.matches(expr, m.Call(func=m.Attribute(attr=m.Name("state_dict")))):
            return True
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Dict):
            elements = [e.value for e in expr.elements if isinstance(e, cst.DictElement)]
            if len(elements) != len(expr.elements):
                return False
        elif isinstance(expr, (cst.Tuple, cst.List)):
            elements = [e.value for e in expr.elements]
        else:
            values = self._bound_values(expr)
            return bool(values) and all(self._state_dicts(v, depth + 1) for v in values or ())
        # a checkpoint's other entries (the step, an RNG state, a scheduler's) are bookkeeping: with its
        # state dicts FP32, only a floating tensor computed on the device could be bf16
        return any(self._state_dicts(e, depth + 1) for e in elements) and not any(
            self.flow.infer(e) == FLOAT for e in elements
        )

    def _module(self, value: cst.BaseExpression) -> bool:
        """Whether ``value`` is a module: a migrated model, a name bound to a module of the file's
        classes or of ``torch.nn``, or a parameter the file passes one of those."""
        if any(same_model(self.ctx, value, model) for model in self.models):
            return True
        return self._module_value(value, 0)

    def _module_value(self, expr: cst.BaseExpression, depth: int) -> bool:
        ctx = self.ctx
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Call):
            classes = ctx.memo(("host exits: module classes",), lambda: {c.name.value for c in module_classes(ctx)[0]})
            names = ctx.qualified_names(expr.func)
            torch_nn = any(n.startswith("torch.nn.") and n.rsplit(".", 1)[-1][:1].isupper() for n in names)
            return torch_nn or (isinstance(expr.func, cst.Name) and expr.func.value in classes)
        if any(same_model(ctx, expr, model) for model in self.models):
            return True
        param = self._parameter(expr)
        if param is not None:
            return any(self._module_value(a, depth + 1) for a in self._passed(param))
        values = self._bound_values(expr)
        return bool(values) and all(self._module_value(v, depth + 1) for v in values or ())

    # -- names ------------------------------------------------------------------------------
    def _bound_values(self, expr: cst.BaseExpression) -> list[cst.BaseExpression] | None:
        """The values a plain name is bound to by assignments (``x = ...``, ``x += ...``); None
        when it is not a name, or when one of its bindings is something else (a loop target, a
        parameter, an unpacking)."""
        if not isinstance(expr, cst.Name):
            return None
        scope = self.ctx.scopes.get(expr)
        if scope is None:
            return None
        values: list[cst.BaseExpression] = []
        for assignment in scope[expr.value]:
            if not isinstance(assignment, Assignment):
                return None
            parent = self.ctx.parent(assignment.node)
            if isinstance(parent, cst.AssignTarget):
                assign = self.ctx.parent(parent)
                assert isinstance(assign, cst.Assign), "an AssignTarget belongs to an Assign"
                values.append(assign.value)
            elif isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.value is not None:
                values.append(parent.value)
            elif (unpacked := self._unpacked(parent)) is not None:
                values.append(unpacked)
            else:
                return None
        return values + self._filled_in(expr)

    def _filled_in(self, name: cst.Name) -> list[cst.BaseExpression]:
        """What the code puts into the container ``name`` holds: the arguments of its ``append``, ``extend`` and
        ``insert`` calls and the values of ``name[key] = value``. ``preds = []`` then ``preds.append(model(x))``
        holds device tensors (``torch.save(preds, path)`` was taken for a host value's, bf16 on disk: a hunt's)."""
        scope = self.ctx.scopes.get(name)
        if scope is None:
            return []
        found: list[cst.BaseExpression] = []
        for access in scope.accesses[name.value]:
            node = access.node
            parent = self.ctx.parent(node)
            if isinstance(parent, cst.Attribute) and parent.value is node and parent.attr.value in _FILLS:
                call = self.ctx.parent(parent)
                if isinstance(call, cst.Call) and call.func is parent and call.args:
                    found.append(call.args[-1].value)
            elif isinstance(parent, cst.Subscript) and parent.value is node:
                target = self.ctx.parent(parent)
                assign = self.ctx.parent(target) if isinstance(target, cst.AssignTarget) else None
                if isinstance(assign, cst.Assign):
                    found.append(assign.value)
        return found

    def _unpacked(self, element: cst.CSTNode | None) -> cst.BaseExpression | None:
        """The value a name gets from a literal unpacking (``total, correct = 0, 0``), or None."""
        targets = self.ctx.parent(element)
        target = self.ctx.parent(targets)
        assign = self.ctx.parent(target)
        if not (
            isinstance(element, cst.Element)
            and isinstance(targets, cst.Tuple)
            and isinstance(target, cst.AssignTarget)
            and isinstance(assign, cst.Assign)
            and isinstance(assign.value, (cst.Tuple, cst.List))
            and len(assign.value.elements) == len(targets.elements)
        ):
            return None
        return assign.value.elements[[id(e) for e in targets.elements].index(id(element))].value

    def _parameter(self, expr: cst.BaseExpression) -> cst.Param | None:
        if not isinstance(expr, cst.Name):
            return None
        scope = self.ctx.scopes.get(expr)
        found = scope[expr.value] if scope is not None else ()
        params = [a.node for a in found if isinstance(a, Assignment) and isinstance(a.node, cst.Param)]
        return params[0] if len(params) == 1 else None

    def _passed(self, param: cst.Param) -> list[cst.BaseExpression]:
        """The arguments the file's calls of the function of ``param`` pass to it (once per parameter)."""
        return self.ctx.memo(("host exits: passed to", id(param)), lambda: self._find_passed(param))

    def _find_passed(self, param: cst.Param) -> list[cst.BaseExpression]:
        ctx = self.ctx
        func = ctx.enclosing(param, cst.FunctionDef)
        if func is None or param.star:
            return []
        index = next((k for k, p in enumerate(func.params.params) if p is param), None)
        if index is not None and ctx.enclosing(func, cst.ClassDef) is not None:
            index -= 1
        passed = []
        for call in ctx.nodes(cst.Call):
            callee = call.func.attr if isinstance(call.func, cst.Attribute) else call.func
            if not (isinstance(callee, cst.Name) and callee.value == func.name.value):
                continue
            for k, arg in enumerate(call.args):
                if (arg.keyword is not None and arg.keyword.value == param.name.value) or (
                    arg.keyword is None and not arg.star and k == index
                ):
                    passed.append(arg.value)
        return passed

    # -- edits ------------------------------------------------------------------------------
    def _replace(self, node: cst.CSTNode, edit) -> None:
        before = self.plan.replace.get(id(node))
        self.plan.replace[id(node)] = edit if before is None else (lambda n: edit(before(n)))

    def _need_helper(self) -> None:
        if not self.helper:
            self.plan.prelude.append(snippets.host_float32_helper())
            scope = self.ctx.scopes.get(self.ctx.module)
            if scope is None or not any(a.scope is scope for a in scope.assignments["torch"]):
                self.plan.imports.append("torch")  # the helper's; a module of the tree may not import torch
            self.helper = True


_HELPER = snippets.HOST_FLOAT32


def _method_names(ctx: FileContext) -> set[str]:
    """The names of the methods the file's classes define."""
    return {f.name.value for c in ctx.nodes(cst.ClassDef) for f in c.body.body if isinstance(f, cst.FunctionDef)}


def _argument(call: cst.Call, at: int, keyword: str) -> cst.Arg | None:
    """The argument passed as ``keyword=`` or at position ``at`` (None when absent, or when an
    unpacked argument comes first)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == keyword:
            return arg
    positional = []
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            positional.append(arg)
    return positional[at] if at < len(positional) else None


def _names_dtype(edge: _HostEdge, call: cst.Call) -> bool:
    """Whether ``call`` (a ``.to(...)``) names a dtype: ``dtype=``, or a ``torch.<dtype>``."""
    return any(
        (a.keyword is not None and a.keyword.value == "dtype") or edge.flow._dtype_class(a.value) is not None
        for a in call.args
    )


def _shown(ctx: FileContext, node: cst.CSTNode) -> str:
    """The code of ``node`` for a message: its first line, cut at :data:`_SHOWN` characters."""
    code = ctx.code(node).strip()
    first = code.splitlines()[0] if code else code
    return first if first == code and len(first) <= _SHOWN else first[:_SHOWN].rstrip() + " ..."
