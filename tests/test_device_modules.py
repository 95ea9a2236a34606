"""Every module that reaches the device (bf16_migrate/python/device_modules.py).

The rule's own VALID / INVALID examples; the fixtures of fixtures/device_modules/ (an inference
script without an optimizer, an EMA copy made with copy.deepcopy before the cast, an EMA kept by
AveragedModel, a frozen teacher in distillation, a ``type(model)(...)`` evaluation copy loaded with
the best weights, a frozen backbone moved with ``.to(torch_xla.device())``): goldens and findings in
every mode, idempotence, re-parse; the rules table's validation; the summary's "not examined". On
the XLA CPU device (``-m xla``): each migrated script runs to its end, every module on the device
computes in bf16 (amp: under autocast), and what it prints equals the legacy run's within bf16
noise; a migration with the module's cast taken out fails the same check.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.project import migrate_paths
from bf16_migrate.python import migrate_source
from bf16_migrate.python.device_modules import CODES, EXAMPLES
from bf16_migrate.python.outcome import Edge, Refusal
from bf16_migrate.rules import REFERENCE, RULES_DIR, RuleError, load_rules, mode_named, variable_names

import device_runs
from conftest import FIXTURES, MODES
from device_runs import GROUP, script
from goldens import expected_dir

CASES = sorted(p.name for p in GROUP.iterdir() if p.is_dir())
MODULE = {
    "inference_only": "model",
    "ema_deepcopy": "ema_model",
    "averaged_model": "ema_model",
    "distill_teacher": "teacher",
    "eval_copy": "best_model",
    "frozen_backbone": "backbone",
}
"""The module of each fixture that reaches the device beside the optimizer's model (or instead of
it), and that the migration before this rule left out."""


# -- the rule's examples ---------------------------------------------------------------------------
def example_mode(example) -> str:
    """The rules' default mode, or the first that autocasts (:class:`device_modules.Example`)."""
    if not example.autocast:
        return MODES[0]
    return next(name for name in MODES if load_rules().modes[name].autocast)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_example(example):
    mode = example_mode(example)
    result = migrate_source(example.before, mode, "example.py")
    codes = {d.code for d in result.diagnostics}
    if example.after is None:
        assert not codes & set(CODES), [d.format_text() for d in result.diagnostics]
        return
    assert result.code == example.after
    assert set(example.codes) <= codes, [d.format_text() for d in result.diagnostics]
    cst.parse_module(result.code)
    again = migrate_source(result.code, mode, "example.py")
    assert again.code == result.code


def test_every_code_has_an_example():
    assert {c for e in EXAMPLES for c in e.codes} == set(CODES)
    assert any(e.after is None for e in EXAMPLES) and any(e.autocast for e in EXAMPLES)


def test_a_module_built_elsewhere_keeps_the_switch():
    """BFM151 at the module and on the write, the switch kept, the refusal in the outcome."""
    example = next(e for e in EXAMPLES if "BFM151" in e.codes)
    result = migrate_source(example.before, MODES[0], "train.py")
    found = [(d.code, d.line, d.fixed) for d in result.diagnostics]
    assert found == [("BFM151", 2, False), ("BFM151", 8, False)], found
    assert [why for why, _ in result.outcome.refusals] == [Refusal.DEVICE_MODULE]
    assert result.code == example.before and not result.outcome.took


@pytest.mark.parametrize(
    "move, variant",
    [("teacher.to(args.device)", "device"), ("teacher.to(device)", None)],
    ids=["unknown-device", "known-device"],
)
def test_a_device_the_code_cannot_tell_keeps_the_switch(move, variant):
    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\nimport torch_xla\n\n\ndef main(args):\n'
        "    device = torch_xla.device()\n    teacher = torch.nn.Linear(8, 2)\n"
        f"    {move}\n"
        "    student = torch.nn.Linear(8, 2).to(device)\n"
        "    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)\n"
        "    x = torch.randn(4, 8).to(device)\n"
        "    loss = (student(x) - teacher(x)).pow(2).mean()\n    loss.backward()\n    optimizer.step()\n"
    )
    result = migrate_source(source, MODES[0], "train.py")
    codes = [d.code for d in result.diagnostics]
    if variant is None:
        assert "BFM150" in codes and "BFM151" not in codes and result.outcome.took
    else:
        assert codes.count("BFM151") == 2 and not result.outcome.took
        assert "`args.device`" in next(d.message for d in result.diagnostics if d.line == 10)


def test_modules_moved_in_a_tuple_assignment_are_each_cast():
    """Target networks moved in one statement (`q1, q2 = QNet().to(device), QNet().to(device)`) were left
    f32, computing the TD target in f32 (bench/unseen/hunt9 sac_tanh)."""
    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\nimport torch_xla\n\n\ndef main():\n'
        "    device = torch_xla.device()\n    q = torch.nn.Linear(8, 1).to(device)\n"
        "    q_targ, q_targ2 = torch.nn.Linear(8, 1).to(device), torch.nn.Linear(8, 1).to(device)\n"
        "    optimizer = torch.optim.SGD(q.parameters(), lr=0.1)\n"
        "    x = torch.randn(4, 8).to(device)\n"
        "    with torch.no_grad():\n        backup = torch.min(q_targ(x), q_targ2(x))\n"
        "    loss = (q(x) - backup).pow(2).mean()\n    loss.backward()\n    optimizer.step()\n"
    )
    result = migrate_source(source, MODES[0], "train.py")
    assert (
        "    q_targ, q_targ2 = torch.nn.Linear(8, 1).to(device), torch.nn.Linear(8, 1).to(device)\n"
        "    q_targ.to(torch.bfloat16)\n    q_targ2.to(torch.bfloat16)\n" in result.code
    )
    assert [(d.code, d.fixed) for d in result.diagnostics if d.code == "BFM150"] == [("BFM150", True)] * 2
    assert migrate_source(result.code, MODES[0], "train.py").code == result.code


def test_a_module_kept_in_the_dtype_the_script_names():
    """BFM153: put on the device as torch.float64 under XLA_DOWNCAST_BF16 (its FP32 there), neither cast nor
    autocast; the float64 becomes float32 (BFM048)."""
    example = next(e for e in EXAMPLES if "BFM153" in e.codes)
    for mode in MODES:
        result = migrate_source(example.before, mode, "train.py")
        kept = [d for d in result.diagnostics if d.code == "BFM153"]
        assert len(kept) == 1 and kept[0].fixed and kept[0].line == 7, mode
        assert "encoder.to(torch.bfloat16)" not in result.code
        assert "encoder = torch.nn.Linear(8, 8).to(device, dtype=torch.float32)" in result.code
        assert "with torch.no_grad():\n    features = encoder(" in result.code  # not under autocast


@pytest.mark.parametrize("mode", MODES)
def test_a_module_the_script_puts_on_the_device_as_float32_follows_the_switch(mode):
    """``.to(device, dtype=torch.float32)`` was bf16 on the device under XLA_USE_BF16: the module is cast as any
    other (BFM150), or called under autocast in amp; kept FP32 it met the bf16 inputs the migration makes."""
    example = next(e for e in EXAMPLES if "float32 was bf16" in e.name)
    result = migrate_source(example.before, mode, "train.py")
    assert "BFM153" not in {d.code for d in result.diagnostics}
    assert any(d.code == "BFM150" and d.fixed and "`encoder`" in d.message for d in result.diagnostics)
    if mode == "amp":
        assert 'with torch.autocast("xla", dtype=torch.bfloat16):\n        features = encoder(' in result.code
    else:
        assert "encoder.to(torch.bfloat16)" in result.code


# -- the fixtures --------------------------------------------------------------------------------
def test_one_fixture_per_class():
    assert set(CASES) == set(MODULE)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_golden(case, mode, goldens):
    path = script(case)
    source = path.read_text()
    result = migrate_source(source, mode, f"{case}/{path.name}")
    diagnostics = "".join(d.format_text() + "\n" for d in result.diagnostics)
    goldens.check(expected_dir(GROUP / case, mode), {path.name: result.code}, diagnostics)
    cst.parse_module(result.code)
    compile(result.code, f"{case}/{mode}.py", "exec")
    assert any(d.code == "BFM001" and d.fixed for d in result.diagnostics)
    assert {d.code for d in result.diagnostics if not d.fixed} == {"BFM091"}  # the docstrings name the switch
    told = [d for d in result.diagnostics if d.code == "BFM150"]
    assert told and all(d.fixed for d in told)
    assert any(f"`{MODULE[case]}`" in d.message for d in told), [d.message for d in told]
    assert result.outcome.took and Edge.DEVICE_MODULES in result.outcome.examined
    assert result.outcome.unexamined() == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_idempotent(case, mode):
    path = script(case)
    expected = (expected_dir(GROUP / case, mode) / path.name).read_text()
    again = migrate_source(expected, mode, f"{case}/{path.name}")
    assert again.code == expected
    assert {d.code for d in again.diagnostics} <= {"BFM091"}


@pytest.mark.parametrize("case", CASES)
def test_module_cast_in_modes_that_cast_the_model(case):
    """The module gets its cast (a copy before its source's cast, or any other module right after
    it reaches the device), never in amp, which keeps every module FP32."""
    path = script(case)
    for mode in MODES:
        migrated = (expected_dir(GROUP / case, mode) / path.name).read_text()
        cast = f"{MODULE[case]}.to(torch.bfloat16)"
        assert (cast in migrated) == load_rules().modes[mode].casts_model, (case, mode)


# -- the rules table ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "change, message",
    [
        (('method = "to"\n', 'method = "to"\nkeyword = "device"\n'), "either method"),
        (('on = "host"', 'on = "gpu"'), "on must be"),
        (('source = { at = 0, keyword = "x" }\n', ""), "names its source"),
        (("hooks = false\n", "hooks = false\ncopies = 1\n"), "a table with keys"),
    ],
    ids=["method-and-keyword", "unknown-on", "no-source", "unknown-key"],
)
def test_rules_table_is_validated(tmp_path, change, message):
    rules = tmp_path / "rules"
    shutil.copytree(RULES_DIR, rules)
    table = rules / "device_modules.toml"
    text = table.read_text()
    assert change[0] in text
    table.write_text(text.replace(change[0], change[1], 1))
    with pytest.raises(RuleError, match=message):
        load_rules(rules)


# -- the summary ----------------------------------------------------------------------------------
AMP_ELSEWHERE = next(e for e in EXAMPLES if "BFM152" in e.codes)


def test_summary_says_what_was_not_examined(tmp_path):
    (tmp_path / "train.py").write_text(AMP_ELSEWHERE.before)
    result = CliRunner().invoke(main, [str(tmp_path), "--mode", "amp", "--check"])
    line = next(x for x in result.output.splitlines() if x.startswith("bf16-migrate:"))
    assert "1 place(s) not examined" in line and "train.py:16: the forward of `ema` in `evaluate`" in line, line


def test_summary_says_nothing_more_when_every_module_was_examined(tmp_path):
    (tmp_path / "predict.py").write_text(script("inference_only").read_text())
    result = CliRunner().invoke(main, [str(tmp_path), "--mode", "stochastic", "--check", "--ignore", "BFM091"])
    line = next(x for x in result.output.splitlines() if x.startswith("bf16-migrate:"))
    assert " 0 left to do by hand," in line and "not examined" not in line, line


def test_a_change_carried_without_the_rule_is_not_examined(tmp_path):
    """amp through the script's own autocast flag (fixtures/trees/autocast_flag): the launcher
    passes the flag, the script is not changed, and its modules were never examined: the summary
    must not read as if they were."""
    tree = tmp_path / "autocast_flag"
    shutil.copytree(FIXTURES / "trees" / "autocast_flag", tree, ignore=shutil.ignore_patterns("expected"))
    outcome = migrate_paths([tree], "amp", write=False)
    assert any(item.endswith("train.py: " + Edge.DEVICE_MODULES.value) for item in outcome.not_examined), (
        outcome.not_examined
    )


# -- on the XLA CPU device -------------------------------------------------------------------------
LEGACY_PROBE_PARAMS = "torch.float32"  # under the switch torch reports float32 for what the device holds in bf16


def _in_bf16(record: dict, mode: str) -> list[str]:
    """The modules of ``record`` whose forward did not run in bf16 (amp: not under autocast)."""
    if load_rules().modes[mode].casts_model:
        return [name for name, call in record.items() if call["params"] != ["torch.bfloat16"]]
    return [name for name, call in record.items() if not call["autocast"]]


XLA_MODE = {
    "inference_only": "stochastic",
    "ema_deepcopy": "stochastic",
    "averaged_model": "amp",
    "distill_teacher": "stochastic",
    "eval_copy": "gpu-compatible",
    "frozen_backbone": "amp",
}
"""The mode each fixture runs in with ``-m xla``; the others are ``xla_full``."""


def _pairs():
    for case in CASES:
        for mode in MODES:
            marks = [pytest.mark.xla] + ([pytest.mark.xla_full] if XLA_MODE[case] != mode else [])
            yield pytest.param(case, mode, marks=marks, id=f"{case}-{mode}")


@pytest.fixture(scope="module")
def baseline_runs(tmp_path_factory):
    """The legacy run and the FP32 reference run (the legacy write removed, nothing added) of a
    case, each made once."""
    found: dict[tuple[str, str], device_runs.Probed] = {}

    def get(case: str, kind: str) -> device_runs.Probed:
        if (case, kind) not in found:
            work = tmp_path_factory.mktemp(f"{kind}-{case}")
            source = script(case).read_text()
            text = source if kind == "legacy" else migrate_source(source, REFERENCE.name, script(case).name).code
            (work / script(case).name).write_text(text)
            found[case, kind] = device_runs.run(work / script(case).name, work, kind, variable_names())
            assert found[case, kind].failed is None, f"the {kind} run of {case} failed:\n{found[case, kind].failed}"
        return found[case, kind]

    return get


def _migrated_run(case: str, text: str, where: Path, name: str) -> device_runs.Probed:
    path = where / script(case).name
    path.write_text(text)
    return device_runs.run(path, where, name, variable_names())


@pytest.mark.parametrize("case, mode", list(_pairs()))
def test_migrated_runs_to_its_end_in_bf16_like_the_legacy_run(case, mode, baseline_runs, tmp_path):
    """The migration (the golden) runs to its end, every module whose forward ran on the device in
    the legacy run ran in bf16 (amp: under autocast), and every figure it prints is within the
    mode's limit of its baseline's (tests/device_runs.py: the legacy run's, amp: the FP32
    reference run's; 2 x the precision gap, floors 1% and, for a metric, 0.005)."""
    legacy, reference = baseline_runs(case, "legacy"), baseline_runs(case, "reference")
    assert legacy.record and all(c["params"] == [LEGACY_PROBE_PARAMS] for c in legacy.record.values())
    migrated = _migrated_run(case, (expected_dir(GROUP / case, mode) / script(case).name).read_text(), tmp_path, mode)
    assert migrated.failed is None, migrated.failed
    assert set(migrated.record) == set(legacy.record)  # the same modules ran on the device
    assert _in_bf16(migrated.record, mode) == [], migrated.record
    verify = mode_named(mode).verify
    bases = [reference if verify.get("baseline") == REFERENCE.name else legacy]
    if verify.get("drift_band"):  # gpu-compatible: its FP32 master weights may bring it nearer the FP32 run
        bases.append(reference)
    problems = device_runs.beyond(migrated.figures, [b.figures for b in bases], legacy.figures, reference.figures)
    assert problems == []


@pytest.mark.xla
@pytest.mark.parametrize("case", [c for c in CASES if c != "inference_only"])
def test_negative_control_without_the_module_cast(case, baseline_runs, tmp_path):
    """The stochastic migration with the rule's cast taken out (what the codemod wrote before it):
    the module stays f32 on the device, and the dtype check fails."""
    text = (expected_dir(GROUP / case, "stochastic") / script(case).name).read_text()
    cast = f"    {MODULE[case]}.to(torch.bfloat16)\n"
    assert cast in text
    control = _migrated_run(case, text.replace(cast, "", 1), tmp_path, "control")
    # it may fail outright (an f32 module fed bf16 inputs): as wrong a migration
    assert control.failed is not None or _in_bf16(control.record, "stochastic") != [], control.record


def test_a_model_a_function_of_the_file_builds_and_returns_is_a_module():
    """``model = load_checkpoint("net.pt").to(device).eval()`` with ``load_checkpoint`` building
    ``SegNet()`` and returning it: an evaluation script's model on the device, cast (BFM150); it was
    refused as having no model (BFM010: a hunt's segmentation evaluation)."""
    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\nimport torch_xla\n\n\n'
        "class SegNet(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)\n\n    def forward(self, x):\n"
        "        return self.conv(x)\n\n\n"
        "def load_checkpoint(path):\n    model = SegNet()\n    if os.path.exists(path):\n"
        "        model.load_state_dict(torch.load(path, map_location='cpu'))\n    return model\n\n\n"
        "def main():\n    device = torch_xla.device()\n    model = load_checkpoint('net.pt').to(device).eval()\n"
        "    with torch.no_grad():\n        out = model(torch.rand(2, 1, 8, 8).to(device))\n"
        "    print(out.argmax(1).cpu().tolist())\n\n\nmain()\n"
    )
    result = migrate_source(source, "stochastic", "evaluate.py")
    assert "    model = load_checkpoint('net.pt').to(device).eval()\n    model.to(torch.bfloat16)\n" in result.code
    assert "BFM010" not in [d.code for d in result.diagnostics]


# -- a module put on the device in a return ----------------------------------------------------------
RETURNED = """import os
import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def load(device):
    model = Net()
    model.load_state_dict(Net().state_dict())
    return model.to(device).eval()


def build(device):
    return Net().to(device)


def main():
    device = torch_xla.device()
    model = load(device)
    other = build(device)
    with torch.no_grad():
        x = torch.randn(8, 4).to(device)
        print(model(x).sum().item(), other(x).sum().item())


main()
"""


def test_a_module_moved_in_a_return_is_cast_before_it_and_its_calls_found_through_the_callers_binding():
    """``return model.to(device).eval()``: a cast put after the return would never run (it was,
    and the switch went: the model computed in f32); it goes right before (cast on the host, then
    moved: bf16 on the device all the same), and the calls of the caller's ``model`` get their
    inputs cast. ``return Net().to(device)``: the module arrives where the call binds it
    (``other = build(device)``), cast there."""
    result = migrate_source(RETURNED, "stochastic", "t.py")
    assert not result.outcome.refused()
    code = result.code
    assert "    model.to(torch.bfloat16)\n    return model.to(device).eval()\n" in code
    assert "    other = build(device)\n    other.to(torch.bfloat16)\n" in code
    # `x`, read by both models, is cast where it is moved to the device
    assert "x = torch.randn(8, 4).to(device, dtype=torch.bfloat16)" in code
    assert "print(model(x).sum().item(), other(x).sum().item())" in code
    compile(code, "t.py", "exec")
    assert migrate_source(code, "stochastic", "t.py").code == code


def test_a_module_put_on_the_device_in_a_value_no_statement_binds_keeps_the_switch():
    used_in_place = RETURNED.replace(
        "    other = build(device)\n",
        "    other = build(device)\n    print(build(device)(torch.zeros(1, 4).to(device)))\n",
    )
    result = migrate_source(used_in_place, "stochastic", "t.py")
    assert result.code == used_in_place
    found = [d for d in result.diagnostics if d.code == "BFM151"]
    assert any(
        "`Net()` is built, put on the device and returned, and a call of its function does not bind" in d.message
        for d in found
    )
    assert [why for why, _ in result.outcome.refused()] == [Refusal.DEVICE_MODULE]


def test_statements_planned_after_a_return_go_right_before_it():
    """The plan's "right after" of a statement that leaves the block (``return``, ``raise``,
    ``continue``, ``break``) would be dead code: they go right before it."""
    from bf16_migrate.python.apply import EditPlan, apply_plan

    module = cst.parse_module("def f(m):\n    # moved\n    return m.to('xla')\n")
    func = module.body[0]
    assert isinstance(func, cst.FunctionDef) and isinstance(func.body, cst.IndentedBlock)
    ret = func.body.body[0]
    plan = EditPlan(insert_after={id(ret): [cst.parse_statement("m.to(torch.bfloat16)\n")]})
    assert apply_plan(module, plan).code == "def f(m):\n    m.to(torch.bfloat16)\n    # moved\n    return m.to('xla')\n"


def test_the_cast_goes_after_the_dtype_the_script_sets_right_after_the_move():
    """``model.to(device)`` then ``model.float()``: the cast written between them was undone, and the bf16
    inputs met f32 weights (a hunt's). It goes after the statements right after the move that set the
    module's dtype."""
    from bf16_migrate.python import migrate_source

    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\nimport torch.nn as nn\nimport torch_xla\n\n'
        "device = torch_xla.device()\nmodel = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))\n"
        "model.to(device)\nmodel.float()\nmodel.eval()\nwith torch.no_grad():\n"
        "    y = model(torch.randn(16, 4).to(device))\nprint(y.sum().item())\n"
    )
    code = migrate_source(source, "stochastic", "infer.py").code
    assert "\nmodel.to(device)\nmodel.float()\nmodel.to(torch.bfloat16)\nmodel.eval()\n" in code
    assert migrate_source(code, "stochastic", "infer.py").code == code


@pytest.mark.parametrize(
    ("built", "given"),
    [
        (
            "self.head = nn.Linear(16, n, device=self.body.weight.device)",
            "self.head = nn.Linear(16, n, device=self.body.weight.device, dtype=self.body.weight.dtype)",
        ),
        (
            "blk = nn.Linear(16, 16).to(self.body.weight.device)\n        self.extra.append(blk)",
            "blk = nn.Linear(16, 16).to(self.body.weight.device, dtype=self.body.weight.dtype)",
        ),
    ],
)
def test_a_part_a_method_builds_on_the_device_of_the_modules_own_tensor_takes_its_dtype(built, given):
    """``self.head = nn.Linear(16, n, device=self.body.weight.device)`` in a method (a head reset, a block grown
    after the optimizer): the device was no XLA device the code shows, and the switch was kept (BFM151, a hunt's
    over-refusal in all three modes). The part takes the dtype of the tensor whose device it takes, bf16 once the
    model is cast whenever the method runs; amp needs nothing (its forward runs in the model's, under autocast)."""
    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\nimport torch.nn as nn\nimport torch_xla\n\n\n'
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.body = nn.Linear(8, 16)\n        self.head = nn.Linear(16, 2)\n"
        "        self.extra = nn.ModuleList()\n\n"
        f"    def grow(self, n):\n        {built}\n\n"
        "    def forward(self, x):\n        h = torch.relu(self.body(x))\n        for blk in self.extra:\n"
        "            h = h + blk(h)\n        return self.head(h)\n\n\n"
        "dev = torch_xla.device()\nmodel = Net().to(dev)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model.grow(3)\nloss = model(torch.randn(4, 8).to(dev)).pow(2).mean()\nloss.backward()\nopt.step()\n"
    )
    result = migrate_source(source, "stochastic", "train.py")
    assert given in result.code and 'os.environ["XLA_USE_BF16"]' not in result.code, result.diagnostics
    assert [d.code for d in result.diagnostics if d.line == 16] == ["BFM150"]
    amp = migrate_source(source, "amp", "train.py")
    assert 'os.environ["XLA_USE_BF16"]' not in amp.code and ".dtype)" not in amp.code.split("class Net")[1][:600]
    # the device of a tensor of another object is still no device the code shows
    other = source.replace("self.body.weight.device", "other.weight.device").replace(
        "def grow(self, n)", "def grow(self, n, other)"
    )
    assert 'os.environ["XLA_USE_BF16"] = "1"' in migrate_source(other, "stochastic", "train.py").code


def test_amp_a_module_put_into_the_model_runs_in_the_models_forward_not_elsewhere():
    """``head = nn.Linear(16, 2).to(dev); model.heads.append(head)`` for each task (a continual-learning loop): amp
    said the head was handed to code outside the file, its forward to be put under autocast by hand (BFM152), where it
    runs in the model's forward, under autocast. A module handed to a library function is still named."""
    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\nimport torch.nn as nn\nimport torch_xla\n\n\n'
        "class MultiHead(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.trunk = nn.Linear(8, 16)\n        self.heads = nn.ModuleList()\n\n"
        "    def forward(self, x, task):\n        return self.heads[task](torch.relu(self.trunk(x)))\n\n\n"
        "dev = torch_xla.device()\nmodel = MultiHead().to(dev)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for task in range(2):\n    head = nn.Linear(16, 2).to(dev)\n    model.heads.append(head)\n"
        "    opt.add_param_group({'params': head.parameters()})\n"
        "    loss = model(torch.randn(4, 8).to(dev), task).pow(2).mean()\n    loss.backward()\n    opt.step()\n"
    )
    amp = migrate_source(source, "amp", "train.py")
    assert not [d for d in amp.diagnostics if d.code == "BFM152"], amp.diagnostics
    elsewhere = source.replace("model.heads.append(head)", "register_head(head)").replace(
        "import torch_xla\n", "import torch_xla\nfrom heads import register_head\n"
    )
    assert [d.code for d in migrate_source(elsewhere, "amp", "train.py").diagnostics if d.code == "BFM152"]
