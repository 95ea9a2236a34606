"""Unit tests of the verify verdict (bf16_migrate.verify.compare) on synthetic records: no XLA."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bf16_migrate.rules import Mode, mode_named
from bf16_migrate.verify import format_report, report_dict
from bf16_migrate.verify.compare import FAIL, INCONCLUSIVE, PASS, TOLERANCES, judge, rel_diffs, trend
from bf16_migrate.verify.graphs import GraphStats
from bf16_migrate.verify.records import RunError, RunRecord
from bf16_migrate.verify.runner import HARNESS_DIR, LEGACY_VARIABLES, child_env, stage_script

from conftest import part_of

# A falling bf16-looking loss curve (values exactly representable in bf16).
LEGACY_LOSSES = [
    0.71484375,
    0.8828125,
    0.84375,
    0.7421875,
    0.73046875,
    0.625,
    0.7265625,
    0.6484375,
    0.6796875,
    0.609375,
    0.58203125,
    0.578125,
    0.58984375,
    0.55078125,
    0.458984375,
    0.40625,
    0.404296875,
    0.40234375,
    0.41796875,
    0.3046875,
]
# What an FP32 run of the same script gives: about 1% away at every step, never a bf16 value.
FP32_LOSSES = [x * (1.0 + 0.011 * (-1) ** i) + 1e-7 for i, x in enumerate(LEGACY_LOSSES)]


def rec(name, losses, **kw):
    defaults: dict[str, Any] = dict(
        param_dtypes={"bfloat16": 6} if name == "migrated" else {"float32": 6},
        device_param_dtypes={"bf16": 6} if name in ("legacy", "migrated") else {"f32": 6},
        legacy_env={"XLA_USE_BF16": "1"} if name == "legacy" else {},
        step_end_s=[1.0 + 0.01 * i for i in range(len(losses))],
        compile_count=2,
        wall_time_s=10.0,
        # the executed step graph: 8 matmuls, bf16 except in the FP32 reference
        graph=GraphStats(
            matmuls=8,
            matmuls_bf16=0 if name == "reference" else 8,
            matmuls_f32=8 if name == "reference" else 0,
            step=len(losses),
        ),
    )
    defaults.update(kw)
    return RunRecord(name, losses=list(losses), **defaults)


def runs(migrated, legacy=LEGACY_LOSSES, reference=FP32_LOSSES, **mkw):
    out = {"migrated": rec("migrated", migrated, **mkw)}
    if legacy is not None:
        out["legacy"] = rec("legacy", legacy)
    if reference is not None:
        out["reference"] = rec("reference", reference)
    return out


def status(verdict):
    return {p.name: p.status for p in verdict.parts}


def test_identical_run_passes_every_part():
    v = judge(mode_named("stochastic"), runs(LEGACY_LOSSES), requested_steps=20)
    assert status(v) == {"runs": PASS, "trains": PASS, "precision": PASS, "matches": PASS, "graph": PASS}
    assert v.passed and v.baseline == "legacy"
    assert v.rel == [0.0] * 20


def test_fp32_negative_control_fails_matches_in_stochastic_mode():
    # A "migration" that only deleted the variable is an FP32 run.
    v = judge(
        mode_named("stochastic"),
        runs(
            FP32_LOSSES,
            reference=[x * 1.0001 for x in FP32_LOSSES],
            param_dtypes={"float32": 6},
            device_param_dtypes={"f32": 6},
        ),
    )
    assert status(v)["matches"] == FAIL
    assert "first steps differ" in part_of(v, "matches").detail
    assert status(v)["precision"] == FAIL  # no bfloat16 parameters
    assert not v.passed


def test_negative_control_identical_to_reference_fails_precision():
    v = judge(mode_named("stochastic"), runs(FP32_LOSSES))
    assert "no reduced precision" in part_of(v, "precision").detail
    assert not v.passed


def test_later_one_ulp_drift_is_tolerated():
    # SGD-momentum-like: identical first steps, then whole-ulp differences (scalar rounding, see
    # the docstring of bf16_migrate/verify/compare.py).
    migrated = LEGACY_LOSSES[:6] + [x - 2**-8 * x for x in LEGACY_LOSSES[6:]]
    v = judge(mode_named("stochastic"), runs(migrated))
    assert status(v)["matches"] == PASS, part_of(v, "matches").detail


def test_early_difference_fails_matches():
    migrated = [x * 1.008 for x in LEGACY_LOSSES]  # one ulp off from step 1
    v = judge(mode_named("gpu-compatible"), runs(migrated))
    assert status(v)["matches"] == FAIL


def test_divergence_fails_the_drift_bound():
    migrated = LEGACY_LOSSES[:3] + [x * 1.3 for x in LEGACY_LOSSES[3:]]
    v = judge(mode_named("stochastic"), runs(migrated))
    assert status(v)["matches"] == FAIL
    assert "drift apart" in part_of(v, "matches").detail


def test_drift_bound_without_reference_uses_the_fixed_limit():
    migrated = LEGACY_LOSSES[:3] + [x * 1.03 for x in LEGACY_LOSSES[3:]]
    v = judge(mode_named("stochastic"), runs(migrated, reference=None))
    assert part_of(v, "matches").figures["drift_limit"] == TOLERANCES["stochastic"].drift_no_gap
    assert status(v)["matches"] == PASS


def test_nan_in_migrated_losses_fails_runs():
    migrated = LEGACY_LOSSES[:5] + [math.nan] + LEGACY_LOSSES[6:]
    v = judge(mode_named("stochastic"), runs(migrated))
    assert status(v) == {"runs": FAIL}
    assert "step(s) 6" in v.parts[0].detail
    assert not v.passed


def test_inf_in_migrated_losses_fails_runs():
    v = judge(mode_named("amp"), runs(LEGACY_LOSSES[:-1] + [math.inf]))
    assert status(v)["runs"] == FAIL


def test_loss_that_does_not_fall_fails_trains_when_the_legacy_run_falls():
    flat = [0.5, 0.6, 0.5, 0.6, 0.5, 0.6, 0.55, 0.6, 0.6]
    v = judge(mode_named("stochastic"), runs(flat, legacy=LEGACY_LOSSES[:9], reference=FP32_LOSSES[:9]))
    assert status(v)["trains"] == FAIL
    assert "the loss does not fall (the legacy run's does)" in part_of(v, "trains").detail


# A language model's loss near 8, where bf16 numbers are 0.0625 apart: flat in bf16 over 12
# steps, falling in FP32 (the shape of bench/calibration/lm_large_loss).
LM_LEGACY = [8.0625] * 5 + [8.0] * 2 + [8.0625] * 5
LM_FP32 = [8.061 - 0.004 * i for i in range(12)]


def test_flat_legacy_loss_judges_trains_against_the_legacy_trajectory():
    v = judge(mode_named("stochastic"), runs(LM_LEGACY, legacy=LM_LEGACY, reference=LM_FP32))
    part = part_of(v, "trains")
    assert part.status == PASS, part.detail
    assert "the legacy run does not fall over these steps either" in part.detail
    assert "bf16 numbers are 0.0625 apart" in part.detail
    assert part.figures["relative"] is True and part.figures["base_rel"] == 0


def test_flat_legacy_loss_still_fails_a_migrated_run_that_ends_elsewhere():
    rising = [8.0625] * 4 + [8.125] * 4 + [8.25] * 4
    v = judge(mode_named("stochastic"), runs(rising, legacy=LM_LEGACY, reference=LM_FP32))
    assert part_of(v, "trains").status == FAIL
    assert "it ends elsewhere" in part_of(v, "trains").detail


# A loss switched at a step (a warm-up's MSE, then a contrastive loss): it rises by design; amp is judged against
# the FP32 reference, from which the legacy run's last steps are further than the median gap says.
SWITCHED_REF = [0.00181, 0.00189, 0.4331, 0.5699]
SWITCHED_LEGACY = [0.00182, 0.00191, 0.4316, 0.5742]


def test_a_rising_loss_may_end_as_far_from_the_reference_as_the_legacy_run_does():
    near = [0.00184, 0.00189, 0.4322, 0.5732]  # 0.0059 from the reference, the legacy run 0.0076
    v = judge(mode_named("amp"), runs(near, legacy=SWITCHED_LEGACY, reference=SWITCHED_REF))
    part = part_of(v, "trains")
    assert part.status == PASS, part.detail
    assert "the legacy run's own distance from it" in part.detail
    far = [0.00184, 0.00189, 0.4322, 0.5850]  # 0.0265 from the reference: further than the legacy run
    assert (
        part_of(judge(mode_named("amp"), runs(far, legacy=SWITCHED_LEGACY, reference=SWITCHED_REF)), "trains").status
        == FAIL
    )


def test_a_float64_model_float32_on_the_device_under_downcast_is_no_missing_bf16():
    """XLA_DOWNCAST_BF16 on a model built in float64 (``torch.set_default_dtype(torch.float64)``): the legacy run's
    parameters said float64 and were float32 on the device, none bf16; a migration that keeps them float32 there has
    the legacy run's precision, and the switch was in effect (float64 narrowed), not "not in effect there"."""
    out = runs(LEGACY_LOSSES, param_dtypes={"float32": 6}, device_param_dtypes={"f32": 6})
    legacy = {
        "param_dtypes": {"float64": 6},
        "device_param_dtypes": {"f32": 6},
        "legacy_env": {"XLA_DOWNCAST_BF16": "1"},
    }
    out["legacy"] = rec("legacy", LEGACY_LOSSES, **legacy)
    v = judge(mode_named("stochastic"), out)
    part = part_of(v, "precision")
    assert part.status == PASS, part.detail
    assert "switch in effect" in part.detail and "not in effect" not in " ".join(v.notes)
    out["migrated"] = rec("migrated", LEGACY_LOSSES, param_dtypes={"float32": 6}, device_param_dtypes={"f64": 6})
    assert part_of(judge(mode_named("stochastic"), out), "precision").status == FAIL


def test_trend_uses_thirds():
    assert trend([3, 3, 3, 2, 2, 2, 1, 1, 1]) == (3, 1)
    assert trend([1, 2]) is None
    v = judge(mode_named("stochastic"), runs([1.0, 0.5], legacy=[1.0, 0.5], reference=[1.01, 0.51]))
    assert status(v)["trains"] == FAIL


def test_step_count_mismatch_fails_runs():
    v = judge(mode_named("stochastic"), runs(LEGACY_LOSSES[:10]))
    assert status(v)["runs"] == FAIL
    assert "10 steps" in v.parts[0].detail


def test_failed_migrated_run_fails_runs():
    r = runs(LEGACY_LOSSES)
    r["migrated"] = RunRecord("migrated", error="exited with code 1")
    v = judge(mode_named("stochastic"), r)
    assert status(v) == {"runs": FAIL}


def test_legacy_failure_falls_back_to_reference_with_the_control_as_the_bar():
    r = runs([x * 1.0 for x in LEGACY_LOSSES])
    r["legacy"] = RunRecord("legacy", error="exited with code 1", tail=["boom"])
    r["control"] = rec("control", LEGACY_LOSSES)  # the plain full-bf16 run of the script
    v = judge(mode_named("stochastic"), r)
    assert v.fallback and v.baseline == "reference"
    assert status(v)["matches"] == PASS, part_of(v, "matches").detail
    assert any("legacy run is unusable" in n for n in v.notes)
    assert any("weaker evidence" in n and "stays 0.011 from the FP32 reference" in n for n in v.notes), v.notes
    # the limits are twice the control's distance, measured in this verify
    assert v.tolerance is not None
    assert v.tolerance.onset_tol == pytest.approx(2 * 0.011, rel=0.05)
    # a migrated run three times as far from FP32 as full bf16 fails
    far = [x * (1.0 + 0.033 * (-1) ** i) for i, x in enumerate(FP32_LOSSES)]
    r2 = runs(far)
    r2["legacy"], r2["control"] = r["legacy"], r["control"]
    assert status(judge(mode_named("stochastic"), r2))["matches"] == FAIL


def test_legacy_failure_without_a_control_cannot_decide_matches():
    r = runs([x * 1.0 for x in LEGACY_LOSSES])
    r["legacy"] = RunRecord("legacy", error="exited with code 1", tail=["boom"])
    v = judge(mode_named("stochastic"), r)
    assert v.fallback and status(v)["matches"] == INCONCLUSIVE and v.status == INCONCLUSIVE
    assert any("no bar" in n for n in v.notes)


def test_an_f32_loss_where_the_legacy_loss_was_bf16_fails_precision():
    r = runs(LEGACY_LOSSES)
    r["legacy"].loss_dtype, r["migrated"].loss_dtype = "bf16", "f32"
    v = judge(mode_named("stochastic"), r)
    assert status(v)["precision"] == FAIL
    assert "the loss the migrated run backpropagates is f32 on the device where the legacy run's is bf16" in (
        part_of(v, "precision").detail
    )
    assert "an uncast target, sample weight or offset" in part_of(v, "precision").detail
    # with a parameter f32 on the device where the legacy run's were all bf16, that parameter is the cause
    # (bench/unseen/hunt27 PW3: `log_std.data = log_std.data.float()` after the cast)
    r["migrated"].device_param_dtypes = {"bf16": 5, "f32": 1}
    detail = part_of(judge(mode_named("stochastic"), r), "precision").detail
    assert "and 1 of its parameters are f32 on the device (bf16 x5, f32 x1; the legacy run's bf16 x6)" in detail
    assert "a parameter made f32 again after the model cast" in detail
    # a bf16 loss does not excuse that parameter: it computes in f32 where the switch made it bf16
    r["migrated"].loss_dtype = "bf16"
    v = judge(mode_named("stochastic"), r)
    assert status(v)["precision"] == FAIL and "1 parameter(s) the switch made bf16 stay float32" in (
        part_of(v, "precision").detail
    )
    r["migrated"].device_param_dtypes = {"bf16": 6}
    assert status(judge(mode_named("stochastic"), r))["precision"] == PASS
    # amp computes its loss in f32 by design
    a = runs([x * (1 + 2e-4) for x in FP32_LOSSES], param_dtypes={"float32": 6})
    a["legacy"].loss_dtype, a["migrated"].loss_dtype = "bf16", "f32"
    assert status(judge(mode_named("amp"), a))["precision"] == PASS


def test_an_f64_loss_fails_precision_in_every_mode():
    """A float64 target or weight on the device makes the loss f64: the switch made it bf16 (or f32 under
    XLA_DOWNCAST_BF16), and autocast casts no float64, so amp's f64 loss fails as the casting modes' does."""
    r = runs(LEGACY_LOSSES)
    r["legacy"].loss_dtype, r["migrated"].loss_dtype = "bf16", "f64"
    detail = part_of(judge(mode_named("stochastic"), r), "precision").detail
    assert "the loss the migrated run backpropagates is f64 on the device where the legacy run's is bf16" in detail
    a = runs([x * (1 + 2e-4) for x in FP32_LOSSES], param_dtypes={"float32": 6})
    a["legacy"].loss_dtype, a["reference"].loss_dtype, a["migrated"].loss_dtype = "bf16", "f32", "f64"
    v = judge(mode_named("amp"), a)
    assert status(v)["precision"] == FAIL and "is f64 on the device" in part_of(v, "precision").detail
    a["migrated"].loss_dtype = "f32"
    assert status(judge(mode_named("amp"), a))["precision"] == PASS


def test_float32_parameters_beside_bf16_ones_fail_precision_where_the_legacy_run_had_them_bf16():
    """A mode that casts the model: bf16 x5 and f32 x1 on the device, the legacy run's bf16 x6 (an inner module cast
    where its wrapper was not): that parameter computes in f32 where the switch made it bf16. It passed this part
    (a hunt's; only the trace told). Not where the legacy run had as many float32 ones (XLA_DOWNCAST_BF16's
    float64 module)."""
    a = runs(LEGACY_LOSSES, param_dtypes={"bfloat16": 5, "float32": 1}, device_param_dtypes={"bf16": 5, "f32": 1})
    v = judge(mode_named("stochastic"), a)
    assert status(v)["precision"] == FAIL
    assert "1 parameter(s) the switch made bf16 stay float32" in part_of(v, "precision").detail
    a["legacy"].device_param_dtypes = {"bf16": 5, "f32": 1}
    assert status(judge(mode_named("stochastic"), a))["precision"] == PASS


def test_float64_parameters_on_the_device_fail_precision_where_the_legacy_run_had_none():
    """A parameter made from a NumPy scalar is float64: the switch made it bf16, autocast casts none, and
    the FP32 reference may hold the same float64, so only the legacy run tells it."""
    a = runs(
        [x * (1 + 2e-4) for x in FP32_LOSSES],
        param_dtypes={"float32": 5, "float64": 1},
        device_param_dtypes={"f32": 5, "f64": 1},
    )
    v = judge(mode_named("amp"), a)
    assert status(v)["precision"] == FAIL
    assert "1 float64 parameter(s) the switch made bf16" in part_of(v, "precision").detail
    a["legacy"].device_param_dtypes = {"bf16": 5, "f64": 1}  # the legacy run had it too
    assert status(judge(mode_named("amp"), a))["precision"] == PASS


def test_an_amp_bf16_loss_fails_where_autocast_computes_it_in_f32():
    """amp: a bf16 loss where the FP32 script's is f32 is told from autocast's own by the autocast control
    (the FP32 script with its forward passes and losses under autocast): f32 there, the migration computes
    its loss outside autocast or on a target cast down; bf16 there too, it is autocast's own."""
    a = runs([x * (1 + 2e-4) for x in FP32_LOSSES], param_dtypes={"float32": 6})
    a["legacy"].loss_dtype, a["reference"].loss_dtype, a["migrated"].loss_dtype = "bf16", "f32", "bf16"
    # before the control is made the bf16 loss is a problem, so that verify makes it
    v = judge(mode_named("amp"), a)
    assert status(v)["precision"] == FAIL and "autocast control tells" in part_of(v, "precision").detail
    a["autocast"] = rec("autocast", [x * (1 + 2e-4) for x in FP32_LOSSES])
    a["autocast"].loss_dtype = "f32"
    v = judge(mode_named("amp"), a)
    assert status(v)["precision"] == FAIL
    assert "and f32 under autocast too (the autocast control)" in part_of(v, "precision").detail
    a["autocast"].loss_dtype = "bf16"
    assert status(judge(mode_named("amp"), a))["precision"] == PASS
    a["autocast"] = RunRecord("autocast", error="exited with code 1")
    assert status(judge(mode_named("amp"), a))["precision"] == PASS
    # a control that made its steps and then failed in the script's tail (its autocast reached a NumPy exit)
    # still tells its loss's dtype (bench/unseen/hunt27 CA2 PASSed so)
    a["autocast"] = rec("autocast", [x * (1 + 2e-4) for x in FP32_LOSSES])
    a["autocast"].loss_dtype, a["autocast"].error = "f32", "exited with code 1"
    assert not a["autocast"].ok
    v = judge(mode_named("amp"), a)
    assert status(v)["precision"] == FAIL
    assert "and f32 under autocast too (the autocast control)" in part_of(v, "precision").detail


def test_an_amp_optimizer_state_made_bf16_by_hand_fails_precision():
    """amp keeps the model and its optimizer FP32: bf16 state where the FP32 script's is f32 is a hand's cast
    (bench/unseen/hunt27 SWA2 PASSed, its report saying "optimizer state bf16 x6"); state the FP32 script
    keeps in bf16 itself is the script's."""
    a = runs([x * (1 + 2e-4) for x in FP32_LOSSES], param_dtypes={"float32": 6})
    a["reference"].state_dtypes = {"momentum": {"float32/f32": 6}}
    a["migrated"].state_dtypes = {"momentum": {"bfloat16/bf16": 6}}
    v = judge(mode_named("amp"), a)
    assert status(v)["precision"] == FAIL
    assert "the optimizer state is bf16 on the device (bf16 x6) where the FP32 script's is f32 x6" in (
        part_of(v, "precision").detail
    )
    a["reference"].state_dtypes = {"momentum": {"bfloat16/bf16": 6}}
    assert status(judge(mode_named("amp"), a))["precision"] == PASS
    a["reference"].state_dtypes = a["migrated"].state_dtypes = {"momentum": {"float32/f32": 6}}
    assert status(judge(mode_named("amp"), a))["precision"] == PASS


def test_legacy_with_nan_falls_back_too():
    r = runs(LEGACY_LOSSES, legacy=LEGACY_LOSSES[:-1] + [math.nan])
    r["control"] = rec("control", LEGACY_LOSSES)
    v = judge(mode_named("gpu-compatible"), r)
    assert v.fallback and v.baseline == "reference" and status(v)["matches"] == PASS


def test_no_usable_baseline_fails_runs():
    r = runs(LEGACY_LOSSES, reference=None)
    r["legacy"] = RunRecord("legacy", error="timed out")
    v = judge(mode_named("stochastic"), r)
    assert status(v) == {"runs": FAIL}


def test_legacy_without_bf16_on_device_fails_precision():
    r = runs(LEGACY_LOSSES)
    r["legacy"].device_param_dtypes = {"f32": 6}
    v = judge(mode_named("stochastic"), r)
    assert status(v)["precision"] == FAIL
    assert "--legacy-env" in part_of(v, "precision").detail


def test_variable_still_set_in_migrated_run_fails_precision():
    v = judge(mode_named("stochastic"), runs(LEGACY_LOSSES, legacy_env={"XLA_USE_BF16": "1"}))
    assert status(v)["precision"] == FAIL
    v = judge(mode_named("stochastic"), runs(LEGACY_LOSSES, legacy_env={"XLA_USE_BF16": "0"}))
    assert status(v)["precision"] == PASS


def test_amp_compares_with_reference():
    amp = [x * (1 + 2e-4) for x in FP32_LOSSES]
    v = judge(mode_named("amp"), runs(amp, param_dtypes={"float32": 6}, device_param_dtypes={"f32": 6}))
    assert v.baseline == "reference"
    assert v.passed, [(p.name, p.detail) for p in v.parts]


def test_amp_full_bf16_fails_matches():
    # A migration that cast the whole model to bf16 is the legacy numerics, not autocast.
    v = judge(mode_named("amp"), runs(LEGACY_LOSSES))
    assert status(v)["matches"] == FAIL


def test_amp_identical_to_reference_fails_precision():
    v = judge(mode_named("amp"), runs(FP32_LOSSES, param_dtypes={"float32": 6}))
    assert status(v)["precision"] == FAIL


def test_amp_without_reference_fails_runs():
    v = judge(mode_named("amp"), runs(FP32_LOSSES, reference=None))
    assert status(v) == {"runs": FAIL}


# An amp run as a shallow model gives it: 0.9% from the FP32 reference at every step, 0.8 x the full-bf16
# legacy run's 1.1%: past the onset limit (0.6 x the control's), within the drift limit (1 x the gap).
_SHALLOW_AMP = [x * (1.0 + 0.009 * (-1) ** (i + 1)) for i, x in enumerate(FP32_LOSSES)]


def _amp_runs(migrated=_SHALLOW_AMP, **kw):
    return runs(migrated, param_dtypes={"float32": 6}, device_param_dtypes={"f32": 6}, **kw)


def test_amp_shallow_model_fails_against_fp32_without_the_autocast_control():
    v = judge(mode_named("amp"), _amp_runs())
    assert status(v)["matches"] == FAIL
    assert "autocast control" not in part_of(v, "matches").detail


def test_amp_shallow_model_passes_when_it_computes_what_the_autocast_control_computes():
    r = _amp_runs()
    r["autocast"] = rec("autocast", _SHALLOW_AMP, param_dtypes={"float32": 6}, device_param_dtypes={"f32": 6})
    v = judge(mode_named("amp"), r)
    matches = part_of(v, "matches")
    assert status(v)["matches"] == PASS, matches.detail
    assert "past the limits against the FP32 reference" in matches.detail
    assert "3 of the first 3 steps the same" in matches.detail
    assert "computes what autocast computes" in matches.detail
    assert matches.figures["autocast_control"]["identical_steps"] == len(_SHALLOW_AMP)
    assert v.passed, [(p.name, p.detail) for p in v.parts]
    assert "autocast-ctl" in format_report(_report(v, r))


def test_amp_autocast_control_holds_the_first_steps_and_the_drift():
    # a run as far from FP32 as the shallow one, but not the autocast control's program: the loss
    # outside autocast, a bf16 model under autocast (bench/unseen/hunt7 trainer_class's variants)
    other = [x * (1.0 + 0.003 * (-1) ** i) for i, x in enumerate(_SHALLOW_AMP)]
    r = _amp_runs()
    r["autocast"] = rec("autocast", other)
    v = judge(mode_named("amp"), r)
    assert status(v)["matches"] == FAIL
    assert "0 of the first 3 steps the same" in part_of(v, "matches").detail
    assert "does not compute what autocast computes either" in part_of(v, "matches").detail
    # the first steps the same, then its own way: the drift holds it
    drifting = _SHALLOW_AMP[:3] + [x * 1.05 for x in _SHALLOW_AMP[3:]]
    r = _amp_runs(drifting)
    r["autocast"] = rec("autocast", _SHALLOW_AMP)
    assert status(judge(mode_named("amp"), r))["matches"] == FAIL


def test_amp_unusable_autocast_control_says_so():
    r = _amp_runs()
    r["autocast"] = RunRecord("autocast", error="RuntimeError: scatter: bf16 and f32 operands")
    v = judge(mode_named("amp"), r)
    assert status(v)["matches"] == FAIL
    assert "is unusable (RuntimeError: scatter" in part_of(v, "matches").detail


def test_stochastic_ignores_an_autocast_run():
    r = runs([x * 1.02 for x in LEGACY_LOSSES])
    base = status(judge(mode_named("stochastic"), r))
    r["autocast"] = rec("autocast", [x * 1.02 for x in LEGACY_LOSSES])
    assert status(judge(mode_named("stochastic"), r)) == base
    assert base["matches"] == FAIL


def test_amp_with_bf16_parameters_fails_precision():
    # a full-bf16 model under autocast: its losses can sit as near FP32 as a right amp run's
    v = judge(mode_named("amp"), runs(_SHALLOW_AMP, param_dtypes={"bfloat16": 6}))
    assert status(v)["precision"] == FAIL
    assert "amp keeps the model in FP32" in part_of(v, "precision").detail
    # parameters the FP32 script itself holds in bf16 are the script's own
    r = runs(_SHALLOW_AMP, param_dtypes={"bfloat16": 6})
    r["reference"].param_dtypes = {"bfloat16": 6}
    assert "amp keeps the model in FP32" not in part_of(judge(mode_named("amp"), r), "precision").detail


def _report(verdict, records):
    from bf16_migrate.verify.result import VerifyReport

    return VerifyReport(
        script=Path("train.py"), mode=verdict.mode, steps=len(_SHALLOW_AMP), runs=records, verdict=verdict
    )


# An FP32 run that happens to give the legacy bf16 numbers over the first steps (the loss does not
# move yet), then departs from step 4 on.
LATE_FP32 = LEGACY_LOSSES[:3] + FP32_LOSSES[3:]


def _without_graphs(all_runs):
    for r in all_runs.values():
        r.graph = None
    return all_runs


def test_control_passing_too_is_decided_by_the_graphs():
    v = judge(mode_named("stochastic"), runs(LEGACY_LOSSES, reference=LATE_FP32))
    part = part_of(v, "matches")
    assert part.status == PASS and part.figures["decided_by"] == "graphs", part.detail
    assert "the control passes too" in part.detail and "the executed graphs do" in part.detail
    assert "8 of 8 matmuls in bf16 as the legacy run's (8 of 8), the FP32 control's 0 of 8" in part.detail


def test_control_passing_too_without_graphs_moves_to_where_the_control_departs():
    v = judge(mode_named("stochastic"), _without_graphs(runs(LEGACY_LOSSES, reference=LATE_FP32)), graphs=False)
    part = part_of(v, "matches")
    # steps 1-3 the same in both; the control's window of 3 (1 the same needed) fails from step 4
    assert part.status == PASS and part.figures["departure_step"] == 4, part.detail
    assert "from step 4 on the control departs (0 of steps 4-6 the same" in part.detail
    assert "3 of steps 4-6 the same" in part.detail
    # a migrated run that is the FP32 one: the same first steps, then the control's departure
    v = judge(mode_named("stochastic"), _without_graphs(runs(LATE_FP32, reference=LATE_FP32)), graphs=False)
    assert part_of(v, "matches").status == FAIL, part_of(v, "matches").detail


def test_inconclusive_when_nothing_tells_the_precisions_apart():
    # the FP32 control gives the legacy numbers at every step but the last, and no graph was read
    never = LEGACY_LOSSES[:-1] + FP32_LOSSES[-1:]
    v = judge(mode_named("stochastic"), _without_graphs(runs(LEGACY_LOSSES, reference=never)), graphs=False)
    assert part_of(v, "matches").status == INCONCLUSIVE
    assert v.status == INCONCLUSIVE and not v.passed
    # gpu-compatible's master weights depart where the FP32 control does: no moved window
    v = judge(mode_named("gpu-compatible"), _without_graphs(runs(LEGACY_LOSSES, reference=LATE_FP32)), graphs=False)
    assert part_of(v, "matches").status == INCONCLUSIVE, part_of(v, "matches").detail


def test_unknown_mode():
    """A mode without a ``[MODE.verify]`` table (one added to a copy of the rules) cannot be judged."""
    with pytest.raises(ValueError, match="'fp16' cannot be verified"):
        judge(Mode(name="fp16", summary="", emit=frozenset()), runs(LEGACY_LOSSES))


def test_rel_diffs_eps_and_nonfinite():
    assert rel_diffs([1.0, 0.0], [1.0, 0.0]) == [0.0, 0.0]
    r = rel_diffs([0.0, 0.01], [2.0, 0.0])
    assert r[0] == 1.0 and r[1] == pytest.approx(0.01 / 0.02)  # eps = 1% of max |b| = 0.02
    assert rel_diffs([math.nan], [1.0]) == [math.inf]
    assert rel_diffs([math.inf], [math.inf]) == [0.0]
    assert len(rel_diffs([1.0, 2.0, 3.0], [1.0])) == 1


def test_record_from_json_and_properties():
    data = {
        "losses": [1.0, float("nan")],
        "step_end_s": [1.0, 1.5, 1.75],
        "param_dtypes": {"bfloat16": 2},
        "exit_reason": "steps_reached",
        "errors": ["x"],
        "legacy_env": {"XLA_USE_BF16": "1"},
    }
    r = RunRecord.from_json("legacy", data, returncode=0)
    assert r.ok and r.steps == 2 and not r.finite
    assert r.step_times_s == [0.5, 0.25] and r.median_step_time_s == 0.375
    d = r.to_dict()
    assert d["losses"][1] == "nan" and d["legacy_env"] == {"XLA_USE_BF16": "1"}
    json.dumps(d)


def test_run_error_message_has_tail():
    e = RunError("the migrated run failed: exited with code 1", run="migrated", tail=["a", "Traceback", "boom"])
    assert "boom" in str(e) and e.run == "migrated" and e.tail[-1] == "boom"
    assert str(RunError("plain")) == "plain"


def test_child_env_builds_the_harness_environment(tmp_path):
    base = {"PATH": "/bin", "PYTHONPATH": "/x", "XLA_USE_BF16": "1", "BF16_MIGRATE_ROOT_PID": "7"}
    env = child_env(base, tmp_path, record=tmp_path / "r.json", steps=5, drop=LEGACY_VARIABLES)
    assert env["PJRT_DEVICE"] == "CPU"
    assert env["PYTHONPATH"].split(os.pathsep) == [str(HARNESS_DIR), str(tmp_path), "/x"]
    assert "XLA_USE_BF16" not in env and "BF16_MIGRATE_ROOT_PID" not in env
    assert env["BF16_MIGRATE_STEPS"] == "5"
    env = child_env({"PJRT_DEVICE": "TPU"}, tmp_path, record=tmp_path / "r", steps=1, add={"XLA_USE_BF16": "1"})
    assert env["PJRT_DEVICE"] == "TPU" and env["XLA_USE_BF16"] == "1"


def test_stage_script_links_siblings(tmp_path):
    src = tmp_path / "proj"
    src.mkdir()
    (src / "train.py").write_text("x = 1\n")
    (src / "data.txt").write_text("d")
    out = stage_script("x = 2\n", src / "train.py", tmp_path / "staged")
    assert out.read_text() == "x = 2\n"
    assert (tmp_path / "staged" / "data.txt").read_text() == "d"


def test_harness_is_inert_without_record_variable(tmp_path):
    # Loaded as sitecustomize, it must neither import torch nor patch anything.
    code = "import sys; print('torch' in sys.modules, type(sys.meta_path[0]).__name__)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BF16_MIGRATE")}
    env["PYTHONPATH"] = str(HARNESS_DIR)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split()[0] == "False"
    assert "TorchImportWatcher" not in out


def test_harness_records_without_torch_import(tmp_path):
    # With the record variable but no torch use, the harness writes a zero-step record and
    # still has not imported torch.
    record = tmp_path / "r.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BF16_MIGRATE")}
    env.update(PYTHONPATH=str(HARNESS_DIR), BF16_MIGRATE_RECORD=str(record), BF16_MIGRATE_STEPS="3")
    code = "import sys; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    data = json.loads(record.read_text())
    assert data["steps"] == 0 and data["exit_reason"] == "script_exit" and data["root"] is True


def test_harness_records_where_each_legacy_variable_was_set(tmp_path):
    record = tmp_path / "r.json"
    script = tmp_path / "setup_env.py"
    script.write_text(
        "import os\n"
        'os.environ.update({"XLA_DOWNCAST_BF16": "1"})\n'
        'os.environ.setdefault("XLA_USE_BF16", "1")\n'
        'os.environ["XLA_USE_BF16"] = "0"\n'  # the first write is the one named
        'os.environ["OTHER"] = "1"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BF16_MIGRATE", "XLA_"))}
    env.update(
        PYTHONPATH=str(HARNESS_DIR),
        BF16_MIGRATE_RECORD=str(record),
        BF16_MIGRATE_LEGACY_VARIABLES=",".join(LEGACY_VARIABLES),
    )
    subprocess.run([sys.executable, str(script)], env=env, check=True)
    origin = json.loads(record.read_text())["legacy_env_origin"]
    assert origin == {"XLA_DOWNCAST_BF16": f"{script}:2", "XLA_USE_BF16": f"{script}:3"}


def test_harness_reads_the_parameters_after_the_outermost_step(tmp_path):
    """An FP32-master-weights subclass runs its base's step on FP32 copies swapped in; once a plain
    optimizer of that class is built, torch fires the global step hooks for the inner call too. The
    dtypes are the ones the step leaves, bf16, not the masters' (it read float32 and FAILed a right
    gpu-compatible migration's precision: bench/unseen/hunt9 sac_tanh). CPU torch, no device."""
    pytest.importorskip("torch")
    record = tmp_path / "r.json"
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\n\n\n"
        "class Master(torch.optim.Adam):\n"
        "    def step(self, closure=None):\n"
        "        params = [q for g in self.param_groups for q in g['params']]\n"
        "        low = [(q.data, q.grad) for q in params]\n"
        "        for q in params:\n"
        "            q.data, q.grad = q.data.float(), q.grad.float()\n"
        "        super().step()\n"
        "        for q, (data, grad) in zip(params, low):\n"
        "            data.copy_(q.data)\n"
        "            q.data, q.grad = data, grad\n\n\n"
        "p = torch.nn.Parameter(torch.zeros(4, dtype=torch.bfloat16))\n"
        "opt = Master([p], lr=0.1)\n"
        "torch.optim.Adam([torch.nn.Parameter(torch.zeros(2))], lr=0.1)  # a plain one of the class\n"
        "for _ in range(3):\n"
        "    loss = (p.float() * 2 - 1).pow(2).sum()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    opt.zero_grad()\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BF16_MIGRATE", "XLA_"))}
    env.update(PYTHONPATH=str(HARNESS_DIR), BF16_MIGRATE_RECORD=str(record), BF16_MIGRATE_STEPS="3")
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=120)
    data = json.loads(record.read_text())
    assert data["param_dtypes"] == {"bfloat16": 1}
    assert data["steps"] == 3 and len(data["losses"]) == 3


def test_harness_records_an_autograd_grad_loss_once_under_a_torch_function_mode(tmp_path):
    """``torch.autograd.grad(loss, params)`` under a torch-function mode (the dtype trace's): ``grad``
    dispatches to the mode through ``handle_torch_function(grad, ...)``, whose ``grad`` is the wrapped one,
    so the harness saw each call twice and recorded twice the loss in the traced runs (a hunt's SAM step:
    verify FAILed a right amp migration against its untraced control). CPU torch, no device."""
    pytest.importorskip("torch")
    record = tmp_path / "r.json"
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nfrom torch.overrides import TorchFunctionMode\n\n\n"
        "class Passing(TorchFunctionMode):\n"
        "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
        "        return func(*args, **(kwargs or {}))\n\n\n"
        "Passing().__enter__()\ntorch.manual_seed(0)\n"
        "model = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "x, y = torch.randn(16, 4), torch.randn(16, 1)\n"
        "for _ in range(3):\n"
        "    loss = ((model(x) - y) ** 2).mean()\n"
        "    grads = torch.autograd.grad(loss, list(model.parameters()))\n"
        "    for p, g in zip(model.parameters(), grads):\n"
        "        p.grad = g\n"
        "    opt.step()\n"
        "    print(repr(loss.item()))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BF16_MIGRATE", "XLA_"))}
    env.update(PYTHONPATH=str(HARNESS_DIR), BF16_MIGRATE_RECORD=str(record), BF16_MIGRATE_STEPS="3")
    done = subprocess.run(
        [sys.executable, str(script)], env=env, check=True, timeout=120, capture_output=True, text=True
    )
    printed = [float(line) for line in done.stdout.split()]
    data = json.loads(record.read_text())
    assert data["steps"] == 3
    assert data["losses"] == pytest.approx(printed, rel=1e-6)


@pytest.mark.xla
def test_harness_records_the_scripts_loss_under_a_reentrant_checkpoint(tmp_path):
    """A reentrant activation checkpoint recomputes its segment in the backward and calls
    ``torch.autograd.backward`` on it from autograd's engine, which runs an XLA tensor's backward on
    a thread of its own: that is no loss of the script (verify recorded the segments' sums, rising
    while the script's loss fell: bench/unseen/hunt10 hetero_tox). On the XLA CPU device, the
    recorded losses must be the printed ones (on torch's CPU device the engine runs in the calling
    thread, where the harness already knew it was inside a backward)."""
    pytest.importorskip("torch_xla")
    record = tmp_path / "r.json"
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nimport torch_xla\nfrom torch_xla.utils.checkpoint import checkpoint\n\n"
        "device = torch_xla.device()\ntorch.manual_seed(0)\n"
        "inp = torch.nn.Linear(8, 8).to(device)\n"
        "block = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh()).to(device)\n"
        "head = torch.nn.Linear(8, 1).to(device)\n"
        "opt = torch.optim.SGD([*inp.parameters(), *block.parameters(), *head.parameters()], lr=0.1)\n"
        "x = torch.randn(32, 8).to(device)\ny = x[:, :1].sin()\n"
        "for _ in range(4):\n"
        "    h = inp(x)\n"
        "    h = h + checkpoint(block, h)\n"
        "    loss = ((head(h) - y) ** 2).mean()\n"
        "    opt.zero_grad()\n"
        "    loss.backward()\n"
        "    opt.step()\n"
        "    torch_xla.sync()\n"
        "    print(repr(loss.item()))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BF16_MIGRATE", "XLA_"))}
    env.update(PYTHONPATH=str(HARNESS_DIR), BF16_MIGRATE_RECORD=str(record), BF16_MIGRATE_STEPS="4", PJRT_DEVICE="CPU")
    done = subprocess.run(
        [sys.executable, str(script)], env=env, check=True, timeout=300, capture_output=True, text=True
    )
    printed = [float(line) for line in done.stdout.split()]
    data = json.loads(record.read_text())
    assert data["steps"] == 4
    assert data["losses"] == pytest.approx(printed, rel=1e-6)


def test_format_report_renders_table_and_verdict():
    from bf16_migrate.verify import VerifyReport

    r = runs(LEGACY_LOSSES)
    v = judge(mode_named("stochastic"), r, requested_steps=20)
    rep = VerifyReport(script=Path("train.py"), mode=mode_named("stochastic"), steps=20, runs=r, verdict=v)
    text = format_report(rep)
    assert "step |" in text and "fp32-ref" in text and "rel. diff vs legacy" in text
    assert "matches    PASS" in text
    assert "only on Neuron" in text
    assert text.rstrip().endswith("VERDICT: PASS")
    json.dumps(report_dict(rep))


def test_the_bf16_modes_need_only_the_first_step_the_same():
    # FP32 master weights round the first AdamW update one bf16 ulp away from the legacy run's
    # (the factories part's autocast_flag): steps 2-3 differ, step 1 (no update yet) cannot
    one_ulp = [LEGACY_LOSSES[0]] + [x * (1 + 2**-8) for x in LEGACY_LOSSES[1:3]] + LEGACY_LOSSES[3:]
    v = judge(mode_named("gpu-compatible"), runs(one_ulp))
    assert status(v)["matches"] == PASS, part_of(v, "matches").detail
    assert "1 of the first 3 steps the same (rel. diff <= 0.0001, need 1)" in part_of(v, "matches").detail
    # stochastic too: the legacy run's bf16-rounded Python scalars can move its first update
    # (bench/unseen/simclr_launcher, SGD Nesterov); a first step that differs still fails both
    assert status(judge(mode_named("stochastic"), runs(one_ulp)))["matches"] == PASS
    differs_first = [LEGACY_LOSSES[0] * (1 + 2**-8)] + one_ulp[1:]
    for mode in ("stochastic", "gpu-compatible"):
        assert status(judge(mode_named(mode), runs(differs_first)))["matches"] == FAIL


def test_a_modes_tolerance_is_its_verify_table_in_rules():
    """The tolerances are data (rules/modes.toml ``[MODE.verify]``): a table with a key verify does
    not know, or without one it needs, is an error naming the table, not a default."""
    import pickle

    from bf16_migrate.rules import RuleError, mode_named
    from bf16_migrate.verify.compare import mode_tolerance

    table = dict(mode_named("gpu-compatible").verify)
    assert pickle.loads(pickle.dumps(mode_named("gpu-compatible"))).verify == table  # a Mode crosses processes
    assert mode_tolerance(mode_named("gpu-compatible"), table) == TOLERANCES["gpu-compatible"]
    assert TOLERANCES["gpu-compatible"].onset_min == table["onset_min"]
    with pytest.raises(RuleError, match=r"\[gpu-compatible.verify\].*onset_minimum"):
        mode_tolerance(mode_named("gpu-compatible"), {**table, "onset_minimum": 2})
    with pytest.raises(RuleError, match=r"\[amp.verify\]"):
        mode_tolerance(mode_named("amp"), {k: v for k, v in mode_named("amp").verify.items() if k != "drift_floor"})
    with pytest.raises(RuleError, match="baseline 'fp16'"):
        mode_tolerance(mode_named("amp"), {**mode_named("amp").verify, "baseline": "fp16"})
    assert TOLERANCES["amp"].autocast_control is not None
    assert TOLERANCES["amp"].autocast_control.baseline == "autocast"
    nested = dict(mode_named("amp").verify["autocast_control"])
    with pytest.raises(RuleError, match=r"\[amp.verify.autocast_control\].*onset_minimum"):
        mode_tolerance(
            mode_named("amp"), {**mode_named("amp").verify, "autocast_control": {**nested, "onset_minimum": 2}}
        )
    with pytest.raises(RuleError, match=r"\[amp.verify.autocast_control\]: baseline 'legacy'"):
        mode_tolerance(
            mode_named("amp"), {**mode_named("amp").verify, "autocast_control": {**nested, "baseline": "legacy"}}
        )


# An FP32 run 0.5% off the legacy run (precision gap 0.005: drift limit max(2 x 0.005, 0.01) = 0.01).
_NEAR_FP32 = [x * 1.005 for x in LEGACY_LOSSES]


def test_gpu_compatible_may_drift_from_the_legacy_run_toward_the_fp32_run():
    """FP32 master weights take the updates toward FP32's: 0.012 from the legacy run (past the limit)
    but 0.007 from the FP32 reference (within it) passes gpu-compatible's drift check, not stochastic's."""
    migrated = LEGACY_LOSSES[:3] + [x * 1.012 for x in LEGACY_LOSSES[3:]]
    v = judge(mode_named("gpu-compatible"), runs(migrated, reference=_NEAR_FP32))
    assert status(v)["matches"] == PASS, part_of(v, "matches").detail
    assert "within the band the two precisions span" in part_of(v, "matches").detail
    v = judge(mode_named("stochastic"), runs(migrated, reference=_NEAR_FP32))
    assert status(v)["matches"] == FAIL and "drift apart" in part_of(v, "matches").detail


def test_gpu_compatible_drifting_away_from_both_precisions_fails():
    migrated = LEGACY_LOSSES[:3] + [x * 1.03 for x in LEGACY_LOSSES[3:]]
    v = judge(mode_named("gpu-compatible"), runs(migrated, reference=_NEAR_FP32))
    assert status(v)["matches"] == FAIL, part_of(v, "matches").detail
    assert "outside the band" in part_of(v, "matches").detail


def test_the_band_does_not_let_an_fp32_run_pass_gpu_compatible():
    v = judge(mode_named("gpu-compatible"), runs(_NEAR_FP32, reference=_NEAR_FP32))
    assert status(v)["matches"] == FAIL  # its first steps are not the legacy run's


def _graph(bf16: int, total: int = 8) -> GraphStats:
    return GraphStats(matmuls=total, matmuls_bf16=bf16, matmuls_f32=total - bf16, step=12)


def test_amp_matmuls_autocast_itself_leaves_in_f32_pass_by_the_autocast_control():
    amp = [x * (1 + 2e-4) for x in FP32_LOSSES]
    r = runs(amp, param_dtypes={"float32": 6}, device_param_dtypes={"f32": 6}, graph=_graph(5))
    v = judge(mode_named("amp"), r)
    assert "3 of 8 matmuls of the step graph are not bf16 under autocast" in part_of(v, "precision").detail
    assert status(v)["precision"] == FAIL
    # the same program under autocast leaves as many in f32 (a spectral norm's power iteration): autocast's own
    r["autocast"] = rec("autocast", amp, param_dtypes={"float32": 6}, graph=_graph(5))
    v = judge(mode_named("amp"), r)
    assert status(v)["precision"] == PASS, part_of(v, "precision").detail
    assert "the 3 others are autocast's own" in part_of(v, "precision").detail
    # fewer there: the migrated run has a forward pass outside autocast
    r["autocast"] = rec("autocast", amp, param_dtypes={"float32": 6}, graph=_graph(7))
    v = judge(mode_named("amp"), r)
    assert status(v)["precision"] == FAIL
    assert "the autocast control has 1" in part_of(v, "precision").detail


def test_an_fp32_run_that_ran_under_the_switch_is_no_comparison():
    """A module outside what verify migrates set the switch in the FP32 reference run (a package's
    ``__init__`` on PYTHONPATH, a sitecustomize): every comparison with it would be void, and verify
    judged anyway; now it says so and stops (exit 2)."""
    from bf16_migrate.rules import mode_named
    from bf16_migrate.verify import _raise_unusable
    from bf16_migrate.verify.records import LEGACY, MIGRATED, REFERENCE, RunError, RunRecord

    runs = {
        MIGRATED: RunRecord(MIGRATED, losses=[1.0, 0.9]),
        LEGACY: RunRecord(LEGACY, losses=[1.0, 0.9], legacy_env={"XLA_USE_BF16": "1"}),
        REFERENCE: RunRecord(
            REFERENCE,
            losses=[1.0, 0.9],
            legacy_env={"XLA_USE_BF16": "1"},
            legacy_env_origin={"XLA_USE_BF16": "/work/pkg/__init__.py:8"},
        ),
    }
    with pytest.raises(RunError) as caught:
        _raise_unusable(mode_named("stochastic"), runs)
    assert "the reference run, meant to run without the legacy switch, ran under it" in str(caught.value)
    assert "XLA_USE_BF16=1 set at /work/pkg/__init__.py:8" in str(caught.value)
    runs[REFERENCE] = RunRecord(REFERENCE, losses=[1.0, 0.9], legacy_env={"XLA_USE_BF16": "0"})
    _raise_unusable(mode_named("stochastic"), runs)  # switched off there: an FP32 run


def test_bf16_parameters_on_the_host_fail_precision():
    """A module kept on the CPU (an embedding table beside a tower on the device) stayed float32 under
    the switch, which acts on XLA tensors only: a migration that casts it trains it in bf16 on the host,
    every other part equal (found by a hunt, PASSed before). The same float32 host parameters pass."""
    both = {"host_param_dtypes": {"float32": 2}}
    out = runs(LEGACY_LOSSES, host_param_dtypes={"bfloat16": 2})
    out["legacy"] = rec("legacy", LEGACY_LOSSES, **both)
    v = judge(mode_named("stochastic"), out, requested_steps=20)
    precision = next(p for p in v.parts if p.name == "precision")
    assert precision.status == FAIL and "parameters on the host are bfloat16 x2" in precision.detail
    out = runs(LEGACY_LOSSES, **both)
    out["legacy"] = rec("legacy", LEGACY_LOSSES, **both)
    assert judge(mode_named("stochastic"), out, requested_steps=20).passed


@pytest.mark.parametrize("mode", ["stochastic", "amp"])
def test_an_fp16_switch_that_did_nothing_expects_the_legacy_fp32_run(mode):
    """``XLA_USE_FP16=1`` has done nothing since torch-xla 2.5: the legacy run was FP32, and the right
    migration (the write removed, or kept where the script reads it) is that same FP32 run. verify failed
    it ("no bfloat16 parameters", advice to pass XLA_USE_BF16: a hunt's); now every part passes when its
    losses are the legacy run's, and a migration that made it bf16 fails."""
    fp32 = dict(param_dtypes={"float32": 6}, device_param_dtypes={"f32": 6})
    graph = GraphStats(matmuls=8, matmuls_bf16=0, matmuls_f32=8, step=20)
    legacy = rec("legacy", FP32_LOSSES, legacy_env={"XLA_USE_FP16": "1"}, graph=graph, **fp32)
    migrated = rec("migrated", FP32_LOSSES, legacy_env={"XLA_USE_FP16": "1"}, graph=graph, **fp32)
    reference = rec("reference", FP32_LOSSES, graph=graph, **fp32)
    v = judge(mode_named(mode), {"migrated": migrated, "legacy": legacy, "reference": reference}, requested_steps=20)
    assert part_of(v, "precision").status == PASS, part_of(v, "precision").detail
    assert "has done nothing since torch-xla 2.5" in part_of(v, "precision").detail
    assert v.passed, [(p.name, p.status, p.detail) for p in v.parts]
    cast = rec("migrated", FP32_LOSSES, graph=graph, param_dtypes={"bfloat16": 6}, device_param_dtypes={"bf16": 6})
    v = judge(mode_named(mode), {"migrated": cast, "legacy": legacy, "reference": reference}, requested_steps=20)
    assert (
        part_of(v, "precision").status == FAIL
        and "holds bf16 where the legacy run was FP32" in part_of(v, "precision").detail
    )


def test_training_on_the_host_in_both_runs_is_no_precision_problem():
    """A script fits its models on the CPU and evaluates them on the device (a hunt's ensemble): the
    optimizers hold host parameters only, float32 in the legacy run (the switch acts on XLA tensors
    only), so the migrated run's float32 host training and its losses equal to the FP32 reference's are
    right; bf16 host parameters the legacy run did not have still fail."""
    host = dict(param_dtypes={"float32": 6}, device_param_dtypes=None, host_param_dtypes={"float32": 6})
    legacy = rec("legacy", FP32_LOSSES, **host)
    migrated = rec("migrated", FP32_LOSSES, **host)
    reference = rec("reference", FP32_LOSSES, **host)
    v = judge(mode_named("stochastic"), {"migrated": migrated, "legacy": legacy, "reference": reference})
    p = part_of(v, "precision")
    assert p.status == PASS and "train on the host in both runs" in p.detail, p.detail
    cast = rec(
        "migrated",
        FP32_LOSSES,
        param_dtypes={"bfloat16": 6},
        device_param_dtypes=None,
        host_param_dtypes={"bfloat16": 6},
    )
    v = judge(mode_named("stochastic"), {"migrated": cast, "legacy": legacy, "reference": reference})
    assert part_of(v, "precision").status == FAIL and "on the host are bfloat16 x6" in part_of(v, "precision").detail


def test_a_stochastic_migration_that_leaves_stochastic_rounding_off_fails_precision():
    """The legacy script set XLA_USE_BF16 itself, which on Neuron had stochastic rounding on; a migration that
    casts the model but drops NEURON_RT_STOCHASTIC_ROUNDING_EN=1 is no stochastic migration, and the XLA CPU
    device, which has no stochastic rounding, shows nothing else of it (a hunt's hand text PASSed). A switch a
    launcher set (no write in the legacy process) is the launcher's to carry: not asked of the script. gpu-
    compatible does not switch it on."""
    written = {"XLA_USE_BF16": "/u/train.py:3"}
    out = runs(LEGACY_LOSSES, rounding_env="")
    out["legacy"] = rec("legacy", LEGACY_LOSSES, legacy_env_origin=written)
    v = judge(mode_named("stochastic"), out, requested_steps=20)
    precision = part_of(v, "precision")
    assert precision.status == FAIL and "NEURON_RT_STOCHASTIC_ROUNDING_EN unset" in precision.detail
    assert "XLA_USE_BF16" in precision.detail
    out = runs(LEGACY_LOSSES, rounding_env="1")
    out["legacy"] = rec("legacy", LEGACY_LOSSES, legacy_env_origin=written)
    assert judge(mode_named("stochastic"), out, requested_steps=20).passed
    assert judge(mode_named("stochastic"), runs(LEGACY_LOSSES, rounding_env=""), requested_steps=20).passed
    out = runs(LEGACY_LOSSES, rounding_env="")
    out["legacy"] = rec("legacy", LEGACY_LOSSES, legacy_env_origin=written)
    assert part_of(judge(mode_named("gpu-compatible"), out, requested_steps=20), "precision").status == PASS


def test_a_launchers_switch_whose_work_tree_launcher_sets_no_stochastic_rounding_fails_precision(tmp_path):
    """``--against``: the legacy run's XLA_USE_BF16 came from a launcher (no write in the legacy process), and the
    launcher as the work tree has it sets no NEURON_RT_STOCHASTIC_ROUNDING_EN (a hand text dropped it from both:
    bench/unseen/hunt35 sr_launcher, a false PASS). FAIL; with the variable in the launcher, or the launcher not
    read (verify's own migration writes it there), as before."""
    from types import SimpleNamespace

    from bf16_migrate.verify import _launcher_rounding, _Legacy

    out = runs(LEGACY_LOSSES, rounding_env="", rounding_launcher="")
    precision = part_of(judge(mode_named("stochastic"), out, requested_steps=20), "precision")
    assert precision.status == FAIL and "the launcher that set XLA_USE_BF16 for the legacy run sets none now" in (
        precision.detail
    )
    for launcher in ("1", None):
        out = runs(LEGACY_LOSSES, rounding_env="", rounding_launcher=launcher)
        assert judge(mode_named("stochastic"), out, requested_steps=20).passed
    (tmp_path / "run.sh").write_text("#!/bin/bash\npython train.py\n")
    legacy = _Legacy(None, None, None, {}, SimpleNamespace(work_root=tmp_path))
    assert _launcher_rounding(mode_named("stochastic"), legacy, ["run.sh:2"]) == ""
    (tmp_path / "run.sh").write_text("#!/bin/bash\nNEURON_RT_STOCHASTIC_ROUNDING_EN=1 python train.py\n")
    assert _launcher_rounding(mode_named("stochastic"), legacy, ["run.sh:2"]) == "1"
    assert _launcher_rounding(mode_named("stochastic"), legacy, ["--legacy-env"]) is None
    assert _launcher_rounding(mode_named("gpu-compatible"), legacy, ["run.sh:2"]) is None


def test_amp_autocast_control_that_failed_after_its_steps_still_holds_them():
    """bench/unseen/hunt33 mod_pair: the autocast control made the migrated run's steps, its losses the same
    at every one, then raised in the script's tail (``model(x).cpu().numpy()`` under its autocast: ``TypeError:
    Got unsupported ScalarType BFloat16``). Its steps are autocast's numerics all the same: PASS by them. A
    control that failed before making the migrated run's steps holds nothing: FAIL, unusable."""
    r = _amp_runs()
    r["autocast"] = rec("autocast", _SHALLOW_AMP)
    r["autocast"].error = "exited with code 1\nTypeError: Got unsupported ScalarType BFloat16"
    assert not r["autocast"].ok
    matches = part_of(judge(mode_named("amp"), r), "matches")
    assert matches.status == PASS, matches.detail
    steps = len(_SHALLOW_AMP)
    assert f"(it failed after the migrated run's {steps} steps: TypeError: Got unsupported ScalarType BFloat16)" in (
        matches.detail
    )
    r["autocast"] = rec("autocast", _SHALLOW_AMP[:5])
    r["autocast"].error = "exited with code 1"
    matches = part_of(judge(mode_named("amp"), r), "matches")
    assert matches.status == FAIL and "is unusable (exited with code 1)" in matches.detail
