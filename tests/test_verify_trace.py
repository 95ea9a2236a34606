"""verify's dtype trace end to end on the XLA CPU device: small scripts of our own with known
float32 entries, each given with a hand-written wrong migration (``migrated_source``, as the
calibration suite does, so that what the codemod learns statically does not hide them), and the
findings named at the ORIGINAL file's lines (the migrated copy has lines added and changed).

* a position table made f32 in ``forward``: the migrated run fails at the sync; the trace names
  the first operation where f32 met bf16 (BFM200) and the failure's line (BFM220);
* an EMA deep copy made before the model cast, evaluated after the training loop, and bf16
  predictions handed to NumPy after it: BFM202 at the copy, BFM210 at the exit, BFM220 at
  ``.numpy()``, all after the recorded steps (the run went on to the script's end), and no PASS;
* ``--fix`` (``xla_full``): the copy's cast moved, ``.float()`` at the exit, verified again: PASS,
  and a second ``--fix`` over what it wrote finds nothing to repair;
* amp: an EMA shadow made bf16 outside autocast by ``torch.empty_like(p, dtype=torch.bfloat16)``, whose
  template is a float32 device tensor: BFM205 at its line, as for ``p.to(torch.bfloat16)``;
* a bf16 model the user moves to the host whole (``model.cpu()``): BFM210 at that line, and none for a
  copy moved there whose state is cast to float32 before it is saved.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from bf16_migrate.verify import RunError, verify_script
from bf16_migrate.verify.fix import verify_and_fix
from bf16_migrate.verify.trace_findings import FindingKind

pytestmark = pytest.mark.xla

POSITION_TABLE = textwrap.dedent(
    """\
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch
    import torch.nn as nn
    import torch_xla


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 1)

        def forward(self, x):
            h = torch.relu(self.fc1(x))
            pos = torch.arange(16, device=x.device).float() / 16
            h = h + pos
            return self.fc2(h)


    def main():
        torch.manual_seed(0)
        dev = torch_xla.device()
        model = Net().to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(6):
            x, y = torch.randn(16, 8).to(dev), torch.randn(16, 1).to(dev)
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()


    main()
    """
)
POSITION_TABLE_WRONG = (
    POSITION_TABLE.replace('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"')
    .replace("    model = Net().to(dev)\n", "    model = Net().to(dev)\n    model.to(torch.bfloat16)\n")
    .replace("((model(x) - y) ** 2)", "((model(x.to(torch.bfloat16)) - y.to(torch.bfloat16)) ** 2)")
)

EMA = textwrap.dedent(
    """\
    import copy
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import numpy as np
    import torch
    import torch.nn as nn
    import torch_xla


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 16)
            self.fc2 = nn.Linear(16, 1)

        def forward(self, x):
            return self.fc2(torch.tanh(self.fc1(x)))


    def main():
        torch.manual_seed(0)
        dev = torch_xla.device()
        gen = torch.Generator().manual_seed(1)
        w = torch.randn(8, 1, generator=gen)
        model = Net().to(dev)
        ema = copy.deepcopy(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(8):
            x = torch.randn(32, 8, generator=gen)
            x, y = x.to(dev), (x @ w).to(dev)
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for pe, p in zip(ema.parameters(), model.parameters()):
                    pe.mul_(0.9).add_(p, alpha=0.1)
            torch_xla.sync()
        xe = torch.randn(4, 8, generator=gen).to(dev)
        with torch.no_grad():
            ema_out = ema(xe)
            preds = model(xe).cpu()
        print(loss.detach().cpu().tolist())  # Python numbers: the same in both runs, no finding
        print(model(xe).cpu().flatten()[:2].tolist())  # read through views of the exit: no finding either
        print(float(ema_out.sum()), np.round(preds.numpy(), 3).tolist())


    main()
    """
)
EMA_WRONG = (
    EMA.replace('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"')
    .replace("    ema = copy.deepcopy(model)\n", "    ema = copy.deepcopy(model)\n    model.to(torch.bfloat16)\n")
    .replace("((model(x) - y) ** 2)", "((model(x.to(torch.bfloat16)) - y.to(torch.bfloat16)) ** 2)")
    .replace("ema(xe)", "ema(xe.to(torch.bfloat16))")
    .replace("model(xe).cpu()", "model(xe.to(torch.bfloat16)).cpu()")
)


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_an_f32_table_meeting_bf16_names_its_line_and_the_failure_at_the_sync(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(POSITION_TABLE)
    # the migrated copy's line is one further down: the finding must name the original's
    assert line_of(POSITION_TABLE_WRONG, "h = h + pos") == line_of(POSITION_TABLE, "h = h + pos")
    assert line_of(POSITION_TABLE_WRONG, "torch_xla.sync()") == line_of(POSITION_TABLE, "torch_xla.sync()") + 1
    with pytest.raises(RunError) as caught:
        verify_script(script, steps=3, migrated_source=POSITION_TABLE_WRONG, run_reference=False, timeout=300)
    found = {(f.kind, f.diagnostic.code): f.diagnostic for f in caught.value.findings}
    meet = found[(FindingKind.MEET, "BFM200")]
    assert (meet.path, meet.line) == (str(script), line_of(POSITION_TABLE, "h = h + pos"))
    assert "the f32 operand is made f32 on the device" in meet.message
    failure = found[(FindingKind.FAILURE, "BFM220")]
    assert failure.line == line_of(POSITION_TABLE, "torch_xla.sync()")
    assert "different precisions" in failure.message and "f32 met bf16 first at line 17" in failure.message
    assert "BFM200" in str(caught.value)  # the error's text names them too


def test_an_ema_copy_and_a_host_exit_after_the_loop_are_named_and_fail_the_trace_part(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(EMA)
    report = verify_script(script, steps=4, migrated_source=EMA_WRONG, run_reference=False, timeout=300)
    named = {(f.diagnostic.code, f.diagnostic.line) for f in report.trace_findings}
    assert named == {
        ("BFM202", line_of(EMA, "ema = copy.deepcopy(model)")),
        ("BFM210", line_of(EMA, "preds = model(xe).cpu()")),
        ("BFM220", line_of(EMA, "preds.numpy()")),
    }
    exit_finding = next(f for f in report.trace_findings if f.diagnostic.code == "BFM210")
    assert "after the recorded steps" in exit_finding.diagnostic.message
    part = report.verdict.part("trace")
    assert part is not None and part.status == "FAIL" and part.figures["complete"] is True
    assert not report.passed
    migrated = report.runs["migrated"]
    assert migrated.steps == 4 and migrated.exit_reason == "steps_reached"  # the verdict's steps, as before


@pytest.mark.xla_full
def test_fix_repairs_the_copy_and_the_exit_then_passes_and_a_second_fix_changes_nothing(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(EMA)
    kwargs: dict[str, Any] = dict(steps=4, run_reference=False, timeout=300)
    fixed = verify_and_fix(script, verify=verify_script, migrated_source=EMA_WRONG, **kwargs)
    assert fixed.stopped == "the trace is clean"
    assert {s.kind.value for s in fixed.applied} == {"cast_copy", "host_float"}
    text = fixed.texts[script]
    assert text.index("model.to(torch.bfloat16)") < text.index("ema = copy.deepcopy(model)")
    assert "model(xe.to(torch.bfloat16)).cpu().float()" in text
    assert fixed.report.passed, [p.detail for p in fixed.report.verdict.parts if not p.passed]
    again = verify_and_fix(script, verify=verify_script, migrated_source=text, **kwargs)
    assert again.applied == [] and again.rounds == [] and again.stopped == "the trace is clean"


PERTURB = textwrap.dedent(
    """\
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch
    import torch_xla


    def perturb(params, seed, scale):
        gen = torch.Generator().manual_seed(seed)
        for p in params:
            z = torch.randn(p.shape, generator=gen).to(p.device)
            p.data.add_(z, alpha=scale)


    def main():
        torch.manual_seed(0)
        dev = torch_xla.device()
        model = torch.nn.Linear(8, 2).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(16, 8).to(dev), torch.randint(0, 2, (16,)).to(dev)
        for step in range(6):
            perturb(list(model.parameters()), step, 1e-2)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()


    main()
    """
)
PERTURB_WRONG = (
    PERTURB.replace('os.environ["XLA_USE_BF16"] = "1"', "")
    .replace(
        "    model = torch.nn.Linear(8, 2).to(dev)\n",
        "    model = torch.nn.Linear(8, 2).to(dev)\n    model.to(torch.bfloat16)\n",
    )
    .replace("model(x)", "model(x.to(torch.bfloat16))")
)


def test_an_f32_operand_an_in_place_op_stores_into_bf16_is_named(tmp_path):
    """``p.data.add_(z)`` with ``z`` moved to the device f32 (``.to(p.device)``): the op computes in
    f32 and stores bf16, so no f32 result shows it; the trace names it where ``z`` meets the bf16
    parameter (BFM200), its origin the move. The legacy run's ``z`` was bf16."""
    script = tmp_path / "train.py"
    script.write_text(PERTURB)
    report = verify_script(script, steps=4, migrated_source=PERTURB_WRONG, run_reference=False, timeout=300)
    meets = [f.diagnostic for f in report.trace_findings if f.diagnostic.code == "BFM200"]
    assert [d.line for d in meets] == [line_of(PERTURB, "p.data.add_(z")], [d.message for d in meets]
    assert f"line {line_of(PERTURB, 'z = torch.randn')}" in meets[0].message
    part = report.verdict.part("trace")
    assert part is not None and part.status == "FAIL"


RESTORED = textwrap.dedent(
    """\
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch
    import torch.nn as nn
    import torch_xla


    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.mu = nn.Linear(6, 2)
            self.log_std = nn.Parameter(torch.zeros(2))

        def forward(self, x):
            return self.mu(x) * self.log_std.exp()


    def main():
        dev = torch_xla.device()
        policy = Policy().to(dev)
        opt = torch.optim.SGD(policy.parameters(), lr=0.01)
        for _ in range(4):
            x = torch.randn(16, 6).to(dev)
            loss = policy(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()


    main()
    """
)
RESTORED_WRONG = (
    RESTORED.replace('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"')
    .replace(
        "    policy = Policy().to(dev)\n",
        "    policy = Policy().to(dev)\n    policy.to(torch.bfloat16)\n"
        "    policy.log_std.data = policy.log_std.data.float()\n",
    )
    .replace("policy(x)", "policy(x.to(torch.bfloat16))")
)


def test_a_parameter_made_f32_again_after_the_cast_is_named_as_that_upcast_not_as_an_uncast_module(tmp_path):
    """``p.data = p.data.float()`` after ``model.to(torch.bfloat16)``: the parameter takes the upcast's origin
    (the `.data` setter) and its module's earlier move no longer speaks for it (bench/unseen/hunt27 PW3 said
    "moves `Policy` to the device and nothing casts it", BFM203). Precision names the f32 parameter."""
    script = tmp_path / "train.py"
    script.write_text(RESTORED)
    report = verify_script(script, steps=4, migrated_source=RESTORED_WRONG, run_reference=False, timeout=300)
    codes = [f.diagnostic.code for f in report.trace_findings]
    assert "BFM203" not in codes, [f.diagnostic.message for f in report.trace_findings]
    meets = [f.diagnostic for f in report.trace_findings if f.diagnostic.code == "BFM200"]
    assert meets and "(`Tensor.float`)" in meets[0].message, [d.message for d in meets]
    precision = report.verdict.part("precision")
    assert precision is not None and "1 of its parameters are f32 on the device" in precision.detail


LATE_PARAMETER = textwrap.dedent(
    """\
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch
    import torch.nn as nn
    import torch_xla


    class Scaled(nn.Module):
        def __init__(self, lin):
            super().__init__()
            self.lin = lin
            init = lin.weight.detach().abs().mean().item()
            self.scale = nn.Parameter(torch.tensor(init, device=lin.weight.device))

        def forward(self, x):
            return self.lin(x) * self.scale


    def main():
        torch.manual_seed(0)
        dev = torch_xla.device()
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for step in range(4):
            if step == 1:
                model[2] = Scaled(model[2])
                opt.add_param_group({"params": [model[2].scale]})
            x = torch.randn(4, 8).to(dev)
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()


    main()
    """
)


def test_a_parameter_made_f32_after_the_cast_is_named_where_its_tensor_was_made(tmp_path):
    """A module built after the model's cast wraps ``torch.tensor(init, device=...)`` (f32) in
    ``nn.Parameter``; the optimizer updates it in f32. The parameter takes the tensor's origin, so the
    finding names the line that made it, not "a tensor of unknown history" (bench/unseen/hunt40 V1)."""
    wrong = (
        LATE_PARAMETER.replace(
            'os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"'
        )
        .replace("    opt = torch.optim", "    model.to(torch.bfloat16)\n    opt = torch.optim")
        .replace("torch.randn(4, 8).to(dev)", "torch.randn(4, 8).to(dev).to(torch.bfloat16)")
    )
    script = tmp_path / "train.py"
    script.write_text(LATE_PARAMETER)
    report = verify_script(script, steps=3, migrated_source=wrong, run_reference=False, timeout=300)
    made = (
        LATE_PARAMETER.splitlines().index(
            "        self.scale = nn.Parameter(torch.tensor(init, device=lin.weight.device))"
        )
        + 1
    )
    messages = [f.diagnostic.message for f in report.trace_findings]
    assert any(f"made f32 on the device at line {made} (`torch.tensor`)" in m for m in messages), messages
    assert not any("unknown history" in m for m in messages), messages


CLASS_WEIGHT = textwrap.dedent(
    """\
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch
    import torch.nn as nn
    import torch_xla


    def main():
        torch.manual_seed(0)
        dev = torch_xla.device()
        w = torch.tensor([1.0, 3.0], device=dev)
        criterion = nn.CrossEntropyLoss(weight=w)
        model = nn.Linear(4, 2).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            x, y = torch.randn(8, 4).to(dev), torch.randint(0, 2, (8,)).to(dev)
            loss = criterion(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()


    main()
    """
)


def test_an_f32_loss_weight_the_loss_does_not_promote_is_named_as_the_cause_of_the_failure(tmp_path):
    """The class weight left f32 (``torch.tensor([...], device=dev)``) meets the bf16 logits in ``F.cross_entropy``,
    which does not promote: the result is bf16 and XLA's HLO verifier refuses the graph at the sync. The trace
    names the loss line, where f32 met bf16, with the line that made the weight, not only the failure's sync."""
    wrong = (
        CLASS_WEIGHT.replace('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"')
        .replace("    opt = torch.optim", "    model.to(torch.bfloat16)\n    opt = torch.optim")
        .replace("criterion(model(x), y)", "criterion(model(x.to(torch.bfloat16)), y)")
    )
    script = tmp_path / "train.py"
    script.write_text(CLASS_WEIGHT)
    with pytest.raises(RunError) as failed:
        verify_script(script, steps=2, migrated_source=wrong, run_reference=False, timeout=300)
    lines = CLASS_WEIGHT.splitlines()
    made = lines.index("    w = torch.tensor([1.0, 3.0], device=dev)") + 1
    loss = lines.index("        loss = criterion(model(x), y)") + 1
    meets = [f.diagnostic for f in failed.value.findings if f.diagnostic.code == "BFM200"]
    assert meets and meets[0].line == loss, [(d.line, d.message) for d in meets]
    assert f"made f32 on the device at line {made}" in meets[0].message, meets[0].message


THRESHOLD = textwrap.dedent(
    """\
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch
    import torch.nn as nn
    import torch_xla


    def pixels(n):
        return torch.full((n, 4), 0.5009765625)


    def main():
        dev = torch_xla.device()
        model = nn.Linear(4, 1).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(4):
            x = pixels(8).to(dev)
            x = (x > 0.5).float()
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()


    main()
    """
)
THRESHOLD_WRONG = (
    THRESHOLD.replace('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"')
    .replace(
        "    model = nn.Linear(4, 1).to(dev)\n", "    model = nn.Linear(4, 1).to(dev)\n    model.to(torch.bfloat16)\n"
    )
    .replace("(x > 0.5).float()", "(x > 0.5).to(torch.bfloat16)")
)


def test_a_comparison_of_an_input_left_f32_is_named_where_it_reads_the_values(tmp_path):
    """``x > 0.5`` on an input moved to the device f32: under the switch it compared the bf16-rounded values
    (0.5009765625 is 0.5 in bf16: False), in f32 True, so the binarised input differs wholly, though no f32
    result shows it (the comparison's is boolean). The trace names the comparison (BFM201), its origin the move."""
    script = tmp_path / "train.py"
    script.write_text(THRESHOLD)
    report = verify_script(script, steps=4, migrated_source=THRESHOLD_WRONG, run_reference=False, timeout=300)
    computes = [f.diagnostic for f in report.trace_findings if f.diagnostic.code == "BFM201"]
    assert [d.line for d in computes] == [line_of(THRESHOLD, "(x > 0.5)")], [d.message for d in computes]
    assert f"line {line_of(THRESHOLD, 'x = pixels(8)')}" in computes[0].message
    part = report.verdict.part("trace")
    assert part is not None and part.status == "FAIL"


SPAWNED = textwrap.dedent(
    """\
    import os
    import torch
    import torch.nn as nn
    import torch_xla.core.xla_model as xm
    import torch_xla.distributed.xla_multiprocessing as xmp


    def make_anchors(device):
        ys, xs = torch.meshgrid(torch.arange(4, device=device), torch.arange(4, device=device), indexing="ij")
        return torch.stack([(xs + 0.5) * 8, (ys + 0.5) * 8], -1).reshape(-1, 2)


    def _mp_fn(index):
        os.environ["XLA_USE_BF16"] = "1"
        device = xm.xla_device()
        torch.manual_seed(0)
        anchors = make_anchors(device)
        model = nn.Linear(8, 16 * 2).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        for _ in range(4):
            x = torch.randn(4, 8).to(device)
            loss = (anchors[None] + model(x).view(-1, 16, 2)).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            xm.mark_step()


    if __name__ == "__main__":
        xmp.spawn(_mp_fn)
    """
)
SPAWNED_WRONG = (
    SPAWNED.replace('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"')
    .replace(
        "        model = nn.Linear(8, 16 * 2).to(device)\n",
        "        model = nn.Linear(8, 16 * 2).to(device)\n        model.to(torch.bfloat16)\n",
    )
    .replace("model(x)", "model(x.to(torch.bfloat16))")
)


def test_the_trace_follows_the_function_xmp_spawn_runs_in_a_thread_of_its_process(tmp_path):
    """torch-xla's ``xmp.spawn`` runs the spawned function in a thread of the process it starts, and torch's
    function-mode stack is per thread: the trace saw nothing there and said "no f32 on the device" beside a
    FAIL by precision. It names the anchors made f32 from integer grids (BFM200), as at module level."""
    script = tmp_path / "train.py"
    script.write_text(SPAWNED)
    report = verify_script(script, steps=4, migrated_source=SPAWNED_WRONG, run_reference=False, timeout=300)
    meets = [f.diagnostic for f in report.trace_findings if f.diagnostic.code in ("BFM200", "BFM201")]
    assert meets, [f.diagnostic.message for f in report.trace_findings]
    assert {d.line for d in meets} <= {line_of(SPAWNED, "(xs + 0.5) * 8"), line_of(SPAWNED, "anchors[None] +")}
    assert "line " + str(line_of(SPAWNED, "(xs + 0.5) * 8")) in " ".join(d.message for d in meets)
    part = report.verdict.part("trace")
    assert part is not None and part.status == "FAIL"


EMA_AMP = textwrap.dedent(
    """\
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch
    import torch.nn as nn
    import torch_xla


    def main():
        torch.manual_seed(0)
        dev = torch_xla.device()
        model = nn.Linear(8, 1).to(dev)
        shadow = [p.detach().clone() for p in model.parameters()]
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(6):
            x, y = torch.randn(16, 8).to(dev), torch.randn(16, 1).to(dev)
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for s, p in zip(shadow, model.parameters()):
                    s.mul_(0.9).add_(p.detach(), alpha=0.1)
            torch_xla.sync()


    main()
    """
)
EMA_AMP_WRONG = (
    EMA_AMP.replace('os.environ["XLA_USE_BF16"] = "1"\n', "")
    .replace(
        "[p.detach().clone() for p",
        "[torch.empty_like(p, dtype=torch.bfloat16).copy_(p.detach()) for p",
    )
    .replace(
        "        loss = ((model(x) - y) ** 2).mean()\n",
        '        with torch.autocast("xla", dtype=torch.bfloat16):\n            loss = ((model(x) - y) ** 2).mean()\n',
    )
)


def test_amp_a_bf16_copy_made_by_a_like_factory_naming_bf16_is_made_by_hand(tmp_path):
    """amp keeps the model and its state float32; an EMA shadow made bf16 outside autocast by
    ``torch.empty_like(p, dtype=torch.bfloat16)`` is bf16 by hand as ``p.to(torch.bfloat16)`` is (BFM205),
    though its template ``p`` is a float32 device tensor."""
    script = tmp_path / "train.py"
    script.write_text(EMA_AMP)
    assert "XLA_USE_BF16" not in EMA_AMP_WRONG and "torch.autocast" in EMA_AMP_WRONG
    report = verify_script(script, "amp", steps=4, migrated_source=EMA_AMP_WRONG, run_reference=False, timeout=300)
    named = [(f.diagnostic.code, f.diagnostic.line) for f in report.trace_findings if f.excused is None]
    assert ("BFM205", line_of(EMA_AMP, "shadow = [")) in named, [f.diagnostic.message for f in report.trace_findings]
    part = report.verdict.part("trace")
    assert part is not None and part.status == "FAIL"


HOST_MODEL = textwrap.dedent(
    """\
    import copy
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch
    import torch.nn as nn
    import torch_xla


    def main():
        torch.manual_seed(0)
        dev = torch_xla.device()
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for _ in range(6):
            x, y = torch.randn(16, 8).to(dev), torch.randn(16, 1).to(dev)
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()
        ckpt = copy.deepcopy(model).cpu()
        torch.save(ckpt.state_dict(), "ckpt.pt")
        host = model.cpu()
        probe = torch.randn(4, 8)
        with torch.no_grad():
            print(host(probe).sum().item())


    main()
    """
)
HOST_MODEL_WRONG = (
    HOST_MODEL.replace('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"')
    .replace(".to(dev)\n    opt", ".to(dev).to(torch.bfloat16)\n    opt")
    .replace("model(x) - y", "model(x.to(torch.bfloat16)) - y.to(torch.bfloat16)")
    .replace("torch.save(ckpt.state_dict(),", "torch.save({k: v.float() for k, v in ckpt.state_dict().items()},")
    .replace("host(probe)", "host(probe.to(torch.bfloat16)).float()")
)


def test_a_module_the_user_moves_to_the_host_as_bf16_is_named_unless_its_tensors_are_cast_back(tmp_path):
    """Under the switch ``model.cpu()`` gave a float32 module on the host; a bf16 model moved there computes
    its host forward in bf16, and ``Module._apply`` moves each parameter from torch's own code. BFM210 names
    the user's ``model.cpu()``; a copy whose state is cast to float32 before it is saved is not named."""
    script = tmp_path / "train.py"
    script.write_text(HOST_MODEL)
    assert HOST_MODEL_WRONG.count("to(torch.bfloat16)") == 4 and "v.float()" in HOST_MODEL_WRONG
    report = verify_script(script, steps=4, migrated_source=HOST_MODEL_WRONG, run_reference=False, timeout=300)
    named = [(f.diagnostic.code, f.diagnostic.line) for f in report.trace_findings if f.excused is None]
    assert named == [("BFM210", line_of(HOST_MODEL, "host = model.cpu()"))], [
        f.diagnostic.message for f in report.trace_findings
    ]
    part = report.verdict.part("trace")
    assert part is not None and part.status == "FAIL"


JIT_EXPORT = textwrap.dedent(
    """\
    import os
    os.environ["XLA_USE_BF16"] = "1"
    import torch
    import torch.nn as nn
    import torch_xla


    def main():
        torch.manual_seed(0)
        dev = torch_xla.device()
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        x, y = torch.randn(32, 8), torch.randn(32, 1)
        for _ in range(4):
            loss = nn.functional.mse_loss(model(x.to(dev)), y.to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
            torch_xla.sync()
        model.eval()
        sample = x[:2].to(dev)
        traced = torch.jit.trace(model, sample)
        print(traced(sample).cpu().flatten().tolist())


    main()
    """
)


@pytest.mark.parametrize("mode", ["stochastic", "amp"])
def test_torch_jit_trace_of_the_migrated_model_runs_and_its_own_check_is_not_the_scripts_computation(tmp_path, mode):
    """``torch.jit.trace(model, sample)`` after training: the migration feeds the trace bf16 (the pre-hook, or the
    move's cast) or, in amp, traces the FP32 model outside autocast (tracing under autocast fails) and calls the
    traced module under it. The trace's own check (``_check_trace`` in torch/jit/_trace.py compares the traced
    and the eager outputs with ``.double()``) and amp's recorded forward compute nothing the script keeps: no
    finding (each was one before: BFM201/BFM204 f64 at the trace, BFM207 its forward outside autocast), and the
    traced module's call computes as the legacy run's did."""
    script = tmp_path / "export.py"
    script.write_text(JIT_EXPORT)
    report = verify_script(script, mode, steps=6, run_reference=False, timeout=300)  # the script ends first
    assert [(f.diagnostic.code, f.diagnostic.line) for f in report.trace_findings] == []
    part = report.verdict.part("trace")
    assert part is not None and part.status == "PASS" and part.figures["complete"] is True
    assert report.runs["migrated"].exit_reason == "script_exit" and report.runs["migrated"].steps == 4
