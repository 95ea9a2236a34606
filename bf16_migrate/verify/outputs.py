"""The verdict of a script that does not train: what its runs handed the host, compared.

A script with no training step (an inference server, an evaluation, an exporter that runs the
model) has no losses to compare; what the legacy switch promised it is the contract's second
half: every floating tensor that leaves the device is float32, holding what the bf16 device
computed. Each traced run samples what the user's code took off the device
(:class:`~.trace.HostOutput`: the first occurrences per line, the first values of each); this
module pairs the migrated run's samples with its comparison run's by the user's file, line, op
and occurrence (the migrated copy's lines placed in the user's file, :class:`.TraceSources`),
and judges them (:func:`outputs_part`, the verdict's ``matches`` part for such a run; a sample
taken in a line the migration added, its own helper's host copy, is not the user's and is left out):

- every sample has its partner (a result the other run did not hand the host, or handed from
  another line, is named), floating where the partner is, with the same shape (a ``bfloat16``
  where the legacy run gave ``float32`` is the same numbers when the host casts it back, and the
  trace's ``exit`` finding when it does not: the dtypes of floating samples are not compared);
- the values agree: the relative difference of two values is verify's, ``|a - b| / max(|b|,
  1% of the largest |b| of the sample)``; over all floating values of all samples the median is
  within ``outputs_median`` and at most ``outputs_far_share`` of them are more than
  ``outputs_far`` apart (an integer or boolean value that differs, a predicted label, counts as
  far); no single sample's median is beyond ``outputs_far`` (one answer wholly different), said
  apart when it is the one test that fails.

The comparison run is the mode's baseline (``[MODE.verify] baseline`` in ``rules/modes.toml``):
the legacy run for the bf16 modes, which a faithful migration reproduces to the bf16 rounding;
the FP32 reference for amp, which may then be as far from it as the legacy run is
(``drift_factor`` times the legacy run's distance, the precision gap of the outputs: its median,
its far share and its farthest sample's median) or within the floor above, whichever is larger.
The FP32 reference's distance from the legacy run is reported beside the figures: where it is
within the bar too, the outputs cannot tell the precisions apart and the trace part (f32 computed
on the device) is what says so. No torch.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..python.snippets import HOST_FLOAT32
from ..rules import Mode
from .allowance import Allowance
from .compare import TOLERANCES, Tolerance, Verdict
from .evidence import graph_part, precision_part, rounding_problem, trains_on_the_host
from .parts import FAIL, INCONCLUSIVE, PASS, Part
from .records import AUTOCAST, CONTROL, LEGACY, MIGRATED, REFERENCE, RunRecord
from .trace import HostOutput
from .trace_findings import TraceSources

__all__ = [
    "INFERENCE_NOTE",
    "WITHOUT_BACKWARD_NOTE",
    "OutputDistance",
    "distance",
    "judge_after_host_training",
    "judge_outputs",
    "judge_without_backward",
    "outputs_part",
    "paired",
]

EPS_FRACTION = 0.01
"""``eps`` of a sample's relative differences, as a fraction of its largest |value| (verify's)."""

OutputKey = tuple[str, int, str, int]
"""(user's path, user's line, op, occurrence) of a sample."""


@dataclass(frozen=True)
class OutputDistance:
    """How far one run's host outputs are from another's: ``paired`` samples compared,
    ``values`` compared, their ``median`` relative difference (floating values), the ``far_share``
    of values more than ``far`` apart (integer values that differ count as far), the ``worst``
    sample (its key and its own median) and the samples that ``differ`` in dtype or shape
    (key, this run's, the other's), or that have no partner (``only_here`` / ``only_there``)."""

    paired: int
    values: int
    median: float
    far_share: float
    worst: tuple[OutputKey, float] | None
    differ: list[tuple[OutputKey, str, str]]
    only_here: list[OutputKey]
    only_there: list[OutputKey]
    floating: int = 0
    """How many floating values were compared."""
    identical: bool = False
    """Every floating value compared is equal to its partner (and there is one at least)."""
    int_values: int = 0
    """How many integer or boolean values were compared."""
    int_differ: int = 0
    """Of those, how many differ from their partner (a top-k id, a predicted label)."""

    @property
    def int_share(self) -> float:
        """The share of the integer values compared that differ (0 when there are none)."""
        return self.int_differ / self.int_values if self.int_values else 0.0

    @property
    def float_far_share(self) -> float:
        """The share of all values compared that are far and floating."""
        return (self.far_share * self.values - self.int_differ) / self.values if self.values else 0.0


def _keyed(
    run: str, record: RunRecord, sources: TraceSources, helper: list[HostOutput] | None = None
) -> dict[OutputKey, HostOutput]:
    """The samples of ``record``'s trace by their place in the user's files; of a run that trained
    without ``backward()``, those taken within its recorded steps. ``helper``: gets the migrated run's
    samples taken in the migration's ``host_float32`` (left out of the result), in trace order."""
    out: dict[OutputKey, HostOutput] = {}
    if record.trace is None:
        return out
    for o in record.trace.outputs:
        if record.steps_without_backward and o.after_stop:
            continue  # after the recorded steps, where another run (the FP32 reference) stopped: no partner
        place = sources.place(run, o.file, o.line, o.col, None, None)
        if run == MIGRATED and (place.added or o.function == HOST_FLOAT32):
            # the migration's own helper (host_float32's copy): what the user's line hands over is judged
            if helper is not None and o.function == HOST_FLOAT32:
                helper.append(o)
            continue
        out.setdefault((place.path, place.line, o.op, o.occurrence), o)
    return out


def paired(
    run: str, record: RunRecord, base_run: str, base: RunRecord, sources: TraceSources
) -> tuple[list[tuple[OutputKey, HostOutput, HostOutput]], list[OutputKey], list[OutputKey]]:
    """The samples of ``record`` (run ``run``) paired with ``base``'s (run ``base_run``) by the
    user's path, line, op and occurrence, in ``base``'s order (a sample of another op on the same line, of the
    same shape and kind, where the op differs); and the keys found only in ``record``, and only in ``base``.

    An exit the migration moved: where the user's code hands a device tensor to a function that
    takes it off the device (``writer.add_histogram("conf", probs.max(-1).values)``, the function's
    ``.cpu()`` in another module), the migration may wrap the argument in ``host_float32``, so the
    migrated run's sample is taken in the helper and the function's own ``.cpu()`` then sees a host
    tensor. A ``base`` sample left without a partner is paired with the next such helper sample
    of ``record`` of its shape and kind, in trace order; one that finds none, while the helper took
    samples of its shape (the trace keeps the first few per line, and the helper's one line serves
    every call), is moved, not missing: it is left out of both lists."""
    helper: list[HostOutput] = []
    here = _keyed(run, record, sources, helper)
    there = _keyed(base_run, base, sources)
    pairs = [(key, here[key], b) for key, b in there.items() if key in here]
    # the same line handing the host the same values by another call (`.to("cpu")` written `.float().cpu()` or
    # `.cpu().tolist()`): how float32 leaves the device is free (a false FAIL, bench/unseen/hunt35 exit_spelling)
    spare: dict[tuple[str, int], list[OutputKey]] = {}
    for key in here:
        if key not in there:
            spare.setdefault(key[:2], []).append(key)
    used: set[OutputKey] = set()
    only_there = []
    moved_shapes = {(h.shape, h.floating) for h in helper}
    for key, b in there.items():
        if key in here:
            continue
        same_line = next(
            (k for k in spare.get(key[:2], []) if (here[k].shape, here[k].floating) == (b.shape, b.floating)), None
        )
        if same_line is not None:
            spare[key[:2]].remove(same_line)
            used.add(same_line)
            pairs.append((key, here[same_line], b))
            continue
        match = next((h for h in helper if (h.shape, h.floating) == (b.shape, b.floating)), None)
        if match is not None:
            helper.remove(match)
            pairs.append((key, match, b))
        elif (b.shape, b.floating) not in moved_shapes:
            only_there.append(key)
    return pairs, [k for k in here if k not in there and k not in used], only_there


def _rel(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """Relative differences of ``a`` from ``b`` value by value (verify's formula)."""
    scale = max((abs(x) for x in b), default=0.0)
    eps = EPS_FRACTION * scale
    out = []
    for x, y in zip(a, b):
        if x == y or (x != x and y != y):  # equal, infinities of one sign, or NaN in both
            out.append(0.0)
            continue
        if x != x or y != y or abs(x) == float("inf") or abs(y) == float("inf"):  # against a number
            out.append(float("inf"))
            continue
        denom = max(abs(y), eps)
        out.append(abs(x - y) / denom if denom > 0 else float("inf"))
    return out


def distance(
    run: str, record: RunRecord, base_run: str, base: RunRecord, sources: TraceSources, far: float
) -> OutputDistance:
    """How far ``record``'s host outputs are from ``base``'s (see :class:`OutputDistance`);
    ``far``: the relative difference beyond which a value counts as far."""
    pairs, only_here, only_there = paired(run, record, base_run, base, sources)
    rels: list[float] = []
    far_count = 0
    compared = 0
    int_values = int_differ = 0
    worst: tuple[OutputKey, float] | None = None
    differ: list[tuple[OutputKey, str, str]] = []
    for key, mine, theirs in pairs:
        # a floating dtype that differs is not judged here: bf16 at the exit (``.cpu()``) cast back on the
        # host holds the same numbers, and one not cast back is the trace's exit finding
        if mine.shape != theirs.shape or mine.floating != theirs.floating:
            differ.append((key, _what(mine), _what(theirs)))
            continue
        n = min(len(mine.values), len(theirs.values))
        if mine.floating:
            rel = _rel(mine.values[:n], theirs.values[:n])
            rels.extend(rel)
            far_count += sum(1 for r in rel if r > far)
            own = statistics.median(rel) if rel else 0.0
        else:
            wrong = sum(1 for x, y in zip(mine.values[:n], theirs.values[:n]) if x != y)
            far_count += wrong
            int_values += n
            int_differ += wrong
            own = float("inf") if n and wrong * 2 > n else 0.0
        compared += n
        if worst is None or own > worst[1]:
            worst = (key, own)
    return OutputDistance(
        paired=len(pairs),
        values=compared,
        median=statistics.median(rels) if rels else 0.0,
        far_share=far_count / compared if compared else 0.0,
        worst=worst,
        differ=differ,
        only_here=only_here,
        only_there=only_there,
        floating=len(rels),
        identical=bool(rels) and all(r == 0.0 for r in rels),
        int_values=int_values,
        int_differ=int_differ,
    )


def _what(o: HostOutput) -> str:
    return f"{o.dtype}[{', '.join(str(n) for n in o.shape)}]"


def _where(key: OutputKey) -> str:
    path, line, op, occurrence = key
    name = path.rsplit("/", 1)[-1]
    nth = f" (occurrence {occurrence + 1})" if occurrence else ""
    return f"{name}:{line} {op}{nth}"


def _keys_text(keys: Sequence[OutputKey], limit: int = 3) -> str:
    shown = ", ".join(_where(k) for k in keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")


def outputs_part(
    mode: Mode, runs: Mapping[str, RunRecord], sources: TraceSources, *, after_host_training: bool = False
) -> Part:
    """The ``matches`` part of an inference run's verdict (module docstring): the migrated run's
    host outputs against the mode's comparison run's. ``runs``: run name -> record (``migrated``
    an inference run, :attr:`RunRecord.inference`, or one that trained without ``backward()``,
    whose outputs within its recorded steps are compared, with a bar widened by the precision gap
    as amp's is, in every mode: its weights drift as a training run's losses do; ``legacy`` and
    ``reference`` when made). ``after_host_training``: both runs trained on the host and went on
    past their recorded steps for the trace (:func:`judge_after_host_training`): every output is
    compared, the comparison run need not be an inference run.
    INCONCLUSIVE when the comparison run is missing or did not end as an inference run, or the
    mode's rules give no outputs bar; FAIL when a sample has no partner, differs in dtype or
    shape, or the values are beyond the bar."""
    tol = TOLERANCES.get(mode.name)
    name = "matches"
    if tol is None or tol.outputs_median is None or tol.outputs_far is None or tol.outputs_far_share is None:
        return Part(name, INCONCLUSIVE, f"rules/modes.toml [{mode}.verify] gives no bar for host outputs")
    migrated = runs[MIGRATED]
    base_name = tol.baseline
    base = runs.get(base_name)
    if base is None or not base.ok or not (base.on_outputs or after_host_training):
        why = "did not run" if base is None else (base.error or "trained (it called backward)")
        return Part(name, INCONCLUSIVE, f"no {base_name} run to compare the host outputs with: it {why}")
    mine = distance(MIGRATED, migrated, base_name, base, sources, tol.outputs_far)
    other_name = REFERENCE if base_name == LEGACY else LEGACY
    bars = _bars(
        tol,
        runs,
        base_name,
        base,
        other_name,
        sources,
        widen=base_name == REFERENCE or bool(migrated.steps_without_backward),
        compare=not after_host_training,
    )
    median_bar, share_bar, worst_bar = bars.median, bars.share, bars.worst
    gap_text, gap_median, gap_ints = bars.text, bars.gap_median, bars.gap_ints
    figures = {
        "baseline": base_name,
        "paired": mine.paired,
        "values": mine.values,
        "median": mine.median,
        "far_share": mine.far_share,
        "median_limit": median_bar,
        "far_share_limit": share_bar,
        "far": tol.outputs_far,
        "only_migrated": [_where(k) for k in mine.only_here],
        "only_baseline": [_where(k) for k in mine.only_there],
        "differ": [[_where(k), a, b] for k, a, b in mine.differ],
    }
    head = f"{mine.paired} host outputs of the {base_name} run paired ({mine.values} values)"
    if mine.only_there:
        return Part(
            name, FAIL, f"{head}; the migrated run did not hand the host {_keys_text(mine.only_there)}", figures
        )
    if mine.only_here:
        return Part(
            name,
            FAIL,
            f"{head}; the migrated run handed the host {_keys_text(mine.only_here)}, the {base_name} run did not",
            figures,
        )
    if mine.differ:
        key, a, b = mine.differ[0]
        return Part(name, FAIL, f"{head}; {_where(key)} gave {a} where the {base_name} run gave {b}", figures)
    if mine.paired == 0:
        return Part(name, INCONCLUSIVE, f"no host output of the {base_name} run to compare", figures)
    values = (
        f"median rel. diff {mine.median:.2g} (limit {median_bar:.2g}), {mine.far_share:.1%} of the values more than "
        f"{tol.outputs_far:.2g} apart (limit {share_bar:.0%})"
    )
    figures["worst_limit"] = worst_bar
    if base_name == REFERENCE and mine.identical and gap_median is not None:
        # amp: autocast's bf16 rounds something the outputs depend on, unless nothing ran under it
        failed = (
            f"{head}: every one of its {mine.floating} floating values equals the FP32 reference's, where the legacy "
            f"run's are not (median rel. diff {gap_median:.2g}): nothing they depend on ran in bf16 under autocast"
        )
        control = runs.get(AUTOCAST)
        if control is not None:
            return _against_autocast_control(tol, migrated, control, sources, failed, figures, base)
        return Part(name, FAIL, failed, figures)
    worst_far = mine.worst is not None and mine.worst[1] > worst_bar
    if mine.median > median_bar or mine.far_share > share_bar or worst_far:
        where = f"; farthest: {_where(mine.worst[0])}" if mine.worst is not None else ""
        if worst_far and mine.median <= median_bar and mine.far_share <= share_bar:
            assert mine.worst is not None, "worst_far needs a worst sample"
            where = (
                f"; but one sample is wholly different: {_where(mine.worst[0])}, its median rel. diff "
                f"{mine.worst[1]:.2g} (limit {worst_bar:.2g})"
            )
        failed = f"{head}: {values}{where}{gap_text}"
        control = runs.get(AUTOCAST)
        if base_name == REFERENCE and control is not None:
            return _against_autocast_control(tol, migrated, control, sources, failed, figures, base)
        if base_name == LEGACY and not worst_far and _only_integer_flips(mine, gap_ints, median_bar, share_bar):
            figures["integer_flips"] = mine.int_share
            return Part(
                name,
                INCONCLUSIVE,
                f"{head}: {values}{where}{gap_text}; only integer values are past the bar: {mine.int_share:.1%} of "
                f"them differ (top-k ids or labels swap on near ties), where the {other_name} run's differ "
                f"{gap_ints:.1%}, and the floating values are within it: the outputs cannot tell this migration",
                figures,
            )
        if base_name == LEGACY and _no_nearer_than(mine, bars.gap, median_bar, share_bar, worst_bar):
            return Part(
                name,
                INCONCLUSIVE,
                f"{head}: {values}{where}{gap_text}; the {other_name} run is as far from the legacy run in each figure "
                "past the bar: the outputs cannot tell this migration from it (a sampled draw or a choice that flips "
                "on one rounding, or runs that do not start from the same weights)",
                figures,
            )
        return Part(name, FAIL, failed, figures)
    return Part(name, PASS, f"{head}: {values}{gap_text}", figures)


def _no_nearer_than(
    mine: OutputDistance, other: OutputDistance | None, median_bar: float, share_bar: float, worst_bar: float
) -> bool:
    """Whether every figure of ``mine`` past its bar (the median, the far share, the farthest sample's median) is
    matched by the other precision's run (``other``: the FP32 reference against the legacy run), which is then
    as far from the legacy run as this migration (to :data:`_AS_FAR` of each figure): a top-p draw that flips on
    one bf16 rounding of its temperature (bench/unseen/hunt37 kv_generate: the migration right, one sampled
    answer wholly different), or a checkpoint each run made from its own random weights. Such outputs cannot
    tell a migration: INCONCLUSIVE, not FAIL (nor PASS: the other parts judge the precision)."""
    if other is None or other.paired == 0:
        return False
    checks = []
    if mine.median > median_bar:
        checks.append(other.median >= _AS_FAR * mine.median)
    if mine.far_share > share_bar:
        checks.append(other.far_share >= _AS_FAR * mine.far_share)
    if mine.worst is not None and mine.worst[1] > worst_bar:
        checks.append(other.worst is not None and other.worst[1] >= _AS_FAR * mine.worst[1])
    return bool(checks) and all(checks)


_AS_FAR = 0.9
"""How near the other run's figure may come short of the migration's and still be "as far": runs that do not
start from the same weights scatter (a checkpoint made from unseeded weights: the migration 92.2% far, the FP32
reference 91.7%, bench/unseen/hunt37 verify_unseeded_ckpt)."""


@dataclass(frozen=True)
class _Bars:
    """The bars of :func:`outputs_part` and what the other precision's run (``other``) says: its ``text``, the
    median of its floats (``gap_median``: None when they are all equal or none) and the share of its integer values
    that differ (``gap_ints``: None when it has none)."""

    median: float
    share: float
    worst: float
    text: str = ""
    gap_median: float | None = None
    gap_ints: float | None = None
    gap: OutputDistance | None = None
    """The other precision's run's distance from the comparison run (None when not compared)."""


def _bars(
    tol: Tolerance,
    runs: Mapping[str, RunRecord],
    base_name: str,
    base: RunRecord,
    other_name: str,
    sources: TraceSources,
    *,
    widen: bool,
    compare: bool,
) -> _Bars:
    """The mode's bars for host outputs, widened (``widen``: amp, as far from the FP32 run as the full-bf16
    legacy run may be; a run that trained without ``backward()``: its outputs drift with its weights, as far
    as the precision gap, as its losses would) by the other precision's run's distance from ``base``, which
    ``compare`` asks for."""
    assert tol.outputs_median is not None and tol.outputs_far_share is not None and tol.outputs_far is not None
    median_bar, share_bar, worst_bar = tol.outputs_median, tol.outputs_far_share, tol.outputs_far
    other = runs.get(other_name)
    if other is None or not other.ok or not other.on_outputs or not compare:
        return _Bars(median_bar, share_bar, worst_bar)
    gap = distance(other_name, other, base_name, base, sources, tol.outputs_far)
    if widen:
        median_bar = max(median_bar, tol.drift_factor * gap.median)
        share_bar = max(share_bar, tol.drift_factor * gap.far_share)
        if gap.worst is not None:  # a sample as far as the legacy run's farthest may be (beam_notebook)
            worst_bar = max(worst_bar, tol.drift_factor * gap.worst[1])
    text = f"; the {other_name} run: median {gap.median:.2g}, {gap.far_share:.1%} far" + (
        " (within the bar too: the outputs cannot tell the precisions apart)"
        if base_name == LEGACY and gap.median <= median_bar and gap.far_share <= share_bar
        else ""
    )
    return _Bars(
        median_bar,
        share_bar,
        worst_bar,
        text,
        None if gap.identical or not gap.floating else gap.median,
        gap.int_share if gap.int_values else None,
        gap,
    )


def _only_integer_flips(
    mine: OutputDistance, reference_flips: float | None, median_bar: float, share_bar: float
) -> bool:
    """Whether ``mine`` is past the bar through its integer values alone (top-k ids, labels: near ties swap on
    one bf16 ulp of the scores they come from, which explicit bf16 and the switch round apart), no more of them
    differing than the FP32 reference's do (``reference_flips``), its floating values within the bar: the
    outputs cannot tell such a migration from the legacy run (bench/unseen/hunt35 topk_ids: 6.1% far, the
    reference 9.3%)."""
    return (
        reference_flips is not None
        and mine.int_differ > 0
        and mine.int_share <= reference_flips
        and mine.median <= median_bar
        and mine.float_far_share <= share_bar
    )


def _against_autocast_control(
    tol: Tolerance,
    migrated: RunRecord,
    control: RunRecord,
    sources: TraceSources,
    failed: str,
    figures: dict[str, object],
    reference: RunRecord,
) -> Part:
    """amp: ``matches`` for an inference run past the bar against the FP32 reference (``failed``,
    its text): PASS when its host outputs are within the mode's plain bar (``outputs_median``,
    ``outputs_far_share``, no sample's median past ``outputs_far``) of the autocast control's
    (:data:`~.records.AUTOCAST`, the FP32 script with its forward passes under autocast): the same
    program, whose outputs a right migration reproduces to the rounding. A search that keeps the best
    of several candidates (a beam search) carries one low-precision difference into which candidates
    survive, so autocast alone can be farther from the FP32 run in one output than the full-bf16 run
    is (measured, torch-xla 2.9 on the XLA CPU device, bench/unseen/hunt10 beam_notebook: the next-token
    distribution 0.044 from FP32 against the legacy run's 0.035). FAIL otherwise, both figures said."""
    assert tol.outputs_far is not None and tol.outputs_median is not None and tol.outputs_far_share is not None
    what = "the autocast control (the FP32 script, its forward passes under autocast)"
    if not control.ok or not control.on_outputs:
        why = control.error or "it trained (it called backward)"
        figures["autocast_control"] = {"usable": False, "error": why}
        return Part("matches", FAIL, f"{failed}; {what} is unusable ({why})", figures)
    them = distance(MIGRATED, migrated, AUTOCAST, control, sources, tol.outputs_far)
    worst = them.worst[1] if them.worst is not None else 0.0
    ok = (
        not (them.only_here or them.only_there or them.differ)
        and them.paired > 0
        and them.median <= tol.outputs_median
        and them.far_share <= tol.outputs_far_share
        and worst <= tol.outputs_far
    )
    figures["autocast_control"] = {
        "usable": True,
        "paired": them.paired,
        "median": them.median,
        "far_share": them.far_share,
        "worst": worst,
        "passed": ok,
    }
    # autocast alone as far from the FP32 run as the migrated run: outputs that amplify rounding cannot tell a
    # right autocast from a wrong one. (bench/unseen/hunt12 mezo, which prompted it, was a wrong migration: its
    # control is near FP32, and the FAIL stands)
    own = distance(AUTOCAST, control, REFERENCE, reference, sources, tol.outputs_far)
    mine = distance(MIGRATED, migrated, REFERENCE, reference, sources, tol.outputs_far)
    noisy = not ok and _as_far(own, mine)
    figures["autocast_control"]["median_from_reference"] = own.median  # type: ignore[index]
    if mine.identical and not own.identical:
        # the control's autocast changes what the host is handed and the migrated run's values are exactly the
        # FP32 reference's: its forward passes ran in FP32 (no autocast where the outputs are made, or the switch
        # deleted and nothing put in its place; bench/unseen/hunt27 DWA1, DW0 PASSed so), whether or not the
        # control lies within the bar of them (bench/unseen/hunt33 IA1 was INCONCLUSIVE: 0.0042 from it)
        text = (
            f"{failed}; {what} hands the host other values (median rel. diff {own.median:.2g} from the FP32 "
            "reference): autocast changes these outputs, and the migrated run's did not run under it"
        )
        return Part("matches", FAIL, text, figures)
    if ok and own.identical:
        # the control hands exactly the FP32 answer too: autocast changed nothing the outputs depend on in
        # it either (a disabled `autocast(enabled=...)`), so it cannot vouch for the migration's autocast
        text = (
            f"{failed}; {what} hands the host exactly the FP32 reference's values too: nothing these outputs "
            "depend on ran in bf16 there either, so they cannot tell whether the migration's autocast works"
        )
        return Part("matches", INCONCLUSIVE, text, figures)
    verdict = (
        "past the bar against the FP32 reference, the migrated run hands the host what autocast computes for this "
        "script: its distance from the FP32 reference is autocast's own"
        if ok
        else (
            f"but the autocast control is itself {own.median:.2g} from the FP32 reference, as far as the migrated "
            "run: these outputs amplify the rounding and cannot tell a right autocast from a wrong one (the "
            "precision and trace parts decide)"
            if noisy
            else "it does not hand the host what autocast computes either"
        )
    )
    text = (
        f"{failed}; vs {what}: {them.paired} outputs paired, median rel. diff {them.median:.2g} (limit "
        f"{tol.outputs_median:.2g}), {them.far_share:.1%} far (limit {tol.outputs_far_share:.0%}), farthest sample "
        f"{worst:.2g} (limit {tol.outputs_far:.2g}) -- {verdict}"
    )
    return Part("matches", PASS if ok else INCONCLUSIVE if noisy else FAIL, text, figures)


_NOISE_SHARE = 0.5
"""amp: the autocast control's distance from the FP32 reference, as a share of the migrated run's, from
which the outputs are rounding noise: two runs of autocast apart as far as autocast is from FP32."""


def _as_far(control: OutputDistance, migrated: OutputDistance) -> bool:
    """Whether the autocast control is, in every measure, at least :data:`_NOISE_SHARE` of the migrated
    run's distance from the FP32 reference (median, share of far values, farthest sample), and not
    equal to it: autocast alone moves these outputs as far as the migration does."""
    if control.paired == 0 or control.identical:
        return False
    worst = control.worst[1] if control.worst is not None else 0.0
    their = migrated.worst[1] if migrated.worst is not None else 0.0
    return (
        control.median >= _NOISE_SHARE * migrated.median
        and control.far_share >= _NOISE_SHARE * migrated.far_share
        and worst >= _NOISE_SHARE * their
    )


INFERENCE_NOTE = (
    "The script does not train (it ended on its own without calling backward()): verify judged it on what its runs "
    "handed the host from the device (the first occurrences per line, the first values of each) and on the dtype "
    "trace; the steps asked for (--steps) do not apply. rel. diff: |migrated - baseline| / max(|baseline|, 1% of the "
    "largest |baseline| of that output), value by value; the limits: rules/modes.toml, outputs_* of the mode. A "
    "training script that made no step with these arguments is judged so too: pass its arguments after `--`."
)


def judge_outputs(mode: Mode, runs: Mapping[str, RunRecord], sources: TraceSources) -> Verdict:
    """The verdict of an inference run (``runs["migrated"].inference``): the runs part (the
    migrated run and the mode's comparison run both ended on their own without a training step)
    and the matches part (:func:`outputs_part`). The trace part is added by the caller, as for a
    training run. Never raises for bad runs: they make parts FAIL or INCONCLUSIVE."""
    tol = TOLERANCES.get(mode.name)
    verdict = Verdict(mode=mode, parts=[], notes=[INFERENCE_NOTE])  # no tolerance: its words are the losses'

    base_name = tol.baseline if tol is not None else LEGACY
    verdict.baseline = base_name
    figures = {name: ("inference" if r.inference else r.steps if r.ok else None) for name, r in runs.items()}
    base = runs.get(base_name)
    if base is not None and base.ok and not base.inference:
        verdict.parts.append(
            Part(
                "runs",
                FAIL,
                f"the migrated run made no training step, the {base_name} run made {base.steps}: the migration "
                "changed what the script does",
                figures,
            )
        )
        return verdict
    shown = ", ".join(
        f"{r.name} {len(r.trace.outputs) if r.trace is not None else 0} host outputs"
        for r in runs.values()
        if r.ok and r.inference
    )
    verdict.parts.append(Part("runs", PASS, f"no training step in any run; {shown}", figures))
    verdict.parts.append(outputs_part(mode, runs, sources))
    migrated = runs.get(MIGRATED)
    rounding = rounding_problem(mode, migrated, runs.get(LEGACY)) if migrated is not None else None
    if rounding:
        verdict.parts.append(Part("precision", FAIL, rounding))
    return verdict


HOST_TRAINING_NOTE = (
    "Every optimizer step trained on the host in both runs (the switch acts on XLA tensors only, so the host training "
    "was float32 under it): verify judged what the device computed after those steps on what the runs handed the "
    "host from it (the first occurrences per line, the first values of each) and on the dtype trace."
)


def judge_after_host_training(
    mode: Mode, runs: Mapping[str, RunRecord], sources: TraceSources, verdict: Verdict
) -> Verdict:
    """The verdict of a script whose optimizer steps all train on the host and whose device work
    comes after them (models fitted on the CPU, then evaluated on the device): the steps' losses are
    float32 in every run by the switch's own rule (torch-xla's torch_xla/csrc/dtype.cpp acts on XLA
    tensors only), so :func:`.compare.judge` cannot tell the precisions apart from them (``matches``
    INCONCLUSIVE) and saw no device step graph (``graph`` INCONCLUSIVE). Here ``matches`` is judged on
    the host outputs of the device work instead (:func:`outputs_part`, every output: the legacy and
    migrated runs went on past their steps for the trace), and the graph part, which audits a device
    training step there is none of, is left out; the trace part (f32 on the device, bf16 to the host)
    judges the device work's dtypes. Only where the mode's comparison run is the legacy run: the FP32
    reference stops at the recorded steps (it is not traced), so amp's verdict is left as it is, and
    so is any verdict where a run trained on the device or the legacy run did not go on (no outputs)."""
    tol = TOLERANCES.get(mode.name)
    legacy, migrated = runs.get(LEGACY), runs[MIGRATED]
    if (
        tol is None
        or tol.baseline != LEGACY
        or legacy is None
        or not (trains_on_the_host(legacy) and trains_on_the_host(migrated))
        or legacy.trace is None
        or not legacy.trace.outputs
    ):
        return verdict
    matches = verdict.part("matches")
    if matches is None or matches.status != INCONCLUSIVE:
        return verdict
    after = outputs_part(mode, runs, sources, after_host_training=True)
    if after.status == INCONCLUSIVE:
        return verdict
    parts = []
    for part in verdict.parts:
        if part.name == "matches":
            parts.append(after)
        elif not (part.name == "graph" and part.status == INCONCLUSIVE):
            parts.append(part)
    return replace(verdict, parts=parts, notes=[*verdict.notes, HOST_TRAINING_NOTE])


WITHOUT_BACKWARD_NOTE = (
    "The script trains without calling backward() (its gradients come from torch.func.grad or torch.autograd.grad, "
    "assigned to the parameters' .grad, or it updates them otherwise): its optimizer steps are counted, but a step "
    "has no loss to compare. verify judged the steps' dtypes and graphs as for any training run, and the values on "
    "what the runs handed the host from the device (the first occurrences per line, the first values of each)."
)


def judge_without_backward(
    mode: Mode,
    runs: Mapping[str, RunRecord],
    sources: TraceSources,
    *,
    graphs: bool = True,
    allowance: Sequence[Allowance] | None = None,
) -> Verdict:
    """The verdict of a run that trains without ``backward()`` (``runs["migrated"].steps_without_backward``):
    the runs part (the migrated run and the mode's comparison run both made their steps without
    a loss, as many), the precision part of a training run (:func:`.evidence.precision_part`: the
    parameters', optimizer state's and step graph's dtypes), the matches part on the host outputs
    (:func:`outputs_part`: the steps have no loss) and, with ``graphs``, the graph part
    (:func:`.evidence.graph_part`, ``allowance`` the compilations the migration may add). The
    trace part is added by the caller. Never raises for bad runs: they make parts FAIL or
    INCONCLUSIVE."""
    tol = TOLERANCES.get(mode.name)
    verdict = Verdict(mode=mode, parts=[], notes=[WITHOUT_BACKWARD_NOTE])
    base_name = tol.baseline if tol is not None else LEGACY
    verdict.baseline = base_name
    migrated = runs[MIGRATED]
    base = runs.get(base_name)
    figures = {name: (r.steps if r.ok else None) for name, r in runs.items()}
    if base is None or not base.ok:
        why = "did not run" if base is None else base.error
        verdict.parts.append(Part("runs", FAIL, f"the {base_name} run is unusable: it {why}", figures))
        return verdict
    if not base.steps_without_backward:
        made = "made no training step" if base.inference else "called backward()"
        verdict.parts.append(
            Part(
                "runs",
                FAIL,
                f"the migrated run made its steps without backward(), the {base_name} run {made}: the migration "
                "changed what the script does",
                figures,
            )
        )
        return verdict
    if migrated.steps != base.steps:
        verdict.parts.append(
            Part(
                "runs",
                FAIL,
                f"the migrated run made {migrated.steps} steps, the {base_name} run {base.steps}",
                figures,
            )
        )
        return verdict
    verdict.parts.append(
        Part("runs", PASS, f"{migrated.steps} steps each, made without backward() (no loss to compare)", figures)
    )
    legacy, reference = runs.get(LEGACY), runs.get(REFERENCE)
    verdict.parts.append(
        precision_part(
            mode, migrated, legacy, reference, base, verdict.notes, runs.get(CONTROL), autocast=runs.get(AUTOCAST)
        )
    )
    verdict.parts.append(outputs_part(mode, runs, sources))
    if graphs:
        verdict.parts.append(graph_part(mode, migrated, base, legacy, allowance))
    return verdict
