"""verify of a script that does not train: judged on what its runs hand the host.

Unit tests (no torch): the host-output samples read from a child's trace record and moved to
the user's paths, an inference run recognised by the collector (and a script that exits non-zero
or hands nothing over is still an error), the pairing by the user's line and occurrence, the
value comparison (bf16 noise passes; a far answer, a missing output, another shape, labels that
differ fail; NaN in both runs is equal), the amp bar widened by the legacy run's distance.

End to end on the XLA CPU device (``fixtures/inference/scorer``, our own writing: a classifier
scoring a queue, its probabilities leaving with ``.cpu()``, labels with ``.tolist()``, the mean
confidence with ``.item()``): the codemod's migration PASSes in every mode; the switch deleted
alone (the model computes in f32) does not PASS.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from bf16_migrate.rules import mode_named
from bf16_migrate.verify.collect import _diagnose
from bf16_migrate.verify.outputs import distance, judge_outputs, outputs_part
from bf16_migrate.verify.parts import FAIL, INCONCLUSIVE, PASS
from bf16_migrate.verify.records import AUTOCAST, LEGACY, MIGRATED, REFERENCE, RunRecord, RunSpec
from bf16_migrate.verify.trace import Trace
from bf16_migrate.verify.trace_findings import TraceSources

from conftest import FIXTURES, part_of

SCRIPT = "/work/user/score.py"
SCORER = FIXTURES / "inference" / "scorer"


def _output(line: int, values: Sequence[float], occurrence: int = 0, floating: bool = True, **more) -> dict:
    return {
        "file": SCRIPT,
        "line": line,
        "col": 4,
        "op": "Tensor.cpu",
        "occurrence": occurrence,
        "seen": occurrence + 1,
        "dtype": "float32" if floating else "int64",
        "floating": floating,
        "shape": [len(values)],
        "numel": len(values),
        "values": values,
        **more,
    }


def _record(name: str, *outputs: dict, losses: list[float] | None = None) -> RunRecord:
    trace = Trace.from_json({"events": [], "outputs": list(outputs), "calls": 10})
    return RunRecord(name, losses=list(losses or []), backward_calls=0 if not losses else len(losses), trace=trace)


def _sources(**texts: str) -> TraceSources:
    user = {SCRIPT: "\n".join(f"line {i}" for i in range(1, 60)) + "\n"}
    return TraceSources(lambda path: user.get(path), {name: {SCRIPT: text} for name, text in texts.items()}, f32=True)


VALUES = [0.1 * i + 0.05 for i in range(40)]


def _noise(values: list[float], rel: float) -> list[float]:
    return [v * (1 + rel) for v in values]


def test_host_outputs_are_read_from_the_record_and_moved_to_the_users_paths():
    trace = Trace.from_json({"events": [], "outputs": [_output(7, [1.0, 2.0], file="/tmp/run/score.py")]})
    assert trace is not None
    trace.with_paths({"/tmp/run": "/work/user"})
    (out,) = trace.outputs
    assert (out.file, out.line, out.op, out.values, out.shape) == (SCRIPT, 7, "Tensor.cpu", [1.0, 2.0], (2,))
    again = Trace.from_json(trace.to_dict())
    assert again is not None and again.outputs == trace.outputs  # the --json form reads back
    bad = Trace.from_json({"events": [], "outputs": [{"file": SCRIPT}]})
    assert bad is not None and not bad.outputs and "host output could not be read" in bad.errors[0]


def _diagnosed(rec: RunRecord, returncode: int) -> RunRecord:
    spec = RunSpec("migrated", Path(SCRIPT), Path("/work/user"), {}, steps=20)
    _diagnose(rec, spec, returncode, False, [], {"losses": []}, None)
    return rec


def test_a_run_that_hands_the_host_results_without_training_is_an_inference_run():
    rec = _diagnosed(_record(MIGRATED, _output(7, VALUES)), 0)
    assert rec.error is None and rec.inference and rec.ok
    crashed = _diagnosed(_record(MIGRATED, _output(7, VALUES)), 1)
    assert not crashed.inference and "exited with code 1" in (crashed.error or "")
    nothing = _diagnosed(_record(MIGRATED), 0)
    assert not nothing.ok and "without calling backward()" in (nothing.error or "")


def test_the_same_line_handing_the_host_its_values_by_another_call_is_paired():
    """``.to("cpu")`` in the legacy script, ``.float().cpu()`` in a right hand text: the same values leave the
    device at the same line through another call. Paired by line, shape and kind (a false FAIL before:
    "0 host outputs paired", bench/unseen/hunt35 exit_spelling); a sample of another shape is not."""
    runs = {
        LEGACY: _record(LEGACY, _output(7, VALUES, op="Tensor.to")),
        MIGRATED: _record(MIGRATED, _output(7, _noise(VALUES, 2**-9))),
        REFERENCE: _record(REFERENCE, _output(7, _noise(VALUES, 0.02), op="Tensor.to")),
    }
    part = outputs_part(mode_named("stochastic"), runs, _sources())
    assert part.status == PASS and part.figures["paired"] == 1, part.detail
    runs[MIGRATED] = _record(MIGRATED, _output(7, VALUES[:20]))
    assert outputs_part(mode_named("stochastic"), runs, _sources()).status != PASS


def test_top_k_ids_that_swap_on_near_ties_no_more_than_the_fp32_references_are_inconclusive_not_fail():
    """A retrieval script hands the host its top-k ids: explicit bf16 rounds some scores one ulp apart from the
    switch's, and near ties swap (bench/unseen/hunt35 topk_ids: 6.1% of the ids, limit 5%, the FP32 reference
    9.3%). Only integer values past the bar, no more than the reference's, the floats within it: INCONCLUSIVE.
    More flips than the reference's, or floats past the bar too: FAIL as before."""
    ids = list(range(100))
    swapped = [i + 1000 if i % 10 == 0 else i for i in ids]  # 10 of 100 differ: 7.1% of the 140 values
    more = [i + 1000 if i % 5 == 0 else i for i in ids]  # 20 of 100
    ints = {"floating": False}

    def runs(migrated_ids, migrated_floats=VALUES):
        return {
            LEGACY: _record(LEGACY, _output(7, VALUES), _output(8, ids, **ints)),
            MIGRATED: _record(MIGRATED, _output(7, migrated_floats), _output(8, migrated_ids, **ints)),
            REFERENCE: _record(REFERENCE, _output(7, _noise(VALUES, 0.02)), _output(8, swapped, **ints)),
        }

    part = outputs_part(mode_named("stochastic"), runs(swapped), _sources())
    assert part.status == INCONCLUSIVE, part.detail
    assert "only integer values are past the bar: 10.0% of them differ" in part.detail
    assert outputs_part(mode_named("stochastic"), runs(more), _sources()).status == FAIL
    assert outputs_part(mode_named("stochastic"), runs(swapped, _noise(VALUES, 0.05)), _sources()).status == FAIL


def test_outputs_the_fp32_reference_is_as_far_from_as_the_migration_are_inconclusive_not_fail():
    """A sampling script: one top-p draw flips on one bf16 rounding of its temperature, and the sampled answer of
    that step is wholly different (bench/unseen/hunt37 kv_generate, a right migration FAILed). Where the FP32
    reference is as far from the legacy run in each figure past the bar, the outputs cannot tell the migration:
    INCONCLUSIVE. Where the reference is near, FAIL as before."""
    other = [v * 3 for v in VALUES[:10]]

    def runs(reference_draw):
        return {
            LEGACY: _record(LEGACY, _output(7, VALUES), _output(9, VALUES[:10])),
            MIGRATED: _record(MIGRATED, _output(7, VALUES), _output(9, other)),
            REFERENCE: _record(REFERENCE, _output(7, _noise(VALUES, 0.001)), _output(9, reference_draw)),
        }

    part = outputs_part(mode_named("stochastic"), runs(other), _sources())
    assert part.status == INCONCLUSIVE and "cannot tell this migration" in part.detail, part.detail
    assert outputs_part(mode_named("stochastic"), runs(_noise(VALUES[:10], 0.001)), _sources()).status == FAIL


def test_bf16_noise_passes_and_the_reference_distance_is_reported():
    runs = {
        LEGACY: _record(LEGACY, _output(7, VALUES), _output(7, VALUES, occurrence=1)),
        MIGRATED: _record(MIGRATED, _output(7, VALUES), _output(7, _noise(VALUES, 2**-9), occurrence=1)),
        REFERENCE: _record(REFERENCE, _output(7, _noise(VALUES, 0.02)), _output(7, _noise(VALUES, 0.02), occurrence=1)),
    }
    part = outputs_part(mode_named("stochastic"), runs, _sources())
    assert part.status == PASS, part.detail
    assert part.figures["paired"] == 2 and part.figures["values"] == 80
    assert "the reference run: median 0.02" in part.detail


def test_an_answer_far_from_the_legacy_runs_fails_and_is_named():
    runs = {
        LEGACY: _record(LEGACY, _output(7, VALUES), _output(9, VALUES)),
        MIGRATED: _record(MIGRATED, _output(7, VALUES), _output(9, _noise(VALUES, 0.1))),
    }
    part = outputs_part(mode_named("gpu-compatible"), runs, _sources())
    assert part.status == FAIL and "farthest: score.py:9 Tensor.cpu" in part.detail


def test_a_missing_output_another_shape_and_other_labels_fail():
    stochastic = mode_named("stochastic")
    missing = {
        LEGACY: _record(LEGACY, _output(7, VALUES), _output(9, VALUES)),
        MIGRATED: _record(MIGRATED, _output(7, VALUES)),
    }
    part = outputs_part(stochastic, missing, _sources())
    assert part.status == FAIL and "did not hand the host score.py:9 Tensor.cpu" in part.detail
    shape = {LEGACY: _record(LEGACY, _output(7, VALUES)), MIGRATED: _record(MIGRATED, _output(7, VALUES[:20]))}
    part = outputs_part(stochastic, shape, _sources())
    assert part.status == FAIL and "score.py:7 Tensor.cpu gave float32[20]" in part.detail
    labels = [i % 4 for i in range(40)]
    other = [(i + 1) % 4 if i < 8 else i % 4 for i in range(40)]  # 8 of 40 labels differ: 20%
    runs = {
        LEGACY: _record(LEGACY, _output(7, labels, floating=False)),
        MIGRATED: _record(MIGRATED, _output(7, other, floating=False)),
    }
    assert outputs_part(stochastic, runs, _sources()).status == FAIL


def test_the_migrated_copys_lines_are_placed_in_the_users_file():
    # the migration added a line (a model cast) above the exit: the migrated run's line 8 is the user's 7
    user_lines = [f"line {i}" for i in range(1, 60)]
    migrated_text = "\n".join(user_lines[:3] + ["model.to(torch.bfloat16)"] + user_lines[3:]) + "\n"
    runs = {LEGACY: _record(LEGACY, _output(7, VALUES)), MIGRATED: _record(MIGRATED, _output(8, VALUES))}
    assert outputs_part(mode_named("stochastic"), runs, _sources(migrated=migrated_text)).status == PASS
    # a host copy in a line the migration added (its host_float32 helper) is the migration's, not the user's
    runs[MIGRATED] = _record(MIGRATED, _output(4, VALUES), _output(8, VALUES))
    assert outputs_part(mode_named("stochastic"), runs, _sources(migrated=migrated_text)).status == PASS
    assert outputs_part(mode_named("stochastic"), runs, _sources()).status == FAIL  # unplaced: no partner


def test_nan_in_both_runs_is_equal_and_against_a_number_is_far():
    with_nan = [*VALUES[:30], math.nan, *VALUES[31:]]
    legacy = _record(LEGACY, _output(7, with_nan))
    same = distance(MIGRATED, _record(MIGRATED, _output(7, with_nan)), LEGACY, legacy, _sources(), 2**-5)
    assert same.median == 0 and same.far_share == 0
    other = distance(MIGRATED, _record(MIGRATED, _output(7, VALUES)), LEGACY, legacy, _sources(), 2**-5)
    assert other.far_share == pytest.approx(1 / 40)


def test_amp_is_held_to_the_fp32_reference_as_far_as_the_legacy_run_is():
    amp = mode_named("amp")
    runs = {
        REFERENCE: _record(REFERENCE, _output(7, VALUES)),
        LEGACY: _record(LEGACY, _output(7, _noise(VALUES, 0.02))),  # full bf16: 2% from FP32
        MIGRATED: _record(MIGRATED, _output(7, _noise(VALUES, 0.01))),  # autocast: closer
    }
    part = outputs_part(amp, runs, _sources())
    assert part.status == PASS and part.figures["baseline"] == REFERENCE, part.detail
    runs[MIGRATED] = _record(MIGRATED, _output(7, _noise(VALUES, 0.03)))  # farther than full bf16
    assert outputs_part(amp, runs, _sources()).status == FAIL


def test_a_comparison_run_that_trained_or_failed_is_not_an_answer():
    stochastic = mode_named("stochastic")
    trained = {LEGACY: _record(LEGACY, losses=[1.0, 0.9]), MIGRATED: _record(MIGRATED, _output(7, VALUES))}
    verdict = judge_outputs(stochastic, trained, _sources())
    assert verdict.status == FAIL and "changed what the script does" in verdict.parts[0].detail
    failed = RunRecord(LEGACY, error="exited with code 1")
    verdict = judge_outputs(stochastic, {LEGACY: failed, MIGRATED: _record(MIGRATED, _output(7, VALUES))}, _sources())
    assert verdict.status == INCONCLUSIVE and "exited with code 1" in verdict.parts[1].detail


def test_an_inference_migration_that_leaves_stochastic_rounding_off_fails_in_stochastic_mode():
    """An inference script that set XLA_USE_BF16 itself, migrated with the model cast but without
    NEURON_RT_STOCHASTIC_ROUNDING_EN=1: its outputs on the CPU device are the legacy run's all the same (a hunt's
    hand text PASSed), but it is no stochastic migration."""
    stochastic = mode_named("stochastic")
    legacy = replace(
        _record(LEGACY, _output(7, VALUES)),
        legacy_env={"XLA_USE_BF16": "1"},
        legacy_env_origin={"XLA_USE_BF16": f"{SCRIPT}:3"},
    )
    off = replace(_record(MIGRATED, _output(7, VALUES)), legacy_env={}, rounding_env="")
    verdict = judge_outputs(stochastic, {LEGACY: legacy, MIGRATED: off}, _sources())
    assert verdict.status == FAIL and "NEURON_RT_STOCHASTIC_ROUNDING_EN unset" in verdict.parts[-1].detail
    on = replace(off, rounding_env="1")
    assert judge_outputs(stochastic, {LEGACY: legacy, MIGRATED: on}, _sources()).status == PASS


# -- end to end on the XLA CPU device --------------------------------------------------------------


def _scorer(tmp_path: Path) -> Path:
    shutil.copytree(SCORER, tmp_path / "scorer")
    return tmp_path / "scorer" / "score.py"


@pytest.mark.xla
@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible", "amp"])
def test_the_codemods_migration_of_an_inference_script_passes(mode, tmp_path):
    from bf16_migrate.verify import verify_script

    report = verify_script(_scorer(tmp_path), mode, timeout=300)
    assert report.runs[MIGRATED].inference and report.runs[LEGACY].inference
    assert report.verdict.status == PASS, [(p.name, p.status, p.detail) for p in report.parts]
    matches = part_of(report.verdict, "matches")
    assert matches is not None and matches.figures["paired"] >= 9  # 3 batches x (.cpu(), .tolist(), .item() x2)


@pytest.mark.xla
def test_the_switch_deleted_alone_does_not_pass(tmp_path):
    from bf16_migrate.verify import verify_script

    script = _scorer(tmp_path)
    deleted = script.read_text().replace('os.environ["XLA_USE_BF16"] = "1"\n', "")
    report = verify_script(script, "stochastic", migrated_source=deleted, timeout=300)
    assert report.verdict.status == FAIL, [(p.name, p.status, p.detail) for p in report.parts]
    assert report.verdict.part("trace") is not None and part_of(report.verdict, "trace").status == FAIL


SAVER = """import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch_xla
import torch_xla.core.xla_model as xm


def main():
    torch.manual_seed(0)
    device = torch_xla.device()
    encoder = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(), torch.nn.Linear(24, 8)).to(device)
    with torch.no_grad():
        embeddings = encoder(torch.randn(32, 12).to(device))
        ids = embeddings.argmax(-1)
    xm.save({"embeddings": embeddings, "ids": ids}, "embeddings.pt")


main()
"""


@pytest.mark.xla
def test_an_inference_script_that_only_saves_with_xm_save_is_judged_on_the_file(tmp_path):
    """Nothing leaves the device in the user's own code: ``xm.save`` copies to the host (a library
    frame), and ``torch.save`` writes the host tensors; they are the outputs compared."""
    from bf16_migrate.verify import verify_script

    script = tmp_path / "embed.py"
    script.write_text(SAVER)
    report = verify_script(script, "stochastic", timeout=300)
    assert report.verdict.status == PASS, [(p.name, p.status, p.detail) for p in report.parts]
    legacy_trace, migrated_trace = report.runs[LEGACY].trace, report.runs[MIGRATED].trace
    assert legacy_trace is not None and migrated_trace is not None
    legacy = legacy_trace.outputs
    assert sorted(o.op for o in legacy) == ["torch.save #0", "torch.save #1"]
    assert part_of(report.verdict, "matches").figures["paired"] == 2
    # the migrated run also took the host copy the migration's host_float32 helper makes (a line the migration
    # added: left out of the pairing); what torch.save wrote is float32, as the legacy run's was
    saved = [o for o in migrated_trace.outputs if o.op.startswith("torch.save")]
    assert {o.dtype for o in saved} == {"float32", "int64"}


def test_against_a_revision_the_legacy_lines_are_placed_in_the_migrated_file():
    """``verify --against REV``: the user's file is the migrated one (a helper added at the top, the
    exit wrapped in it), the legacy run ran the revision's text. The legacy line is placed in the
    user's file where the migration kept it (the wrapped line keeps all of the legacy one)."""
    legacy_text = "import torch\n\nprobs = model(x)\nout = probs.cpu().numpy()\n"
    migrated_text = (
        "import torch\n\n\ndef host_float32(t):\n    return t.cpu().float()\n\n\n"
        "probs = model(x)\nout = host_float32(probs.cpu()).numpy()\n"
    )
    sources = TraceSources(lambda path: migrated_text if path == SCRIPT else None, {LEGACY: {SCRIPT: legacy_text}})
    runs = {
        LEGACY: _record(LEGACY, _output(4, VALUES)),
        # the helper's copy (in the migration's host_float32), then the user's
        MIGRATED: _record(MIGRATED, _output(5, VALUES, function="host_float32"), _output(9, VALUES)),
    }
    part = outputs_part(mode_named("stochastic"), runs, sources)
    assert part.status == PASS and part.figures["paired"] == 1, part.detail


# -- a script that updates its parameters by hand (no torch.optim optimizer) ------------------------
BY_HAND = FIXTURES / "by_hand" / "prototypes"


def test_the_parameters_a_backward_reaches_are_the_leaves_of_its_graph():
    """A script without a torch.optim optimizer: the child takes each backward as a step and reads
    the parameters' dtypes from the leaves of the loss's autograd graph, each once."""
    import importlib.util

    import torch

    spec = importlib.util.spec_from_file_location(
        "harness_under_test", Path(__file__).parents[1] / "bf16_migrate" / "verify" / "_child" / "sitecustomize.py"
    )
    assert spec is not None and spec.loader is not None
    source = Path(spec.origin or "").read_text()
    namespace: dict[str, object] = {}
    exec(source[source.index("class _ByHand") : source.index("class _Recorder")], namespace)
    w = torch.nn.Parameter(torch.zeros(3, 2))
    b = torch.nn.Parameter(torch.zeros(2, dtype=torch.bfloat16))
    x = torch.randn(4, 3)
    loss = ((x @ w + b) ** 2).sum() + (x @ w).sum()  # w reached twice, x no leaf of the graph
    by_hand = namespace["_ByHand"](loss)  # type: ignore[operator]
    leaves = by_hand.param_groups[0]["params"]
    assert sorted(tuple(p.shape) for p in leaves) == [(2,), (3, 2)]
    assert type(by_hand).__name__ == "(update by hand)" and by_hand.state == {}


@pytest.mark.xla
def test_a_script_that_updates_its_parameters_by_hand_is_verified_both_ways(tmp_path):
    """Each backward is a step: the codemod's migration PASSes (bf16 parameters read from the
    loss's graph); the switch deleted alone FAILs."""
    from bf16_migrate.verify import verify_script

    shutil.copytree(BY_HAND, tmp_path / "by_hand")
    script = tmp_path / "by_hand" / "train.py"
    report = verify_script(script, "stochastic", steps=8, timeout=300)
    assert report.verdict.status == PASS, [(p.name, p.status, p.detail) for p in report.parts]
    assert report.runs[MIGRATED].steps == 8 and report.runs[MIGRATED].param_dtypes == {"bfloat16": 2}
    deleted = script.read_text().replace('os.environ["XLA_USE_BF16"] = "1"\n', "")
    wrong = verify_script(script, "stochastic", steps=8, migrated_source=deleted, timeout=300)
    assert wrong.verdict.status == FAIL
    assert part_of(wrong.verdict, "precision").status == FAIL


def test_a_script_that_updates_its_parameters_by_hand_is_migrated_but_not_in_gpu_compatible_mode():
    """stochastic casts the model (its update by hand ran in bf16 under the switch too); amp puts the
    forward and loss under autocast; gpu-compatible keeps the switch (BFM017 ``by_hand``): its FP32
    master weights live in an optimizer the script does not build."""
    from bf16_migrate.python import migrate_source
    from bf16_migrate.python.outcome import Refusal

    source = (BY_HAND / "train.py").read_text()
    stochastic = migrate_source(source, "stochastic", "train.py")
    assert "    model.to(torch.bfloat16)\n" in stochastic.code and 'XLA_USE_BF16"] =' not in stochastic.code
    amp = migrate_source(source, "amp", "train.py")
    assert 'with torch.autocast("xla", dtype=torch.bfloat16):' in amp.code
    kept = migrate_source(source, "gpu-compatible", "train.py")
    assert kept.code == source
    finding = next(d for d in kept.diagnostics if d.code == "BFM017")
    assert "updates its parameters by hand (`loss.backward` at line 42" in finding.message
    assert [why for why, _ in kept.outcome.refused()] == [Refusal.MASTER_WEIGHTS]


def test_one_sample_wholly_different_fails_and_is_named_and_amp_allows_the_legacy_runs_farthest():
    """A sample whose own median is beyond ``outputs_far`` fails even with the overall figures within
    their bars, and the detail says it is that test; in amp (the FP32 run the baseline) the bar is as
    far as the legacy run's farthest sample may be (``drift_factor`` times it): a right amp migration
    of a beam search FAILed on a sample the legacy run had as far (bench/unseen/hunt10 beam_notebook)."""
    samples = [_output(line, VALUES) for line in range(10, 40)]
    off = _output(41, _noise(VALUES, 0.06))  # one of 31 samples 6% off: overall median 0, far share 3.2%
    stochastic = mode_named("stochastic")
    runs = {LEGACY: _record(LEGACY, *samples, _output(41, VALUES)), MIGRATED: _record(MIGRATED, *samples, off)}
    part = outputs_part(stochastic, runs, _sources())
    assert part.status == FAIL and "one sample is wholly different: score.py:41 Tensor.cpu" in part.detail
    amp = mode_named("amp")
    far_legacy = _output(41, _noise(VALUES, 0.07))
    runs = {
        REFERENCE: _record(REFERENCE, *samples, _output(41, VALUES)),
        LEGACY: _record(LEGACY, *samples, far_legacy),
        MIGRATED: _record(MIGRATED, *samples, off),
    }
    assert outputs_part(amp, runs, _sources()).status == PASS
    runs[LEGACY] = _record(LEGACY, *samples, _output(41, VALUES))
    assert outputs_part(amp, runs, _sources()).status == FAIL


def test_amp_past_the_fp32_bar_passes_when_it_hands_the_host_what_the_autocast_control_does():
    """amp, a sample farther from the FP32 reference than the legacy run's farthest (a beam search whose
    survivors change: bench/unseen/hunt10 beam_notebook, 0.044 against 0.035): PASS when the autocast
    control (the FP32 script under autocast, the same program) handed the host the same to the rounding;
    FAIL, both figures said, when it did not, or when it is unusable."""
    amp = mode_named("amp")
    samples = [_output(line, VALUES) for line in range(10, 40)]
    off = _output(41, _noise(VALUES, 0.06))
    runs = {
        REFERENCE: _record(REFERENCE, *samples, _output(41, VALUES)),
        LEGACY: _record(LEGACY, *samples, _output(41, _noise(VALUES, 0.04))),
        MIGRATED: _record(MIGRATED, *samples, off),
    }
    assert outputs_part(amp, runs, _sources()).status == FAIL
    runs[AUTOCAST] = _record(AUTOCAST, *samples, _output(41, _noise(VALUES, 0.0601)))
    part = outputs_part(amp, runs, _sources())
    assert part.status == PASS, part.detail
    assert "vs the autocast control" in part.detail and "score.py:41" in part.detail
    assert part.figures["autocast_control"]["passed"] is True
    runs[AUTOCAST] = _record(AUTOCAST, *samples, _output(41, VALUES))  # autocast gives the FP32 answer
    part = outputs_part(amp, runs, _sources())
    assert part.status == FAIL and "does not hand the host what autocast computes either" in part.detail
    runs[AUTOCAST] = _record(AUTOCAST, *samples, _output(41, _noise(VALUES, 0.06)), losses=[1.0])  # it trained
    assert "is unusable" in outputs_part(amp, runs, _sources()).detail


def test_amp_outputs_equal_to_the_fp32_references_where_the_legacy_runs_differ_fail():
    """A script verify judges on its outputs (no backward: a step through ``torch.func.grad``, or an
    inference script) whose amp migration left everything FP32 hands the host exactly the FP32 run's
    floats, while the full-bf16 legacy run's differ: nothing ran under autocast (a hunt's DP-SGD script
    PASSed so). The autocast control decides when it was made, unless it hands exactly the FP32 values
    too: then nothing shows autocast at work in either, and the outputs cannot tell (INCONCLUSIVE; a
    control that equals FP32 PASSed a migration whose autocast was disabled: bench/unseen/hunt12)."""
    amp = mode_named("amp")
    samples = [_output(line, VALUES) for line in range(10, 20)]
    runs = {
        REFERENCE: _record(REFERENCE, *samples),
        LEGACY: _record(LEGACY, *[_output(line, _noise(VALUES, 0.004)) for line in range(10, 20)]),
        MIGRATED: _record(MIGRATED, *samples),
    }
    part = outputs_part(amp, runs, _sources())
    assert part.status == FAIL and "nothing they depend on ran in bf16 under autocast" in part.detail
    runs[MIGRATED] = _record(MIGRATED, *[_output(line, _noise(VALUES, 0.001)) for line in range(10, 20)])
    assert outputs_part(amp, runs, _sources()).status == PASS  # autocast's rounding: a right migration
    runs[MIGRATED] = _record(MIGRATED, *samples)
    runs[AUTOCAST] = _record(AUTOCAST, *samples)
    assert outputs_part(amp, runs, _sources()).status == INCONCLUSIVE
    runs[LEGACY] = _record(LEGACY, *samples)  # the legacy run equal too: the outputs cannot tell
    del runs[AUTOCAST]
    assert outputs_part(amp, runs, _sources()).status == PASS


def test_amp_outputs_that_amplify_rounding_are_inconclusive_when_autocast_alone_moves_them_as_far():
    """Outputs that amplify rounding (a difference of two losses divided by a small step): the migrated
    run is past the FP32 bar and not the autocast control's either, but the control itself is as far
    from the FP32 reference. The outputs cannot tell a right autocast from a wrong one: INCONCLUSIVE,
    not FAIL. A control near the FP32 answer still FAILs it (bench/unseen/hunt12 mezo_jenkins: its one
    autocast region reused the cached bf16 weights across an in-place perturbation, a wrong migration)."""
    amp = mode_named("amp")
    runs = {
        REFERENCE: _record(REFERENCE, _output(7, VALUES)),
        LEGACY: _record(LEGACY, _output(7, _noise(VALUES, 0.014))),
        MIGRATED: _record(MIGRATED, _output(7, _noise(VALUES, 0.017))),
        AUTOCAST: _record(AUTOCAST, _output(7, _noise(VALUES, -0.018))),
    }
    part = outputs_part(amp, runs, _sources())
    assert part.status == INCONCLUSIVE, part.detail
    assert "cannot tell a right autocast from a wrong one" in part.detail
    runs[AUTOCAST] = _record(AUTOCAST, _output(7, _noise(VALUES, -0.002)))
    assert outputs_part(amp, runs, _sources()).status == FAIL


def test_amp_equal_to_fp32_is_inconclusive_when_the_autocast_control_is_equal_to_fp32_too():
    """The migrated run hands the host exactly the FP32 reference's values, where the legacy run's
    differ: nothing ran in bf16. An autocast control that hands exactly the FP32 values as well cannot
    vouch for it (its autocast changed nothing either: the same disabled condition): INCONCLUSIVE,
    not PASS (bench/unseen/hunt12 fwdgrad_argv's false PASS)."""
    amp = mode_named("amp")
    runs = {
        REFERENCE: _record(REFERENCE, _output(7, VALUES)),
        LEGACY: _record(LEGACY, _output(7, _noise(VALUES, 0.01))),
        MIGRATED: _record(MIGRATED, _output(7, VALUES)),
        AUTOCAST: _record(AUTOCAST, _output(7, VALUES)),
    }
    part = outputs_part(amp, runs, _sources())
    assert part.status == INCONCLUSIVE and "cannot tell whether the migration's autocast works" in part.detail


def test_amp_equal_to_fp32_fails_where_the_autocast_control_is_not():
    """The migrated run hands the host exactly the FP32 reference's values while the autocast control's
    differ from them, however little: autocast changes these outputs and the migration ran none of them
    under it (an amp text without its autocast block, or the switch deleted alone: bench/unseen/hunt27
    DWA1, DW0 PASSed so, the control being within the bar of the FP32 values)."""
    amp = mode_named("amp")
    runs = {
        REFERENCE: _record(REFERENCE, _output(7, VALUES)),
        LEGACY: _record(LEGACY, _output(7, _noise(VALUES, 0.01))),
        MIGRATED: _record(MIGRATED, _output(7, VALUES)),
        AUTOCAST: _record(AUTOCAST, _output(7, _noise(VALUES, 0.0003))),
    }
    part = outputs_part(amp, runs, _sources())
    assert part.status == FAIL, part.detail
    assert "autocast changes these outputs, and the migrated run's did not run under it" in part.detail
    # a migrated run that does autocast hands what the control does: PASS
    runs[MIGRATED] = _record(MIGRATED, _output(7, _noise(VALUES, 0.0003)))
    assert outputs_part(amp, runs, _sources()).status == PASS
    # the control past the bar of the FP32 values (outputs that amplify the rounding): the migrated run's exactly
    # FP32 values are no autocast all the same (bench/unseen/hunt33 IA1 was INCONCLUSIVE)
    runs[MIGRATED] = _record(MIGRATED, _output(7, VALUES))
    runs[AUTOCAST] = _record(AUTOCAST, _output(7, _noise(VALUES, 0.02)))
    part = outputs_part(amp, runs, _sources())
    assert part.status == FAIL and "did not run under it" in part.detail, part.detail
