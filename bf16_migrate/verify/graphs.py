"""Statistics of the graphs torch-xla executes, read from its own graph dump.

How the graphs are obtained (chosen by measurement, 2026-11-22, torch-xla 2.9.0 on
``PJRT_DEVICE=CPU``): the runner sets ``XLA_SAVE_TENSORS_FILE=<workspace>/<run>.graphs`` and
``XLA_SAVE_TENSORS_FMT=hlo`` in each child's environment.  torch-xla then appends, at every sync
(``torch_xla.sync()``, ``xm.mark_step()``, ``.item()``, the ``MpDeviceLoader``'s own syncs), the
HLO module it lowers for that sync, from the same tensors and indices it compiles or takes from
its cache (``DebugUtil::SaveTensorsGraphInfo("ScheduleSyncTensorsGraph", ...)``), to
``<path>.<device ordinal>`` (``<path>.0`` on one device: torch-xla adds the ordinal).  It is the
graph before XLA's own optimisation passes, i.e. what torch-xla built from the script; the CPU
backend's later passes (which upcast bf16 dots on CPU) do not show.

Measured on the four fixtures, 10 steps, legacy / migrated (stochastic) / FP32 reference runs,
with and without the dump: the losses are the same floats at every step, and the XLA compile
and execution counts are equal (2/2, 2/2, 3/3 or 4/4 compilations; 10 or 12 executions); the
cost is one extra HLO lowering per sync, +2 to +20 ms per step (median step time) on these
scripts, and 0.15-1 MB of text per run.  The alternatives were not taken: ``XLA_FLAGS=--xla_dump_to``
dumps per compilation only (no way to tell which module runs at which step), and
``torch_xla._XLAC._get_xla_tensors_hlo`` lowers the tensors one names, not the graph the
script's sync executes.

The harness (``_child/sitecustomize.py``) writes down the size of the dump file(s) at the end
of every optimizer step; the graphs appended between the end of step ``k`` and the end of
step ``k + 1`` form *window* ``k``: one period of the training loop, whatever its syncs (a
script that syncs once per step after ``optimizer.step()`` puts that one graph there; one that
accumulates gradients and syncs after every micro-batch puts there the optimizer graph of step
``k`` and the micro-batch graphs of step ``k + 1``; an evaluation or a ``loss.item()`` between two
steps adds theirs).  The *training step* verify audits is every graph of the last complete
window (between the ends of the last two recorded steps; the window after the last step ends at
the stop and may hold only part of a period), from window 2 on (step 1 also creates the
optimizer state and holds the initialisation that was pending), plus every graph dynamo
compiled (``torch.compile(backend="openxla")``): torch-xla's dynamo bridge dumps such a graph
once, when it extracts it (frames in ``dynamo_bridge.py``'s ``extract_graph_helper``), and runs
it from its cache at every call without a sync, so it never shows in a window.  Every count
here is a static count over the HLO text of those graphs (all their computations), summed.

Measured (torch-xla 2.9, XLA CPU device, bench/calibration): gradient accumulation with a sync
per micro-batch, 12 steps: the largest graph of the last window alone held 0 of 0 matmuls (it
was the optimizer update); the whole window holds the 4 micro-batches' 24 matmuls.  A model
behind ``torch.compile(backend="openxla")``: the window's sync graph holds only the optimizer
update and the input transfer; the forward and backward matmuls are in the 2 dynamo graphs.

No torch here: pure text processing, testable without XLA.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "DumpedGraph",
    "GraphStats",
    "combine",
    "hlo_stats",
    "leftover_graphs",
    "parse_dump",
    "read_step_graph",
    "LAYOUT_OPS",
    "ELEMENTWISE_OPS",
]

_BEGIN = "## BEGIN_GRAPH"
_END = "## END_GRAPH"
_HASH = re.compile(r"^Graph Hash: (\S+)", re.M)
_ROOTS = re.compile(r"^Root Hashes: \(([^)]*)\)", re.M)
# `  [ROOT ]%name = TYPE opcode(operands), attributes`; TYPE is `f32[2,3]{1,0}`, `bf16[]` or a
# tuple `(f32[2], s64[])` (which holds spaces).
_INSTR = re.compile(
    r"^\s*(?:ROOT\s+)?%(?P<name>[^\s=]+)\s*=\s*(?P<type>\((?:[^()]|\([^()]*\))*\)|\S+)\s+(?P<op>[\w\-]+)\((?P<args>.*)$"
)
_OPERAND = re.compile(r"(?P<et>[a-z]+\d*)\[[^\]]*\](?:\{[^}]*\})?\s+%(?P<name>[^\s,)]+)")
_ELEMENT = re.compile(r"^(?P<et>[a-z]+\d*)\[")

LAYOUT_OPS = frozenset({"transpose", "reshape", "bitcast", "copy", "broadcast", "slice"})
"""Ops that move or view data without computing: a convert pair joined only through these is
a round trip that computes nothing in the wider type (the backward graph of
https://github.com/pytorch/xla/issues/3718: ``mm`` in bf16, ``convert`` to f32, ``permute``,
``convert`` back to bf16)."""

ELEMENTWISE_OPS = frozenset(
    {
        "add",
        "subtract",
        "multiply",
        "divide",
        "maximum",
        "minimum",
        "negate",
        "abs",
        "sqrt",
        "rsqrt",
        "exponential",
        "log",
        "tanh",
        "power",
        "select",
        "clamp",
        "sign",
        "floor",
        "ceil",
        "compare",
        "logistic",
        "erf",
        "exponential-minus-one",
        "log-plus-one",
    }
)
"""Element-wise arithmetic. A bf16 tensor converted to f32, combined element-wise with f32
scalars and rounded back is how torch-xla computes ``bf16_tensor * python_float`` (measured: the
migrated AdamW step holds one per parameter and one per ``exp_avg``, e.g.
``convert(multiply(convert(p12 bf16 -> f32), broadcast(f32[] lr-term)) -> bf16)``); the legacy
graph has none because the switch makes the scalar bf16 too (``torch_xla/csrc/dtype.cpp``: 0.9
becomes 0.8984375, measured with torch-xla 2.9 on the XLA CPU device). Such round trips compute
something, in f32 then rounded, like eager PyTorch's "opmath": counted apart from the
layout-only ones."""

_MATMUL_OPS = ("dot", "convolution")
_LOW = ("bf16",)
_WIDE = ("f32",)


@dataclass
class DumpedGraph:
    """One entry of torch-xla's graph dump: the Python frames of the sync that produced it
    (innermost first, ``"function (file:line)"``), torch-xla's graph hash (hex str), the HLO text
    of the module, and the hashes of its root tensors' IR (``Root Hashes:``; one per tensor the
    sync materialises, the tensor's whole pending computation)."""

    frames: list[str]
    graph_hash: str | None
    hlo: str
    roots: tuple[str, ...] = ()


@dataclass
class GraphStats:
    """What one executed graph computes, and in which precision.

    ``instructions``: HLO instructions in all computations. ``matmuls``: dot and convolution
    instructions; ``matmuls_bf16`` / ``matmuls_f32`` / ``matmuls_other``: those whose operands
    are all bf16 / all f32 / anything else (mixed, f16, integer); ``matmuls_with_f32``: those with
    an f32 operand (all f32, or f32 meeting bf16: torch-xla computes a mixed dot in f32, measured on
    fixtures/causal_lm migrated without the model-code audit: 21 all-f32 and 18 mixed of 39);
    ``matmuls_with_f64``: those with an f64 operand (no switch left any f64 on the device: XLA_USE_BF16
    made it bf16, XLA_DOWNCAST_BF16 f32; autocast casts no float64).
    ``converts``: element-type
    conversion -> count (``"f32->bf16"``, ``"bf16->f32"``, ``"s64->f32"``...).
    ``round_trips``: converts between f32 and bf16 that undo another such convert with only
    :data:`LAYOUT_OPS` in between (``"bf16->f32->bf16"``, ``"f32->bf16->f32"`` -> count).
    ``round_trip_examples``: kind -> up to 3 chains, the outer convert first
    (``"convert.72 f32[8,16,8] <- reshape.70 <- convert.61 bf16[...]"``).
    ``exponentials``: element type -> count of ``exponential`` instructions on tensors of more than
    one element: softmax, log-softmax and cross-entropy compute one per element, forward and
    backward, so an f32 count the legacy run did not have is a softmax the migration left in f32
    (a mask made without a dtype and subtracted from bf16 logits before the softmax promotes them:
    the NT-Xent of bench/unseen/simclr_launcher).
    ``parameter_types``: element type -> count of the entry computation's parameters (the
    device data the graph reads: weights, optimizer state, inputs). ``graph_hash``,
    ``frames``: of the dump entry (for the statistics of a whole step, of its largest graph).
    ``step``: the optimizer step (1-based) whose window the graphs were taken from (the graphs
    executed between the end of that step and the end of the next); ``graphs_in_window``: how
    many syncs that window held; ``dynamo_graphs``: the graphs dynamo compiled that are counted
    with them; ``distinct_graphs``: distinct graph hashes over the whole run (an upper bound of
    the sync-graph compilations); ``syncs``: dump entries over the whole run;
    ``leftover_graphs``: of those distinct graphs, the ones that are a recurring graph with
    tensors an earlier step left pending (:func:`leftover_graphs`), compilations whose number
    torch-xla's timing decides, not the script's code; ``leftover_windows``: for each of them, the
    window of its first sync (``k``: after the end of step ``k``, before the end of step ``k + 1``;
    0: before the end of step 1), so that a count up to the end of a step leaves out the later ones.
    """

    instructions: int = 0
    matmuls: int = 0
    matmuls_bf16: int = 0
    matmuls_f32: int = 0
    matmuls_other: int = 0
    matmuls_with_f32: int = 0
    matmuls_with_f64: int = 0
    converts: dict[str, int] = field(default_factory=dict)
    scalar_converts: dict[str, int] = field(default_factory=dict)
    round_trips: dict[str, int] = field(default_factory=dict)
    round_trip_examples: dict[str, list[str]] = field(default_factory=dict)
    exponentials: dict[str, int] = field(default_factory=dict)
    parameter_types: dict[str, int] = field(default_factory=dict)
    graph_hash: str | None = None
    frames: list[str] = field(default_factory=list)
    step: int | None = None
    graphs_in_window: int | None = None
    distinct_graphs: int | None = None
    syncs: int | None = None
    dynamo_graphs: int = 0
    leftover_graphs: int = 0
    leftover_windows: list[int] = field(default_factory=list)

    @property
    def bf16_matmul_share(self) -> float | None:
        """Fraction (0..1) of dot/convolution ops with all-bf16 operands; None without any."""
        return self.matmuls_bf16 / self.matmuls if self.matmuls else None

    @property
    def f32_matmuls(self) -> int:
        """Matmuls that compute in f32: with an f32 operand (``matmuls_with_f32``; a record made
        without that count, e.g. an older ``--json`` file, gives its all-f32 ones)."""
        return max(self.matmuls_with_f32, self.matmuls_f32)

    @property
    def f32_bf16_converts(self) -> int:
        """Converts between f32 and bf16, both directions."""
        return self.converts.get("f32->bf16", 0) + self.converts.get("bf16->f32", 0)

    def round_trip_count(self, kind: str | None = None) -> int:
        """Round trips of ``kind`` (``"layout"`` or ``"elementwise"``; None: all)."""
        return sum(v for k, v in self.round_trips.items() if kind is None or k.endswith(f"({kind})"))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["bf16_matmul_share"] = self.bf16_matmul_share
        d["f32_bf16_converts"] = self.f32_bf16_converts
        d["f32_matmuls"] = self.f32_matmuls
        d["layout_round_trips"] = self.round_trips.get("bf16->f32->bf16 (layout)", 0)
        return d

    @classmethod
    def from_dict(cls, data: Mapping) -> GraphStats:
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in names})


def parse_dump(text: str) -> list[DumpedGraph]:
    """Split the text of an ``XLA_SAVE_TENSORS_FILE`` (format ``hlo``) into its entries.

    An entry is ``[ScheduleSyncTensorsGraph]``, ``TensorsGraphInfo:`` and the frames, the root
    hashes, then the HLO between ``## BEGIN_GRAPH`` and ``## END_GRAPH`` with a ``Graph Hash:``
    line (format of torch-xla 2.9's ``DebugUtil::SaveTensorsGraphInfo``). A truncated last
    entry (the process was killed while writing) is dropped. Never raises."""
    graphs: list[DumpedGraph] = []
    pos = 0
    while True:
        begin = text.find(_BEGIN, pos)
        if begin < 0:
            break
        end = text.find(_END, begin)
        if end < 0:
            break
        header = text[pos:begin]
        frames: list[str] = []
        in_frames = False
        for line in header.splitlines():
            if line.startswith("TensorsGraphInfo:"):
                in_frames = True
                continue
            if in_frames:
                if not line.startswith("  "):
                    in_frames = False
                    continue
                frames.append(line.strip())
        body = text[begin + len(_BEGIN) : end]
        m = _HASH.search(body)
        hlo = body[: m.start()] if m else body
        r = _ROOTS.search(header)
        roots = tuple(x.strip() for x in r.group(1).split(",") if x.strip()) if r else ()
        graphs.append(
            DumpedGraph(frames=frames, graph_hash=m.group(1) if m else None, hlo=hlo.strip("\n"), roots=roots)
        )
        pos = end + len(_END)
    return graphs


def _elements(type_text: str) -> int:
    """Number of elements of an HLO array type (``f32[64,32]{1,0}`` -> 2048, ``bf16[]`` -> 1);
    a tuple or an unreadable type counts as 2 (not a scalar)."""
    m = re.match(r"^[a-z]+\d*\[([^\]]*)\]", type_text)
    if not m:
        return 2
    n = 1
    for dim in m.group(1).split(","):
        dim = dim.strip().lstrip("<=")
        if dim:
            try:
                n *= int(dim)
            except ValueError:
                return 2
    return n


def _element_type(type_text: str) -> str | None:
    m = _ELEMENT.match(type_text)
    return m.group("et") if m else None


_Instr = tuple[str, str | None, list[tuple[str, str]]]
"""One HLO instruction: its opcode, its element type (None when not a tensor of one), its
operands as (element type, name)."""


def hlo_stats(hlo: str) -> GraphStats:
    """Count matmuls by operand precision, converts by direction and f32/bf16 round trips in
    the HLO text of one module (all its computations). Never raises; text that is not HLO
    gives zero counts. Two passes: :func:`_read_instructions` (the counts of single
    instructions), then :func:`_count_round_trips` (chains of them)."""
    stats = GraphStats()
    instrs, shapes, order = _read_instructions(hlo, stats)
    _count_round_trips(instrs, shapes, order, stats)
    return stats


def combine(parts: Sequence[GraphStats]) -> GraphStats:
    """The statistics of several executed graphs taken together (one training step made of
    several syncs, or of dynamo's graphs): every count summed, up to three round-trip examples
    per kind; ``graph_hash`` and ``frames`` of the graph with the most instructions."""
    total = GraphStats()
    for part in parts:
        total.instructions += part.instructions
        total.matmuls += part.matmuls
        total.matmuls_bf16 += part.matmuls_bf16
        total.matmuls_f32 += part.matmuls_f32
        total.matmuls_other += part.matmuls_other
        total.matmuls_with_f32 += part.matmuls_with_f32
        total.matmuls_with_f64 += part.matmuls_with_f64
        for mine, theirs in (
            (total.converts, part.converts),
            (total.scalar_converts, part.scalar_converts),
            (total.round_trips, part.round_trips),
            (total.exponentials, part.exponentials),
            (total.parameter_types, part.parameter_types),
        ):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + n
        for key, examples in part.round_trip_examples.items():
            kept = total.round_trip_examples.setdefault(key, [])
            kept.extend(examples[: max(0, 3 - len(kept))])
    if parts:
        largest = max(parts, key=lambda p: p.instructions)
        total.graph_hash, total.frames = largest.graph_hash, list(largest.frames)
    return total


def _read_instructions(hlo: str, stats: GraphStats) -> tuple[dict[str, _Instr], dict[str, str], list[str]]:
    """Every instruction of ``hlo`` by name, the type text of each, their order; counts the
    instructions, the entry computation's parameter types, the matmuls by operand precision,
    the exponentials by element type and the converts by direction (tensors and scalars apart)
    into ``stats``."""
    instrs: dict[str, _Instr] = {}
    shapes: dict[str, str] = {}
    order: list[str] = []
    in_entry = False
    for line in hlo.splitlines():
        if line.startswith("ENTRY "):
            in_entry = True
        elif line and not line[0].isspace():
            in_entry = False
        m = _INSTR.match(line)
        if not m:
            continue
        name, op, et = m.group("name"), m.group("op"), _element_type(m.group("type"))
        # operands come before the closing `)` of the call; attributes after it hold no `%`
        operands = [(o.group("et"), o.group("name")) for o in _OPERAND.finditer(m.group("args"))]
        instrs[name] = (op, et, operands)
        shapes[name] = m.group("type")
        order.append(name)
        stats.instructions += 1
        if op == "parameter" and in_entry and et is not None:
            stats.parameter_types[et] = stats.parameter_types.get(et, 0) + 1
        if op in _MATMUL_OPS:
            stats.matmuls += 1
            types = {t for t, _ in operands}
            if types and types <= set(_LOW):
                stats.matmuls_bf16 += 1
            elif types and types <= set(_WIDE):
                stats.matmuls_f32 += 1
            else:
                stats.matmuls_other += 1
            if set(_WIDE) & types:
                stats.matmuls_with_f32 += 1
            if "f64" in types:
                stats.matmuls_with_f64 += 1
        if op == "exponential" and et is not None and _elements(m.group("type")) > 1:
            stats.exponentials[et] = stats.exponentials.get(et, 0) + 1
        if op == "convert" and operands and et is not None:
            key = f"{operands[0][0]}->{et}"
            if _elements(m.group("type")) <= 1:
                stats.scalar_converts[key] = stats.scalar_converts.get(key, 0) + 1
            else:
                stats.converts[key] = stats.converts.get(key, 0) + 1
    return instrs, shapes, order


def _scalar(type_text_dims: str | None) -> bool:
    return type_text_dims is None or _elements(type_text_dims) <= 1


def _origins(
    name: str, ops: frozenset[str], seen: set[str], instrs: Mapping[str, _Instr], shapes: Mapping[str, str]
) -> list[tuple] | None:
    """The converts an f32 value comes from through ``ops`` only, or None when some path
    reaches anything else that is not a scalar (a dot, a reduce, a parameter...)."""
    if name in seen:
        return []
    seen.add(name)
    node = instrs.get(name)
    if node is None:
        return None
    op, _et, operands = node
    if op == "convert":
        return [node]
    if op in ("constant", "parameter", "iota") and _scalar(shapes.get(name)):
        return []
    if op not in ops or not operands:
        return None
    found: list[tuple] = []
    for _t, operand in operands:
        if op == "broadcast" and _scalar(shapes.get(operand)):
            continue  # a scalar spread over the tensor: the optimizer's lr, beta...
        sub = _origins(operand, ops, seen, instrs, shapes)
        if sub is None:
            return None
        found.extend(sub)
    return found


def _count_round_trips(
    instrs: Mapping[str, _Instr], shapes: Mapping[str, str], order: list[str], stats: GraphStats
) -> None:
    """Count into ``stats`` the tensor converts back to a precision their value came from
    (bf16->f32->bf16, f32->bf16->f32) through layout ops only (``layout``) or layout and
    element-wise ops (``elementwise``), with up to three examples of each."""
    pair = {"bf16": "f32", "f32": "bf16"}
    for name in order:
        op, et, operands = instrs[name]
        if op != "convert" or not operands or et not in pair or operands[0][0] != pair[et]:
            continue
        if _scalar(shapes.get(name)):
            continue
        for kind, ops in (("layout", LAYOUT_OPS), ("elementwise", LAYOUT_OPS | ELEMENTWISE_OPS)):
            src = _origins(operands[0][1], ops, set(), instrs, shapes)
            if src and all(s_et == pair[et] and s_ops and s_ops[0][0] == et for _o, s_et, s_ops in src):
                key = f"{et}->{pair[et]}->{et} ({kind})"
                stats.round_trips[key] = stats.round_trips.get(key, 0) + 1
                examples = stats.round_trip_examples.setdefault(key, [])
                if len(examples) < 3:
                    examples.append(_chain(name, instrs, shapes))
                break


def _chain(name: str, instrs: Mapping, shapes: Mapping, limit: int = 6) -> str:
    """``name`` and the instructions its first operand comes from, until the inner convert."""
    parts = []
    seen = 0
    current: str | None = name
    while current is not None and seen < limit:
        op, _et, operands = instrs[current]
        parts.append(f"{op} {shapes.get(current, '?').split('{')[0]}")
        if op == "convert" and seen:
            break
        seen += 1
        current = operands[0][1] if operands and operands[0][1] in instrs else None
    return " <- ".join(parts)


def _window_of(offset: int, marks: Sequence[int]) -> int:
    """Index ``k`` such that ``offset`` lies after mark ``k - 1`` (0: before the first mark)."""
    k = 0
    for i, mark in enumerate(marks):
        if offset >= mark:
            k = i + 1
    return k


_DYNAMO_FRAME = "extract_graph_helper (", "dynamo_bridge.py"


def _is_dynamo_graph(graph: DumpedGraph) -> bool:
    """Whether the entry is a graph torch-xla's dynamo bridge extracted to compile
    (``torch_xla/_dynamo/dynamo_bridge.py``, ``extract_graph_helper``): dumped once, then run
    from the cache at every call of the compiled model, without a sync."""
    name, where = _DYNAMO_FRAME
    return any(frame.startswith(name) and where in frame for frame in graph.frames)


def _step_window(windows: Mapping[int, list[DumpedGraph]], steps: int) -> int:
    """The window whose graphs are the training step: the last complete one (between the ends
    of two recorded steps, ``2 <= k <= steps - 1``) that holds a graph; else the last window from
    2 on, else from 1 on, else any (a run of one or two steps)."""
    complete = [k for k in windows if 2 <= k <= steps - 1]
    if complete:
        return max(complete)
    candidates = [k for k in windows if k >= 2] or [k for k in windows if k >= 1] or list(windows)
    return max(candidates)


def read_step_graph(
    dump_files: Iterable[Path],
    marks: Sequence[Mapping[str, int]] | None,
    end: Mapping[str, int] | None = None,
) -> GraphStats | None:
    """The statistics of the training step of one run (see the module docstring), or None when
    no graph was dumped.

    ``dump_files``: the run's ``<path>.<ordinal>`` files. ``marks``: per recorded optimizer
    step, file name -> size in bytes at the end of that step (from the harness record);
    ``end``: file name -> size when the harness wrote the record (entries after it, e.g. the
    harness's own read-back of the losses, are ignored). Picks the file with the most entries,
    then the step window (:func:`_step_window`), and sums the statistics of its graphs and of
    the dynamo graphs extracted before that window ended (:func:`combine`). Raises nothing;
    unreadable files are skipped."""
    best: tuple[int, list[tuple[int, DumpedGraph]], str] | None = None
    for path in dump_files:
        try:
            raw = Path(path).read_bytes()
        except OSError:
            continue
        limit = (end or {}).get(Path(path).name)
        if limit is not None:
            raw = raw[:limit]
        entries: list[tuple[int, DumpedGraph]] = []
        # each entry starts with this header line: split there, so every graph keeps its byte
        # offset (to place it in a step window)
        starts = [m.start() for m in re.finditer(re.escape(b"[ScheduleSyncTensorsGraph]"), raw)]
        for i, off in enumerate(starts):
            chunk = raw[off : starts[i + 1] if i + 1 < len(starts) else len(raw)]
            for g in parse_dump(chunk.decode("utf-8", errors="replace")):
                entries.append((off, g))
        if entries and (best is None or len(entries) > best[0]):
            best = (len(entries), entries, Path(path).name)
    if best is None:
        return None
    _n, entries, fname = best
    step_marks = [m.get(fname, 0) for m in (marks or [])]
    windows: dict[int, list[DumpedGraph]] = {}
    dynamo: dict[str | None, tuple[int, DumpedGraph]] = {}
    for off, g in entries:
        if _is_dynamo_graph(g):
            dynamo.setdefault(g.graph_hash, (off, g))  # extracted twice (hash, then compile): once
        else:
            windows.setdefault(_window_of(off, step_marks), []).append(g)
    if not windows:  # only dynamo graphs were dumped
        windows[0] = []
    k = _step_window(windows, len(step_marks))
    window_end = step_marks[k] if k < len(step_marks) else None
    compiled = [g for off, g in dynamo.values() if window_end is None or off < window_end]
    stats = combine([_stats_of(g) for g in [*windows[k], *compiled]])
    stats.step = k if k >= 1 else None
    stats.graphs_in_window = len(windows[k])
    stats.dynamo_graphs = len(compiled)
    stats.distinct_graphs = len({g.graph_hash for _o, g in entries})
    stats.syncs = len(entries)
    left = _leftover_hashes([g for _o, g in entries])
    stats.leftover_graphs = len(left)
    first: dict[str, int] = {}
    for off, g in entries:
        if g.graph_hash in left:
            first.setdefault(g.graph_hash, _window_of(off, step_marks))
    stats.leftover_windows = sorted(first.values())
    stats.frames = stats.frames[:8]
    return stats


def leftover_graphs(graphs: Sequence[DumpedGraph]) -> int:
    """How many distinct graphs of one run are another graph of the run with more tensors added
    to it: graph ``H``, synced less often than some graph ``G``, whose roots include every root
    of ``G`` and more. ``G`` is a graph the loop syncs again and again (the training step); the
    more are tensors an earlier step left pending, which the next ``mark_step`` materialises with
    that step's own tensors (torch-xla syncs every live tensor with pending IR), so the step's
    graph is compiled once more with them.

    Which step they join is timing: measured with torch-xla 2.9 on the XLA CPU device
    (fixtures/without_backward/private_sgd, per-example gradients by ``vmap(grad(...))``,
    ``mark_step`` every step, 4 runs of the same script at once on 2 cores): 12 intermediate
    tensors of the per-example gradients were still alive and pending at the ``mark_step`` of
    step 1, 3, 7 or 8 depending on the run, so the script compiled 4 graphs in one run and 5 in
    the next, legacy and migrated alike; each run's graphs, less the ones counted here, were the
    same 3 by their roots. Graphs dynamo extracted are not counted. ``graphs``: the dump's
    entries in order; a dump without ``Root Hashes`` counts 0."""
    return len(_leftover_hashes(graphs))


def _leftover_hashes(graphs: Sequence[DumpedGraph]) -> set[str]:
    """The graph hashes :func:`leftover_graphs` counts."""
    syncs: dict[str, int] = {}
    roots: dict[str, frozenset[str]] = {}
    for g in graphs:
        if g.graph_hash is None or not g.roots or _is_dynamo_graph(g):
            continue
        syncs[g.graph_hash] = syncs.get(g.graph_hash, 0) + 1
        roots.setdefault(g.graph_hash, frozenset(g.roots))
    recurring = [h for h, n in syncs.items() if n >= 2]
    return {h for h, n in syncs.items() if any(syncs[r] > n and roots[r] < roots[h] for r in recurring if r != h)}


def _stats_of(graph: DumpedGraph) -> GraphStats:
    stats = hlo_stats(graph.hlo)
    stats.graph_hash, stats.frames = graph.graph_hash, list(graph.frames)
    return stats


def dump_files_for(prefix: Path) -> list[Path]:
    """The files torch-xla wrote for ``XLA_SAVE_TENSORS_FILE=prefix``: ``prefix.<ordinal>``."""
    parent, base = prefix.parent, prefix.name
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return sorted(parent / n for n in names if n.startswith(base + ".") and n[len(base) + 1 :].isdigit())
