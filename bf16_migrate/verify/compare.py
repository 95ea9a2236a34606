"""The verify verdict: does the migrated script still train, with numerics equivalent to the
legacy run?  Pure Python over :class:`~bf16_migrate.verify.records.RunRecord` (no torch).

The verdict has five parts, each PASS, FAIL or INCONCLUSIVE, each with the figure behind it;
the script passes only when every part passes.

runs
    The migrated run and its comparison run finished (the runner raises
    :class:`~bf16_migrate.verify.records.RunError` before this when one could not be made), all
    migrated losses are finite, and both recorded the same number of steps.  Comparison run:
    the legacy run for ``stochastic`` / ``gpu-compatible``; the FP32 reference run for ``amp``
    (autocast keeps the reductions, softmax and losses in f32, torch-xla's AMP guide
    docs/source/perf/amp.md, so its losses track the FP32 run, not the full-bf16 one: measured
    with torch-xla 2.9 on the XLA CPU device, table below; it must not be compared with the
    legacy run).  When the legacy run failed or produced NaN/Inf, ``stochastic`` /
    ``gpu-compatible`` fall back to the FP32 reference with the looser :data:`FALLBACK`
    tolerance (docs/verify.md; tests/test_verify_e2e.py, the ``nn.GRU`` script), and the
    verdict says so.
trains
    The migrated loss falls: with ``n >= 3`` steps and ``k = n // 3``, the mean of the last
    ``k`` losses is below the mean of the first ``k``.  Thirds rather than first/last step
    because single losses of small batches are noisy (the fixtures' losses go up and down by
    10-30% between neighbouring steps).  When the comparison run does not fall over these steps
    either, the question "does it train?" cannot be answered from them (a language model's
    loss near 8, where bf16 numbers are 0.0625 apart, looks flat in bf16 for many steps:
    bench/calibration/lm_large_loss, 12 steps, legacy and migrated 8.0625 throughout while the
    FP32 run falls), so the part says so and judges the migrated run against that trajectory:
    the mean of its last third within the drift limit of matches (relative to the comparison
    run's) passes.
precision
    Lower precision is really in effect in the migrated run, and the legacy switch really was
    in the legacy run: the migrated run does not still see a legacy variable set to a true
    value; for ``stochastic`` / ``gpu-compatible`` its optimizer holds bfloat16 parameters; its
    losses are not identical, step for step, to the FP32 reference (a migration that only
    deleted the variable is an FP32 run); and, when it is the comparison run, the legacy run's
    parameters were bf16 on the device (otherwise the switch was set somewhere the run did not
    see, e.g. a launcher: pass ``--legacy-env``).  From the executed training-step graph
    (:mod:`.graphs`): the migrated graph has bf16 matmuls (dot / convolution with bf16
    operands); under ``amp`` all of them are bf16; under ``stochastic`` / ``gpu-compatible`` no
    more of them are f32 than in the legacy graph.  ``gpu-compatible`` also needs its optimizer
    state in f32 on the device (the FP32 master weights in effect).
matches
    Per-step relative difference ``|a - b| / max(|b|, eps)``, ``a`` the migrated loss, ``b``
    the comparison loss, ``eps`` = 1% of the comparison run's largest ``|loss|`` (so steps
    where the loss has fallen near zero do not blow the ratio up).  Two checks, see
    :class:`Tolerance`: an *onset* check on the first steps, which tells the precisions apart,
    and a *drift* bound on the median over all steps, which catches a run that goes its own
    way.  The drift bound scales with the *precision gap* of the script (median relative
    difference between the legacy bf16 run and the FP32 reference), when both ran.  If the
    FP32 reference itself would pass the onset check against the legacy run (or, for ``amp``,
    the legacy run against the reference), this script cannot tell the precisions apart in
    the steps run, and matches is INCONCLUSIVE.

graph
    From the executed training-step graph of the migrated run: no bf16 -> f32 -> bf16 round
    trip with only layout ops (transpose, reshape, copy...) in between, which computes nothing
    (the stray cast of https://github.com/pytorch/xla/issues/3718, "Cast liner model to bf16
    produces unexpected f32"; every mode needs none), and no more XLA compilations than the legacy
    run (the FP32 reference when the legacy run is unusable), plus :func:`~.evidence.mode_compile_allowance`;
    counted by the end of the last recorded step when a script went on past its steps, so that the code
    after training (host copies, an export) is not judged (:func:`~.evidence._counted_through`).
    The f32 <-> bf16 tensor converts are shown, not judged: under autocast one f32 convert per
    parameter gradient is expected (the bf16 gradient accumulated into the f32 parameter's
    ``.grad``: the last example of the issue above; measured with torch-xla 2.9 on the XLA CPU
    device, table below), FP32 master weights take one each way per
    parameter, and bf16 tensors multiplied by Python scalars are computed in f32 and rounded
    back by torch-xla (element-wise round trips, expected).

Graph measurements (same setup, 12 steps, ``--json``; the training-step graph is the one of
step 12; "matmuls" = bf16 of all; converts = tensor converts bf16->f32 / f32->bf16):

==================  ==============  ==============  ==============  =================  =================
run                 mlp_regression  cnn_trainer     opt_bef_to      tiny_transformer   tiny_tr. + SDPA
                                                                                       flag (*)
==================  ==============  ==============  ==============  =================  =================
legacy              8/8, 0/0        9/9, 0/0        8/8, 0/0        21/21, 0/0         21/21, 0/0
FP32 reference      0/8, 0/0        0/9, 0/0        0/8, 0/0        0/21, 0/0          0/21, 0/0
stochastic          8/8, 12/14      9/9, 6/7        8/8, 5/7        **15/21**, 45/41   21/21
  elementwise r.t.  12              6               5               37
gpu-compatible      8/8, 6/8        9/9, 6/7        8/8, 5/7        **15/21**, 29/25
amp                 8/8, 7/8        9/9, 7/8        8/8, 6/7        21/21, 24/24       21/21, no r.t.
  layout r.t.       0               0               0               **2**              0
compilations        2 = 2 = 2       2 = 2 = 2       2 = 2 = 2       legacy 3, bf16     3 (amp)
(legacy, mig., ref)                                                 modes 4, amp 3
==================  ==============  ==============  ==============  =================  =================

(*) ``torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True)`` added to the migrated
script by hand (not by the codemod). The bold figures are PyTorch's math
scaled_dot_product_attention (used by ``nn.TransformerEncoderLayer`` on XLA): since PyTorch 2.5
it upcasts bf16 query/key/value to f32, so the 6 attention matmuls (2 forward, 4 backward) run
in f32 in the bf16 modes, and under autocast q/k/v go bf16 -> f32 -> bf16 before the bf16
matmul; under the legacy switch the tensors said float32, so nothing was upcast. With the flag,
all 21 matmuls are bf16, the round trips are gone and the losses still match (stochastic: 3 of
3 first steps identical, median 0; amp: first-10 median 3.3e-4). verify fails these runs
(precision, resp. graph) with that fix in :data:`SDPA_HINT`.  The extra compilation of the bf16
modes on tiny_transformer is the one-time ``model.to(torch.bfloat16)`` graph
(:func:`~.evidence.mode_compile_allowance`).  On every fixture the amp bf16->f32 converts are one per
parameter (6, 6, 6, 16) plus the inputs of the f32 ops (loss, layer norm, softmax), as
expected (autocast's f32 ops, docs/source/perf/amp.md).  Recording the graphs changes neither
the losses nor the compile and execution counts (:mod:`.graphs`).

Measurements behind the tolerances (torch 2.9.0 / torch-xla 2.9.0, ``PJRT_DEVICE=CPU``, 2 cores,
this project's codemod on fixtures/*/train.py, ``verify_script(..., steps=20)``, i.e.
``bf16-migrate verify fixtures/NAME/train.py --mode M --steps 20``; relative differences as
defined above; "same" = rel. diff <= 1e-4, in practice the same float; the FP32 control is the
script with only the variable deleted, i.e. the reference source passed as the migrated one):

=========================================  ==========  ===========  ===============  ===============
figure (20 steps)                          mlp_regr.   cnn_trainer  opt_bef_to       tiny_transf.
                                           AdamW       SGD mom.     SGD mom.         AdamW
=========================================  ==========  ===========  ===============  ===============
stochastic vs legacy: same of first 3      3           3            3                2
gpu-compatible vs legacy: same of first 3  3           3            3                2
FP32 control vs legacy: same of first 3    0           0            0                0
stochastic vs legacy: median / max         0 / 0       0 / 6.8e-3   1.4e-2 / 4.7e-2  5.6e-3 / 1.4e-2
gpu-compatible vs legacy: median / max     0 / 7.1e-3  0 / 1.1e-2   1.6e-2 / 4.7e-2  6.6e-3 / 2.9e-2
precision gap (FP32 control vs legacy)     1.1e-2      4.7e-3       1.4e-2           6.3e-3
amp vs FP32 ref: median of first 10        1.3e-4      2.8e-4       1.1e-3           4.8e-4
full bf16 (legacy) vs FP32: same figure    9.3e-3      4.3e-3       7.6e-3           3.9e-3
amp vs FP32 ref: median over 20            2.1e-4      5.1e-4       2.7e-3           1.4e-3
=========================================  ==========  ===========  ===============  ===============

So: onset, FP32 control 0 of 3 everywhere against 2-3 for both bf16 modes; drift, the bf16
modes stay within 1.14 x the precision gap (limit 2 x); amp's first-10 median stays below
1.1e-3 while full bf16 is at 3.9e-3 or more (limit 2e-3, about 2 x margin each way), and its
drift stays within 0.22 x the gap (limit 1 x).  The FP32 control fails matches (and
precision) on all four fixtures: figures as in the "FP32 control" and "precision gap" rows.
With 40 steps (same scripts, runs made one at a time) the picture holds:
first-3 counts unchanged, drift ratios <= 1.27 (gpu-compatible, opt_bef_to at lr 0.1), amp
first-10 medians <= 1.1e-3, but maxima grow (0.34 on tiny_transformer, whose bf16 losses
collapse to exactly 0 after step 34): why the drift bound is a median, not a maximum.

A hand-migrated 3-layer MLP (same setup, 50 steps; the scripts were not kept) agreed:
stochastic vs legacy 50/50 identical with AdamW, 16/50 with SGD momentum 0.9 (first 6
identical, then the scalar rounding described below lets the runs drift to a median of
6.5e-3, close to the FP32 run's 1.07e-2: why the onset check, not a median, is what tells bf16 from FP32); FP32 vs
legacy 0/50 identical; amp vs FP32 median 1.3e-3 (AdamW) / 3.4e-4 (SGD).  An FP32-master
migration with a bug (gradients never zeroed) drifted to a median of 0.245 over 20 steps
against a precision gap of 9e-3: failed by the drift bound.

Why bit-identity in the onset: under the legacy switch every loss is a bf16 number, and so is
the loss of a faithful bf16 migration; the first steps run the same initial weights and data
through the same bf16 graph, so they give the same number (measured with torch-xla 2.9 on the
XLA CPU device: a 3-layer MLP with AdamW, 20/20 steps identical; tests/test_verify_e2e.py
asserts identical losses for tests/data/verify_mlp.py).  An FP32 loss is almost never a bf16
number (0 of 5 x 3 first steps above).  Later steps may drift by whole bf16 ulps (>= 2e-3
relative), from scalar rounding: the legacy switch makes the Python scalars baked into the
graph bf16 too (0.9 becomes 0.8984375; torch_xla/csrc/dtype.cpp turns every f32 on the device
into bf16), while the explicit bf16 graph multiplies by an f32 scalar and rounds the result
(the element-wise round trips of :mod:`.graphs`) (tiny_transformer: steps 1-2 identical,
step 3 one ulp off).  That rounding can already move the first update: SGD with Nesterov
momentum on bench/unseen/simclr_launcher, a right stochastic migration, gave step 1 identical
and steps 2-3 one bf16 ulp off (2.953125 against 2.96875), median 0.0026 over 12 steps.  So
both bf16 modes need 1 of the first 3 steps identical: the first step, before any update, runs
the same weights and data through the same forward graph, which an FP32 run or a migration
computing part of its forward or loss in f32 does not (every wrong migration of the calibration
differs at step 1); what the updates do after it is the drift bound's to judge.
gpu-compatible's FP32 master weights round the first update differently again (the factories
part's fixtures/trees/autocast_flag, AdamW: only step 1 of the first 3 identical, median 0 over
12 steps, max 0.0056).

The calibration suite (bench/calibration, ``python bench/calibrate.py``; its confusion matrix
and the figures of every case are in bench/RESULTS.md, "verify calibration") holds these rules
to 15 more scripts with right and wrong migrations.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..rules import MODES, Mode, RuleError, all_modes
from .allowance import Allowance
from .evidence import (
    SDPA_HINT,
    every_float_bf16,
    graph_part,
    legacy_did_nothing,
    mode_compile_allowance,
    precision_part,
    separates,
)
from .parts import FAIL, INCONCLUSIVE, PASS, Part, Status, has_bf16, steps_text, usable
from .records import AUTOCAST, CONTROL, LEGACY, MIGRATED, REFERENCE, RunRecord
from .trace import Kind

__all__ = [
    "mode_compile_allowance",
    "DEVICE_NOTE",
    "FALLBACK",
    "MODES",
    "PASS",
    "FAIL",
    "INCONCLUSIVE",
    "Part",
    "SDPA_HINT",
    "Tolerance",
    "TOLERANCES",
    "Verdict",
    "judge",
    "rel_diffs",
    "trend",
]

EPS_FRACTION = 0.01
"""``eps`` of the relative difference, as a fraction of the comparison run's largest |loss|."""


@dataclass(frozen=True)
class Tolerance:
    """How close the migrated losses must stay to the comparison run's (dimensionless ratios).

    Onset (the first ``onset_steps`` steps), one of two kinds:
      ``onset_kind="identical"``: at least ``onset_min`` of them have a relative difference
      <= ``onset_tol``; ``onset_kind="median"``: their median relative difference is
      <= ``onset_tol``.
    Drift (all compared steps): the median relative difference is <= ``max(drift_factor *
    gap, drift_floor)`` where ``gap`` is the script's precision gap (median relative difference
    of the legacy run against the FP32 reference); ``drift_no_gap`` replaces that bound when the
    gap could not be measured (one of the two runs missing).
    ``baseline``: ``"legacy"`` or ``"reference"``. ``source``: where the figures come from.
    ``slide``: when the control passes the onset check on the first steps, the check may move
    to the first window of steps where the control fails it (see :func:`_matches_part`); False
    for gpu-compatible, whose FP32 master weights make its updates depart from the legacy run's
    where the FP32 control's do.
    ``drift_band``: a run that drifts past the limit from the legacy run still passes the drift
    check when it is within the limit of the FP32 reference (both measured in the same verify):
    it runs inside the band the two precisions span. For gpu-compatible, whose FP32 master weights
    take each update as FP32 does and round it to bf16 afterwards, so its trajectory moves from
    the legacy run's toward the FP32 run's over the steps (measured on fixtures/zero1_sharded,
    ZeRO-1's FP32 shards: median 0.011 from the legacy run against a precision gap of 0.0051,
    0.0061 from the FP32 reference; both of its compared runs give bf16 losses, a bf16 spacing
    apart at least, where the gap compares with unrounded FP32 losses). The onset check still
    asks the first steps to be the legacy run's, which the FP32 control fails: the band does not
    let an FP32 run pass.
    """

    baseline: str
    onset_kind: str
    onset_steps: int
    onset_tol: float
    onset_min: int
    drift_factor: float
    drift_floor: float
    drift_no_gap: float
    source: str
    slide: bool = True
    drift_band: bool = False
    measured_here: bool = False
    """Whether the limits were measured in this verify (the fallback's: :func:`fallback_tolerance`),
    ``source`` then saying how; else they are the mode's, measured on the calibration scripts."""
    onset_skipped: str = "stochastic rounding"
    """Why ``onset_kind`` is ``"none"`` (said in the matches part)."""
    onset_control_share: float | None = None
    """``onset_kind="median"`` only: the limit grows to this share of the control's own median over
    the same steps, where that is more than ``onset_tol`` (None: ``onset_tol`` alone). For amp, whose
    control is the full-bf16 legacy run against the FP32 reference: a script whose data comes from
    its own model (a policy's sampled actions, a generator's samples fed to its critic) carries any
    precision difference into its data, so autocast's run departs from the FP32 one by more than
    ``onset_tol`` while staying well inside the way to full bf16 (measured, torch-xla 2.9 on the
    XLA CPU device, 12 steps: a REINFORCE policy 0.0083 against the control's 0.057, a WGAN-GP 0.0025
    against 0.0049); a migration that runs full bf16 sits at the control's own median."""
    autocast_control: Tolerance | None = None
    """amp: how close the migrated run must stay to the autocast control (the FP32 script with its
    forward passes and losses under autocast, :data:`~.records.AUTOCAST`) to pass matches when it
    fails the check against the FP32 reference. The same program computes the same losses, while the
    FP32 run can be as far from a right amp run as from full bf16: a random op draws other numbers
    on a bf16 activation (a Linear's output under autocast) than on an f32 one (measured, torch-xla
    2.9 on the XLA CPU device: ``F.dropout`` after the same ``xm.set_rng_state(0)`` keeps 25 of 64
    elements of a bf16 tensor, 29 of an f32 one, not the same ones; 12 steps of an EmbeddingBag
    classifier with dropout, fixtures/contract/shallow_amp: 0.0089 from FP32 against full bf16's
    0.0097, the autocast control's losses at every step). None: no such check."""
    outputs_median: float | None = None
    outputs_far: float | None = None
    outputs_far_share: float | None = None
    """The bar of a run that does not train, judged on its host outputs (:mod:`.outputs`): the
    median relative difference of all floating values, the difference beyond which a value is
    far, and the share of far values allowed. None: such a run is not judged (INCONCLUSIVE)."""

    def onset(self, rel: Sequence[float], start: int = 0, control: Sequence[float] | None = None) -> tuple[bool, str]:
        """Apply the onset check to per-step relative differences, on the ``onset_steps`` steps
        from index ``start`` (0: the first steps); (passed, figure text). ``control``: the
        control's relative differences, for :attr:`onset_control_share`."""
        window = list(rel[start : start + self.onset_steps])
        which = f"the first {len(window)} steps" if start == 0 else f"steps {start + 1}-{start + len(window)}"
        if self.onset_kind == "none":
            return True, f"onset check skipped ({self.onset_skipped}: the steps are not expected to be the same)"
        if not window:
            return False, "no step to compare"
        if self.onset_kind == "identical":
            need = min(self.onset_min, len(window))
            got = sum(1 for r in window if r <= self.onset_tol)
            return got >= need, f"{got} of {which} the same (rel. diff <= {self.onset_tol:g}, need {need})"
        med = statistics.median(window)
        theirs = list(control[start : start + self.onset_steps]) if control is not None else []
        if self.onset_control_share is not None and theirs:
            scaled = self.onset_control_share * statistics.median(theirs)
            if scaled > self.onset_tol:
                return med <= scaled, (
                    f"median rel. diff of {which} {_fmt(med)} (limit {scaled:.2g} = {self.onset_control_share:g} x the "
                    f"control's {_fmt(statistics.median(theirs))}, above {self.onset_tol:g})"
                )
        return med <= self.onset_tol, f"median rel. diff of {which} {_fmt(med)} (limit {self.onset_tol:g})"

    def departure(self, control_rel: Sequence[float]) -> int | None:
        """The first index from which a whole window of ``onset_steps`` steps of the control
        fails the onset check (the steps where the control departs from the run it is compared
        with), or None when there is none."""
        for start in range(0, len(control_rel) - self.onset_steps + 1):
            if not self.onset(control_rel, start)[0]:
                return start
        return None

    def drift_limit(self, gap: float | None) -> tuple[float, str]:
        """The drift bound for a precision gap (None: unknown); (limit, how it was made)."""
        if gap is None or not math.isfinite(gap):
            return self.drift_no_gap, f"limit {self.drift_no_gap:g}, no precision gap measured"
        limit = max(self.drift_factor * gap, self.drift_floor)
        return limit, f"limit {limit:.2g} = max({self.drift_factor:g} x precision gap {gap:.2g}, {self.drift_floor:g})"


def mode_tolerance(mode: Mode, rule: Mapping[str, object] | None = None) -> Tolerance:
    """The tolerance of ``mode``, read from its ``[MODE.verify]`` table in ``rules/modes.toml``
    (``rule``: that table, when given; its keys are :class:`Tolerance`'s fields, the figures
    behind them its ``source``). Raises :class:`~bf16_migrate.rules.RuleError` naming the table
    when a key is missing or unknown or a value is not one verify knows, ValueError for an
    unknown mode."""
    table = dict(mode.verify if rule is None else rule)
    nested = table.pop("autocast_control", None)
    tol = _tolerance(table, f"[{mode}.verify]", (LEGACY, REFERENCE))
    if nested is not None:
        if not isinstance(nested, Mapping):
            raise RuleError(f"rules/modes.toml [{mode}.verify]: autocast_control must be a table")
        control = _tolerance({"baseline": AUTOCAST, **nested}, f"[{mode}.verify.autocast_control]", (AUTOCAST,))
        tol = replace(tol, autocast_control=control)
    return tol


def _tolerance(table: Mapping[str, object], where: str, baselines: Sequence[str]) -> Tolerance:
    """A :class:`Tolerance` from a table of ``rules/modes.toml`` (``where`` names it in errors)
    whose baseline is one of ``baselines``. Raises :class:`~bf16_migrate.rules.RuleError`."""
    try:
        tol = Tolerance(**table)  # type: ignore[arg-type]
    except TypeError as exc:
        raise RuleError(f"rules/modes.toml {where}: {exc}") from exc
    if tol.baseline not in baselines or tol.onset_kind not in ("identical", "median", "none"):
        raise RuleError(f"rules/modes.toml {where}: baseline {tol.baseline!r} or onset_kind {tol.onset_kind!r} unknown")
    return tol


TOLERANCES: dict[str, Tolerance] = {mode.name: mode_tolerance(mode) for mode in all_modes() if mode.verify}
"""Tolerance per migration mode (``rules/modes.toml``); figures in the module docstring. A mode
without a ``[MODE.verify]`` table (one added to a copy of the rules) cannot be verified."""

FALLBACK = Tolerance(
    REFERENCE,
    "median",
    10,
    math.nan,
    0,
    0.0,
    math.nan,
    math.nan,
    "legacy run unusable and no plain full-bf16 control run: no bar to hold the migrated run to",
    slide=False,
    measured_here=True,
)
"""The tolerance of stochastic / gpu-compatible when the legacy run failed or produced NaN/Inf
and no control run could be made (:func:`fallback_tolerance` makes the one used otherwise):
matches is INCONCLUSIVE."""

FALLBACK_FACTOR = 2.0
"""How much farther from the FP32 reference than the plain full-bf16 control the migrated run
may be, when the legacy run cannot be made (:func:`fallback_tolerance`); measured in the
calibration suite (bench/RESULTS.md, "verify calibration"): with the legacy run standing in for
the control, right stochastic and gpu-compatible migrations sit at 0.4-1.3 x its distance."""
FALLBACK_FLOOR = 1e-3
"""The least limit of the fallback check: where the control is within 1e-3 of the FP32 run, bf16
barely moves this script's loss and a ratio of two tiny medians says nothing."""


def fallback_tolerance(control: RunRecord | None, reference: RunRecord) -> Tolerance | None:
    """The tolerance of stochastic / gpu-compatible when the legacy run cannot be made, measured
    in the same verify: ``control`` is a plain full-bf16 run of the script (its stochastic
    rewrite); the migrated run may be :data:`FALLBACK_FACTOR` times as far from the FP32
    ``reference`` as the control is, over the first 10 steps (median relative difference) and
    over all steps (median), and at least :data:`FALLBACK_FLOOR`. None without a usable control.
    A weaker check than a comparison with the legacy run: it shows that the migrated run
    behaves like full bf16 for this script, not that it computes what the legacy run computed."""
    bars = _control_bars(control, reference)
    if bars is None:
        return None
    onset_bar, drift_bar = bars
    onset = max(FALLBACK_FACTOR * onset_bar, FALLBACK_FLOOR)
    drift = max(FALLBACK_FACTOR * drift_bar, FALLBACK_FLOOR)
    return Tolerance(
        REFERENCE,
        "median",
        10,
        onset,
        0,
        0.0,
        drift,
        drift,
        f"legacy run unusable: measured in this verify, the plain full-bf16 control is {onset_bar:.2g} (first 10 "
        f"steps) and {drift_bar:.2g} (all steps) from the FP32 reference; the limits are {FALLBACK_FACTOR:g} x those, "
        f"at least {FALLBACK_FLOOR:g}",
        slide=False,
        measured_here=True,
    )


@dataclass
class Verdict:
    """The parts, the comparison run's name (``"legacy"``, ``"reference"`` or None), the
    per-step relative differences of the migrated losses against it (floats, ``inf`` where
    undefined), the tolerance used, and notes (str) for the report."""

    mode: Mode
    parts: list[Part]
    baseline: str | None = None
    rel: list[float] = field(default_factory=list)
    tolerance: Tolerance | None = None
    fallback: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.parts) and all(p.passed for p in self.parts)

    @property
    def status(self) -> Status:
        """The verdict in one word: ``PASS`` (every part passed), ``FAIL`` (a part failed), or
        ``INCONCLUSIVE`` (no part failed, but one could not decide)."""
        if self.passed:
            return PASS
        if any(p.status == FAIL for p in self.parts) or not self.parts:
            return FAIL
        return INCONCLUSIVE

    def part(self, name: str) -> Part | None:
        for p in self.parts:
            if p.name == name:
                return p
        return None


def _fmt(x: float) -> str:
    if x == 0:
        return "0"
    if not math.isfinite(x):
        return str(x)
    return f"{x:.2g}"


def rel_diffs(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """Per-step ``|a_i - b_i| / max(|b_i|, eps)`` over the common steps, ``eps`` = 1% of the
    largest finite ``|b_i|`` (at least 1e-12). Non-finite values give ``inf``, except that two
    equal infinities give 0 and nothing is NaN."""
    finite_b = [abs(x) for x in b if math.isfinite(x)]
    eps = max(EPS_FRACTION * max(finite_b, default=0.0), 1e-12)
    out = []
    for x, y in zip(a, b):
        if x == y:
            out.append(0.0)
        elif not (math.isfinite(x) and math.isfinite(y)):
            out.append(math.inf)
        else:
            out.append(abs(x - y) / max(abs(y), eps))
    return out


def trend(losses: Sequence[float]) -> tuple[float, float] | None:
    """(mean of the first third, mean of the last third) of the losses, or None if fewer
    than 3 steps."""
    n = len(losses)
    if n < 3:
        return None
    k = n // 3
    return statistics.fmean(losses[:k]), statistics.fmean(losses[-k:])


KEPT_F32_NOTE = (
    "The script computes part of its step in f32 on purpose (`.float()` before the loss, a norm in f32) and "
    "the migration keeps it so (BFM088, BFM089): those numbers are f32 where the legacy run's were bf16, so "
    "no step can be expected to be the legacy run's bit for bit; the losses are judged by their drift alone "
    "(measured, stochastic: fixtures/model_code/fp32_loss, step 1 rel. diff 7.2e-3 from the legacy run and 2.5e-5 "
    "from the FP32 reference, median over 20 steps 0.0077 within the drift limit 0.015; "
    "fixtures/model_code/leaky_norm, step 1 5.8e-3, median over 12 steps 0.0042 within 0.013)."
)
"""Said when the onset check is set aside for a loss the script computes in f32 on purpose."""


def judge(
    mode: Mode,
    runs: Mapping[str, RunRecord],
    requested_steps: int | None = None,
    *,
    graphs: bool = True,
    device: str = "CPU",
    allowance: Sequence[Allowance] | None = None,
    kept_f32: bool = False,
    loss_f32: bool = False,
) -> Verdict:
    """The verdict for ``mode`` from the runs (``"legacy"``, ``"migrated"``, ``"reference"``;
    any may be missing or failed). ``graphs``: add the graph part (False when the runs were made
    without the graph dump). ``device``: the ``PJRT_DEVICE`` the runs used; on ``NEURON`` in
    stochastic mode both runs round stochastically (the legacy switch turned
    ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` on, the migrated script sets it), so bit-identical
    steps cannot be expected and the onset check is skipped (drift only; not measured here,
    there is no Neuron device: see :data:`DEVICE_NOTE`). ``allowance``: the compilations the
    migration may add (:func:`.allowance.compile_allowance`; None: :func:`~.evidence.mode_compile_allowance`).
    ``kept_f32``: the migration keeps f32 the script asks for (``Outcome.kept_f32``, BFM088/BFM089):
    the matches part judges the drift alone (what the script computes in f32 is never the legacy
    run's bf16 number: :data:`KEPT_F32_NOTE`); ``loss_f32``: among it the loss
    (``KeptF32.LOSS``), which is then no precision problem.
    Raises ValueError for an unknown mode. Never raises for bad runs: they make parts FAIL.

    Phases: the comparison run (:func:`_comparison_run`), then the parts in order, runs
    (:func:`_runs_part`; the others only when it passes), trains (:func:`_trains_part`),
    precision (:func:`.evidence.precision_part`), matches (:func:`_matches_part`), graph
    (:func:`.evidence.graph_part`)."""
    if not mode.verify:
        raise ValueError(
            f"mode {mode.name!r} cannot be verified (no [{mode}.verify] in rules/modes.toml); "
            f"choose one of {', '.join(TOLERANCES)}"
        )
    migrated = runs.get(MIGRATED)
    legacy = runs.get(LEGACY)
    reference = runs.get(REFERENCE)
    verdict = Verdict(mode=mode, parts=[])
    tol = mode_tolerance(mode)
    if device.upper() != "CPU":
        verdict.notes.append(DEVICE_NOTE.format(device=device))
    if device.upper() == "NEURON" and mode.stochastic_rounding:
        tol = replace(tol, onset_kind="none")
    if kept_f32 and not mode.autocast:
        tol = replace(tol, onset_kind="none", onset_skipped="f32 kept where the script asks for it, BFM088/BFM089")
        verdict.notes.append(KEPT_F32_NOTE)
    base, tol = _comparison_run(tol, legacy, reference, verdict)
    control = runs.get(CONTROL)
    if verdict.fallback and reference is not None:
        bar = fallback_tolerance(control, reference)
        tol = bar if bar is not None else tol
        verdict.notes.append(_fallback_note(control, reference))
    verdict.baseline = base.name if base is not None else None
    verdict.tolerance = tol

    verdict.parts.append(_runs_part(mode, runs, migrated, legacy, reference, base, requested_steps))
    if not verdict.parts[0].passed:
        return verdict
    assert migrated is not None and base is not None
    verdict.rel = rel_diffs(migrated.losses, base.losses)
    gap = precision_gap(legacy, reference, base)
    verdict.parts.append(_trains_part(migrated, base, tol.drift_limit(gap)[0], legacy))
    verdict.parts.append(
        precision_part(
            mode,
            migrated,
            legacy,
            reference,
            base,
            verdict.notes,
            control,
            loss_f32=loss_f32,
            autocast=runs.get(AUTOCAST),
        )
    )
    if tol is FALLBACK:
        verdict.parts.append(
            Part(
                "matches",
                INCONCLUSIVE,
                "the legacy run is unusable and no plain full-bf16 control run could be made: nothing to measure the "
                "distance of the migrated run from the FP32 reference against",
                {"baseline": base.name},
            )
        )
    else:
        verdict.parts.append(_matches_part(verdict, tol, migrated, legacy, reference, base, gap, runs.get(AUTOCAST)))
    if graphs:
        graph = graph_part(mode, migrated, base, legacy, allowance)
        verdict.parts.append(graph)
        if graph.figures.get("layout_round_trips"):
            verdict.notes.append(SDPA_HINT)
    return verdict


def _comparison_run(
    tol: Tolerance, legacy: RunRecord | None, reference: RunRecord | None, verdict: Verdict
) -> tuple[RunRecord | None, Tolerance]:
    """The run the migrated one is compared with, and the tolerance for it: the tolerance's
    baseline when usable; for a legacy baseline that is not, the FP32 reference with
    :data:`FALLBACK` (``verdict.fallback`` set, a note says why); None when neither is usable."""
    if tol.baseline == LEGACY:
        if usable(legacy):
            return legacy, tol
        if usable(reference):
            verdict.fallback = True
            why = (
                legacy.error
                if legacy is not None and legacy.error
                else ("NaN/Inf in its losses" if legacy is not None and legacy.ok else "it did not run")
            )
            verdict.notes.append(
                f"The legacy run is unusable ({why}); the migrated run is compared with the FP32 reference instead."
            )
            return reference, FALLBACK
        return None, tol
    return (reference, tol) if usable(reference) else (None, tol)


def _control_bars(control: RunRecord | None, reference: RunRecord) -> tuple[float, float] | None:
    """The control's distance from the FP32 reference: the median relative difference over the
    first 10 steps and over all steps; None without a usable control."""
    if not usable(control):
        return None
    rel = rel_diffs(control.losses, reference.losses)
    return (statistics.median(rel[:10]), statistics.median(rel)) if rel else None


def _fallback_note(control: RunRecord | None, reference: RunRecord) -> str:
    """What the fallback check measures, and that it is weaker evidence."""
    bars = _control_bars(control, reference)
    if bars is None:
        return (
            "No plain full-bf16 control run could be made (the stochastic rewrite of the script failed or changes "
            "nothing), so there is no bar for the distance from the FP32 reference: matches cannot decide."
        )
    return (
        "The bar comes from this verify: a plain full-bf16 run of the script (the control: its stochastic rewrite, "
        f"model and floating inputs cast) stays {bars[0]:.2g} from the FP32 reference over the first 10 steps and "
        f"{bars[1]:.2g} over all steps (median relative differences); the "
        f"migrated run may be up to {FALLBACK_FACTOR:g} x as far. This is weaker evidence than a comparison with the "
        "legacy run: it shows that the migrated run behaves like full bf16 for this script, not that it computes what "
        "the legacy run computed."
    )


def _runs_part(
    mode: Mode,
    runs: Mapping[str, RunRecord],
    migrated: RunRecord | None,
    legacy: RunRecord | None,
    reference: RunRecord | None,
    base: RunRecord | None,
    requested_steps: int | None,
) -> Part:
    """The runs part: the migrated run finished with finite losses and as many steps as the
    comparison run ``base``, which exists."""
    runs_figs: dict = {name: (r.steps if r is not None else None) for name, r in runs.items()}
    if migrated is None or not migrated.ok:
        failure = migrated.error if migrated is not None else "it did not run"
        return Part("runs", FAIL, f"the migrated run failed: {failure}", runs_figs)
    if base is None:
        what = "legacy run or FP32 reference" if mode_tolerance(mode).baseline == LEGACY else "FP32 reference run"
        failed = [f"{r.name}: {r.error or 'NaN/Inf in its losses'}" for r in (legacy, reference) if r is not None]
        return Part(
            "runs", FAIL, f"no usable {what} to compare with" + (f" ({'; '.join(failed)})" if failed else ""), runs_figs
        )
    if not migrated.finite:
        bad = [i + 1 for i, x in enumerate(migrated.losses) if not math.isfinite(x)]
        return Part(
            "runs",
            FAIL,
            f"NaN/Inf in the migrated losses at step(s) {steps_text(bad)}",
            {**runs_figs, "nonfinite_steps": bad},
        )
    if migrated.steps != base.steps:
        return Part(
            "runs",
            FAIL,
            f"the migrated run recorded {migrated.steps} steps, the {base.name} run {base.steps}",
            runs_figs,
        )
    shown = ", ".join(f"{r.name} {r.steps} steps" for r in (legacy, migrated, reference) if r is not None and r.ok)
    detail = f"{shown}; migrated losses all finite"
    if requested_steps and migrated.steps < requested_steps:
        detail += f" (the script ended after {migrated.steps} of the {requested_steps} steps asked for)"
    return Part("runs", PASS, detail, runs_figs)


def _trains_part(migrated: RunRecord, base: RunRecord, limit: float, legacy: RunRecord | None = None) -> Part:
    """The trains part: the mean of the last third of the migrated losses is below the mean of
    the first third (:func:`trend`); when the comparison run ``base`` does not fall either, the
    migrated run's last-third mean within ``limit`` (relative, the drift limit of matches) of
    ``base``'s passes: it follows the trajectory of the run it is compared with. Where ``base`` is not
    the ``legacy`` run (amp's FP32 reference), the legacy run's own last-third distance from ``base`` is a
    limit too: a migration that ends no further from the reference than the legacy run did follows the
    trajectory as the legacy run did (a loss switched at a step, where a median gap understates the last
    steps' distance)."""
    n = migrated.steps
    t = trend(migrated.losses)
    if t is None:
        return Part("trains", FAIL, f"only {n} step(s): need 3 to judge a trend (raise --steps)", {"steps": n})
    first, last = t
    change = (last - first) / abs(first) if first else 0.0
    k = n // 3
    figs: dict[str, object] = {"first_third_mean": first, "last_third_mean": last, "change": change, "k": k}
    detail = f"mean loss of steps 1-{k} {first:.4g} -> steps {n - k + 1}-{n} {last:.4g} ({change:+.1%})"
    if last < first:
        return Part("trains", PASS, detail, figs)
    bt = trend(base.losses)
    if bt is None or bt[1] < bt[0]:
        return Part("trains", FAIL, detail + f"; the loss does not fall (the {base.name} run's does)", figs)
    spacing = _bf16_spacing(bt[1])
    off = rel_diffs([last], [bt[1]])[0]
    if not math.isfinite(limit):
        return Part(
            "trains",
            INCONCLUSIVE,
            detail + f"; the {base.name} run does not fall either, and there is no limit to judge the migrated run "
            "against its trajectory",
            figs,
        )
    how = "the drift limit of matches"
    lt = trend(legacy.losses) if legacy is not None and legacy is not base and usable(legacy) else None
    if lt is not None and rel_diffs([lt[1]], [bt[1]])[0] > limit:
        limit = rel_diffs([lt[1]], [bt[1]])[0]
        how = f"the {LEGACY} run's own distance from it"
    figs.update(relative=True, base_last_third_mean=bt[1], base_rel=off, limit=limit, bf16_spacing=spacing)
    detail += (
        f"; the {base.name} run does not fall over these steps either ({bt[0]:.4g} -> {bt[1]:.4g}; bf16 numbers are "
        f"{spacing:g} apart there), so the migrated run is judged against its trajectory: last-third means "
        f"{last:.4g} vs {bt[1]:.4g}, rel. diff {_fmt(off)} (limit {limit:.2g}, {how})"
    )
    if off <= limit:
        return Part("trains", PASS, detail, figs)
    return Part("trains", FAIL, detail + " -- it ends elsewhere", figs)


def _bf16_spacing(x: float) -> float:
    """The distance between neighbouring bf16 numbers near ``x`` (8 significant bits: 0.0625
    near 8)."""
    if x == 0 or not math.isfinite(x):
        return 0.0
    return 2.0 ** (math.floor(math.log2(abs(x))) - 7)


def precision_gap(legacy: RunRecord | None, reference: RunRecord | None, base: RunRecord | None) -> float | None:
    """The script's *precision gap*: the median relative difference between its full-bf16
    legacy run and its FP32 reference run, step by step (relative to ``base``'s side when
    ``base`` is one of them), or None when either run is unusable. How far bf16 moves this
    script's losses: the drift bound of matches scales with it."""
    if not (usable(legacy) and usable(reference)):
        return None
    pairs = (
        rel_diffs(legacy.losses, reference.losses) if base is reference else rel_diffs(reference.losses, legacy.losses)
    )
    return statistics.median(pairs) if pairs else None


def _matches_part(
    verdict: Verdict,
    tol: Tolerance,
    migrated: RunRecord,
    legacy: RunRecord | None,
    reference: RunRecord | None,
    base: RunRecord,
    gap: float | None,
    autocast: RunRecord | None = None,
) -> Part:
    """The matches part from ``verdict.rel`` (the migrated losses against ``base``): the onset
    and drift checks of ``tol`` (the drift limit scaled by the precision ``gap``), and the
    *control*: the other precision compared the same way (the FP32 reference against the legacy
    run; for amp, the full-bf16 legacy run against the FP32 reference), which must fail the
    onset check for it to tell the precisions apart. When the control passes it too, more
    evidence is read (:func:`_undecided`); INCONCLUSIVE when none decides. amp: a run that fails
    the checks against the FP32 reference passes when it computes what the ``autocast`` control
    computes (:func:`_autocast_control_part`)."""
    rel = verdict.rel
    control_rel: list[float] | None = None
    fp32_legacy = legacy is not None and legacy_did_nothing(legacy)  # the FP32 reference is its twin: no control
    if not verdict.fallback and tol.onset_kind != "none" and usable(legacy) and usable(reference) and not fp32_legacy:
        assert legacy is not None and reference is not None, "usable runs"
        control_rel = (
            rel_diffs(reference.losses, legacy.losses) if base is legacy else rel_diffs(legacy.losses, reference.losses)
        )
    onset_ok, onset_text = tol.onset(rel, control=control_rel)
    limit, limit_text = tol.drift_limit(gap)
    med = statistics.median(rel) if rel else math.inf
    worst = max(rel) if rel else math.inf
    drift_ok = med <= limit
    band_text = ""
    if not drift_ok and tol.drift_band and base is legacy and usable(reference) and not verdict.fallback:
        to_reference = rel_diffs(migrated.losses, reference.losses)
        med_reference = statistics.median(to_reference) if to_reference else math.inf
        drift_ok = med_reference <= limit
        band_text = f"; from the FP32 reference {_fmt(med_reference)} (the same limit): " + (
            "within the band the two precisions span" if drift_ok else "outside the band the two precisions span"
        )
    figs: dict[str, object] = {
        "onset_passed": onset_ok,
        "median_rel": med,
        "max_rel": worst,
        "identical_steps": sum(1 for r in rel if r == 0.0),
        "drift_limit": limit,
        "precision_gap": gap,
        "baseline": base.name,
    }
    detail = (
        f"vs {'the FP32 reference' if base is reference else 'the legacy run'}: {onset_text}; median rel. diff over "
        f"{len(rel)} steps {_fmt(med)} ({limit_text}){band_text}; max {_fmt(worst)}"
    )
    status = PASS if onset_ok and drift_ok else FAIL
    if control_rel is not None:
        assert legacy is not None and reference is not None, "a control needs both runs"
        control_ok, control_text = tol.onset(control_rel)
        who = "FP32 reference vs legacy" if base is legacy else "full-bf16 legacy vs FP32 reference"
        figs["control_passes_onset"] = control_ok
        detail += f"; control, {who}: {control_text}"
        if control_ok and status == PASS:
            status, more = _undecided(verdict.mode, tol, migrated, legacy, reference, rel, control_rel, figs)
            detail += "; " + more
    if status == FAIL and tol.autocast_control is not None and base is reference and autocast is not None:
        status, more = _autocast_control_part(tol.autocast_control, migrated, autocast, gap, figs)
        detail += more
    if status == FAIL and not onset_ok and drift_ok and base is legacy and figs.get("control_passes_onset") is False:
        opmath = _opmath_only_migrated(migrated, legacy)
        if opmath is not None:
            status = INCONCLUSIVE
            figs["onset_like_control"] = True
            detail += (
                "; the first steps differ from the legacy run's as the FP32 reference's do, but every matmul of both "
                f"step graphs is bf16, the parameters are bf16 and the losses stay within the drift limit, and the "
                f"migrated graph does {opmath[0]} bf16->f32->bf16 round trip(s) of f32 arithmetic with Python scalars "
                f"where the legacy one did {opmath[1]} (torch-xla's opmath: the legacy graph rounded those scalars, a "
                "momentum or a temperature, to bf16): the losses cannot tell this migration from a wrong one; compare "
                "what the script writes at its end with the legacy run's"
            )
    if status == FAIL and not onset_ok and base is legacy and figs.get("control_passes_onset") is False:
        left = _legacy_left_f32(migrated, legacy)
        if left is not None and (drift_ok or _within_band(migrated, reference, limit)):
            status = INCONCLUSIVE
            figs["legacy_left_f32"] = left
            detail += (
                f"; the legacy run made f32 on the device under its switch at {', '.join(left)} (torch-xla's switch "
                "does not convert what that call makes) and computed in f32 from there: "
                f"{_matmuls_text(legacy)} of its step graph's matmuls bf16, where the migrated run's "
                f"{_matmuls_text(migrated)} are, as the switch promises; its first steps cannot be the migrated "
                "run's, and the losses cannot tell this migration from a wrong one. To compare step by step, make "
                "that tensor bf16 by hand (`.to(torch.bfloat16)` after the call) in the legacy text"
            )
    if status == FAIL:
        if not onset_ok:
            detail += " -- the first steps differ"
        if not drift_ok:
            detail += " -- the runs drift apart"
    if verdict.fallback:
        detail += " [fallback: weak check]"
    return Part("matches", status, detail, figs)


def _legacy_left_f32(migrated: RunRecord, legacy: RunRecord | None) -> list[str] | None:
    """Where the legacy run made an f32 tensor on the device under its switch (``file:line op``, the
    trace's ``create`` events with an f32 result before the recorded steps ended), when that run computed
    fewer of its step graph's matmuls in bf16 than the migrated run, whose matmuls are all bf16 and whose
    device parameters are bf16 only; else None. torch-xla 2.9 leaves ``torch.linspace(..., device=xla)``
    f32 under ``XLA_USE_BF16`` (measured on the XLA CPU device, 12 factories: only linspace), and what
    meets it is computed in f32 there (``add(bf16, f32)`` is f32): the legacy run is not the switch's
    contract from that line on, and a migration that follows the contract cannot match it step by step."""
    if legacy is None or legacy.trace is None or migrated.graph is None or legacy.graph is None:
        return None
    if not every_float_bf16(legacy):
        return None
    mine, theirs = migrated.graph, legacy.graph
    if not (mine.matmuls > 0 and mine.matmuls_bf16 == mine.matmuls and theirs.matmuls_bf16 < mine.matmuls_bf16):
        return None
    dtypes = migrated.device_param_dtypes or {}
    if not has_bf16(dtypes) or any(k not in ("bf16", "bfloat16") for k in dtypes):
        return None
    made = [e for e in legacy.trace.of_kind(Kind.CREATE) if e.result == "f32" and not e.after_stop]
    return sorted({f"{Path(e.file).name}:{e.line} {e.op}" for e in made}) or None


def _matmuls_text(run: RunRecord) -> str:
    g = run.graph
    return "?" if g is None else f"{g.matmuls_bf16} of {g.matmuls}"


def _within_band(migrated: RunRecord, reference: RunRecord | None, limit: float) -> bool:
    """Whether the migrated losses' median relative difference from the FP32 reference's is within ``limit``."""
    if not usable(reference):
        return False
    rel = rel_diffs(migrated.losses, reference.losses)
    return bool(rel) and statistics.median(rel) <= limit


def _opmath_only_migrated(migrated: RunRecord, legacy: RunRecord | None) -> tuple[int, int] | None:
    """(migrated, legacy) counts of the step graphs' elementwise round trips (bf16 -> f32 -> bf16
    around arithmetic with a Python scalar: torch-xla's opmath) when the migrated graph has more, the
    parameters are bf16 on the device, the loss has the legacy run's dtype and both graphs compute
    every matmul in bf16; else None. Under
    the switch the scalar itself was a bf16 constant (``0.99`` became ``0.98828125``), so such a
    step differs from the legacy run's from step 1 on without the migration being wrong (measured on
    hunt15's MoCo momentum update, torch-xla 2.9 on the XLA CPU device)."""
    if legacy is None or not has_bf16(migrated.device_param_dtypes):
        return None
    if migrated.loss_dtype != legacy.loss_dtype:
        return None  # an f32 loss where the legacy one was bf16: an input or target left f32, no scalar rounding
    mine, theirs = migrated.graph, legacy.graph
    if mine is None or theirs is None:
        return None
    if not all(g.matmuls > 0 and g.matmuls_bf16 == g.matmuls for g in (mine, theirs)):
        return None
    counts = (mine.round_trip_count("elementwise"), theirs.round_trip_count("elementwise"))
    return counts if counts[0] > counts[1] else None


def _autocast_control_part(
    tol: Tolerance, migrated: RunRecord, control: RunRecord, gap: float | None, figs: dict[str, object]
) -> tuple[Status, str]:
    """amp: the status of matches against the autocast ``control`` (:data:`~.records.AUTOCAST`)
    for a migrated run that failed the checks against the FP32 reference, and the text added to
    the part: PASS when ``tol``'s onset and drift checks hold (``gap``: the precision gap). The
    figures go into ``figs["autocast_control"]``."""
    what = "the autocast control (the FP32 script, its forward passes and losses under autocast)"
    after_steps = ""
    if not usable(control):
        why = control.error or "NaN/Inf in its losses"
        if not _failed_after_its_steps(control, migrated):
            figs["autocast_control"] = {"usable": False, "error": why}
            return FAIL, f"; {what} is unusable ({why}), nothing else to hold the migrated run to"
        after_steps = f" (it failed after the migrated run's {migrated.steps} steps: {_short_error(why)})"
    rel = rel_diffs(migrated.losses, control.losses)
    onset_ok, onset_text = tol.onset(rel)
    limit, limit_text = tol.drift_limit(gap)
    med = statistics.median(rel) if rel else math.inf
    ok = onset_ok and med <= limit and migrated.steps == control.steps
    figs["autocast_control"] = {
        "usable": True,
        "onset_passed": onset_ok,
        "median_rel": med,
        "identical_steps": sum(1 for r in rel if r == 0.0),
        "drift_limit": limit,
        "passed": ok,
    }
    verdict = (
        "past the limits against the FP32 reference, the migrated run computes what autocast computes for this "
        "script: its distance from the FP32 reference is autocast's own (a random op such as dropout draws other "
        "numbers on a bf16 activation than on an f32 one)"
        if ok
        else "it does not compute what autocast computes either"
    )
    return (PASS if ok else FAIL), (
        f"; vs {what}{after_steps}: {onset_text}; median rel. diff over {len(rel)} steps {_fmt(med)} ({limit_text}) "
        f"-- {verdict}"
    )


def _failed_after_its_steps(control: RunRecord, migrated: RunRecord) -> bool:
    """Whether the autocast ``control`` failed only after recording as many finite losses as the migrated run
    (its code after training met autocast's bf16 output: ``model(x).cpu().numpy()`` under its autocast raises
    ``TypeError: Got unsupported ScalarType BFloat16``, bench/unseen/hunt33 mod_pair): the steps it recorded
    are the autocast numerics of those steps all the same."""
    return control.finite and migrated.steps > 0 and control.steps >= migrated.steps and bool(control.losses)


def _short_error(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else text
    return last if len(last) <= 120 else last[:117] + "..."


def _undecided(
    mode: Mode,
    tol: Tolerance,
    migrated: RunRecord,
    legacy: RunRecord,
    reference: RunRecord,
    rel: Sequence[float],
    control_rel: Sequence[float],
    figs: dict[str, object],
) -> tuple[Status, str]:
    """The status of matches when the control passes the onset check too (the first steps
    cannot tell the precisions apart by the loss), and why. First the evidence verify already
    has: the step graphs and device dtypes (:func:`.evidence.separates`) tell the migrated run's
    precision from the control's; then, where the mode allows (``tol.slide``), the onset check
    on the first window of steps where the control departs (:meth:`Tolerance.departure`);
    INCONCLUSIVE when neither decides within the steps run (verify then runs more steps, up to
    its budget: :func:`bf16_migrate.verify.verify_script`)."""
    lead = "the control passes too, so the loss of these steps cannot tell the precisions apart"
    apart = separates(mode, migrated, legacy, reference)
    if apart is not None:
        figs["decided_by"] = "graphs"
        return PASS, f"{lead}; the executed graphs do: {apart}"
    if tol.slide:
        start = tol.departure(control_rel)
        if start is not None:
            ok, text = tol.onset(rel, start)
            figs.update(decided_by="departure", departure_step=start + 1)
            control_text = tol.onset(control_rel, start)[1]
            verdict_text = "the migrated run matches there" if ok else "the migrated run differs there"
            return (PASS if ok else FAIL), (
                f"{lead}; from step {start + 1} on the control departs ({control_text}): {text}, {verdict_text}"
            )
    figs["decided_by"] = None
    return INCONCLUSIVE, (
        f"{lead}, nor do the graphs (no step graph with matmuls in every run) or the later steps (the control never "
        f"departs for {tol.onset_steps} steps in a row)"
    )


DEVICE_NOTE = (
    "PJRT_DEVICE={device}: the tolerances were measured on the XLA CPU device only. Another backend compiles the "
    "same graphs differently (fusion, accumulation order), so a matches FAIL there needs a look at the curves "
    "(--plot) before it is called a bad migration."
)
"""Added to the notes on any device but the CPU."""
