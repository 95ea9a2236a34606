"""The dtype trace of one verify run, per line of the user's code (loaded by ``sitecustomize``).

Nothing here imports ``bf16_migrate``; torch is imported by the script, and this module only
touches it through the objects the script's own calls hand it. What it records, as typed data
(``Tracer.to_json``), deduplicated by (file, line, op, kind) with a count:

``create``
    A floating tensor made in float32/float64 on the XLA device from no floating device tensor:
    a factory (``torch.zeros(..., device=dev)``), a host tensor moved there (``x.to(dev)``), an
    integer tensor made floating (``torch.arange(n, device=dev).float()``).
``upcast``
    A float32/float64 device tensor made from a lower-precision one by a cast (``.float()``,
    ``.to(torch.float32)``, ``softmax(..., dtype=torch.float32)``).
``meet``
    An operation whose floating device operands hold float32/float64 and bf16/f16 at once: the
    result is promoted, so the operation (and what follows) computes in f32. The f32 operand's
    names in the user's frame (``f32_names``: locals and ``self.<attr>`` bound to that very
    object) and its partner's (``partner_names``) are kept for the repair.
``compute``
    Any other operation whose result is float32/float64 on the device, from float32/float64
    operands (the EMA copy's forward, an uncast module, a table computed on).
``exit``
    A device tensor handed to the host as bf16/f16 (``.cpu()``, ``.to("cpu")``; a module's
    parameters and buffers moved so by the user's ``model.cpu()``, op ``<Module>.cpu``, non-amp
    modes) or saved so (``torch.save``, which ``xm.save`` calls after its own host copy):
    ``exit_dtypes`` counts the floating dtypes the host got, ``cast_back`` how many of those host
    tensors were cast to float32/float64 later (``t.cpu().float()``, ``model.cpu().float()``),
    ``flat_dict`` whether the saved object was a flat dict of tensors (a ``state_dict()``).
``op_error``
    An operation that raised, with its operands' dtypes (a dtype mismatch raised at the op).
``exception``
    The exception that ended the process, at the innermost frame of the user's code in its
    traceback (``message``: type and text).
``downcast``
    amp only (``only_f64``): a bf16/f16 device tensor made by the script's own cast of a float32
    device tensor (``teacher.to(torch.bfloat16)``, ``y.bfloat16()``), made so from no floating
    device tensor (``torch.zeros(..., dtype=torch.bfloat16)``) or by a call naming that dtype outside
    autocast (``torch.empty_like(p, dtype=torch.bfloat16)``): autocast computes in bf16 without
    storing any, and amp keeps the model, its state and its targets float32.
``forward_outside_autocast``
    amp only: a matrix product (``F.linear``, a convolution, ``matmul``...) of a module's float32 parameter
    on the device run outside autocast (a model's, or one of its parts', forward pass left out of the
    ``with torch.autocast`` blocks): autocast would have run it in bf16, as the switch did.
``loss_outside_autocast``
    amp only: the first loss handed to ``backward`` is bf16/f16 and was computed outside autocast from a
    bf16/f16 operand (an autocast output): the place of the first such operation of its chain before the
    first ``backward`` (``op``, ``result``); autocast's own bf16 losses are computed inside it.

Beside the events, ``outputs``: what the user's code took off the device (``.cpu()``,
``.to("cpu")``, ``.item()``, ``.tolist()`` of a device tensor; the host tensors ``torch.save`` writes,
as ``xm.save`` hands them over, op ``torch.save #k`` in save order), sampled so that two runs' host
results can be compared value by value (an inference script's answers): per user line and op,
the first ``OUTPUT_OCCURRENCES`` occurrences (``occurrence`` counts from 0, ``seen`` counts all),
each with the host ``dtype``, ``shape``, ``numel`` and the first ``OUTPUT_VALUES`` values of the
flattened result as Python numbers (floats for floating tensors, ints for integer and boolean
ones); at most ``OUTPUT_LIMIT`` samples per run.

Every tensor event has the op (``torch.add``, ``Tensor.__add__``, ``F.linear``...), the device
element types of its tensor operands in order (``_XLAC._get_xla_tensor_shape_type``: under the
legacy switch torch says ``float32`` where the device holds ``bf16``, so the device's word is
taken; host tensors as ``cpu:<dtype>``), the result's, and ``origin``: where the f32 operand's
f32-ness began (an event's ``kind``/``file``/``line``/``op``, or ``param``: an nn.Parameter of
unknown history), followed through the operations by a side table keyed by ``id`` (a weak
reference removes the entry with the tensor; nothing is set on the tensors, so nothing reaches
a pickle). Parameters get an origin when a module is moved or cast (``Module._apply``: kind
``module``), when they are deep-copied (``Parameter.__deepcopy__``: kind ``copy``) and when they are
made (``Parameter.__new__``: the origin of the tensor they wrap).

Where: the innermost frame of the user's code (a file under one of ``roots``, not under
``site-packages``/``dist-packages``, not this directory) on the stack of the call: ``file``,
``line`` and, from ``co_positions()`` of the frame's current instruction (Python 3.11), the
span of the expression (``end_line``, ``col``/``end_col`` as 0-based UTF-8 byte offsets, as
CPython gives them), and ``callers``: the user's frames that called it (``[file, line,
end_line, col, end_col]`` each, the call's span, innermost first, at most 4). ``step``:
optimizer steps done when first seen; ``after_stop``: seen after the harness's recorded steps
(evaluation and checkpoint code after the training loop).

Cost and what it leaves alone: one ``TorchFunctionMode`` (``torch.overrides``) on the main
thread's mode stack for the whole run, and on it again for each backward pass (the Python code of
a custom ``autograd.Function``'s ``backward`` is the user's code too); for each top-level torch
call it calls the function, then reads the result's device element type (a read of the IR, no execution: no sync, no
graph, no compilation) and, only for a floating result that is f32/f64 on the device (or a boolean or integer one
read from f32/f64 operands: a ``compute`` of their values) or a lower-precision one on the host, walks the
stack. Under ``torch.compile`` (dynamo tracing) it only calls the function. ``track_f32`` off (amp, whose
model is f32 on purpose): only exits, errors and the exception are recorded.
"""

import functools
import os
import sys
import threading
import weakref
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBRARY_PARTS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_F32 = ("f32", "f64")
_LOW = ("bf16", "f16")
# Operations that move or re-view a tensor, computing nothing: an f32 result of one is not
# "computed in f32" (the trace follows the origin through them).
_MOVES = frozenset(
    {
        "to",
        "float",
        "double",
        "type",
        "type_as",
        "clone",
        "detach",
        "detach_",
        "contiguous",
        "view",
        "view_as",
        "reshape",
        "reshape_as",
        "permute",
        "transpose",
        "t",
        "__getitem__",
        "expand",
        "expand_as",
        "squeeze",
        "unsqueeze",
        "flatten",
        "unflatten",
        "narrow",
        "select",
        "index_select",
        "chunk",
        "split",
        "unbind",
        "cat",
        "concat",
        "stack",
        "repeat",
        "tile",
        "movedim",
        "moveaxis",
        "requires_grad_",
        "retain_grad",
        "copy_",
        "zero_",
        "fill_",
        "set_",
        "__setitem__",
        "masked_fill",
        "masked_fill_",
        "where",
        "roll",
        "flip",
        "pad",
        "gather",
        "take",
        "slice",
        "as_strided",
        "broadcast_to",
        "new_zeros",
        "new_ones",
        "new_full",
        "new_empty",
        "new_tensor",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "rand_like",
        "randn_like",
        "cpu",
        "numpy",
        "tolist",
        "item",
        "__deepcopy__",
        "__reduce_ex__",
        "__setstate__",
        "__get__",
        "__set__",
    }
)
_CASTS = frozenset({"to", "float", "double", "type", "type_as", "half", "bfloat16"})
_PRODUCTS = frozenset(
    {"linear", "bilinear", "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "__matmul__", "__rmatmul__"}
    | {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}
)
"""The matrix products autocast runs in bf16 on XLA (torch_xla/csrc/autocast_mode.cpp's lower-precision list)."""
_AUTOCAST_FP32 = frozenset(
    {"cross_entropy", "nll_loss", "log_softmax", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div"}
    | {"binary_cross_entropy", "binary_cross_entropy_with_logits", "margin_ranking_loss", "soft_margin_loss"}
    | {"triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss", "cosine_embedding_loss"}
    | {"hinge_embedding_loss", "poisson_nll_loss", "ctc_loss", "batch_norm", "prod", "cdist", "quantile"}
)
"""The functions autocast runs in float32 on XLA (torch_xla/csrc/autocast_mode.cpp's fp32 list: its losses,
``_log_softmax``, ``batch_norm``, ``prod``, ``cdist``, ``quantile``), by their Python names."""
_PYTHON_NUMBERS = frozenset({"tolist", "item"})
"""Tensor methods that hand a host tensor's values over as Python numbers."""
_HOST_VIEWS = frozenset(
    {"flatten", "view", "reshape", "squeeze", "unsqueeze", "ravel", "contiguous", "detach", "__getitem__"}
    | {"t", "transpose", "permute", "select", "narrow", "unbind", "split", "chunk"}
)
"""Tensor methods whose result holds a host tensor's values rearranged, in its dtype: a bf16 exit read through one
(``out.cpu().flatten().tolist()``) is the exit itself, cast back where its view is."""


class _HostExit:
    """One bf16/f16 tensor that left the device: its exit ``event``, and whether it or a view of it was cast back."""

    __slots__ = ("cast_back", "event")

    def __init__(self, event: dict) -> None:
        self.event = event
        self.cast_back = False


OUTPUT_OCCURRENCES = 4
OUTPUT_VALUES = 256
OUTPUT_LIMIT = 256
OUTPUT_SAVED = 16  # the host tensors of one torch.save sampled (``op``: ``torch.save #<k>``, k in save order)
# In-place ops that only store what they are given (a conversion, no arithmetic): an f32 operand of
# one is no f32 computation.
_STORES = frozenset({"copy_", "set_", "fill_", "zero_", "requires_grad_", "resize_", "share_memory_"})
_ORIGIN_RANK = {"copy": 0, "module": 1, "meet": 2, "upcast": 3, "compute": 4, "create": 5, "param": 6}
_MODULE_PY = os.sep + os.path.join("torch", "nn", "modules", "module.py")
_JIT_TRACE_PY = os.sep + os.path.join("torch", "jit", "_trace.py")
_CHECKED_KINDS = frozenset({"compute", "upcast", "create", "forward_outside_autocast"})
"""Event kinds torch.jit.trace's own work makes, computing nothing the script keeps (:meth:`_in_trace_check`)."""
_LEGACY_NAMES = tuple(name for name in os.environ.get("BF16_MIGRATE_LEGACY_VARIABLES", "").split(",") if name)
"""torch-xla's legacy variables (torch_xla/csrc/dtype.cpp), as the runner names them from the rules: under one,
torch's labels are not the device's types."""
_SKIP_NAMES = frozenset({"__get__", "__set__", "__repr__", "__format__", "__len__", "__iter__", "__hash__", "__bool__"})


def op_name(func):
    """``Tensor.add``, ``F.linear``, ``torch.add``: a readable name of a torch callable."""
    name = getattr(func, "__name__", None) or type(func).__name__
    qual = getattr(func, "__qualname__", "") or ""
    if qual.startswith(("TensorBase.", "Tensor.", "_TensorBase.")):
        return "Tensor." + name
    module = getattr(func, "__module__", "") or ""
    if module in ("torch._C._nn", "torch.nn.functional"):
        return "F." + name
    return "torch." + name


class Tracer:
    """Records the trace of one process (see the module docstring).

    ``roots``: directories whose files are the user's code; ``track_f32``: record f32 on the
    device (create, upcast, meet, compute) and not only exits and errors; ``steps``: a callable
    giving the optimizer steps done so far; ``after_stop``: a callable, True once the harness's
    recorded steps are over; ``only_f64``: what counts as wide is float64 alone, and float32 is
    narrow like bf16 (amp, whose model is f32 on purpose: float64 on the device is what no switch
    left there, and autocast casts no float64)."""

    def __init__(self, roots, track_f32, steps, after_stop, only_f64=False):
        self.roots = tuple(os.path.abspath(r).rstrip(os.sep) + os.sep for r in roots if r)
        self.track_f32 = track_f32
        self.amp = bool(only_f64)
        self.wide = ("f64",) if only_f64 else _F32
        self.narrow = ("f32",) + _LOW if only_f64 else _LOW
        self.steps = steps
        self.after_stop = after_stop
        self.events = {}
        self.order = 0
        self.origins = {}  # id(tensor) -> (weakref, origin dict)
        self.host_exits = {}  # id(host tensor) -> (weakref, _HostExit): a bf16 tensor that left the device, or a view
        self.module_exits = {}  # id(module) -> (weakref, event): a module moved to the host as bf16/f16
        self.module_exit_storage = {}  # data_ptr of one of its bf16/f16 host tensors -> (weakref, event)
        self.outputs = []  # samples of what the user's code took off the device (the module docstring)
        self._output_seen = {}  # (file, line, op) -> occurrences so far
        self.errors = []
        self.enabled = True
        self.pid = os.getpid()
        self.calls = 0
        self.lines_run = {}  # the user's file -> the lines of its frames on the stack of a traced call
        self._user = {}
        self._shape_type: Any = None
        self._torch: Any = None
        self._is_compiling: Any = None
        self._parameter: Any = None
        self._in_apply = 0
        self.step_f32 = False  # f32 inside an optimizer's step is the mode's (FP32 master weights)
        self._in_step = 0
        self.low_made = {}  # amp: id(device tensor) -> (weakref, place): bf16/f16 computed outside autocast
        self.loss_seen = False
        self._labels_true = None  # no legacy variable in force: torch's dtype labels are the device's

    # -- where -------------------------------------------------------------------------
    def _is_user(self, filename):
        known = self._user.get(filename)
        if known is None:
            path = os.path.abspath(filename)
            known = (
                path.startswith(self.roots)
                and not any(part in path for part in _LIBRARY_PARTS)
                and not path.startswith(_HERE + os.sep)
            )
            self._user[filename] = known
        return known

    def _note_lines(self, frame):
        """Remember the line of each frame of the user's code on the stack of a traced call (the call's own and
        the calls that led to it): the lines the run executed that reach torch, which the parent holds the
        migration's changed lines to (a change on a path the run never took was verified by nothing)."""
        lines = self.lines_run
        while frame is not None:
            filename = frame.f_code.co_filename
            if self._is_user(filename):
                lines.setdefault(filename, set()).add(frame.f_lineno)
            frame = frame.f_back

    def user_frame(self, frame):
        """The innermost frame of the user's code from ``frame`` outwards, or None."""
        while frame is not None:
            if self._is_user(frame.f_code.co_filename):
                return frame
            frame = frame.f_back
        return None

    @staticmethod
    def position(frame):
        """(line, end_line, col, end_col) of the frame's current instruction (cols: 0-based
        UTF-8 byte offsets, or None)."""
        line = frame.f_lineno
        try:
            positions = list(frame.f_code.co_positions())
            start, end, col, end_col = positions[frame.f_lasti // 2]
            if start is not None:
                return start, end if end is not None else start, col, end_col
        except Exception:
            pass
        return line, line, None, None

    # -- tensors -----------------------------------------------------------------------
    def bind(self, torch):
        """Take what the trace reads from torch (after the script imported it)."""
        self._torch = torch
        self._parameter = torch.nn.Parameter
        compiler = getattr(torch, "compiler", None)
        self._is_compiling = getattr(compiler, "is_compiling", None) or (lambda: False)

    def _shape(self):
        if self._shape_type is None:
            xlac = getattr(sys.modules.get("torch_xla"), "_XLAC", None)
            self._shape_type = getattr(xlac, "_get_xla_tensor_shape_type", None) or False
        return self._shape_type

    def device_type(self, t):
        """The element type the device holds (``bf16``, ``f32``...) for an XLA tensor;
        ``cpu:<dtype>`` for another tensor."""
        if t.is_xla:
            shape = self._shape()
            if shape:
                text = str(shape(t))
                return text.split("[", 1)[0]
        return f"{t.device.type}:{str(t.dtype).replace('torch.', '')}"

    def origin_of(self, t):
        entry = self.origins.get(id(t))
        if entry is not None and entry[0]() is t:
            return entry[1]
        if self._parameter is not None and isinstance(t, self._parameter):
            return {"kind": "param"}
        return None

    def _first_origin(self, tensors):
        """The operand whose origin names the place to repair first: a model copy or a module
        left f32 (its parameters) before a promotion, before a tensor made f32 (an input), before
        an untagged parameter; the first operand when none has an origin."""
        ranked = []
        for i, t in enumerate(tensors):
            origin = self.origin_of(t)
            kind = origin.get("kind") if origin is not None else None
            ranked.append((_ORIGIN_RANK.get(kind or "", 9), i, t))
        return min(ranked, key=lambda item: item[:2])[2]

    def tag(self, t, origin, table=None):
        table = self.origins if table is None else table
        key = id(t)

        def forget(_ref: Any, key: int = key, table: dict = table) -> None:
            table.pop(key, None)

        try:
            ref = weakref.ref(t, forget)
        except TypeError:
            return
        table[key] = (ref, origin)

    # -- events ------------------------------------------------------------------------
    def event(self, kind, op, frame, **fields):
        """Record (or count again) the event ``kind`` of ``op`` at the user's frame above
        ``frame``; returns the event dict, or None when no frame of the user's code called it, or when
        the op is torch.jit.trace's own (:meth:`_in_trace_check`)."""
        user = self.user_frame(frame)
        if user is None or (kind in _CHECKED_KINDS and self._in_trace_check(kind, frame, user)):
            return None
        filename = user.f_code.co_filename
        line = user.f_lineno
        key = (filename, line, op, kind)
        ev = self.events.get(key)
        if ev is not None:
            ev["count"] += 1
            fields.pop("_names", None)
            return ev
        names = fields.pop("_names", None)
        start, end, col, end_col = self.position(user)
        self.order += 1
        ev = {
            "kind": kind,
            "file": filename,
            "line": start if start == line else line,
            "end_line": end if start == line else line,
            "col": col if start == line else None,
            "end_col": end_col if start == line else None,
            "op": op,
            "count": 1,
            "order": self.order,
            "step": self.steps(),
            "after_stop": bool(self.after_stop()),
        }
        ev.update(fields)
        if user.f_code.co_name == "__init__" and isinstance(user.f_locals.get("self"), self._torch.nn.Module):
            ev["in_init"] = True  # a layer built on the device: what it computes there is its initial values
        chain = self._callers(user)
        if chain:
            ev["callers"] = chain
        self.events[key] = ev
        if names is not None:
            ev.update(self._names(user, *names))
        return ev

    def _in_trace_check(self, kind, frame, user) -> bool:
        """Whether the op at ``frame`` (called from the user's ``user`` frame) is torch.jit.trace's comparison of the
        traced and the eager outputs (``_check_trace`` in torch/jit/_trace.py: ``.double()`` and ``isclose`` on
        them, its result only a warning), or, in amp, the forward the tracer records (``torch._C._get_tracing_state``
        set): tracing under autocast fails, and the traced graph computes under the autocast its calls run in."""
        if kind == "forward_outside_autocast" and self._torch._C._get_tracing_state() is not None:
            return True
        while frame is not None and frame is not user:
            if frame.f_code.co_name == "_check_trace" and frame.f_code.co_filename.endswith(_JIT_TRACE_PY):
                return True
            frame = frame.f_back
        return False

    def _callers(self, frame, limit=4):
        """The user's frames that called ``frame``, innermost first: ``[file, line, end_line, col,
        end_col]`` each (the call's span), at most ``limit``."""
        out: list[list[Any]] = []
        frame = frame.f_back
        while frame is not None and len(out) < limit:
            frame = self.user_frame(frame)
            if frame is None:
                break
            line, end, col, end_col = self.position(frame)
            out.append([frame.f_code.co_filename, line, end, col, end_col])
            frame = frame.f_back
        return out

    def _names(self, frame, f32_operand, partner):
        """The names bound to ``f32_operand`` and ``partner`` in the user's frame: its locals, and
        ``self.<attr>`` (attributes, parameters and buffers of ``self``)."""
        out: dict[str, list[str]] = {"f32_names": [], "partner_names": []}
        try:
            scope = dict(frame.f_locals)
            owner = scope.get("self")
            if owner is not None:
                attrs = dict(getattr(owner, "__dict__", {}))
                for table in ("_parameters", "_buffers"):
                    attrs.update(attrs.pop(table, None) or {})
                for name, value in attrs.items():
                    if not name.startswith("_"):
                        scope.setdefault(f"self.{name}", value)
            for name, value in scope.items():
                if f32_operand is not None and value is f32_operand:
                    out["f32_names"].append(name)
                elif partner is not None and value is partner:
                    out["partner_names"].append(name)
        except Exception as exc:  # names are a help for the repair, never a reason to fail
            self._error(f"reading names failed: {exc!r}")
        return out

    def _error(self, message):
        if message not in self.errors and len(self.errors) < 20:
            self.errors.append(message)

    # -- the hook ------------------------------------------------------------------------
    def call(self, func, args, kwargs):
        """Run ``func`` and record what it did (the body of ``__torch_function__``)."""
        if not self.enabled or self._is_compiling():
            return func(*args, **kwargs)
        name = getattr(func, "__name__", None)
        if name in _SKIP_NAMES:
            if (
                name == "__set__"
                and len(args) == 2
                and getattr(getattr(func, "__self__", None), "__name__", "") == "data"
            ):
                self._on_data_set(*args)
            return func(*args, **kwargs)
        self.calls += 1
        self._note_lines(sys._getframe(1))
        try:
            out = func(*args, **kwargs)
        except Exception as exc:
            try:
                self._on_error(func, args, kwargs, exc)
            except Exception as inner:
                self._error(f"recording an op error failed: {inner!r}")
            raise
        try:
            self._on_result(func, name, args, kwargs, out)
        except Exception as exc:  # the trace is best effort: never break the script
            self._error(f"tracing {name} failed: {exc!r}")
        return out

    def _tensors(self, args, kwargs):
        torch = self._torch
        found = []
        for value in list(args) + list(kwargs.values()):
            if isinstance(value, torch.Tensor):
                found.append(value)
            elif isinstance(value, (list, tuple)):
                found.extend(v for v in value[:64] if isinstance(v, torch.Tensor))
        return found

    def _on_error(self, func, args, kwargs, exc):
        if os.getpid() != self.pid:
            return
        tensors = self._tensors(args, kwargs)
        if not any(t.is_xla for t in tensors):
            return
        operands = [self.device_type(t) for t in tensors]
        floats = [d for d in operands if d in _F32 or d in _LOW]
        f32 = next((t for t, d in zip(tensors, operands) if d in _F32), None)
        low = next((t for t, d in zip(tensors, operands) if d in _LOW), None)
        self.event(
            "op_error",
            op_name(func),
            sys._getframe(1),
            operands=operands,
            result=None,
            message=f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}",
            mixed=bool(f32 is not None and low is not None and floats),
            origin=self.origin_of(f32) if f32 is not None else None,
            _names=(f32, low) if f32 is not None and low is not None else None,
        )

    def _on_result(self, func, name, args, kwargs, out):
        torch = self._torch
        if name in _PYTHON_NUMBERS and args and isinstance(args[0], torch.Tensor) and args[0].is_xla:
            if os.getpid() == self.pid and self._called_by_user():
                self._sample_output(op_name(func), args[0], out)
            return
        if name in _PYTHON_NUMBERS and args and isinstance(args[0], torch.Tensor):
            # a host copy consumed as Python numbers (`.cpu().tolist()`, `.item()`): the same floats
            # whether it held bf16 or the float32 of those values, as the legacy run's did
            if os.getpid() == self.pid:
                self._exit_cast_back(args[0])
            return
        if isinstance(out, torch.Tensor):
            results = (out,)
        elif isinstance(out, (tuple, list)) and out and isinstance(out[0], torch.Tensor):
            results = tuple(r for r in out[:64] if isinstance(r, torch.Tensor))
        else:
            return
        host = [r for r in results if not r.is_xla]
        if host:
            self._on_host(func, name, args, kwargs, host)
        if self.track_f32:
            self._on_device(func, name, args, kwargs, results)

    def _on_device(self, func, name, args, kwargs, results):
        """What the device results of a traced call tell: f32/f64 (:meth:`_on_f32`), amp's bf16 made by
        hand (:meth:`_on_downcast`) or outside autocast, an in-place op storing into bf16."""
        device = [r for r in results if r.is_xla and r.is_floating_point()]
        if not device:
            self._on_wide_read(func, name, args, kwargs, [r for r in results if r.is_xla])
            return
        if self.amp and (
            name in _CASTS or not self._floating_device_operand(args, kwargs) or self._names_low_dtype(args, kwargs)
        ):
            self._on_downcast(func, args, kwargs, device)
        elif self.amp and not self.loss_seen and not self._in_step:
            self._on_low_outside_autocast(func, name, args, kwargs, device)
        if self.amp and name in _PRODUCTS and not self._in_step:
            self._on_forward_outside_autocast(func, args, kwargs, device)
        high = []
        for r in device:
            if self.device_type(r) in self.wide:
                high.append(r)
        if high:
            self._on_f32(func, name, args, kwargs, high)
        elif name.endswith("_") and not name.startswith("_") and name not in _MOVES and name not in _STORES:
            self._on_in_place(func, args, kwargs, device[0])
        elif name not in _MOVES and name not in _CASTS and self._wide_label(args, kwargs):
            self._on_in_place(func, args, kwargs, device[0])

    def _wide_label(self, args, kwargs):
        """Whether a floating device operand is labelled f32/f64 (f64 alone in amp) where the labels
        tell the device's types: in a run under no legacy variable (the migrated and reference runs;
        under the switch every label says float32). The cheap test before :meth:`_on_in_place` reads
        the operands' device types for an op whose result is bf16: most such ops have no f32 operand."""
        if self._labels_true is None:
            self._labels_true = not any(os.environ.get(v, "") not in ("", "0") for v in _LEGACY_NAMES)
        if not self._labels_true:
            return False
        torch = self._torch
        wide = (torch.float64,) if self.amp else (torch.float32, torch.float64)
        return any(t.is_xla and t.dtype in wide for t in self._tensors(args, kwargs))

    def _on_wide_read(self, func, name, args, kwargs, results):
        """A boolean or integer device result read from f32/f64 operands (``x > 0.5``, ``argmax``, ``eq``):
        it was read from the bf16 values under the switch (``0.5009765625 > 0.5`` was False there, True in
        f32), so it is recorded as the f32 result is (:meth:`_on_f32`); a cast to an integer dtype is a move."""
        if not results or self._in_step or name in _CASTS:
            return
        floating = [t for t in self._tensors(args, kwargs) if t.is_xla and t.is_floating_point()]
        if any(self.device_type(t) in self.wide for t in floating):
            self._on_f32(func, name, args, kwargs, results)

    def _floating_device_operand(self, args, kwargs):
        """Whether a floating device tensor is among the operands (a creation has none)."""
        return any(t.is_xla and t.is_floating_point() for t in self._tensors(args, kwargs))

    def _names_low_dtype(self, args, kwargs):
        """Whether the call names bf16/f16 itself (``dtype=torch.bfloat16``) outside autocast, on no
        bf16/f16 device operand: a factory whose template is a float32 device tensor
        (``torch.empty_like(p, dtype=torch.bfloat16)``, ``p.new_zeros(n, dtype=torch.bfloat16)``) makes
        its bf16 from the dtype it is given, not from its operand, as a cast does (torch/_torch_docs.py,
        ``empty_like``: "dtype ... Default: if None, defaults to the dtype of input"). A bf16 operand
        (an autocast output) leaves the call to :meth:`_on_low_outside_autocast`."""
        torch = self._torch
        if kwargs.get("dtype") not in (torch.bfloat16, torch.float16) or torch.is_autocast_enabled("xla"):
            return False
        return not any(t.is_xla and self.device_type(t) in _LOW for t in self._tensors(args, kwargs))

    def _on_downcast(self, func, args, kwargs, device):
        """amp: a ``downcast`` event (the module docstring) for a cast, a creation, or a call naming
        ``dtype=`` bf16/f16 outside autocast (:meth:`_names_low_dtype`) whose device result is bf16/f16
        while no floating operand was; autocast's own casts never reach here
        (they run below the Python API), so what does is the script's."""
        if self._in_step:
            return
        low = [r for r in device if self.device_type(r) in _LOW]
        if not low:
            return
        tensors = [t for t in self._tensors(args, kwargs) if t.is_floating_point()]
        operands = [self.device_type(t) for t in tensors]
        if any(d in _LOW or d.split(":")[-1] in ("bfloat16", "float16") for d in operands):
            return
        self.event("downcast", op_name(func), sys._getframe(1), operands=operands, result=self.device_type(low[0]))

    def _on_forward_outside_autocast(self, func, args, kwargs, device):
        """amp: a ``forward_outside_autocast`` event for a matrix product run outside autocast on a float32
        ``nn.Parameter`` of the device with no bf16/f16 operand: a module's forward pass the migration left out
        of autocast computes in f32 where the legacy run computed in bf16 (the optimizer's steps are not read)."""
        torch = self._torch
        if torch.is_autocast_enabled("xla"):
            return
        tensors = [t for t in self._tensors(args, kwargs) if t.is_xla and t.is_floating_point()]
        operands = [self.device_type(t) for t in tensors]
        if any(d in _LOW for d in operands):
            return
        if not any(isinstance(t, torch.nn.Parameter) and d == "f32" for t, d in zip(tensors, operands)):
            return
        result = self.device_type(device[0])
        self.event("forward_outside_autocast", op_name(func), sys._getframe(1), operands=operands, result=result)

    def _on_low_outside_autocast(self, func, name, args, kwargs, device):
        """amp, before the first ``backward``: remember where a bf16/f16 device result was computed outside
        autocast from a bf16/f16 operand; a result computed from one remembered keeps its operand's place,
        where the chain left autocast (:meth:`on_loss` reads it), f32 ones too: a bf16 cross-entropy summed with
        an f32 term is an f32 loss computed partly in bf16 outside autocast (a hunt's margin loss promoted by an
        f32 ``torch.eye`` PASSed). A move or view (``out[:n]``) computes nothing: it starts no chain."""
        if self._torch.is_autocast_enabled("xla"):
            return
        low = [r for r in device if self.device_type(r) in _LOW]
        operands = [t for t in self._tensors(args, kwargs) if t.is_xla and t.is_floating_point()]
        place = None
        for t in operands:  # the first remembered operand's place, one whose chain ran an fp32 op first
            entry = self.low_made.get(id(t))
            if entry is not None and entry[0]() is t and (place is None or "fp32_op" in entry[1]):
                place = entry[1]
                low = device
                if "fp32_op" in place:
                    break
        if place is None:
            if not low or name in _MOVES or not any(self.device_type(t) in _LOW for t in operands):
                return
            user = self.user_frame(sys._getframe(1))
            if user is None:
                return
            start, end, col, end_col = self.position(user)
            line = user.f_lineno
            place = {
                "file": user.f_code.co_filename,
                "line": start if start == line else line,
                "end_line": end if start == line else line,
                "col": col if start == line else None,
                "end_col": end_col if start == line else None,
                "op": op_name(func),
                "result": self.device_type(low[0]),
            }
        if name in _AUTOCAST_FP32 and "fp32_op" not in place and any(self.device_type(t) in _LOW for t in operands):
            place = dict(place, fp32_op=op_name(func))  # autocast runs it in float32: the chain's precision loss
        for r in low:
            self.tag(r, place, self.low_made)

    def on_loss(self, tensor):
        """amp, the first loss the harness is handed (``backward``): a ``loss_outside_autocast`` event at
        the place :meth:`_on_low_outside_autocast` remembered for it, if any, when the loss is bf16 or its chain
        ran an op autocast runs in float32 (``fp32_op``); nothing is remembered after."""
        if not self.amp or self.loss_seen:
            return
        self.loss_seen = True
        entry = self.low_made.get(id(tensor))
        self.low_made.clear()
        if entry is None or entry[0]() is not tensor or os.getpid() != self.pid:
            return
        place = entry[1]
        if self.device_type(tensor) not in _LOW and "fp32_op" not in place:
            return  # f32 by promotion, its bf16 part of ops autocast leaves in bf16 too (a mean, a pow)
        self.order += 1
        key = (place["file"], place["line"], place["op"], "loss_outside_autocast")
        self.events[key] = dict(
            place,
            kind="loss_outside_autocast",
            count=1,
            order=self.order,
            step=self.steps(),
            after_stop=False,
            operands=[],
            result=place.get("result") or self.device_type(tensor),
        )

    def _on_in_place(self, func, args, kwargs, result):
        """An op whose bf16 result took an operand made f32 on the device: in place, one that stores a
        bf16 device tensor from it (``p.data.add_(z, alpha=eps)`` with ``z = torch.randn(...).to(p.device)``:
        it computes in f32 before the store, where the legacy run's operands were both bf16), or out of
        place, one that does not promote (a loss given an f32 class weight, ``F.cross_entropy(logits, y,
        weight=w.float())``, which XLA's HLO verifier refuses at the next sync: the failure's line is the
        sync, this is its cause); its result, bf16, hides it from :meth:`_on_f32`. A meet, when the f32
        operand was created so (a move, a factory: origin ``create``), not an f32 computation of the
        script's (an FP32 clip coefficient)."""
        if self._in_step:
            return
        tensors = [t for t in self._tensors(args, kwargs) if t.is_floating_point() and t.is_xla]
        operands = [self.device_type(t) for t in tensors]
        f32_ops = [t for t, d in zip(tensors, operands) if d in self.wide]
        low_ops = [t for t, d in zip(tensors, operands) if d in self.narrow]
        if not f32_ops or not low_ops or self.device_type(result) not in self.narrow:
            return
        source = self._first_origin(f32_ops)
        origin = self.origin_of(source)
        if origin is None or origin.get("kind") != "create":
            return
        self.event(
            "meet",
            op_name(func),
            sys._getframe(1),
            operands=operands,
            result=self.device_type(result),
            origin=origin,
            f32_args=[i for i, d in enumerate(operands) if d in self.wide],
            _names=(source, low_ops[0]),
        )

    def _on_host(self, func, name, args, kwargs, host):
        """Host results: an exit when a device tensor went in and bf16/f16 came out; a cast of
        a host tensor that left the device as bf16 (``.cpu().float()``) counts as cast back."""
        if os.getpid() != self.pid or self._on_host_copy(name, args, host) or name not in ("cpu", "to"):
            return
        tensors = self._tensors(args, kwargs)
        if not any(t.is_xla for t in tensors):
            return
        if not self._called_by_user():
            return  # a library's own copy to the host (ZeRO's sharding): the user's code never holds it
        for r in host:
            self._sample_output(op_name(func), r, r)
        # every exit is counted (an exit that also hands over integer tensors is not repaired by a
        # blanket .float()); only those with a bf16/f16 result are findings
        low = [r for r in host if r.is_floating_point() and str(r.dtype) in ("torch.bfloat16", "torch.float16")]
        dtypes: dict[str, int] = {}
        for r in host:
            key = str(r.dtype).replace("torch.", "")
            dtypes[key] = dtypes.get(key, 0) + 1
        ev = self.event("exit", op_name(func), sys._getframe(1), operands=[self.device_type(tensors[0])])
        if ev is None:
            return
        ev.setdefault("exit_dtypes", {})
        for key, n in dtypes.items():
            ev["exit_dtypes"][key] = ev["exit_dtypes"].get(key, 0) + n
        ev.setdefault("cast_back", 0)
        ev.setdefault("exits", 0)
        ev["exits"] += len(low)
        for r in low:
            self.tag(r, _HostExit(ev), self.host_exits)

    def _on_host_copy(self, name, args, host) -> bool:
        """A cast (``.float()``) or a view (``.flatten()``) of a host tensor: a cast to float32/float64 casts back
        the exit it is (or a module's host tensor it is); a view of an exit stands for it. Returns whether
        ``name`` was one of those, on a tensor that left the device as bf16."""
        if not args or not isinstance(args[0], self._torch.Tensor):
            return False
        wide = all(r.dtype in (self._torch.float32, self._torch.float64) for r in host)
        if name in _CASTS and wide:
            self._storage_cast_back(args[0])
        entry = self.host_exits.get(id(args[0]))
        if entry is None or entry[0]() is not args[0]:
            return name in _HOST_VIEWS
        if name in _CASTS:
            if wide:
                self._exit_cast_back(args[0])
            return True
        if name in _HOST_VIEWS:
            for r in host:  # the view stands for the exit: its cast back (or its Python numbers) is the exit's
                self.tag(r, entry[1], self.host_exits)
            return True
        return False

    def _exit_cast_back(self, t) -> None:
        """Count the bf16/f16 exit ``t`` is (or is a view of) as cast back (``.float()``, ``.tolist()``), once per
        exit however many of its views are."""
        entry = self.host_exits.pop(id(t), None)
        if entry is None or entry[0]() is not t or entry[1].cast_back:
            return
        entry[1].cast_back = True
        entry[1].event["cast_back"] = entry[1].event.get("cast_back", 0) + 1

    def _sample_output(self, op, tensor, value):
        """Add a sample of ``value`` (a host tensor, or the Python number/list ``.item()`` /
        ``.tolist()`` gave for the device ``tensor``) to ``outputs``, at the user's line."""
        if len(self.outputs) >= OUTPUT_LIMIT:
            return
        user = self.user_frame(sys._getframe(1))
        if user is None:
            return
        start, _end, col, _end_col = self.position(user)
        line = user.f_lineno
        key = (user.f_code.co_filename, line, op)
        seen = self._output_seen.get(key, 0)
        self._output_seen[key] = seen + 1
        if seen >= OUTPUT_OCCURRENCES:
            for sample in reversed(self.outputs):
                if (sample["file"], sample["line"], sample["op"]) == key:
                    sample["seen"] = seen + 1
                    break
            return
        torch = self._torch
        was = self.enabled
        self.enabled = False  # the reads below are the trace's own, not the script's
        try:
            if isinstance(value, torch.Tensor):
                flat = value.detach().reshape(-1)[:OUTPUT_VALUES]
                floating = value.is_floating_point()
                values = (flat.double() if floating else flat.long()).tolist()
                dtype, shape, numel = str(value.dtype).replace("torch.", ""), list(value.shape), value.numel()
            else:
                floating = tensor.is_floating_point()
                items = value if isinstance(value, list) else [value]
                while items and isinstance(items[0], list):  # a nested .tolist(): its first values
                    items = [v for row in items for v in row][: OUTPUT_VALUES * 4]
                values = [float(v) if floating else int(v) for v in items[:OUTPUT_VALUES]]
                dtype, shape, numel = "python", list(tensor.shape), tensor.numel()
        finally:
            self.enabled = was
        self.outputs.append(
            {
                "file": user.f_code.co_filename,
                "line": line,
                "col": col if start == line else None,
                "function": user.f_code.co_name,
                "op": op,
                "occurrence": seen,
                "seen": seen + 1,
                "dtype": dtype,
                "floating": bool(floating),
                "shape": shape,
                "numel": int(numel),
                "values": values,
                "step": self.steps(),
                "after_stop": bool(self.after_stop()),
            }
        )

    def _called_by_user(self):
        """Whether the torch call being traced was made by the user's code itself (the frame
        that called into the torch-function mode is one of the user's files)."""
        frame: Any = sys._getframe(1)
        while frame is not None and frame.f_code.co_name != "__torch_function__":
            frame = frame.f_back
        caller = frame.f_back if frame is not None else None
        return caller is not None and self._is_user(caller.f_code.co_filename)

    def _on_f32(self, func, name, args, kwargs, high):
        """f32/f64 results on the device: a meet, a compute, an upcast or a creation."""
        if self._in_step:
            return
        tensors = [t for t in self._tensors(args, kwargs) if t.is_floating_point() or t.is_xla]
        operands = [self.device_type(t) for t in tensors]
        f32_ops = [t for t, d in zip(tensors, operands) if d in self.wide]
        low_ops = [t for t, d in zip(tensors, operands) if d in self.narrow]
        op = op_name(func)
        frame = sys._getframe(1)
        result = self.device_type(high[0])
        if f32_ops and low_ops:
            source = self._first_origin(f32_ops)
            origin = self.origin_of(source)
            ev = self.event(
                "meet",
                op,
                frame,
                operands=operands,
                result=result,
                origin=origin,
                f32_args=[i for i, d in enumerate(operands) if d in self.wide],
                _names=(source, low_ops[0]),
            )
            mark = origin if origin is not None and origin.get("kind") == "meet" else _ref(ev)
        elif f32_ops:
            origin = self.origin_of(self._first_origin(f32_ops))
            if name in _MOVES:
                mark = origin
            else:
                ev = self.event(
                    "compute", op, frame, operands=operands, result=result, origin=origin, _names=(f32_ops[0], None)
                )
                mark = origin if origin is not None and origin.get("kind") != "param" else _ref(ev)
        elif low_ops:
            ev = self.event("upcast", op, frame, operands=operands, result=result)
            mark = _ref(ev)
        else:
            ev = self.event("create", op, frame, operands=operands, result=result)
            mark = _ref(ev)
        if mark is not None:
            for r in high:
                self.tag(r, mark)

    # -- modules and copies ----------------------------------------------------------------
    def _on_data_set(self, owner, value):
        """``p.data = value``: ``p`` now holds ``value``'s storage, so it takes ``value``'s origin (a
        parameter made f32 again after the model cast, ``p.data = p.data.float()``, is named there and not
        where its module was moved: bench/unseen/hunt27 PW3)."""
        torch = self._torch
        if not self.track_f32 or torch is None or not isinstance(owner, torch.Tensor):
            return
        if not isinstance(value, torch.Tensor):
            return
        entry = self.origins.get(id(value))
        if entry is not None and entry[0]() is value:
            self.tag(owner, entry[1])
        else:
            self.origins.pop(id(owner), None)

    @staticmethod
    def on_device(module):
        """Whether a floating parameter or buffer of ``module`` is on the XLA device."""
        return any(t.is_xla and t.is_floating_point() for t in list(module.parameters()) + list(module.buffers()))

    def _module_mover(self, frame):
        """The name of the ``Module`` method the user's code called to move a module (``cpu``, ``to``),
        walking out of torch's ``nn/modules/module.py`` from ``frame`` (the caller of ``Module._apply``);
        None when the frame outside it is not the user's code (a library's or torch's own move)."""
        name = None
        while frame is not None and frame.f_code.co_filename.endswith(_MODULE_PY):
            name = frame.f_code.co_name
            frame = frame.f_back
        if frame is None or not self._is_user(frame.f_code.co_filename):
            return None
        return name or "_apply"

    def _on_module_exit(self, module, frame):
        """A module the user's code moved from the device to the host (``model.cpu()``,
        ``model.to("cpu")``) with bf16/f16 floating parameters or buffers: an exit of those, at the
        user's line. Under the switch a device tensor handed to the host is float32
        (torch_xla/csrc/dtype.cpp, ``MaybeUpcastToHostTorchType``), and ``Module._apply`` moves
        each parameter with ``Tensor.cpu``/``Tensor.to`` from torch's code, which :meth:`_on_host` leaves
        alone. A later ``.float()`` of the module on the host, a cast of one of its tensors, or a
        ``torch.save`` of them (named there, BFM211), counts as cast back (:meth:`_on_module_cast_back`,
        :meth:`_storage_cast_back`)."""
        mover = self._module_mover(frame)
        if mover is None or os.getpid() != self.pid:
            return
        tensors = [t for t in list(module.parameters()) + list(module.buffers()) if t.is_floating_point()]
        if not tensors or any(t.is_xla for t in tensors):
            return
        low = [t for t in tensors if t.dtype in (self._torch.bfloat16, self._torch.float16)]
        if not low:
            return
        ev = self.event("exit", f"{type(module).__name__}.{mover}", frame, operands=["module"])
        if ev is None:
            return
        dtypes = ev.setdefault("exit_dtypes", {})
        for t in tensors:
            key = str(t.dtype).replace("torch.", "")
            dtypes[key] = dtypes.get(key, 0) + 1
        ev.setdefault("cast_back", 0)
        ev["exits"] = ev.get("exits", 0) + len(low)
        self.module_exits[id(module)] = (weakref.ref(module), ev)
        for t in low:
            self.module_exit_storage[t.data_ptr()] = (weakref.ref(t), ev)

    def _on_module_cast_back(self, module):
        """A module moved to the host as bf16 (:meth:`_on_module_exit`) whose floating parameters and
        buffers are all float32/float64 on the host now (``model.cpu().float()``): cast back."""
        entry = self.module_exits.get(id(module))
        if entry is None or entry[0]() is not module:
            return
        tensors = [t for t in list(module.parameters()) + list(module.buffers()) if t.is_floating_point()]
        if any(t.is_xla or t.dtype not in (self._torch.float32, self._torch.float64) for t in tensors):
            return
        self.module_exits.pop(id(module), None)
        ev = entry[1]
        left = [k for k, v in self.module_exit_storage.items() if v[1] is ev]
        for k in left:
            self.module_exit_storage.pop(k, None)
        ev["cast_back"] = min(ev.get("exits", 0), ev.get("cast_back", 0) + len(left))

    def _storage_cast_back(self, t):
        """``t``, a host tensor holding the storage of a module's bf16 tensor that left the device
        (:meth:`_on_module_exit`; ``state_dict()`` detaches, sharing it), cast to float32 or saved: that
        tensor counts as cast back. The module's tensor must still hold that storage (a freed one's
        address can be reused)."""
        if not self.module_exit_storage or t.is_xla:
            return
        try:
            ptr = t.data_ptr()
        except Exception:  # a tensor without storage (sparse, meta)
            return
        entry = self.module_exit_storage.get(ptr)
        if entry is None:
            return
        held = entry[0]()
        if held is not None and not held.is_xla and held.data_ptr() == ptr:
            ev = entry[1]
            ev["cast_back"] = min(ev.get("exits", 0), ev.get("cast_back", 0) + 1)
        self.module_exit_storage.pop(ptr, None)

    def after_module_move(self, module, frame, from_device):
        """After ``Module._apply`` called from outside another: a module moved from the device to the
        host (``from_device``, the non-amp modes: :meth:`_on_module_exit`) or cast back on the host, then
        :meth:`after_apply`."""
        if not self.enabled:
            return
        was = self.enabled
        self.enabled = False  # the reads below are the trace's own, not the script's
        try:
            if from_device and not self.amp:
                self._on_module_exit(module, frame)
            self._on_module_cast_back(module)
        finally:
            self.enabled = was
        self.after_apply(module, frame)

    def after_apply(self, module, frame):
        """After ``Module._apply`` (``.to(device)``, ``.float()``...): its f32 device parameters
        and buffers get the origin ``module`` at the user's line; those it made bf16 lose the origin
        an earlier move gave them (what makes one f32 again is named there)."""
        if not self.track_f32 or not self.enabled:
            return
        tensors = [t for t in list(module.parameters()) + list(module.buffers()) if t.is_xla and t.is_floating_point()]
        high = [t for t in tensors if self.device_type(t) in self.wide]
        for t in tensors:
            if self.device_type(t) in _LOW:
                self.origins.pop(id(t), None)
        if not high:
            return
        ev = self.event(
            "create",
            f"{type(module).__name__}.to",
            frame,
            operands=[],
            result=self.device_type(high[0]),
            module=type(module).__name__,
        )
        if ev is not None:
            for t in high:
                self.tag(t, dict(_ref(ev), kind="module"))

    def after_deepcopy(self, copied, frame):
        """After ``Parameter.__deepcopy__``: an f32 device copy gets the origin ``copy``."""
        if not self.track_f32 or not self.enabled or not getattr(copied, "is_xla", False):
            return
        if not copied.is_floating_point() or self.device_type(copied) not in self.wide:
            return
        ev = self.event("create", "copy.deepcopy", frame, operands=[], result=self.device_type(copied))
        if ev is not None:
            self.tag(copied, dict(_ref(ev), kind="copy"))

    def after_parameter(self, parameter, data, frame):
        """After ``nn.Parameter(data)``: the parameter is a new tensor object over ``data``, so it takes
        ``data``'s origin (``nn.Parameter(torch.tensor(init, device=w.device))`` in a module built after
        the model's cast is named at that line, not as a parameter of unknown history: bench/unseen/hunt40
        V1); an f32 device parameter over data of no known origin is made where it is wrapped."""
        if not self.track_f32 or not self.enabled or not getattr(parameter, "is_xla", False):
            return
        if not parameter.is_floating_point() or self.device_type(parameter) not in self.wide:
            return
        origin = self.origin_of(data) if data is not None else None
        if origin is not None and origin.get("kind") != "param":
            self.tag(parameter, origin)
            return
        ev = self.event("create", "nn.Parameter", frame, operands=[], result=self.device_type(parameter))
        if ev is not None:
            self.tag(parameter, _ref(ev))

    def on_save(self, obj, frame):
        """``torch.save(obj, ...)``: an exit when a floating tensor in ``obj`` is bf16/f16."""
        if os.getpid() != self.pid or not self.enabled:
            return
        self.enabled = False  # the reads below are the trace's own, not the script's
        try:
            self._on_save(obj, frame)
        finally:
            self.enabled = True

    def _on_save(self, obj, frame):
        torch = self._torch
        dtypes: dict[str, int] = {}
        flat = isinstance(obj, dict) and bool(obj) and all(isinstance(v, torch.Tensor) for v in obj.values())
        seen = 0
        saved = 0
        stack = [(obj, 0)]
        while stack and seen < 100000:
            value, depth = stack.pop()
            seen += 1
            if isinstance(value, torch.Tensor):
                self._storage_cast_back(value)  # a module's bf16 host tensor saved: named at the save
                if not value.is_xla and saved < OUTPUT_SAVED:  # a host copy (xm.save's): what the file holds
                    self._sample_output(f"torch.save #{saved}", value, value)
                    saved += 1
                if value.is_floating_point():
                    key = self.device_type(value).split(":")[-1]
                    key = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64"}.get(key, key)
                    dtypes[key] = dtypes.get(key, 0) + 1
            elif depth < 6 and isinstance(value, dict):
                stack.extend((v, depth + 1) for v in value.values())
            elif depth < 6 and isinstance(value, (list, tuple)):
                stack.extend((v, depth + 1) for v in value)
        if not any(k in _LOW for k in dtypes):
            return
        ev = self.event("exit", "torch.save", frame, operands=[], flat_dict=flat)
        if ev is not None:
            ev["exit_dtypes"] = dtypes
            ev.setdefault("cast_back", 0)
            ev["exits"] = ev.get("exits", 0) + sum(n for k, n in dtypes.items() if k in _LOW)

    def note_held(self):
        """amp, at the first optimizer step: mark each ``create`` event whose wide (float64) device tensor is still
        held then (``held``): a float64 table kept for the training, not a temporary cast at once to float32
        (``float64_to_float32(torch.tensor(a, device=d))`` makes one that is gone by the step)."""
        if not self.amp or os.getpid() != self.pid:
            return
        for ref, mark in list(self.origins.values()):
            t = ref()
            if t is None or not isinstance(mark, dict) or mark.get("kind") != "create":
                continue
            if getattr(t, "is_xla", False) and self.device_type(t) in self.wide:
                ev = self.events.get((mark.get("file"), mark.get("line"), mark.get("op"), "create"))
                if ev is not None:
                    ev["held"] = True

    def on_finfo(self, info, frame):
        """A ``torch.finfo(dtype)`` called from the user's code (not from torch's own, whose calls follow the
        tensors torch hands them): a ``finfo`` event at its line, ``result`` the dtype whose constants it read."""
        if os.getpid() != self.pid or not self.enabled or not self._is_user(frame.f_code.co_filename):
            return
        name = str(info.dtype)
        short = {"bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64"}.get(name, name)
        self.event("finfo", "torch.finfo", frame, operands=[], result=short)

    def on_exception(self, exc_type, exc, tb):
        """The exception that ends the process, at the innermost user frame of its traceback."""
        if os.getpid() != self.pid:
            return
        user = None
        while tb is not None:
            if self._is_user(tb.tb_frame.f_code.co_filename):
                user = tb
            tb = tb.tb_next
        if user is None:
            return
        frame = user.tb_frame
        line = user.tb_lineno
        col = end_col = None
        end = line
        try:
            start, end_line, c, ec = list(frame.f_code.co_positions())[user.tb_lasti // 2]
            if start == line:
                end, col, end_col = end_line or line, c, ec
        except Exception:
            pass
        text = str(exc).splitlines()[0][:300] if str(exc) else ""
        self.order += 1
        key = (frame.f_code.co_filename, line, exc_type.__name__, "exception")
        self.events[key] = {
            "kind": "exception",
            "file": frame.f_code.co_filename,
            "line": line,
            "end_line": end,
            "col": col,
            "end_col": end_col,
            "op": exc_type.__name__,
            "count": 1,
            "order": self.order,
            "step": self.steps(),
            "after_stop": bool(self.after_stop()),
            "message": f"{exc_type.__name__}: {text}",
        }

    def to_json(self):
        """The events in the order first seen, and the trace's own errors."""
        events = sorted(self.events.values(), key=lambda e: e["order"])
        return {
            "version": 1,
            "events": [dict(e) for e in events],
            "outputs": [dict(o) for o in self.outputs],
            "errors": list(self.errors),
            "calls": self.calls,
            "device_ops": bool(self.track_f32),
            "lines_run": {file: sorted(lines) for file, lines in self.lines_run.items()},
        }


def _ref(ev):
    """An event as an origin: its kind, place and op."""
    if ev is None:
        return None
    return {"kind": ev["kind"], "file": ev["file"], "line": ev["line"], "op": ev["op"]}


def _trace_backward(mode, torch):
    """Run each backward pass with ``mode`` on the stack. ``loss.backward()`` reaches the engine
    through the mode's own ``__torch_function__``, during which torch takes the mode off the stack
    (``torch.overrides.TorchFunctionMode``), so the Python code a backward pass runs (a custom
    ``torch.autograd.Function``'s ``backward``, a tensor hook) went unseen; the engine's threads take
    the stack the pass starts with (measured with torch-xla 2.9 on the XLA CPU device)."""
    from torch.overrides import _get_current_function_mode_stack

    autograd = torch.autograd
    run_backward = autograd._engine_run_backward

    def _engine_run_backward(*args, **kwargs):
        if mode in _get_current_function_mode_stack():
            return run_backward(*args, **kwargs)
        with mode:
            return run_backward(*args, **kwargs)

    autograd._engine_run_backward = _engine_run_backward


def _trace_threads(mode):
    """Run each thread started from now on with ``mode`` on its stack. torch's function-mode stack is
    per thread (``torch.overrides``), and torch-xla's ``xmp.spawn`` runs the spawned function in a
    thread of each process it starts (torch_xla/_internal/pjrt.py, ``_run_thread_per_device``): the
    trace saw nothing of a training loop run there and said "no f32 on the device" (found by a hunt
    whose verdict was FAIL by precision, no line named)."""
    from torch.overrides import _get_current_function_mode_stack

    orig_run = threading.Thread.run

    def run(self):
        if mode in _get_current_function_mode_stack():
            return orig_run(self)
        with mode:
            return orig_run(self)

    threading.Thread.run = run  # type: ignore[method-assign]


def _trace_parameters(tracer, torch):
    """Wrap ``Parameter.__deepcopy__`` (a copy's origin) and ``Parameter.__new__`` (a new parameter takes the
    origin of the tensor it wraps)."""
    parameter = torch.nn.Parameter
    orig_deepcopy = parameter.__deepcopy__

    def __deepcopy__(self, memo):
        out = orig_deepcopy(self, memo)
        try:
            tracer.after_deepcopy(out, sys._getframe(1))
        except Exception as exc:
            tracer._error(f"tracing Parameter.__deepcopy__ failed: {exc!r}")
        return out

    parameter.__deepcopy__ = __deepcopy__

    orig_new = parameter.__new__

    def __new__(cls, data=None, requires_grad=True):
        out = orig_new(cls, data, requires_grad)
        try:
            tracer.after_parameter(out, data, sys._getframe(1))
        except Exception as exc:
            tracer._error(f"tracing nn.Parameter failed: {exc!r}")
        return out

    parameter.__new__ = staticmethod(__new__)


def install(tracer, torch):
    """Put the tracer on the main thread's torch-function mode stack for the rest of the run, and on
    the stack of each thread started after (:func:`_trace_threads`), and wrap ``Module._apply``,
    ``Parameter.__deepcopy__``, ``Parameter.__new__`` and ``torch.save``."""
    from torch.overrides import TorchFunctionMode

    tracer.bind(torch)

    class _DtypeTraceMode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return tracer.call(func, args, kwargs or {})

    mode = _DtypeTraceMode()
    mode.__enter__()
    _trace_backward(mode, torch)
    _trace_threads(mode)

    if tracer.step_f32:  # the optimizer's step runs on FP32 master weights: its f32 is the mode's

        def enter_step(_optimizer, _args, _kwargs):
            tracer._in_step += 1

        def leave_step(_optimizer, _args, _kwargs):
            tracer._in_step = max(0, tracer._in_step - 1)

        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

        register_optimizer_step_pre_hook(enter_step)
        register_optimizer_step_post_hook(leave_step)

    module_class = torch.nn.Module
    orig_apply = module_class._apply

    def _apply(self, *args, **kwargs):
        from_device = False
        if tracer._in_apply == 0 and tracer.enabled:
            try:
                from_device = tracer.on_device(self)
            except Exception as exc:
                tracer._error(f"tracing Module._apply failed: {exc!r}")
        tracer._in_apply += 1
        try:
            out = orig_apply(self, *args, **kwargs)
        finally:
            tracer._in_apply -= 1
        if tracer._in_apply == 0:
            try:
                tracer.after_module_move(self, sys._getframe(1), from_device)
            except Exception as exc:
                tracer._error(f"tracing Module._apply failed: {exc!r}")
        return out

    module_class._apply = _apply

    _trace_parameters(tracer, torch)

    orig_save = torch.save

    @functools.wraps(orig_save)
    def save(obj, *args, **kwargs):
        try:
            tracer.on_save(obj, sys._getframe(1))
        except Exception as exc:
            tracer._error(f"tracing torch.save failed: {exc!r}")
        return orig_save(obj, *args, **kwargs)

    torch.save = save
    _trace_finfo(tracer, torch)
    return mode


def _trace_finfo(tracer, torch):
    """Wrap ``torch.finfo`` (a C type that cannot be subclassed: a class whose metaclass answers ``isinstance``
    for the real one, its ``__new__`` returning the real object) so that a call in the user's code records the
    dtype it reads the constants of (``on_finfo``): ``torch.finfo(probs.dtype).eps`` read float32's under the
    switch (the label) and reads bf16's after a migration that makes ``probs`` bf16."""
    real = torch.finfo
    if getattr(real, "_bfm_traced", False):
        return

    class _Meta(type):
        def __instancecheck__(cls, obj):
            return isinstance(obj, real)

    class finfo(metaclass=_Meta):
        _bfm_traced = True

        def __new__(cls, *args, **kwargs):
            info = real(*args, **kwargs)
            try:
                tracer.on_finfo(info, sys._getframe(1))
            except Exception as exc:
                tracer._error(f"tracing torch.finfo failed: {exc!r}")
            return info

    finfo.__doc__ = real.__doc__
    torch.finfo = finfo
