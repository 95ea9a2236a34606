"""verify of a script that trains without calling ``backward()``.

Its gradients come from ``torch.func`` (``vmap(grad(...))`` over a functional call of the model) and
are assigned to ``p.grad`` by hand, then ``optimizer.step()``: the harness counts those steps, which
have no loss, and verify judges them on the steps' dtypes and graphs (the precision and graph parts
of any training run) and on what the runs hand the host within the recorded steps.

Unit tests (no torch): a record whose steps have no loss, the verdict's runs part (a comparison run
that called backward, or made other steps, FAILs), samples taken after the recorded steps left out,
the outputs bar widened by the precision gap as a training run's drift is.

A step that asks ``torch.autograd.grad(loss, parameters)`` has its loss: it is recorded as a
backward's (with no optimizer, the call is the step), and the run is judged as any training run.

End to end on the XLA CPU device (our own writing): ``fixtures/without_backward/private_sgd``, a
DP-SGD trainer: the codemod's migration PASSes in every mode; the switch deleted alone FAILs, and
an amp migration that leaves the per-example loss outside autocast (every training matmul f32) FAILs.
``fixtures/without_backward/grad_sgd``, least squares by ``autograd.grad`` and ``p -= lr * g``, the
switch in its launcher: judged on its losses, PASS migrated, FAIL with the switch deleted alone.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from bf16_migrate.project import migrate_paths
from bf16_migrate.rules import mode_named
from bf16_migrate.verify.outputs import judge_without_backward, outputs_part
from bf16_migrate.verify.parts import FAIL, PASS
from bf16_migrate.verify.records import LEGACY, MIGRATED, REFERENCE, RunRecord
from bf16_migrate.verify.trace_findings import TraceSources

from conftest import FIXTURES, MODES, part_of

SCRIPT = "/work/user/train.py"
PRIVATE_SGD = FIXTURES / "without_backward" / "private_sgd"
GRAD_SGD = FIXTURES / "without_backward" / "grad_sgd"


def _output(line: int, values: Sequence[float], occurrence: int = 0, after_stop: bool = False) -> dict:
    return {
        "file": SCRIPT,
        "line": line,
        "col": 4,
        "op": "Tensor.item",
        "occurrence": occurrence,
        "seen": occurrence + 1,
        "dtype": "python",
        "floating": True,
        "shape": [],
        "numel": 1,
        "values": list(values),
        "after_stop": after_stop,
    }


def _record(name: str, *outputs: dict, steps: int = 12, params: str = "bfloat16") -> RunRecord:
    """A run's record as the harness writes it: ``steps`` optimizer steps with no loss (null)."""
    trace = {"events": [], "outputs": list(outputs), "calls": 10}
    data = {"losses": [None] * steps, "backward_calls": 0, "param_dtypes": {params: 4}, "trace": trace}
    return RunRecord.from_json(name, data)


def _sources() -> TraceSources:
    user = {SCRIPT: "\n".join(f"line {i}" for i in range(1, 90)) + "\n"}
    return TraceSources(lambda path: user.get(path), {}, f32=True)


def test_steps_without_a_loss_are_steps_of_a_run_judged_on_its_outputs():
    run = _record(MIGRATED, _output(73, [0.66]))
    assert (run.steps, run.steps_without_backward, run.losses) == (12, 12, [])
    assert run.ok and run.on_outputs and not run.inference
    assert run.to_dict()["steps_without_backward"] == 12
    trained = RunRecord.from_json(LEGACY, {"losses": [1.0, 0.9], "backward_calls": 2})
    assert (trained.steps, trained.steps_without_backward, trained.on_outputs) == (2, 0, False)


def test_a_comparison_run_that_called_backward_or_made_other_steps_fails_the_runs_part():
    stochastic = mode_named("stochastic")
    migrated = _record(MIGRATED, _output(73, [0.66]))
    trained = RunRecord.from_json(LEGACY, {"losses": [1.0] * 12, "backward_calls": 12})
    verdict = judge_without_backward(stochastic, {LEGACY: trained, MIGRATED: migrated}, _sources(), graphs=False)
    assert verdict.status == FAIL and "the legacy run called backward()" in verdict.parts[0].detail
    fewer = _record(LEGACY, _output(73, [0.66]), steps=7)
    verdict = judge_without_backward(stochastic, {LEGACY: fewer, MIGRATED: migrated}, _sources(), graphs=False)
    assert verdict.status == FAIL and "made 12 steps, the legacy run 7" in verdict.parts[0].detail


def test_the_verdict_judges_dtypes_and_outputs_and_never_calls_empty_losses_equal():
    """No losses in either run: the precision part does not read two empty lists as "the migrated
    losses equal the FP32 reference's"; the parameters' dtypes and the outputs decide."""
    stochastic = mode_named("stochastic")
    runs = {
        LEGACY: _record(LEGACY, _output(73, [0.66015625])),
        MIGRATED: _record(MIGRATED, _output(73, [0.66015625])),
        REFERENCE: _record(REFERENCE, _output(73, [0.6586]), params="float32"),
    }
    verdict = judge_without_backward(stochastic, runs, _sources(), graphs=False)
    assert [(p.name, p.status) for p in verdict.parts] == [("runs", PASS), ("precision", PASS), ("matches", PASS)]
    runs[MIGRATED] = _record(MIGRATED, _output(73, [0.6586]), params="float32")  # the switch deleted alone
    verdict = judge_without_backward(stochastic, runs, _sources(), graphs=False)
    precision = part_of(verdict, "precision")
    assert precision.status == FAIL and "holds no bfloat16 parameters" in precision.detail
    assert "losses equal" not in precision.detail


def test_samples_after_the_recorded_steps_have_no_partner_to_miss():
    """The legacy and migrated runs go on for the trace after the recorded steps; the FP32 reference
    stops there. What they hand the host after the stop is left out of the pairing."""
    amp = mode_named("amp")
    runs = {
        LEGACY: _record(LEGACY, _output(73, [0.66015625]), _output(73, [0.05], 1, after_stop=True)),
        MIGRATED: _record(MIGRATED, _output(73, [0.6585]), _output(73, [0.0521], 1, after_stop=True)),
        REFERENCE: _record(REFERENCE, _output(73, [0.6586]), params="float32"),
    }
    part = outputs_part(amp, runs, _sources())
    assert part.status == PASS and part.figures["paired"] == 1 and part.figures["only_migrated"] == []


def test_a_training_runs_outputs_may_drift_as_far_as_the_precision_gap():
    """FP32 master weights update the weights otherwise than the full-bf16 legacy run did: after some
    steps the outputs are as far from the legacy run's as the FP32 reference's may be (twice, the
    mode's drift_factor), not only bf16 rounding apart; farther still FAILs."""
    gpu = mode_named("gpu-compatible")
    legacy = [1.0 + 0.1 * i for i in range(20)]
    runs = {
        LEGACY: _record(LEGACY, _output(73, legacy)),
        REFERENCE: _record(REFERENCE, _output(73, [v * 1.005 for v in legacy]), params="float32"),
        MIGRATED: _record(MIGRATED, _output(73, [v * 1.008 for v in legacy])),
    }
    part = outputs_part(gpu, runs, _sources())
    assert part.status == PASS and part.figures["median_limit"] == pytest.approx(0.01, rel=0.01)
    runs[MIGRATED] = _record(MIGRATED, _output(73, [v * 1.02 for v in legacy]))
    assert outputs_part(gpu, runs, _sources()).status == FAIL


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", [PRIVATE_SGD, GRAD_SGD], ids=lambda p: p.name)
def test_golden_migration_and_a_second_run_changes_nothing(case, mode, goldens, tmp_path):
    """private_sgd: the per-example loss in ``vmap(grad(...))`` is a model call: amp puts it under
    autocast; the casting modes cast the model and the batch's move. grad_sgd: the launcher's switch
    replaced, the script migrated as launched with it; in gpu-compatible mode both are kept (BFM017
    ``by_hand``: its update by hand has no optimizer to keep FP32 master weights in). Every changed
    file re-parses; a second run changes nothing."""
    tree = tmp_path / case.name
    shutil.copytree(case, tree, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    before = {p.name: p.read_text() for p in tree.iterdir()}
    outcome = migrate_paths([tree], mode, write=True)
    assert not outcome.errors, outcome.errors
    after = {p.name: p.read_text() for p in tree.iterdir()}
    changed = {name: text for name, text in after.items() if before[name] != text}
    findings = "".join(d.format_text().replace(str(tmp_path) + "/", "") + "\n" for d in outcome.diagnostics)
    if case is GRAD_SGD and mode == "gpu-compatible":
        assert changed == {} and "BFM017 XLA_DOWNCAST_BF16 kept" in findings
        assert "by hand (`torch.autograd.grad` at line 46" in findings
    else:
        assert "train.py" in changed
        compile(changed["train.py"], "train.py", "exec")
    goldens.check(case / "expected" / mode, changed, findings)
    again = migrate_paths([tree], mode, write=True)
    assert {p.name: p.read_text() for p in tree.iterdir()} == after
    assert not [d for d in again.diagnostics if d.fixed]


def _harness_function(name: str, end: str):
    """A function of the child's harness (bf16_migrate/verify/_child/sitecustomize.py), loaded alone."""
    source = (Path(__file__).parents[1] / "bf16_migrate" / "verify" / "_child" / "sitecustomize.py").read_text()
    namespace: dict[str, object] = {}
    exec(source[source.index(f"def {name}") : source.index(end)], namespace)
    return namespace[name]


def test_a_gradient_with_respect_to_parameters_is_a_steps_loss_and_one_with_respect_to_data_is_not():
    import torch
    from torch.func import grad

    parameter_loss = _harness_function("_parameter_loss", "def _autocast_control")
    model = torch.nn.Linear(3, 1)
    x = torch.randn(4, 3, requires_grad=True)
    loss = model(x).pow(2).mean()
    assert parameter_loss(torch, loss, list(model.parameters())) is loss
    assert parameter_loss(torch, (loss,), tuple(model.parameters())) is loss
    assert parameter_loss(torch, loss, x) is None  # saliency, Langevin dynamics, a gradient penalty
    assert parameter_loss(torch, model(x).pow(2), list(model.parameters())) is None  # not a scalar
    seen = []

    def inside(w):
        inner = (x.detach() @ w).sum()
        seen.append(parameter_loss(torch, inner, [torch.nn.Parameter(torch.zeros(3))]))
        return inner

    grad(inside)(torch.zeros(3))
    assert seen == [None]  # a torch.func transform's wrapped tensor must not outlive it


# -- end to end on the XLA CPU device --------------------------------------------------------------


def _private_sgd(tmp_path: Path) -> Path:
    shutil.copytree(PRIVATE_SGD, tmp_path / "private_sgd")
    return tmp_path / "private_sgd" / "train.py"


@pytest.mark.xla
@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible", "amp"])
def test_the_codemods_migration_of_a_step_without_backward_passes(mode, tmp_path):
    from bf16_migrate.verify import verify_script

    report = verify_script(_private_sgd(tmp_path), mode, steps=12, timeout=300)
    assert report.verdict.status == PASS, [(p.name, p.status, p.detail) for p in report.parts]
    assert report.runs[MIGRATED].steps_without_backward == 12 and report.runs[LEGACY].steps_without_backward == 12
    assert [p.name for p in report.parts] == ["runs", "precision", "matches", "graph", "trace"]
    assert part_of(report.verdict, "matches").figures["paired"] >= 2  # step 10's loss and norm


@pytest.mark.xla
def test_the_switch_deleted_alone_fails(tmp_path):
    from bf16_migrate.verify import verify_script

    script = _private_sgd(tmp_path)
    deleted = script.read_text().replace('os.environ["XLA_USE_BF16"] = "1"\n', "")
    report = verify_script(script, "stochastic", steps=12, migrated_source=deleted, timeout=300)
    assert report.verdict.status == FAIL
    precision = part_of(report.verdict, "precision")
    assert precision.status == FAIL and "no matmul of the migrated step graph is bf16" in precision.detail


@pytest.mark.xla
def test_amp_with_the_per_example_loss_outside_autocast_fails(tmp_path):
    """The training forward runs only inside ``vmap(grad(example_loss))``: autocast around the
    monitor loss and the evaluation alone leaves every training matmul f32, where the legacy run's
    were bf16."""
    from bf16_migrate.python import migrate_source
    from bf16_migrate.verify import verify_script

    script = _private_sgd(tmp_path)
    migrated = migrate_source(script.read_text(), "amp", "train.py").code
    inside = (
        '        with torch.autocast("xla", dtype=torch.bfloat16):\n'
        "            logits = functional_call(model, (p, b), (row.unsqueeze(0),))\n"
        "            return F.cross_entropy(logits, label.unsqueeze(0))\n"
    )
    outside = (
        "        logits = functional_call(model, (p, b), (row.unsqueeze(0),))\n"
        "        return F.cross_entropy(logits, label.unsqueeze(0))\n"
    )
    assert inside in migrated
    report = verify_script(script, "amp", steps=12, migrated_source=migrated.replace(inside, outside), timeout=300)
    assert report.verdict.status == FAIL
    precision = part_of(report.verdict, "precision")
    assert precision.status == FAIL and "matmuls of the step graph are not bf16 under autocast" in precision.detail


@pytest.mark.xla
def test_a_step_by_autograd_grad_is_judged_on_its_losses_both_ways(tmp_path):
    """The launcher (run.sh) sets XLA_DOWNCAST_BF16, given as the rewrite's finding says
    (``--legacy-env XLA_DOWNCAST_BF16=1``). The codemod's migration PASSes with a loss per step; the
    script left as it is (the launcher's switch gone) FAILs on precision."""
    from bf16_migrate.verify import verify_script

    shutil.copytree(GRAD_SGD, tmp_path / "grad_sgd", ignore=shutil.ignore_patterns("expected"))
    script = tmp_path / "grad_sgd" / "train.py"
    legacy = {"XLA_DOWNCAST_BF16": "1"}
    report = verify_script(script, "stochastic", steps=12, legacy_env=legacy, timeout=300)
    assert report.verdict.status == PASS, [(p.name, p.status, p.detail) for p in report.parts]
    migrated = report.runs[MIGRATED]
    assert len(migrated.losses) == 12 and migrated.steps_without_backward == 0
    assert migrated.optimizer == "(update by hand)" and migrated.param_dtypes == {"bfloat16": 4}
    wrong = verify_script(
        script, "stochastic", steps=12, legacy_env=legacy, migrated_source=script.read_text(), timeout=300
    )
    assert wrong.verdict.status == FAIL
    assert part_of(wrong.verdict, "precision").status == FAIL


ZEROTH_ORDER = """import os
import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def perturb(params, seed, scale):
    gen = torch.Generator().manual_seed(seed)
    for p in params:
        p.data.add_(torch.randn(p.shape, generator=gen).to(p.device), alpha=scale)


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(4, 2).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    x, y = torch.randn(8, 4).to(device), torch.randint(0, 2, (8,)).to(device)
    for step in range(10):
        with torch.no_grad():
            perturb(params, step, 1e-2)
            up = torch.nn.functional.cross_entropy(model(x), y)
            perturb(params, step, -2e-2)
            down = torch.nn.functional.cross_entropy(model(x), y)
            perturb(params, step, 1e-2 - 1e-3 * (up - down).item() / 2e-2)


main()
"""

RESCALED_ONCE = """import os
import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(4, 2).to(device)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(0.5)
        print(model(torch.randn(8, 4).to(device)).sum().item())


main()
"""


def test_an_update_by_hand_step_after_step_without_a_gradient_keeps_the_switch_in_gpu_compatible_mode():
    """A zeroth-order update (MeZO's perturbations, in a function the training loop calls) has no
    optimizer to keep FP32 master weights in: BFM017 ``by_hand`` names the update. The stochastic
    mode migrates it (its bf16 update is the legacy run's)."""
    from bf16_migrate.python import migrate_source

    kept = migrate_source(ZEROTH_ORDER, "gpu-compatible", "train.py")
    assert kept.code == ZEROTH_ORDER
    [finding] = [d for d in kept.diagnostics if d.code == "BFM017"]
    assert "updates its parameters by hand (`p.data.add_(" in finding.message and "at line 11" in finding.message
    stochastic = migrate_source(ZEROTH_ORDER, "stochastic", "train.py").code
    # the perturbation moved next to the parameter was bf16 on the device under the switch: an in-place
    # op's operand is no callee's to decide (it stayed f32 and every update computed in f32)
    assert (
        "p.data.add_(torch.randn(p.shape, generator=gen).to(p.device, dtype=torch.bfloat16), alpha=scale)" in stochastic
    )


def test_weights_changed_once_are_no_update_by_hand():
    """One pass over an inference script's weights (a rescaling) trains nothing: gpu-compatible
    migrates it as stochastic does, without rounding."""
    from bf16_migrate.python import migrate_source

    result = migrate_source(RESCALED_ONCE, "gpu-compatible", "train.py")
    assert result.code != RESCALED_ONCE and not [d for d in result.diagnostics if d.code == "BFM017"]


def test_the_fp32_reference_runs_the_scripts_own_autocast_disabled(monkeypatch):
    """``BF16_MIGRATE_FP32`` (the FP32 reference run): every autocast region the script opens runs
    disabled, whatever its arguments; without it, autocast is left alone."""
    import os

    import torch

    fp32_reference = _harness_function("_fp32_reference", "def _count_sdpa_upcasts")
    fp32_reference.__globals__.update(os=os, _FP32_ENV="BF16_MIGRATE_FP32")  # the harness module's names
    original = torch.amp.autocast_mode.autocast.__init__
    try:
        monkeypatch.delenv("BF16_MIGRATE_FP32", raising=False)
        fp32_reference(torch)  # no variable: nothing patched
        assert torch.amp.autocast_mode.autocast.__init__ is original
        monkeypatch.setenv("BF16_MIGRATE_FP32", "1")
        fp32_reference(torch)
        for region in (
            torch.autocast("cpu", dtype=torch.bfloat16),
            torch.autocast("cpu", torch.bfloat16, True),
            torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=True),
        ):
            with region:
                assert not torch.is_autocast_enabled("cpu")
                assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.float32
    finally:
        torch.amp.autocast_mode.autocast.__init__ = original  # type: ignore[method-assign]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.bfloat16
