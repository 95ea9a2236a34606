"""The dtype trace of a verify run, as typed data (no torch).

The child harness (``_child/dtype_trace.py``) records, per line of the user's code, where a
floating tensor is float32/float64 on the XLA device, where a bf16 one leaves it for the host,
which operation raised and which exception ended the process; its record holds that as JSON
(``"trace"``). :meth:`Trace.from_json` reads it into :class:`TraceEvent`\\ s; :meth:`Trace.to_dict`
writes it back (verify's ``--json``, key ``runs.<run>.trace``). The findings made from the
legacy and the migrated run's traces are :mod:`.trace_findings`'.

Kinds of event (:class:`Kind`): ``create`` (made f32 from no floating device tensor: a factory,
a host tensor moved to the device), ``upcast`` (f32 made from bf16 by a cast), ``meet`` (f32
and bf16 operands in one operation: the result is promoted to f32), ``compute`` (any other
operation computing f32 from f32), ``exit`` (bf16 handed to the host, or saved), ``op_error``
(an operation that raised), ``exception`` (the exception that ended the process). Beside the
events, :class:`HostOutput`\\ s: samples of what the user's code took off the device, which
:mod:`.outputs` compares between two runs.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CallSite", "HostOutput", "Kind", "Origin", "OriginKind", "Trace", "TraceEvent", "TraceEnd"]


class Kind(str, enum.Enum):
    """What a trace event is (see the module docstring)."""

    CREATE = "create"
    UPCAST = "upcast"
    MEET = "meet"
    COMPUTE = "compute"
    EXIT = "exit"
    OP_ERROR = "op_error"
    EXCEPTION = "exception"
    DOWNCAST = "downcast"
    LOSS_OUTSIDE_AUTOCAST = "loss_outside_autocast"
    FORWARD_OUTSIDE_AUTOCAST = "forward_outside_autocast"
    FINFO = "finfo"


class OriginKind(str, enum.Enum):
    """Where an f32 operand's f32-ness began: an event of the trace (``create``, ``upcast``,
    ``meet``, ``compute``), a module moved to the device or cast (``module``), a deep copy of a
    parameter (``copy``), or an ``nn.Parameter`` of unknown history (``param``)."""

    CREATE = "create"
    UPCAST = "upcast"
    MEET = "meet"
    COMPUTE = "compute"
    MODULE = "module"
    COPY = "copy"
    PARAM = "param"


class TraceEnd(str, enum.Enum):
    """How the traced process ended: its own end (``script_exit``, ``exception``), the harness's
    stop at the recorded steps (``steps_reached``: the run did not go on), or the end of the time
    the run may go on after them (``budget`` at a ``backward``, ``deadline`` a timer)."""

    SCRIPT_EXIT = "script_exit"
    EXCEPTION = "exception"
    STEPS_REACHED = "steps_reached"
    BUDGET = "budget"
    DEADLINE = "deadline"
    RUNNING = "running"

    @property
    def complete(self) -> bool:
        """The trace saw the script to its end."""
        return self in (TraceEnd.SCRIPT_EXIT, TraceEnd.EXCEPTION)


@dataclass(frozen=True)
class Origin:
    """Where an f32 operand's f32-ness began: ``kind`` and, for all but ``param``, the ``file``
    and ``line`` of the user's code and the ``op`` there."""

    kind: OriginKind
    file: str | None = None
    line: int | None = None
    op: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Origin | None:
        if not data:
            return None
        try:
            kind = OriginKind(str(data.get("kind")))
        except ValueError:
            return None
        line = data.get("line")
        return cls(kind, data.get("file"), int(line) if line is not None else None, data.get("op"))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "file": self.file, "line": self.line, "op": self.op}


@dataclass(frozen=True)
class CallSite:
    """A frame of the user's code that called an event's frame: the call's span (``line`` to
    ``end_line``; ``col``/``end_col`` 0-based UTF-8 byte offsets or None) in ``file``."""

    file: str
    line: int
    end_line: int
    col: int | None
    end_col: int | None

    @classmethod
    def from_json(cls, data: Any) -> CallSite:
        """From the child's ``[file, line, end_line, col, end_col]``; raises ValueError/TypeError."""
        file, line, end_line, col, end_col = data
        return cls(
            str(file),
            int(line),
            int(end_line) if end_line is not None else int(line),
            int(col) if col is not None else None,
            int(end_col) if end_col is not None else None,
        )

    def to_json(self) -> list[Any]:
        return [self.file, self.line, self.end_line, self.col, self.end_col]


@dataclass
class TraceEvent:
    """One event of the trace, deduplicated by (file, line, op, kind).

    ``file``/``line``: the innermost frame of the user's code (the path the run saw: a staged
    copy's, mapped to the user's file by :mod:`.trace_findings`); ``end_line``, ``col``,
    ``end_col``: the span of the expression there (0-based UTF-8 byte offsets, as CPython's
    ``co_positions``; None when unknown). ``op``: ``Tensor.add``, ``F.linear``, ``torch.save``,
    the exception's type. ``count``: how many times; ``order``: when first seen (1, 2...);
    ``step``: optimizer steps done then; ``after_stop``: first seen after the recorded steps.
    ``operands``: the device element types of the tensor operands in order (``bf16``, ``f32``;
    host tensors ``cpu:<dtype>``); ``result``: the result's. ``origin``: where the f32 operand's
    f32-ness began. ``f32_names`` / ``partner_names``: names bound to the f32 operand and to its
    bf16 partner in the user's frame; ``f32_args``: the f32 operands' positions. An exit:
    ``exit_dtypes`` (host dtype -> count), ``exits`` (bf16/f16 host tensors), ``cast_back`` (of
    those, later cast to f32), ``flat_dict`` (a saved flat dict of tensors). ``module``: the
    class of a module moved to the device. ``message``: an exception's or failed op's text;
    ``mixed``: a failed op had f32 and bf16 operands. ``callers``: the user's frames that called
    the event's frame, innermost first (:class:`CallSite`). ``fp32_op``: a loss's chain outside autocast ran
    this op, which autocast runs in float32 (``F.cross_entropy``), on bf16 operands. ``held``: amp, a ``create``
    whose float64 device tensor was still held at the first optimizer step. ``in_init``: the user's frame is a
    module's ``__init__`` (a layer built on the device: its parameters' initial values)."""

    kind: Kind
    file: str
    line: int
    op: str
    end_line: int | None = None
    col: int | None = None
    end_col: int | None = None
    count: int = 1
    order: int = 0
    step: int = 0
    after_stop: bool = False
    operands: list[str] = field(default_factory=list)
    result: str | None = None
    origin: Origin | None = None
    f32_names: list[str] = field(default_factory=list)
    partner_names: list[str] = field(default_factory=list)
    f32_args: list[int] = field(default_factory=list)
    exit_dtypes: dict[str, int] = field(default_factory=dict)
    exits: int = 0
    cast_back: int = 0
    flat_dict: bool = False
    module: str | None = None
    message: str | None = None
    mixed: bool = False
    callers: list[CallSite] = field(default_factory=list)
    fp32_op: str | None = None
    held: bool = False
    in_init: bool = False

    @property
    def key(self) -> tuple[str, int, str, str]:
        return (self.file, self.line, self.op, self.kind.value)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TraceEvent:
        """Raises KeyError or ValueError for an event without its kind, file, line or op."""

        def optional_int(key: str) -> int | None:
            value = data.get(key)
            return int(value) if value is not None else None

        return cls(
            kind=Kind(str(data["kind"])),
            file=str(data["file"]),
            line=int(data["line"]),
            op=str(data["op"]),
            end_line=optional_int("end_line"),
            col=optional_int("col"),
            end_col=optional_int("end_col"),
            count=int(data.get("count", 1)),
            order=int(data.get("order", 0)),
            step=int(data.get("step", 0)),
            after_stop=bool(data.get("after_stop", False)),
            operands=[str(x) for x in data.get("operands") or []],
            result=data.get("result"),
            origin=Origin.from_json(data.get("origin")),
            f32_names=[str(x) for x in data.get("f32_names") or []],
            partner_names=[str(x) for x in data.get("partner_names") or []],
            f32_args=[int(x) for x in data.get("f32_args") or []],
            exit_dtypes={str(k): int(v) for k, v in (data.get("exit_dtypes") or {}).items()},
            exits=int(data.get("exits", 0)),
            cast_back=int(data.get("cast_back", 0)),
            flat_dict=bool(data.get("flat_dict", False)),
            module=data.get("module"),
            message=data.get("message"),
            mixed=bool(data.get("mixed", False)),
            callers=[CallSite.from_json(c) for c in data.get("callers") or []],
            fp32_op=data.get("fp32_op"),
            held=bool(data.get("held", False)),
            in_init=bool(data.get("in_init", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind.value,
            "file": self.file,
            "line": self.line,
            "end_line": self.end_line,
            "col": self.col,
            "end_col": self.end_col,
            "op": self.op,
            "count": self.count,
            "order": self.order,
            "step": self.step,
            "after_stop": self.after_stop,
            "operands": list(self.operands),
            "result": self.result,
            "origin": self.origin.to_dict() if self.origin is not None else None,
        }
        optional = {
            "f32_names": self.f32_names,
            "partner_names": self.partner_names,
            "f32_args": self.f32_args,
            "exit_dtypes": self.exit_dtypes,
            "exits": self.exits,
            "cast_back": self.cast_back,
            "flat_dict": self.flat_dict,
            "module": self.module,
            "message": self.message,
            "mixed": self.mixed,
            "callers": [c.to_json() for c in self.callers],
            "fp32_op": self.fp32_op,
            "held": self.held,
            "in_init": self.in_init,
        }
        out.update({k: v for k, v in optional.items() if v})
        return out


@dataclass
class HostOutput:
    """A sample of one result the user's code took off the device: at ``file``:``line`` (``col``
    0-based UTF-8 byte offset or None), by ``op`` (``Tensor.cpu``, ``Tensor.to``, ``Tensor.item``,
    ``Tensor.tolist``), its ``occurrence`` there (0 for the first; only the first few are kept,
    ``seen`` counts them all); the host ``dtype`` (``float32``, ``bfloat16``, ``int64``..., or
    ``python`` for the numbers ``.item()``/``.tolist()`` gave), whether it is ``floating``, its
    ``shape`` and ``numel``, and ``values``: the first values of the flattened result (at most 256),
    floats for floating results, ints otherwise. ``step``: optimizer steps done when taken;
    ``after_stop``: taken after the recorded steps (a run going on for the trace)."""

    file: str
    line: int
    op: str
    occurrence: int
    dtype: str
    floating: bool
    shape: tuple[int, ...]
    numel: int
    values: list[float]
    col: int | None = None
    seen: int = 1
    step: int = 0
    function: str = ""
    """The name of the user's function the sample was taken in (``<module>`` at the top level)."""
    after_stop: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HostOutput:
        """From the child's dict; raises KeyError/ValueError/TypeError on a malformed one."""
        col = data.get("col")
        return cls(
            file=str(data["file"]),
            line=int(data["line"]),
            op=str(data["op"]),
            occurrence=int(data["occurrence"]),
            dtype=str(data["dtype"]),
            floating=bool(data["floating"]),
            shape=tuple(int(n) for n in data.get("shape") or ()),
            numel=int(data["numel"]),
            values=[float(v) for v in data.get("values") or ()],
            col=int(col) if col is not None else None,
            seen=int(data.get("seen", 1)),
            step=int(data.get("step", 0)),
            function=str(data.get("function", "")),
            after_stop=bool(data.get("after_stop", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "op": self.op,
            "occurrence": self.occurrence,
            "seen": self.seen,
            "dtype": self.dtype,
            "floating": self.floating,
            "shape": list(self.shape),
            "numel": self.numel,
            "values": list(self.values),
            "step": self.step,
            "function": self.function,
            "after_stop": self.after_stop,
        }


@dataclass
class Trace:
    """The trace of one run: its ``events`` in the order first seen, how it ``end``\\ ed, whether
    the run went on after the recorded steps (``continued``) and after how many (``stop_step``),
    the harness's own ``errors`` while tracing, and the torch ``calls`` it looked at. ``device_ops``: the
    run recorded what computes on the device (f32, f64, amp's bf16 made by hand), not only what leaves it
    and what fails."""

    events: list[TraceEvent] = field(default_factory=list)
    end: TraceEnd = TraceEnd.SCRIPT_EXIT
    continued: bool = False
    stop_step: int = 0
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    outputs: list[HostOutput] = field(default_factory=list)
    device_ops: bool = False
    lines_run: dict[str, frozenset[int]] = field(default_factory=dict)
    """The user's file -> the lines of its frames on the stack of a traced torch call (1-based): the lines the
    run executed that reach torch, while it traced."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Trace | None:
        """The trace of a child's record (None when it has none). Events that cannot be read are
        left out and said in ``errors``."""
        if not data:
            return None
        events = []
        errors = [str(e) for e in data.get("errors") or []]
        for raw in data.get("events") or []:
            try:
                events.append(TraceEvent.from_json(raw))
            except (KeyError, ValueError, TypeError) as exc:
                errors.append(f"an event could not be read: {exc!r}")
        outputs = []
        for raw in data.get("outputs") or []:
            try:
                outputs.append(HostOutput.from_json(raw))
            except (KeyError, ValueError, TypeError) as exc:
                errors.append(f"a host output could not be read: {exc!r}")
        try:
            end = TraceEnd(str(data.get("end", "script_exit")))
        except ValueError:
            end = TraceEnd.SCRIPT_EXIT
        return cls(
            events,
            end,
            bool(data.get("continued", False)),
            int(data.get("stop_step", 0)),
            errors,
            int(data.get("calls", 0)),
            outputs,
            bool(data.get("device_ops", False)),
            _lines_run(data.get("lines_run"), errors),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "end": self.end.value,
            "continued": self.continued,
            "stop_step": self.stop_step,
            "calls": self.calls,
            "errors": list(self.errors),
            "events": [e.to_dict() for e in self.events],
            "outputs": [o.to_dict() for o in self.outputs],
            "device_ops": self.device_ops,
            "lines_run": {file: sorted(lines) for file, lines in self.lines_run.items()},
        }

    def with_paths(self, paths: Mapping[str, str]) -> Trace:
        """The trace with every file under a directory of ``paths`` (run directory -> user
        directory) read as the user's file there (a staged copy's, a checkout's)."""

        def moved(file: str | None) -> str | None:
            if file is None:
                return None
            for old, new in paths.items():
                if file == old or file.startswith(old.rstrip("/") + "/"):
                    return new.rstrip("/") + file[len(old.rstrip("/")) :]
            return file

        for e in self.events:
            e.file = moved(e.file) or e.file
            if e.origin is not None:
                e.origin = Origin(e.origin.kind, moved(e.origin.file), e.origin.line, e.origin.op)
            e.callers = [CallSite(moved(c.file) or c.file, c.line, c.end_line, c.col, c.end_col) for c in e.callers]
        for o in self.outputs:
            o.file = moved(o.file) or o.file
        self.lines_run = {moved(file) or file: lines for file, lines in self.lines_run.items()}
        return self

    def of_kind(self, *kinds: Kind) -> list[TraceEvent]:
        return [e for e in self.events if e.kind in kinds]


def _lines_run(data: Any, errors: list[str]) -> dict[str, frozenset[int]]:
    """A record's ``lines_run`` (file -> line numbers); what cannot be read is left out and said in ``errors``."""
    if not isinstance(data, Mapping):
        return {}
    out: dict[str, frozenset[int]] = {}
    for file, lines in data.items():
        try:
            out[str(file)] = frozenset(int(x) for x in lines)
        except (TypeError, ValueError) as exc:
            errors.append(f"the lines run in {file} could not be read: {exc!r}")
    return out
