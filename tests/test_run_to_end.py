"""Every fixture's migrated script runs to its end on the XLA CPU device, as its legacy run does.

Not only the training steps verify compares: evaluation, export and checkpoint code too. For each
fixture the legacy script (its own switch, or its launcher's setting) and the migration in a mode
(the goldens, ``expected/<mode>/``) run with the arguments of a short run; the test fails on any
exception the legacy run did not raise, and where the scripts write host outputs (metrics, saved
arrays, checkpoints read back) the migrated run's must have the legacy run's dtypes and its values
within bf16 noise (:data:`TOLERANCE`). The negative control shows the check fails for a migration
made without the host edge (``host-float32`` taken out of the rules).

Cost (bench/RESULTS.md, "Fixtures run to their end"): the fixtures that leave host outputs are
marked ``xla`` (fixtures/host_edge/ in every mode, resume_checkpoint and zero1_sharded in their CI
mode), the other pairs ``xla_full``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from bf16_migrate.rules import MODES, mode_named

from conftest import ROOT
from run_outputs import OUT, REFERENCE, Case, Run, Tolerance, compare, migrated, prepare, run

py = "train.py"

CASES = (
    # the host edge (fixtures/host_edge/): what leaves the device, compared with the legacy run's
    Case(
        "host_edge/numpy_eval",
        ((py, "--steps", "20", "--eval-every", "10", "--out-dir", OUT),),
        outputs=("metrics.json",),
    ),
    Case(
        "host_edge/checkpoint_export",
        ((py, "--steps", "20", "--save-every", "10", "--out-dir", OUT), ("export.py", "--dir", OUT)),
        outputs=("model.pt", "weights.npz", "summary.txt"),
    ),
    Case(
        "host_edge/predictions_npy",
        ((py, "--steps", "20", "--out-dir", OUT),),
        outputs=("predictions.npy", "row_ids.npy"),
    ),
    Case(
        "host_edge/histogram_logger",
        ((py, "--steps", "2", "--log-every", "1", "--out-dir", OUT),),
        legacy_env={"XLA_USE_BF16": "1"},  # run.sh
        outputs=("stats.jsonl",),
    ),
    Case(
        "host_edge/scores_tolist",
        ((py, "--steps", "20", "--out-dir", OUT),),
        outputs=("scores.json",),
        rankings=(("top", "scores"),),
    ),
    # the training fixtures
    Case("causal_lm", ((py, "--steps", "4"),)),
    Case("cnn_trainer", ((py, "--steps", "6"),)),
    Case("mlp_regression", ((py, "--steps", "6"),)),
    Case("optimizer_before_to", ((py, "--steps", "6"),)),
    Case(
        "resume_checkpoint",
        ((py, "--steps", "12", "--checkpoint-every", "4", "--restart-at", "8", "--checkpoint-dir", OUT),),
        outputs=("last.pt",),
    ),
    Case("tiny_transformer", ((py, "--steps", "6"),)),
    Case("zero1_sharded", ((py, "--steps", "6", "--output-dir", OUT),), outputs=("final.pt",)),
    Case("real_shapes/bert_groups", ((py, "--steps", "4"),), legacy_env={"XLA_DOWNCAST_BF16": "1"}),
    Case("real_shapes/gru_tuple", ((py, "--steps", "4"),), legacy_env={"XLA_USE_BF16": "1"}),
    Case(
        "real_shapes/mnist_loops",
        ((py, "--steps", "4", "--num_epochs", "1", "--sample_count", "4"),),
        legacy_env={"XLA_USE_BF16": "1"},
    ),
    Case("real_shapes/opaque_batches", ((py, "--steps", "4"),), legacy_env={"XLA_USE_BF16": "1"}),
    Case("real_shapes/trainer_generator", ((py, "--steps", "4"),), legacy_env={"XLA_DOWNCAST_BF16": "1"}),
    Case(
        "trees/autocast_flag",
        ((py, "--steps", "4", "--batch_size", "8"),),
        legacy_env={"XLA_USE_BF16": "1"},  # smoke_test.sh
        migrated_args=(("amp", ("--use_amp",)),),  # what its migrated launchers pass in amp
    ),
    Case("trees/factories_config", ((py, "--config", "config.yaml", "--steps", "4"),)),
    Case("trees/sourced_env", ((py, "--steps", "4"),), legacy_env={"XLA_USE_BF16": "1"}),  # env/bf16.sh
    Case("trees/submodule_groups", ((py, "--steps", "4"),)),
    Case(
        "trees/tree_optimizer",
        ((py, "--optimizer", "layerwise", "--steps", "4"),),
        legacy_env={"XLA_USE_BF16": "1"},  # run_pretrain.sh
    ),
    Case("device_modules/averaged_model", ((py, "--steps", "4"),)),
    Case("device_modules/distill_teacher", ((py, "--steps", "4"),)),
    Case("device_modules/ema_deepcopy", ((py, "--steps", "4"),)),
    Case("device_modules/eval_copy", ((py, "--steps", "4", "--eval-every", "2"),)),
    Case("device_modules/frozen_backbone", ((py, "--steps", "4"),)),
    Case("device_modules/inference_only", (("predict.py", "--count", "128"),)),
    Case("model_code/buffer_cache", ((py, "--steps", "4"),)),
    Case("model_code/contrastive_fn", ((py, "--steps", "4"),)),
    Case("model_code/fp32_loss", ((py, "--steps", "4"),)),
    Case("model_code/fp32_state_adam", ((py, "--steps", "4"),)),
    Case("model_code/lamb_sibling", ((py, "--steps", "4"),)),
    Case("model_code/leaky_norm", ((py, "--steps", "4"),)),
    Case("model_code/loss_module", ((py, "--steps", "4"),)),
    Case("model_code/lstm_forecaster", ((py, "--steps", "4"),)),
    Case("model_code/position_table", ((py, "--steps", "4"),)),
    Case("model_code/smoothed_criterion", ((py, "--steps", "4"),)),
    Case("model_code/softmax_upcast", ((py, "--steps", "4"),)),
    Case("wrappers/compiled_model", ((py, "--steps", "4"),)),
    Case("wrappers/ddp_dtype_log", ((py, "--steps", "4", "--output-root", OUT),)),
    Case(
        "wrappers/test_named_script",
        (("test_train_regressor.py", "--steps", "4"),),
        legacy_env={"XLA_USE_BF16": "1"},
    ),
    Case("shapes/custom_optimizer", (("custom_optimizer.py", "--steps", "4"),)),
    Case("shapes/downcast_double", (("downcast_double.py",),)),
    Case("shapes/downcast_target", (("downcast_target.py",),)),
    Case("shapes/flag_chooser", (("flag_chooser.py", "--steps", "4", "--use-mix-precision"),)),
    Case("shapes/guarded_write", (("guarded_write.py", "--bf16"),)),
    Case("shapes/reads_and_patches", (("reads_and_patches.py",),)),
)
"""The fixtures that train on the XLA device and whose migration changes them. Not here: the ones
whose switch is kept in every mode (wrappers/fsdp_cnn, wrappers/fsdp_mlp: the migrated script is
the legacy one), and the shapes that are not training scripts (a test module,
fragments of code, a framework's script whose framework is not installed)."""

CI_MODE = {
    "causal_lm": "stochastic",
    "cnn_trainer": "amp",
    "mlp_regression": "gpu-compatible",
    "optimizer_before_to": "amp",
    "resume_checkpoint": "gpu-compatible",
    "tiny_transformer": "stochastic",
    "zero1_sharded": "stochastic",
}
"""The mode a fixture of tests/test_verify_fixtures.py is verified in by CI (its CI_MODE); the
other fixtures outside fixtures/host_edge/ take the modes in turn (:func:`_ci_mode`)."""

TOLERANCE = {mode: Tolerance(rel=0.01, metric=0.005) for mode in MODES}
"""How close a migrated run's host outputs stay to its baseline's: within 2 x the precision gap
(the same output of the legacy and the FP32 reference run apart), as verify holds the losses
(rules/modes.toml, drift_factor), floors of 1% relative and 0.005 for a metric; figures in
bench/RESULTS.md, "Fixtures run to their end"."""


def _ci_mode(case: Case, k: int) -> str | None:
    """The one mode a fixture runs in under ``-m xla`` (None: every mode; ``""``: none). CI runs the
    fixtures that leave host outputs: fixtures/host_edge/ in every mode, the others in the mode
    tests/test_verify_fixtures.py verifies them in; the fixtures without outputs, whose training
    steps verify already runs in CI, are ``xla_full``."""
    if case.case.startswith("host_edge/"):
        return None
    if not case.outputs:
        return ""
    return CI_MODE.get(case.case, MODES[k % len(MODES)])


def _pairs():
    for k, case in enumerate(CASES):
        ci = _ci_mode(case, k)
        for mode in MODES:
            if not migrated(case, mode):
                continue
            marks = [pytest.mark.xla_full if ci is not None and ci != mode else pytest.mark.xla]
            yield pytest.param(case, mode, marks=marks, id=f"{case.name}-{mode}")


_RUNS: dict[tuple[str, str | None], Run] = {}


def baseline(mode: str) -> str | None:
    """What a mode's host outputs are compared with: the legacy run (None), or for a mode whose
    ``[MODE.verify]`` baseline is the FP32 reference (amp: its model stays FP32), that run."""
    return REFERENCE if mode_named(mode).verify.get("baseline") == REFERENCE else None


@pytest.fixture(scope="session")
def baseline_runs(tmp_path_factory):
    """The legacy run (``kind`` None) or the FP32 reference run of a case, each made once per session."""

    def get(case: Case, kind: str | None = None) -> Run:
        key = (case.case, kind)
        if key not in _RUNS:
            tree = prepare(case, tmp_path_factory.mktemp(case.name) / (kind or "legacy"), kind)
            _RUNS[key] = run(case, tree, case.legacy_env if kind is None else {})
        return _RUNS[key]

    return get


def check(
    case: Case, mode: str, legacy: Run, migrated_run: Run, base: Run | None = None, reference: Run | None = None
) -> list[str]:
    """What is wrong with the migrated run, one line each: an exception the legacy run did not
    raise, or host outputs beyond the mode's limits from the legacy run's (from ``base``'s, the FP32
    reference run, for a mode compared with it), the precision gap measured between the legacy run
    and the FP32 ``reference`` run."""
    failed, legacy_failed = migrated_run.failed, legacy.failed
    if failed is not None and failed != legacy_failed:
        return [
            f"the migrated run raised {failed} (the legacy run: {legacy_failed or 'no exception'}):\n"
            + migrated_run.tails[-1]
        ]
    if legacy_failed is not None or failed is not None:
        return []  # the legacy run could not be made: nothing of it to compare with
    base = base or legacy
    for other in (base, reference):
        if other is not None and other.failed is not None:
            return [f"the FP32 reference run raised {other.failed}:\n{other.tails[-1]}"]
    gap = (legacy.out, reference.out) if reference is not None else None
    return compare(base.out, migrated_run.out, case, TOLERANCE[mode], gap)


@pytest.mark.parametrize("case, mode", list(_pairs()))
def test_migrated_script_runs_to_its_end(case: Case, mode: str, baseline_runs, tmp_path):
    legacy = baseline_runs(case)
    assert not (case.outputs and legacy.failed), f"the legacy run of a case with outputs failed: {legacy.tails}"
    done = run(case, prepare(case, tmp_path / mode, mode), {}, mode)
    reference = baseline_runs(case, REFERENCE) if case.outputs and done.failed is None and not legacy.failed else None
    base = reference if baseline(mode) == REFERENCE else None
    problems = check(case, mode, legacy, done, base, reference)
    assert not problems, "\n".join(problems)


@pytest.mark.xla
def test_the_check_fails_for_a_migration_without_the_host_edge(tmp_path, baseline_runs):
    """The negative control: numpy_eval and checkpoint_export migrated with ``host-float32`` taken
    out of the rules (what the codemod wrote before the host edge): the evaluation crashes with
    the TypeError of a bf16 ``.numpy()``, and so does the export job reading the bf16 checkpoint."""
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    modes = (rules / "modes.toml").read_text()
    (rules / "modes.toml").write_text(modes.replace(', "host-float32"', "").replace('"host-float32", ', ""))
    mode = next(m for m in MODES if mode_named(m).casts_model)
    # export.py turns the bf16 checkpoint into NumPy: the same TypeError, in the sibling job
    expected = {"host_edge/numpy_eval": "TypeError", "host_edge/checkpoint_export": "TypeError"}
    for case in (c for c in CASES if c.case in expected):
        tree = prepare(case, tmp_path / case.name, None)
        before = (tree / "train.py").read_text()
        subprocess.run(
            [sys.executable, "-m", "bf16_migrate.cli", str(tree), "--mode", mode],
            env={**os.environ, "BF16_MIGRATE_RULES_DIR": str(rules)},
            capture_output=True,
            timeout=300,
        )
        text = (tree / "train.py").read_text()
        assert text != before and "model.to(torch.bfloat16)" in text and "host_float32" not in text
        problems = check(case, mode, baseline_runs(case), run(case, tree, {}))
        assert problems and expected[case.case] in problems[0], problems
