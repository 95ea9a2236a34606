"""Findings from the dtype traces of the legacy and the migrated run: the places the run saw.

The migrated run's trace (:mod:`.trace`) is read against the legacy run's: an event counts only
where the legacy run had none of its kind and op at the same line (under
``XLA_DOWNCAST_BF16`` f64 was f32 on the device in the legacy run too). Each finding is placed
in the user's file as it is on disk, not in the temporary copy the run ran: a line of the
migrated copy (or of a migrated module, or of the legacy file at ``--against REV``) is mapped
to the user's text through their difference (:class:`LineMap`; a line the migration added
reads as the line before it, and the message says so). The kinds (:class:`FindingKind`), each
one code of the ``BFM200``-``BFM229`` rule pages:

* ``meet`` (BFM200): f32 meets bf16 in an operation; named at the first such operation of a
  chain (the operations downstream of it, promoted by it, are its evidence, not findings);
* ``compute`` (BFM201): computed in f32 on the device without meeting bf16;
* ``copy`` (BFM202): the f32 values come from a copy of the model made while it was f32
  (``copy.deepcopy``): named at the copy;
* ``module`` (BFM203): they are the parameters of a module moved to the device and never cast:
  named where it was moved;
* ``exit`` (BFM210): bf16 handed to the host (``.cpu()``, ``.to("cpu")``) where the legacy
  run handed over float32;
* ``save`` (BFM211): bf16 tensors saved (``torch.save``, ``xm.save``) where the legacy run
  saved float32;
* ``failure`` (BFM220): the migrated run raised where the legacy run did not;
* ``float64`` (BFM204, amp, whose model is f32 on purpose, so only float64 is traced on the
  device): float64 computed on the device, which no switch left there (``XLA_USE_BF16`` made it
  bf16, ``XLA_DOWNCAST_BF16`` f32) and autocast does not cast; named where its chain began.
* ``bf16 by hand`` (BFM205, amp): a bf16/f16 tensor made on the device by a cast or factory on a
  line that is neither the legacy script's nor the codemod's amp migration's (a bf16 EMA teacher, a
  target cast down): amp keeps those float32 and autocast alone computes in bf16. The codemod's own
  migration is never named so (its lines are the legacy script's or its own).
* ``loss outside autocast`` (BFM206, amp): the loss handed to ``backward`` was computed in bf16 outside
  autocast where the autocast control (the FP32 script under autocast) computes it in f32; named where
  its computation left autocast (made once that control has run).

A finding whose f32 lies inside a deliberate f32 island the migration kept and reported
(``Outcome.f32_islands``) is ``excused``: shown, not counted against the migration. Each other
finding carries, where a generic repair exists, a :class:`~bf16_migrate.repairs.RepairSite` in
the coordinates of the text the migrated run ran (what ``verify --fix`` and ``bf16-migrate
--trace FILE`` change). No torch here.
"""

from __future__ import annotations

import ast
import difflib
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..console import display_path
from ..diagnostics import Diagnostic, report
from ..python.snippets import EMITTED_MARK
from ..repairs import RepairKind, RepairSite, Span
from .parts import FAIL, PASS, Part
from .records import AUTOCAST, LEGACY, MIGRATED, REFERENCE, RunRecord
from .trace import Kind, OriginKind, Trace, TraceEvent

__all__ = [
    "CODES",
    "FindingKind",
    "LineMap",
    "Place",
    "island_spans",
    "same_lines",
    "TraceFinding",
    "TraceSources",
    "trace_findings",
    "trace_part",
]


class FindingKind(str, enum.Enum):
    """What a trace finding is (see the module docstring)."""

    MEET = "meet"
    COMPUTE = "compute"
    COPY = "copy"
    MODULE = "module"
    EXIT = "exit"
    SAVE = "save"
    FAILURE = "failure"
    FLOAT64 = "float64"
    BF16_BY_HAND = "bf16_by_hand"
    LOSS_OUTSIDE_AUTOCAST = "loss_outside_autocast"
    FORWARD_OUTSIDE_AUTOCAST = "forward_outside_autocast"
    FINFO = "finfo"
    LOWERED = "lowered"


CODES: dict[FindingKind, str] = {
    FindingKind.MEET: "BFM200",
    FindingKind.COMPUTE: "BFM201",
    FindingKind.COPY: "BFM202",
    FindingKind.MODULE: "BFM203",
    FindingKind.EXIT: "BFM210",
    FindingKind.SAVE: "BFM211",
    FindingKind.FAILURE: "BFM220",
    FindingKind.FLOAT64: "BFM204",
    FindingKind.BF16_BY_HAND: "BFM205",
    FindingKind.LOSS_OUTSIDE_AUTOCAST: "BFM206",
    FindingKind.FORWARD_OUTSIDE_AUTOCAST: "BFM207",
    FindingKind.FINFO: "BFM208",
    FindingKind.LOWERED: "BFM209",
}
"""The rule page of each kind (``rules/diagnostics_trace.toml``)."""


_MOVES_TO_DEVICE = frozenset({"Tensor.to", "Tensor.cuda", "Tensor.xla", "Tensor.type"})
"""The ops that bring a host tensor to the device as it is (its dtype the host's)."""

_WIDE_KINDS = (Kind.CREATE, Kind.UPCAST, Kind.MEET, Kind.COMPUTE)
"""The events of an f32/f64 result on the device."""

_LOW_TYPES = ("bf16", "f16")
"""The device's low-precision element types."""

_SAME_LINE = 0.8
"""How much of a line of the user's text a changed line must keep (:func:`_kept`) to be that line:
a migration adds casts to a line (``out = model(x)`` in ``out = model(x.to(torch.bfloat16))``: all
of it), a line it adds keeps little of another (``model.to(torch.bfloat16)`` of ``out = model(x)``:
half)."""


def _kept(changed: str, original: str) -> float:
    """The share of ``original``'s characters (indentation aside) that ``changed`` keeps in order."""
    a, b = changed.strip(), original.strip()
    if not b:
        return 1.0 if not a else 0.0
    blocks = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    return sum(block.size for block in blocks) / len(b)


class LineMap:
    """Lines of one text (``src``, what a run ran) placed in another (``dst``, the user's file):
    :meth:`place` gives the ``dst`` line and whether it is the same line (in a block the two
    texts share) or the line it changed, or for a line only ``src`` has (:attr:`added`) the line before
    it, or the line it took the place of where a block of such lines replaced the user's. From
    :class:`difflib.SequenceMatcher` over the lines (no junk heuristic)."""

    def __init__(self, src: str, dst: str) -> None:
        a, b = src.splitlines(), dst.splitlines()
        self._map: dict[int, tuple[int, bool]] = {}
        self.added: set[int] = set()
        """The ``src`` lines like no ``dst`` line: lines the migration added."""
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if tag == "equal":
                for i in range(i1, i2):
                    self._map[i + 1] = (j1 + (i - i1) + 1, True)
                continue
            # a changed line is the dst line of the block most like it; one like none of them is a line
            # the migration added: the line before the block, or, in a block whose every line is new and
            # that replaces lines (an EMA rewritten over lines 50-51), the replaced line at its place
            # (50 and 51, not 49: bench/unseen/hunt25 MT4, BW2)
            best = {i: self._most_like(a[i], b, j1, j2) for i in range(i1, i2)}
            rewritten = j2 > j1 and all(ratio < _SAME_LINE for _, ratio in best.values())
            for i, (j, ratio) in best.items():
                if ratio >= _SAME_LINE:
                    self._map[i + 1] = (j + 1, False)
                    continue
                self._map[i + 1] = (j1 + min(i - i1, j2 - j1 - 1) + 1 if rewritten else max(j1, 1), False)
                self.added.add(i + 1)
        self._last = max(len(b), 1)

    def place(self, line: int) -> tuple[int, bool]:
        return self._map.get(line, (min(line, self._last), False))

    @staticmethod
    def _most_like(line: str, dst: list[str], j1: int, j2: int) -> tuple[int, float]:
        """The index in ``dst[j1:j2]`` of the line most like ``line``, and how much they share (either
        way: a migrated line keeps the user's, casts added, and at --against REV the legacy line is kept
        in the user's migrated one, ``host_float32(...)`` around it); ``(j1, 0.0)`` for an empty block."""
        best, ratio = j1, 0.0
        for j in range(j1, j2):
            r = max(_kept(line, dst[j]), _kept(dst[j], line))
            if r > ratio:
                best, ratio = j, r
        return best, ratio


@dataclass
class Place:
    """Where an event is in the user's file: ``path``, 1-based ``line`` and ``col`` (characters),
    ``exact`` (the run's line is that line; False: it is the line before a line the migration
    added or the line it changed), and ``code``: the traced expression's text."""

    path: str
    line: int
    col: int
    exact: bool
    code: str
    added: bool = False
    """The run's line is one the migration added (its helpers: FP32 master weights, an FP32
    gradient norm), which the user's file does not have."""


@dataclass
class TraceSources:
    """What placing the runs' lines in the user's files needs.

    ``user_text(path)``: the user's file as it is on disk (None when it cannot be read).
    ``run_texts``: run name -> the user's path -> the text that run ran there where it differs
    (the migrated script and modules; the legacy file at ``--against REV``). ``islands``: the
    user's path -> the deliberate f32 islands the migration kept, as (first line, last line,
    finding) in the user's coordinates. ``f32``: the migrated run's trace records f32 on the
    device (modes that cast the model; amp's model is f32 on purpose)."""

    user_text: Callable[[str], str | None]
    run_texts: dict[str, dict[str, str]] = field(default_factory=dict)
    islands: dict[str, list[tuple[int, int, Diagnostic]]] = field(default_factory=dict)
    f32: bool = True
    own_migration: bool = True
    """The migrated text is the codemod's own migration: the lines where it wrote ``float32`` excuse the
    f32 that begins there (a loss accumulator made FP32); in another text only such a line that is one of
    ``codemod_lines`` (the codemod's migration, stripped) does."""
    codemod_lines: frozenset[str] = frozenset()
    f64: bool = False
    """With ``f32`` off: the migrated run's trace records float64 on the device (amp), each chain
    of it one ``float64`` finding (BFM204)."""
    run_readers: dict[str, Callable[[str], str | None]] = field(default_factory=dict)
    """Run name -> a reader of the text that run ran at a user's path, for files not in
    ``run_texts`` (the legacy modules of ``--against REV``, read from its checkout)."""
    _maps: dict[tuple[str, str], LineMap | None] = field(default_factory=dict)

    def run_text(self, run: str, path: str) -> str | None:
        """The text ``run`` ran at the user's ``path`` (the user's own when it ran that)."""
        own = self.run_texts.get(run, {}).get(path)
        if own is None and run in self.run_readers:
            own = self.run_readers[run](path)
        return own if own is not None else self.user_text(path)

    def place(
        self, run: str, file: str, line: int, col: int | None, end_line: int | None, end_col: int | None
    ) -> Place:
        """The user's place of a run's (file, line, byte columns)."""
        run_text = self.run_text(run, file)
        code = _span_text(run_text, line, col, end_line, end_col) if run_text is not None else ""
        char_col = _char_col(run_text, line, col) if run_text is not None else None
        key = (run, file)
        if key not in self._maps:
            user = self.user_text(file)
            self._maps[key] = (
                LineMap(run_text, user) if run_text is not None and user is not None and run_text != user else None
            )
        mapping = self._maps[key]
        if mapping is None:
            return Place(file, line, (char_col or 0) + 1, True, code)
        mapped, exact = mapping.place(line)
        user = self.user_text(file) or ""
        user_lines = user.splitlines()
        target = user_lines[mapped - 1] if 0 < mapped <= len(user_lines) else ""
        if exact and char_col is not None:
            new_col = char_col + 1
        elif code and code.splitlines()[0] in target:
            new_col = target.index(code.splitlines()[0]) + 1
        else:
            new_col = len(target) - len(target.lstrip()) + 1
        return Place(file, mapped, new_col, exact, code, line in mapping.added)

    def excusing(self, path: str, lines: Sequence[int]) -> Diagnostic | None:
        """The island's finding when every one of ``lines`` of ``path`` lies in one island."""
        for first, last, finding in self.islands.get(path, []):
            if lines and all(first <= n <= last for n in lines):
                return finding
        return None


def _line_of(text: str, line: int) -> str:
    lines = text.splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


def _char_col(text: str, line: int, col: int | None) -> int | None:
    """A 0-based UTF-8 byte offset of ``line`` as a 0-based character offset (None stays None)."""
    if col is None:
        return None
    raw = _line_of(text, line).encode("utf-8")
    return len(raw[:col].decode("utf-8", errors="ignore"))


def _span_text(text: str, line: int, col: int | None, end_line: int | None, end_col: int | None) -> str:
    if col is None:
        return _line_of(text, line).strip()
    start = _char_col(text, line, col) or 0
    end_line = end_line or line
    end = _char_col(text, end_line, end_col)
    if end_line == line:
        return _line_of(text, line)[start:end]
    lines = text.splitlines()[line - 1 : end_line]
    if not lines:
        return ""
    lines[0] = lines[0][start:]
    lines[-1] = lines[-1][:end]
    return "\n".join(lines)


@dataclass
class TraceFinding:
    """One place the migrated run's trace names: ``kind``, the finding (``diagnostic``: code,
    the user's path, line, col, message), the events behind it (``events``, the named one first),
    ``evidence`` (lines of text for the report), the ``repair`` a generic unit can make there
    (None: none), and ``excused``: the deliberate f32 island's finding that excuses it."""

    kind: FindingKind
    diagnostic: Diagnostic
    events: list[TraceEvent]
    evidence: list[str] = field(default_factory=list)
    repair: RepairSite | None = None
    excused: Diagnostic | None = None

    @property
    def counts(self) -> bool:
        """It stands against the migration (not excused)."""
        return self.excused is None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; paths as the other outputs show them (relative to the current directory
        when under it: ``bf16-migrate --trace FILE`` reads a repair's path from there)."""
        d = self.diagnostic
        repair = None
        if self.repair is not None:
            repair = {**self.repair.to_dict(), "path": display_path(self.repair.path)}
        return {
            "kind": self.kind.value,
            "code": d.code,
            "path": display_path(d.path),
            "line": d.line,
            "col": d.col,
            "message": d.message,
            "fixed": d.fixed,
            "evidence": list(self.evidence),
            "repair": repair,
            "excused_by": None
            if self.excused is None
            else {"code": self.excused.code, "line": self.excused.line, "message": self.excused.message},
        }


_F32_KINDS = (Kind.MEET, Kind.COMPUTE)


def _family(e: TraceEvent) -> str:
    """The key an event is matched by against the legacy run's: an operation computing in a wide dtype
    is one fact whether its operands met bf16 there (``meet``) or not (``compute``), so a legacy ``meet``
    covers a migrated ``compute`` of the same op at the same line (a table kept float32 under
    XLA_DOWNCAST_BF16, as the switch held its float64: a false BFM203, bench/unseen/hunt23 TCR1). The wide
    dtype stays in the key: float64 where the legacy run computed in float32 is new (a float64 table left
    float64, where XLA_DOWNCAST_BF16 made it float32: a false PASS, bench/unseen/hunt25 TC2c)."""
    if e.kind not in _F32_KINDS:
        return e.kind.value
    return "wide-f64" if (e.result or "").startswith("f64") else "wide"


_INITIALISERS = frozenset(
    f"{prefix}.{name}"
    for prefix in ("torch", "Tensor")
    for name in (
        "uniform_",
        "normal_",
        "kaiming_uniform_",
        "kaiming_normal_",
        "xavier_uniform_",
        "xavier_normal_",
        "trunc_normal_",
        "orthogonal_",
        "zero_",
        "fill_",
        "ones_",
        "zeros_",
        "constant_",
        "eye_",
        "bernoulli_",
    )
)
"""The in-place initialisers torch.nn.init and a module's ``reset_parameters`` call. Run on the device
before the first optimizer step they fill parameters a module made there (``with torch.device(xla):``,
``torch.set_default_device``) in f32, which the model cast then makes bf16: no step computes on them
in f32 (bench/unseen/hunt10 lrfind_actions, devctx_dockerfile: the same losses, yet one BFM201 per
layer). So is what an initialiser computes with on the same line (``nn.init.orthogonal_``'s QR of a normal
draw): the model cast after ``model.apply(init)`` is right there, as a bf16 weight has no QR on the host
(``geqrf_cpu`` is not implemented for BFloat16, torch 2.9), where under the switch torch saw float32
(bench/unseen/hunt34 init_after_move: the same losses, yet BFM203). In the step, or meeting bf16, they are
findings as any op."""


def _helper_spans(text: str | None) -> list[tuple[int, int]]:
    """(first line, last line) of each top-level function or class of ``text`` whose docstring carries
    the mark of the helpers the codemod writes (``EMITTED_MARK``); the whole text when its module
    docstring does (a helpers module of the codemod's). [] for a text that does not parse."""
    if text is None or EMITTED_MARK not in text:
        return []
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    if EMITTED_MARK in (ast.get_docstring(tree) or ""):
        return [(1, len(text.splitlines()))]
    return [
        (node.lineno, node.end_lineno or node.lineno)
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and EMITTED_MARK in (ast.get_docstring(node) or "")
    ]


def trace_findings(runs: Mapping[str, RunRecord], sources: TraceSources) -> list[TraceFinding]:
    """The findings of the migrated run's trace read against the legacy run's (see the module
    docstring), in the order the run met them; [] when the migrated run has no trace."""
    migrated = runs.get(MIGRATED)
    if migrated is None or migrated.trace is None:
        return []
    legacy = runs.get(LEGACY)
    control = runs.get(AUTOCAST)
    reader = _Reader(migrated.trace, legacy.trace if legacy is not None else None, sources)
    reader.legacy_ok = legacy is not None and legacy.ok
    reader.control_loss = control.loss_dtype if control is not None and control.steps else None
    reference = runs.get(REFERENCE)
    if reference is not None and reference.trace is not None and reference.trace.device_ops:
        reader.reference_low = {
            _line_of(sources.run_text(REFERENCE, e.file) or "", e.line).strip()
            for e in reference.trace.of_kind(Kind.DOWNCAST)
        }
    return reader.findings()


class _Reader:
    """One reading of a migrated trace against the legacy one."""

    def __init__(self, trace: Trace, legacy: Trace | None, sources: TraceSources) -> None:
        self.trace = trace
        self.sources = sources
        self.places: dict[int, Place] = {}
        self.legacy_keys: set[tuple[str, int, str, str]] = set()
        self.legacy_finfo: dict[tuple[str, int], str] = {}  # the user's place -> the dtype its torch.finfo read
        for e in legacy.events if legacy is not None else []:
            if e.kind == Kind.EXIT and e.exits <= e.cast_back:
                continue  # the legacy run handed the host float32 there: what it should
            p = sources.place(LEGACY, e.file, e.line, e.col, e.end_line, e.end_col)
            self.legacy_keys.add((p.path, p.line, e.op, _family(e)))
            if e.kind == Kind.FINFO and e.result is not None:
                self.legacy_finfo[(p.path, p.line)] = e.result
        self.by_place = {(e.file, e.line, e.op): e for e in trace.events}
        self.legacy = legacy
        self.legacy_ok = True
        """The legacy run ended as the script does (a crashed one's f32 is no precision to keep)."""
        self.helper_spans: dict[str, list[tuple[int, int]]] = {}
        self._made_from: dict[str, LineMap] = {}  # the user's path -> the migrated text placed in its legacy text
        self.control_loss: str | None = None
        """The dtype of the autocast control's loss (amp, once that control has run), else None."""
        self._initialising: set[tuple[str, int]] | None = None  # lines an initialiser ran on before any step
        self.reference_low: set[str] | None = None
        """amp: the lines (stripped) where the FP32 reference run, the legacy text without its switch, made
        bf16/f16 by hand (its ``downcast`` events); None when that run recorded none of its device ops."""

    def place(self, e: TraceEvent) -> Place:
        found = self.places.get(id(e))
        if found is None:
            found = self.sources.place(MIGRATED, e.file, e.line, e.col, e.end_line, e.end_col)
            self.places[id(e)] = found
        return found

    def _in_helper(self, e: TraceEvent) -> bool:
        """Whether ``e`` ran on a line the migration added inside a helper it wrote (a function or class
        whose docstring carries the codemod's mark, ``with_fp32_master_weights``, ``clip_grad_norm_fp32_``)
        or in a helpers module of its own. Any other line, added or changed, is the migration's reading
        of the user's code, which the trace judges: a hand-made migration that rewrote an EMA update as
        ``t.copy_(t.float() * d + s.float() * (1 - d))`` computed it in f32 on lines of its own, and
        passed while every added line was excused (bench/unseen/hunt23 MT4)."""
        if not self.place(e).added:
            return False
        spans = self.helper_spans.get(e.file)
        if spans is None:
            spans = self.helper_spans[e.file] = _helper_spans(self.sources.run_text(MIGRATED, e.file))
        return any(first <= e.line <= last for first, last in spans)

    def new(self, e: TraceEvent) -> bool:
        """The legacy run had no event of this kind and op at this line."""
        p = self.place(e)
        return (p.path, p.line, e.op, _family(e)) not in self.legacy_keys

    def findings(self) -> list[TraceFinding]:
        out: list[tuple[int, TraceFinding]] = []
        if self.sources.f32 or self.sources.f64:
            out.extend(self._f32_findings())
        if self.sources.f64 and not self.sources.own_migration:
            out.extend(self._by_hand_findings())
        if self.sources.f64:
            out.extend(self._loss_findings())
        if self.sources.f64:
            out.extend(self._forward_findings())
        out.extend(self._exit_findings())
        out.extend(self._finfo_findings())
        if self.sources.f32:
            out.extend(self._lowered_findings())
        out.extend(self._failure_findings())
        return [f for _order, f in sorted(out, key=lambda item: item[0])]

    # -- f32 on the device ---------------------------------------------------------------
    def _root(self, e: TraceEvent, depth: int = 0) -> tuple[Any, ...]:
        """The key of the chain an f32 event belongs to: its origin, through the meets that
        promoted it (a meet's own chain is its origin's)."""
        origin = e.origin
        if origin is None or origin.kind == OriginKind.PARAM:
            return ("event", e.file, e.line, e.op)
        if origin.kind == OriginKind.MEET and depth < 20:
            meet = self.by_place.get((origin.file or "", origin.line or 0, origin.op or ""))
            if meet is not None and meet is not e:
                return self._root(meet, depth + 1)
            return ("event", origin.file, origin.line, origin.op)
        return (origin.kind.value, origin.file, origin.line, origin.op)

    def _f32_findings(self) -> list[tuple[int, TraceFinding]]:
        groups: dict[tuple[Any, ...], list[TraceEvent]] = {}
        for e in self.trace.of_kind(*_F32_KINDS):
            # f32 in the helpers the migration wrote (its FP32 master weights) is the migration's own,
            # which its precision part audits; the trace names what the user's code does
            if self.new(e) and not self._in_helper(e):
                root = self._root(e)
                if not self._written_f32(root):
                    groups.setdefault(root, []).append(e)
        # amp: a float64 tensor made on the device (a factory's, not a batch moved in) and still held at the first
        # step is a finding of its own when nothing computed with it in float64 (a hunt's schedule left float64 on
        # the device, gathered and `.float()`ed, PASSed: a gather moves, no meet, no compute); one cast at once to
        # float32 is not held
        covered = {root[1:] for root in groups}  # a chain's beginning, whatever its kind (a module moved)
        for e in self.trace.of_kind(Kind.CREATE) if not self.sources.f32 else ():
            root = (OriginKind.CREATE.value, e.file, e.line, e.op)
            if e.op in _MOVES_TO_DEVICE:
                continue  # a batch moved in: amp's input casts (float32_inputs_hook) make it float32 at the model
            if e.held and root[1:] not in covered and self.new(e) and not self._in_helper(e):
                groups[root] = [e]
        out = []
        for root, events in groups.items():
            events.sort(key=lambda e: e.order)
            finding = self._f32_finding(root, events)
            if finding is not None:
                out.append((events[0].order, finding))
        return out

    def _written_f32(self, root: tuple[Any, ...]) -> bool:
        """Whether the f32 began on a line where the migration itself wrote ``float32`` (a loss
        accumulator made FP32, the mode's rule: ``dtype=torch.float32`` added to its factory): the
        migration's own choice, as the lines it adds are, not something its reading missed."""
        _kind, file, line, _op = root
        if not file or not line:
            return False
        ran = self.sources.run_text(MIGRATED, file)
        # what the migration was made from: the legacy run's text (the user's file, or under `--against REV`,
        # where the user's file is the migrated text, the revision's)
        before = self.sources.run_text(LEGACY, file)
        if ran is None or before is None or ran == before:
            return False
        ran_lines = ran.splitlines()
        if not 0 < line <= len(ran_lines) or "float32" not in ran_lines[line - 1]:
            return False
        if not self.sources.own_migration and ran_lines[line - 1].strip() not in self.sources.codemod_lines:
            return False  # a hand's float32, not the codemod's
        if file not in self._made_from:
            self._made_from[file] = LineMap(ran, before)
        placed, _exact = self._made_from[file].place(line)
        before_lines = before.splitlines()
        return 0 < placed <= len(before_lines) and "float32" not in before_lines[placed - 1]

    def _origin_event(self, root: tuple[Any, ...], op_kind: str) -> TraceEvent | None:
        _kind, file, line, op = root
        return self.by_place.get((file, line, op)) if op_kind else None

    def _f32_finding(self, root: tuple[Any, ...], events: list[TraceEvent]) -> TraceFinding | None:
        kind = root[0]
        meets = [e for e in events if e.kind == Kind.MEET]
        # a line that runs an initialiser runs what the initialiser computes with too (`nn.init.orthogonal_`:
        # `normal_`, then `linalg_qr`, `sign`, `mul_` on the weight, all at the user's line)
        if self._initialising is None:
            self._initialising = {(e.file, e.line) for e in self.trace.events if e.op in _INITIALISERS and e.step == 0}
        if not meets and all(e.step == 0 and (e.file, e.line) in self._initialising for e in events):
            return None  # a module's parameters initialised on the device before the first step (below)
        if not meets and all(e.step == 0 and e.in_init and e.kind == Kind.COMPUTE for e in events):
            # so is a layer's `nn.Parameter(torch.randn(r, n, device=w.device) * 0.02)` built on the device (a LoRA
            # adapter injected before the model's cast): its initial values, rounded to bf16 by the cast, where the
            # switch rounded the draw first (found by a hunt: both LoRA cases FAILed on their init line alone)
            return None
        first = meets[0] if meets else events[0]
        if not self.sources.f32:  # amp: float64 the only wide dtype traced, named where its chain began
            origin_event = self._origin_event(root, kind) if kind == OriginKind.MODULE.value else None
            named = origin_event if origin_event is not None else first
            finding_kind = FindingKind.FLOAT64
        elif kind in (OriginKind.COPY.value, OriginKind.MODULE.value):
            origin_event = self._origin_event(root, kind)
            named = origin_event if origin_event is not None else first
            finding_kind = FindingKind.COPY if kind == OriginKind.COPY.value else FindingKind.MODULE
        else:
            named = first
            finding_kind = FindingKind.MEET if meets else FindingKind.COMPUTE
        place = self.place(named)
        use = self.place(first)
        fields = self._fields(finding_kind, named, first, place, use, root)
        diagnostic = report(CODES[finding_kind], place.path, place.line, place.col, False, None, **fields)
        evidence = self._evidence(events, "f64" if finding_kind is FindingKind.FLOAT64 else "f32")
        excused = None
        if finding_kind in (FindingKind.MEET, FindingKind.COMPUTE):
            lines = [self.place(e).line for e in events if self.place(e).path == place.path]
            paths = {self.place(e).path for e in events}
            if len(paths) == 1:
                excused = self.sources.excusing(place.path, lines)
            if excused is None and finding_kind is FindingKind.COMPUTE and root[1] and root[2]:
                # f32 that began where the author keeps it as written (BFM089: it never meets the bf16
                # stream, the rewrite read) is the author's wherever it is computed on: a loss kept
                # f32 is summed and scaled in the training step too
                start = self.sources.place(MIGRATED, root[1], root[2], None, None, None)
                kept = self.sources.excusing(start.path, [start.line])
                excused = kept if kept is not None and kept.code == "BFM089" else None
        finding = TraceFinding(finding_kind, diagnostic, [named, *[e for e in events if e is not named]], evidence)
        finding.excused = excused
        finding.repair = self._repair(finding_kind, named, first, finding)
        return self._say(finding)

    def _fields(
        self, kind: FindingKind, named: TraceEvent, first: TraceEvent, place: Place, use: Place, root: tuple[Any, ...]
    ) -> dict[str, str]:
        """The message fields of an f32 finding (each kind's template: rules/diagnostics_trace.toml)."""
        expr = _short(place.code or named.op)
        if kind in (FindingKind.COPY, FindingKind.MODULE):
            added = "" if use.exact else ", a line the migration added or changed"
            fields = {"expr": expr, "use": f"{_short(use.code or first.op)}` {self._where(use, place.path)}{added}"}
            fields["when"] = _when(first)
            if kind == FindingKind.MODULE:
                fields["module"] = named.module or named.op.rsplit(".", 1)[0]
            return fields
        # float64 on the device (NumPy data, `.double()`) is named so: Neuron does not run it at all
        wide = "f64" if kind is FindingKind.FLOAT64 or any(o.startswith("f64") for o in first.operands) else "f32"
        fields = {
            "expr": expr,
            "op": first.op,
            "operands": ", ".join(first.operands) or "-",
            "origin": self._origin_text(root, use.path, wide),
            "when": _when(first),
            "wide": wide,
        }
        if kind == FindingKind.MEET:
            fields["result"] = first.result or "f32"
        return fields

    def _where(self, p: Place, relative_to: str) -> str:
        return f"at line {p.line}" if p.path == relative_to else f"at {Path(p.path).name}:{p.line}"

    def _origin_text(self, root: tuple[Any, ...], path: str, wide: str = "f32") -> str:
        """Where the chain's wide operand came from, in words; ``wide``: ``"f32"`` or ``"f64"``."""
        kind, file, line, op = root
        if kind == "event":
            return f"a tensor of unknown history (a parameter made {wide}, or made where the trace does not look)"
        if file is None or line is None:
            return f"an {wide} parameter"
        p = self.sources.place(MIGRATED, file, line, None, None, None)
        at = self._where(p, path)
        return {
            OriginKind.CREATE.value: f"made {wide} on the device {at} (`{op}`)",
            OriginKind.UPCAST.value: f"upcast to {wide} {at} (`{op}`)",
            OriginKind.COMPUTE.value: f"computed in {wide} {at} (`{op}`)",
            OriginKind.COPY.value: f"an {wide} copy of the model made {at} (`{op}`)",
            OriginKind.MODULE.value: f"the {wide} parameters of a module moved to the device {at} (`{op}`)",
        }.get(kind, f"made {at}")

    def _evidence(self, events: list[TraceEvent], wide: str) -> list[str]:
        """The first events of a chain, a line each; ``wide``: the dtype traced (``"f32"``, ``"f64"``)."""
        lines = []
        for e in events[:6]:
            p = self.place(e)
            own = "f64" if any(o.startswith("f64") for o in e.operands) else wide  # a float64 operand is named so
            names = f", {own} operand {', '.join(e.f32_names)}" if e.f32_names else ""
            lines.append(
                f"{Path(p.path).name}:{p.line}: {e.kind.value} `{e.op}` ({', '.join(e.operands) or '-'} -> "
                f"{e.result or '-'}{names}) x{e.count}{_when(e)}"
            )
        if len(events) > 6:
            lines.append(f"... and {len(events) - 6} more operation(s) computing in {wide} on this chain")
        return lines

    def _repair(
        self, kind: FindingKind, named: TraceEvent, first: TraceEvent, finding: TraceFinding
    ) -> RepairSite | None:
        d = finding.diagnostic
        mark = (d.code, d.line, d.col)
        if kind == FindingKind.MEET and (first.f32_names or len(first.f32_args) == 1):
            partner = next((n for n in first.partner_names if "." not in n), None) or (
                first.partner_names[0] if first.partner_names else None
            )
            arg = first.f32_args[0] if len(first.f32_args) == 1 and len(first.operands) == 2 else None
            return self._site(
                RepairKind.CAST_OPERAND, first, mark, names=tuple(first.f32_names), partner=partner, arg=arg
            )
        if kind == FindingKind.COPY and named.kind == Kind.CREATE:
            also = tuple(
                s
                for s in (
                    self._span(c.file, c.line, c.end_line, c.col, c.end_col)
                    for c in named.callers
                    if c.file == named.file
                )
                if s is not None
            )
            site = self._site(RepairKind.CAST_COPY, named, mark)
            if site is None:
                return None
            outer = [c for c in named.callers if c.file != named.file]
            return _with(site, also=also, group=_group(d) if outer else "")
        if kind == FindingKind.MODULE and named.kind == Kind.CREATE:
            return self._site(RepairKind.CAST_MODULE, named, mark)
        return None

    def _span(self, file: str, line: int, end_line: int | None, col: int | None, end_col: int | None) -> Span | None:
        text = self.sources.run_text(MIGRATED, file)
        if text is None or col is None or end_col is None:
            return None
        start = _char_col(text, line, col) or 0
        end = _char_col(text, end_line or line, end_col) or 0
        return Span(line, start, end_line or line, end, _line_of(text, line))

    def _site(self, kind: RepairKind, e: TraceEvent, mark: tuple[str, int, int], **more: Any) -> RepairSite | None:
        span = self._span(e.file, e.line, e.end_line, e.col, e.end_col)
        if span is None:
            return None
        return RepairSite(kind, self.place(e).path, span, op=e.op, finding=mark, **more)

    @staticmethod
    def _say(finding: TraceFinding) -> TraceFinding:
        """The finding with its message on its repair site (for a stored trace's rewrite)."""
        if finding.repair is not None:
            finding.repair = _with(finding.repair, message=finding.diagnostic.message)
        return finding

    # -- amp: bf16 made by hand -------------------------------------------------------------
    def _by_hand_findings(self) -> list[tuple[int, TraceFinding]]:
        """amp, a text that is not the codemod's own migration: each ``downcast`` event on a line the
        codemod's migration did not write and the legacy script does not have (compared stripped: an
        indent under ``with torch.autocast`` keeps a line the script's), or has but where the FP32 reference
        run, the legacy text without its switch, made no bf16 (``reference_low``: the line's text is the
        same, its dtype came from elsewhere, ``x.to(SHADOW_DTYPE)`` with the constant made bf16 on another
        line, bench/unseen/hunt33 EDA1), one finding per line."""
        out: list[tuple[int, TraceFinding]] = []
        named: set[tuple[str, int]] = set()
        for e in self.trace.of_kind(Kind.DOWNCAST):
            if self._in_helper(e):
                continue
            ran = self.sources.run_text(MIGRATED, e.file)
            code = _line_of(ran, e.line).strip() if ran is not None else ""
            legacy = self.sources.run_text(LEGACY, e.file) or ""
            if not code:
                continue
            if code in {x.strip() for x in legacy.splitlines()}:
                if self.reference_low is None or code in self.reference_low:
                    continue
            elif code in self.sources.codemod_lines:
                continue
            place = self.place(e)
            if (place.path, place.line) in named:
                continue
            named.add((place.path, place.line))
            fields = {
                "expr": _short(place.code or e.op),
                "result": e.result or "bf16",
                "op": e.op,
                "operands": ", ".join(e.operands) or "no floating tensor",
                "when": _when(e),
            }
            diagnostic = report(
                CODES[FindingKind.BF16_BY_HAND], place.path, place.line, place.col, False, None, **fields
            )
            evidence = [f"{Path(place.path).name}:{place.line}: `{e.op}` x{e.count} -> {fields['result']}{_when(e)}"]
            out.append((e.order, self._say(TraceFinding(FindingKind.BF16_BY_HAND, diagnostic, [e], evidence))))
        return out

    def _loss_findings(self) -> list[tuple[int, TraceFinding]]:
        """amp: the place where the migrated run's loss left autocast (the ``loss_outside_autocast`` event: the
        first bf16 operation of its chain outside autocast), when the autocast control's loss was f32, or when the
        chain ran an op autocast runs in float32 (``F.cross_entropy`` on bf16 logits: torch_xla/csrc/
        autocast_mode.cpp's fp32 list), whatever the dtype of the sum handed to ``backward`` (a bf16
        cross-entropy plus an f32 margin term is an f32 loss computed partly in bf16)."""
        out: list[tuple[int, TraceFinding]] = []
        for e in self.trace.of_kind(Kind.LOSS_OUTSIDE_AUTOCAST):
            if self.control_loss != "f32" and e.fp32_op is None:
                continue
            place = self.place(e)
            fields = {"expr": _short(place.code or e.op), "op": e.op, "result": e.result or "bf16"}
            variant = None
            if e.fp32_op is not None:
                variant, fields["fp32_op"] = "fp32_op", e.fp32_op
            diagnostic = report(
                CODES[FindingKind.LOSS_OUTSIDE_AUTOCAST],
                place.path,
                place.line,
                place.col,
                False,
                variant,
                **fields,
            )
            evidence = [f"{Path(place.path).name}:{place.line}: `{e.op}` -> {fields['result']}, outside autocast"]
            finding = TraceFinding(FindingKind.LOSS_OUTSIDE_AUTOCAST, diagnostic, [e], evidence)
            out.append((e.order, self._say(finding)))
        return out

    def _lowered_findings(self) -> list[tuple[int, TraceFinding]]:
        """Modes that cast the model: each line of the user's code the legacy run computed in float32 on the device
        (a ``compute`` or ``meet`` event of f32: under XLA_DOWNCAST_BF16 its float64 was float32 there) that the
        migrated run executed (:attr:`.trace.Trace.lines_run`) with no f32 or f64 event of its own there: it computed
        in bf16, lower than the legacy run (a hunt's schedule made bf16 where DOWNCAST had it float32 was not said)."""
        if self.legacy is None or not self.legacy_ok or not self.trace.lines_run:
            return []  # a legacy run that crashed (nn.GRU under XLA_USE_BF16) computed nothing to keep
        ran: set[tuple[str, int]] = set()
        for file, lines in self.trace.lines_run.items():
            for line in lines:
                p = self.sources.place(MIGRATED, file, line, None, None, None)
                if not p.added:  # a line the migration added has no line of the user's (its place is the one before)
                    ran.add((p.path, p.line))
        wide = {(self.place(e).path, self.place(e).line) for e in self.trace.events if e.kind in _WIDE_KINDS}
        out: list[tuple[int, TraceFinding]] = []
        named: set[tuple[str, int]] = set()
        for e in self.legacy.of_kind(*_F32_KINDS):
            if not (e.result or "").startswith("f32"):
                continue
            p = self.sources.place(LEGACY, e.file, e.line, e.col, e.end_line, e.end_col)
            key = (p.path, p.line)
            if key in named or key in wide or key not in ran or self.sources.user_text(p.path) is None:
                continue  # (a file of the user's: not code torch generated, `<eval_with_key>.2`)
            named.add(key)
            fields = {"expr": _short(p.code or e.op), "op": e.op, "when": _when(e)}
            diagnostic = report(CODES[FindingKind.LOWERED], p.path, p.line, p.col, False, None, **fields)
            evidence = [f"{Path(p.path).name}:{p.line}: legacy `{e.op}` -> {e.result}; migrated: no f32 there, ran"]
            out.append((e.order, self._say(TraceFinding(FindingKind.LOWERED, diagnostic, [e], evidence))))
        return out

    def _finfo_findings(self) -> list[tuple[int, TraceFinding]]:
        """Each line of the user's code whose ``torch.finfo`` read bf16's (or f16's) constants where the legacy
        run's, at the same line, read float32's or float64's: under the switch ``torch.finfo(probs.dtype)`` saw the
        float32 label, so a clamp ``probs.clamp(min=eps)`` kept ``eps`` 1.2e-07; the migrated run's 0.0078 clamps
        every probability below it (a hunt's mixup loss changed by 13-52% and the report named no line)."""
        out: list[tuple[int, TraceFinding]] = []
        for e in self.trace.of_kind(Kind.FINFO):
            place = self.place(e)
            legacy = self.legacy_finfo.get((place.path, place.line))
            if e.result not in _LOW_TYPES or legacy not in ("f32", "f64"):
                continue
            fields = {"expr": _short(place.code or e.op), "result": e.result or "bf16", "legacy": legacy}
            diagnostic = report(CODES[FindingKind.FINFO], place.path, place.line, place.col, False, None, **fields)
            evidence = [f"{Path(place.path).name}:{place.line}: `torch.finfo` of {e.result}, legacy run {legacy}"]
            out.append((e.order, self._say(TraceFinding(FindingKind.FINFO, diagnostic, [e], evidence))))
        return out

    def _forward_findings(self) -> list[tuple[int, TraceFinding]]:
        """amp: each place a module's forward pass ran a matrix product on its float32 parameters outside autocast
        (the ``forward_outside_autocast`` event), one finding per line; a deliberate f32 island the migration
        reported there excuses it. The legacy run computed it in bf16; autocast would have (a hunt's evaluation
        probe and final render left outside autocast PASSed, the step graph alone read)."""
        out: list[tuple[int, TraceFinding]] = []
        named: set[tuple[str, int]] = set()
        for e in self.trace.of_kind(Kind.FORWARD_OUTSIDE_AUTOCAST):
            if self._in_helper(e):
                continue
            place = self.place(e)
            if (place.path, place.line) in named:
                continue
            named.add((place.path, place.line))
            fields = {"expr": _short(place.code or e.op), "op": e.op, "when": _when(e)}
            diagnostic = report(
                CODES[FindingKind.FORWARD_OUTSIDE_AUTOCAST], place.path, place.line, place.col, False, None, **fields
            )
            evidence = [f"{Path(place.path).name}:{place.line}: `{e.op}` x{e.count} on f32 parameters{_when(e)}"]
            # where the forward was called from (a loss function, a `partial`): where the autocast block belongs
            # may be there rather than in the model's code (a hunt's amp trace named the model's lines alone)
            for c in e.callers:
                at = self.sources.place(MIGRATED, c.file, c.line, c.col, c.end_line, c.end_col)
                evidence.append(f"  called from {Path(at.path).name}:{at.line} (`{_short(at.code)}`)")
            finding = TraceFinding(FindingKind.FORWARD_OUTSIDE_AUTOCAST, diagnostic, [e], evidence)
            finding.excused = self.sources.excusing(place.path, [place.line])
            out.append((e.order, self._say(finding)))
        return out

    # -- the host edge -------------------------------------------------------------------
    def _exit_findings(self) -> list[tuple[int, TraceFinding]]:
        out = []
        for e in self.trace.of_kind(Kind.EXIT):
            if e.exits <= e.cast_back or not self.new(e):
                continue
            save = e.op == "torch.save"
            kind = FindingKind.SAVE if save else FindingKind.EXIT
            place = self.place(e)
            low = sum(n for k, n in e.exit_dtypes.items() if k in ("bfloat16", "float16", "bf16", "f16"))
            fields = {
                "expr": _short(place.code or e.op),
                "dtypes": ", ".join(f"{k} x{n}" for k, n in sorted(e.exit_dtypes.items())),
                "when": _when(e),
            }
            if not save:
                fields["left"] = str(e.exits - e.cast_back)
            diagnostic = report(CODES[kind], place.path, place.line, place.col, False, None, **fields)
            evidence = [
                f"{Path(place.path).name}:{place.line}: `{e.op}` x{e.count}: host dtypes "
                f"{fields['dtypes']}, {low} lower-precision, {e.cast_back} cast back later{_when(e)}"
            ]
            finding = TraceFinding(kind, diagnostic, [e], evidence)
            mark = (diagnostic.code, diagnostic.line, diagnostic.col)
            floating = all(
                k in ("bfloat16", "float16", "float32", "float64", "bf16", "f16", "f32", "f64") for k in e.exit_dtypes
            )
            if not save and floating:
                finding.repair = self._site(RepairKind.HOST_FLOAT, e, mark)
            elif save and e.flat_dict:
                finding.repair = self._site(RepairKind.SAVE_FLOAT, e, mark)
            out.append((e.order, self._say(finding)))
        return out

    # -- failures ------------------------------------------------------------------------
    def _failure_findings(self) -> list[tuple[int, TraceFinding]]:
        out = []
        for e in self.trace.of_kind(Kind.EXCEPTION):
            if not self.new(e):
                continue
            place = self.place(e)
            errors = [x for x in self.trace.of_kind(Kind.OP_ERROR) if x.mixed or self.place(x).line == place.line]
            meets = [x for x in self.trace.of_kind(Kind.MEET) if self.new(x) and self._root(x)[0] != "event"]
            cause = ""
            if errors:
                x = errors[-1]
                xp = self.place(x)
                cause = f"; `{x.op}` raised {self._where(xp, place.path)} on operands {', '.join(x.operands)}"
            elif meets and "precision" in (e.message or ""):
                x = meets[0]
                xp = self.place(x)
                wide = "f64" if "f64" in x.operands else "f32"  # a float64 target met bf16: a hunt's said "f32"
                cause = f"; {wide} met bf16 first {self._where(xp, place.path)} (`{x.op}`)"
            fields = {"message": _short(e.message or e.op, 160), "when": _when(e), "cause": cause}
            diagnostic = report(CODES[FindingKind.FAILURE], place.path, place.line, place.col, False, None, **fields)
            evidence = [f"{Path(place.path).name}:{place.line}: {e.message}{_when(e)}"]
            for x in errors[-3:]:
                xp = self.place(x)
                evidence.append(
                    f"{Path(xp.path).name}:{xp.line}: `{x.op}` raised on {', '.join(x.operands)}: {x.message}"
                )
            out.append((e.order, TraceFinding(FindingKind.FAILURE, diagnostic, [e, *errors], evidence)))
        return out


def _with(site: RepairSite, **changes: Any) -> RepairSite:
    return replace(site, **changes)


def _group(d: Diagnostic) -> str:
    return f"{d.code}:{d.path}:{d.line}"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _when(e: TraceEvent) -> str:
    if e.after_stop:
        return " (after the recorded steps: evaluation, export or checkpoint code)"
    return f" (step {e.step + 1})" if e.step else " (before the first optimizer step)"


def trace_part(findings: Sequence[TraceFinding], runs: Mapping[str, RunRecord]) -> Part | None:
    """The verdict's ``trace`` part: FAIL when a finding counts (is not a deliberate island the
    migration reported), else PASS; None when the migrated run has no trace."""
    migrated = runs.get(MIGRATED)
    trace = migrated.trace if migrated is not None else None
    if trace is None:
        return None
    counted = [f for f in findings if f.counts]
    excused = [f for f in findings if not f.counts]
    by_code: dict[str, int] = {}
    for f in counted:
        by_code[f.diagnostic.code] = by_code.get(f.diagnostic.code, 0) + 1
    if counted:
        places = ", ".join(
            f"{f.diagnostic.code} {Path(f.diagnostic.path).name}:{f.diagnostic.line}" for f in counted[:6]
        ) + (f" and {len(counted) - 6} more" if len(counted) > 6 else "")
        pieces = [f"{len(counted)} place(s) where the migrated run does what the legacy run did not: {places}"]
    else:
        pieces = [
            "no f32 on the device, no bf16 to the host and no failure the legacy run did not have "
            f"({trace.calls} torch calls traced)"
        ]
    for f in excused:
        assert f.excused is not None
        pieces.append(
            f"{Path(f.diagnostic.path).name}:{f.diagnostic.line} computes in f32 inside a deliberate f32 island the "
            f"migration kept ({f.excused.code} at line {f.excused.line})"
        )
    pieces.append(_coverage(trace))
    figures = {
        "findings": len(counted),
        "excused": len(excused),
        "by_code": by_code,
        "calls": trace.calls,
        "complete": trace.end.complete,
        "end": trace.end.value,
        "continued": trace.continued,
    }
    return Part("trace", FAIL if counted else PASS, "; ".join(pieces), figures)


def _coverage(trace: Trace) -> str:
    if trace.end.complete:
        return "traced to the script's end" + (" (after the recorded steps too)" if trace.continued else "")
    why = {
        "steps_reached": "the run stopped at the recorded steps (--trace-time 0)",
        "budget": "its time after the recorded steps (--trace-time) ran out",
        "deadline": "the run's --timeout came near",
    }.get(trace.end.value, f"it ended: {trace.end.value}")
    return f"traced up to step {trace.stop_step} and on until {why}: the code after that was not traced"


def same_lines(island: Any, legacy: str, codemod: str, migrated: str) -> bool:
    """Whether ``migrated`` (a text made from ``legacy`` otherwise than by the codemod) holds the lines of
    ``island`` (``Outcome.f32_islands``, in ``legacy``'s lines) as the codemod's migration ``codemod`` writes
    them: the same stripped lines placed in the island's span (:class:`LineMap`), so its f32 there is the
    codemod's kept island, not a hand's."""

    def lines(text: str) -> list[str]:
        mapping = LineMap(text, legacy)
        return [
            row.strip()
            for k, row in enumerate(text.splitlines(), 1)
            if island.first_line <= mapping.place(k)[0] <= island.last_line and row.strip()
        ]

    return lines(codemod) == lines(migrated)


def island_spans(
    islands: Sequence[Any], own_text: str | None, user_text: str | None
) -> list[tuple[int, int, Diagnostic]]:
    """``Outcome.f32_islands`` (lines of the text the migration read) in the user's file's lines
    (the same text, or the work tree's at ``--against``: mapped through :class:`LineMap`)."""
    out = []
    mapping = (
        LineMap(own_text, user_text)
        if own_text is not None and user_text is not None and own_text != user_text
        else None
    )
    for island in islands:
        first, last = island.first_line, island.last_line
        if mapping is not None:
            first, last = mapping.place(first)[0], mapping.place(last)[0]
        out.append((first, last, island.finding))
    return out
