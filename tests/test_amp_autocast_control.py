"""verify's autocast control for amp: the FP32 script with its forward passes and losses under
autocast, made when the migrated run fails the check against the FP32 reference. A right amp
migration computes what it computes; the FP32 run can be as far from both as full bf16 is, because a
random op draws other numbers on a bf16 activation than on an f32 one (dropout after a Linear).

On the XLA CPU device with fixtures/contract/shallow_amp (our own writing: an EmbeddingBag intent
classifier with a dropout layer): the codemod's amp migration fails the FP32 check and PASSes by the
control; the same migration with its loss moved out of the autocast region does not compute what the
control computes and FAILs."""

from __future__ import annotations

import shutil

import pytest

from bf16_migrate.python import migrate_source

from conftest import FIXTURES, ROOT

FIXTURE = FIXTURES / "contract" / "shallow_amp"
FORWARD = "        logits = model(ids.to(device), offsets.to(device))\n"
LOSS = "        loss = F.cross_entropy(logits, labels.to(device), label_smoothing=0.05)\n"


def _matches(report):
    return next(p for p in report.verdict.parts if p.name == "matches")


def test_the_fixture_migrates_with_its_loss_under_autocast():
    result = migrate_source((FIXTURE / "train.py").read_text(), "amp", "train.py")
    assert '    with torch.autocast("xla", dtype=torch.bfloat16):\n    ' + FORWARD + "    " + LOSS in result.code
    assert "XLA_USE_BF16" not in result.code and not result.unfixed


@pytest.mark.xla
def test_a_right_amp_migration_passes_by_the_autocast_control(tmp_path):
    from bf16_migrate.verify import verify_script
    from bf16_migrate.verify.parts import PASS

    shutil.copytree(FIXTURE, tmp_path / "case")
    report = verify_script(tmp_path / "case" / "train.py", "amp", steps=12, timeout=300)
    matches = _matches(report)
    assert report.verdict.status == PASS, [(p.name, p.status, p.detail) for p in report.verdict.parts]
    # the FP32 check alone fails it (dropout draws other masks on bf16 activations): the control decides
    assert matches.figures["onset_passed"] is False, matches.detail
    control = matches.figures["autocast_control"]
    assert control["passed"] and control["identical_steps"] >= 10, control
    assert "autocast" in report.runs and report.runs["autocast"].device_param_dtypes == {"f32": 5}


@pytest.mark.xla
def test_the_loss_outside_autocast_does_not_pass_by_the_control(tmp_path):
    from bf16_migrate.verify import verify_script
    from bf16_migrate.verify.parts import FAIL

    shutil.copytree(FIXTURE, tmp_path / "case")
    script = tmp_path / "case" / "train.py"
    right = migrate_source(script.read_text(), "amp", "train.py").code
    wrong = right.replace("    " + LOSS, LOSS)
    assert wrong != right
    report = verify_script(script, "amp", steps=12, timeout=300, migrated_source=wrong)
    matches = _matches(report)
    assert matches.status == FAIL, matches.detail
    assert matches.figures["autocast_control"]["passed"] is False
    assert "does not compute what autocast computes either" in matches.detail
    # its loss is bf16 where autocast computes it in f32: precision names the cause
    precision = next(p for p in report.verdict.parts if p.name == "precision")
    assert precision.status == FAIL and "and f32 under autocast too (the autocast control)" in precision.detail
    assert (report.runs["migrated"].loss_dtype, report.runs["autocast"].loss_dtype) == ("bf16", "f32")


@pytest.mark.xla
def test_amp_float64_weights_on_the_device_fail_precision_and_the_trace_names_them(tmp_path):
    """bench/unseen/hunt21 huber_cum (a weighted Huber regression with float64 sample weights from NumPy),
    migrated by hand without the float32 cast the codemod writes (its wrong/A1_amp_w_f64.py): the loss is
    float64 on the device, which the FP32 reference check could not see (it passed before); precision
    fails it and the trace names the product with the weights, with where they were moved to the device."""
    from bf16_migrate.verify import verify_script
    from bf16_migrate.verify.parts import FAIL

    hunt = ROOT / "bench" / "unseen" / "hunt21"
    shutil.copytree(hunt / "huber_cum", tmp_path / "case")
    wrong = (hunt / "wrong" / "A1_amp_w_f64.py").read_text()
    report = verify_script(tmp_path / "case" / "train_huber.py", "amp", steps=8, timeout=300, migrated_source=wrong)
    parts = {p.name: p for p in report.verdict.parts}
    assert report.verdict.status == FAIL
    assert parts["precision"].status == FAIL and "is f64 on the device" in parts["precision"].detail
    found = [(f.diagnostic.code, f.diagnostic.line) for f in report.trace_findings]
    assert ("BFM204", 37) in found, found
    assert "made f64 on the device at line 58" in report.trace_findings[0].diagnostic.message


@pytest.mark.xla
def test_amp_a_bf16_ema_teacher_made_by_hand_fails_and_the_trace_names_its_line(tmp_path):
    """bench/unseen/hunt23 ema_teacher (a mean-teacher semi-supervised classifier), migrated to amp by hand
    with the EMA teacher cast to bf16 (its wrong/MTA3_teacher_bf16.py): the legacy run was bf16 everywhere and
    the optimizer's parameters are f32, so nothing else tells it (it PASSed); the trace names the cast."""
    from bf16_migrate.verify import verify_script
    from bf16_migrate.verify.parts import FAIL

    hunt = ROOT / "bench" / "unseen" / "hunt23"
    shutil.copytree(hunt / "ema_teacher", tmp_path / "case")
    wrong = (hunt / "wrong" / "MTA3_teacher_bf16.py").read_text()
    script = tmp_path / "case" / "train_mean_teacher.py"
    line = script.read_text().splitlines().index("    teacher = copy.deepcopy(student)") + 1  # the user's file's line
    report = verify_script(script, "amp", steps=12, timeout=300, migrated_source=wrong)
    assert report.verdict.status == FAIL
    found = [(f.diagnostic.code, f.diagnostic.line) for f in report.trace_findings if f.excused is None]
    assert ("BFM205", line) in found, found


@pytest.mark.xla
def test_amp_a_loss_computed_outside_autocast_is_named_where_it_left_autocast(tmp_path):
    """bench/unseen/hunt23 ema_teacher migrated to amp by hand with its supervised loss computed after the
    autocast block, on the student's bf16 logits (its wrong/MTA2_loss_outside_autocast.py): precision named the
    cause, no line. The trace names the loss's line once the autocast control computes it in f32 (BFM206)."""
    from bf16_migrate.verify import verify_script
    from bf16_migrate.verify.parts import FAIL

    hunt = ROOT / "bench" / "unseen" / "hunt23"
    shutil.copytree(hunt / "ema_teacher", tmp_path / "case")
    wrong = (hunt / "wrong" / "MTA2_loss_outside_autocast.py").read_text()
    script = tmp_path / "case" / "train_mean_teacher.py"
    line = script.read_text().splitlines().index("        sup = F.cross_entropy(s_logits[:N_LAB], yl)") + 1
    report = verify_script(script, "amp", steps=12, timeout=300, migrated_source=wrong)
    assert report.verdict.status == FAIL
    found = [(f.diagnostic.code, f.diagnostic.line) for f in report.trace_findings if f.excused is None]
    assert ("BFM206", line) in found, found


PAIRS = '''"""Two views of a batch pulled together: a cross-entropy over their similarities plus a margin term."""
import os

os.environ["XLA_USE_BF16"] = "1"

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla

STEPS = int(os.environ.get("STEPS", 6))


def pair_loss(za, zb):
    sim = F.normalize(za, dim=1) @ F.normalize(zb, dim=1).T / 0.2
    hardest = (sim - 1e4 * torch.eye(sim.shape[0], device=sim.device)).max(dim=1).values
    ce = F.cross_entropy(sim, torch.arange(sim.shape[0], device=sim.device))
    return F.relu(0.05 + hardest - sim.diag()).mean() + ce


def main():
    device = torch_xla.device()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(STEPS):
        xa = torch.randn(6, 8).to(device)
        xb = xa + 0.1 * torch.randn(6, 8).to(device)
        za, zb = model(xa), model(xb)
        loss = pair_loss(za, zb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        torch_xla.sync()
        print(step, loss.item())


if __name__ == "__main__":
    main()
'''


@pytest.mark.xla
def test_amp_a_bf16_cross_entropy_summed_with_an_f32_term_outside_autocast_is_named(tmp_path):
    """amp with the loss left after the autocast block: its cross-entropy runs on the bf16 similarities, in bf16
    where autocast runs it in float32, and an f32 margin term (promoted by an f32 ``torch.eye``) makes the sum
    handed to backward f32 (a hunt's text PASSed: only a bf16 loss was looked at, and the losses matched). The
    trace names where the loss's chain left autocast (BFM206, the cross-entropy named); the codemod's migration,
    the loss under autocast, PASSes."""
    from bf16_migrate.verify import verify_script
    from bf16_migrate.verify.parts import FAIL, PASS

    script = tmp_path / "train.py"
    script.write_text(PAIRS)
    right = migrate_source(PAIRS, "amp", "train.py").code
    inside = "            za, zb = model(xa), model(xb)\n            loss = pair_loss(za, zb)\n"
    assert inside in right
    wrong = right.replace(inside, "            za, zb = model(xa), model(xb)\n        loss = pair_loss(za, zb)\n")
    report = verify_script(script, "amp", steps=6, timeout=300, migrated_source=wrong)
    assert report.verdict.status == FAIL, [(p.name, p.status, p.detail) for p in report.verdict.parts]
    line = PAIRS.splitlines().index("    sim = F.normalize(za, dim=1) @ F.normalize(zb, dim=1).T / 0.2") + 1
    found = [f.diagnostic for f in report.trace_findings if f.excused is None]
    assert [(d.code, d.line) for d in found] == [("BFM206", line)], found
    assert "`F.cross_entropy` on bf16 operands" in found[0].message
    report = verify_script(script, "amp", steps=6, timeout=300)
    assert report.verdict.status == PASS, [(p.name, p.status, p.detail) for p in report.verdict.parts]
