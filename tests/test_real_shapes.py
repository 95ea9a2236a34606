"""The shapes of public training code (fixtures/real_shapes/, our own writing): batches through
function parameters, loaders and generator methods, tuple returns, opaque batches, parameter
groups, a flag-switched autocast and a sibling optimizer module that reads the variable.

Each case's launcher setting comes from outside the tree (``launcher_setting.txt``, given as
``--legacy-env``), as for the pytorch/xla MNIST script whose CI job sets it. Goldens per mode
(every changed file and the diagnostics), idempotence, re-parse; on the XLA CPU device (``-m
xla``): the migrated scripts run where the legacy ones did, and ``verify`` passes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bf16_migrate.project import migrate_paths

from conftest import FIXTURES, MODES
from precision_guarantee import assert_no_silent_f32_matmul

REAL = FIXTURES / "real_shapes"
CASES = sorted(p.name for p in REAL.iterdir() if (p / "train.py").is_file())
SETTING = "launcher_setting.txt"


def setting(case: str) -> dict[str, str]:
    key, value = (REAL / case / SETTING).read_text().strip().split("=", 1)
    return {key: value}


def expected_dir(case: str, mode: str) -> Path:
    return REAL / case / "expected" / mode


def _tree(case: str, where: Path) -> Path:
    target = where / case
    shutil.copytree(REAL / case, target, ignore=shutil.ignore_patterns("expected", SETTING, "__pycache__"))
    return target


def _run(case: str, mode: str, where: Path, write: bool = True):
    old = os.getcwd()
    os.chdir(where)
    try:
        return migrate_paths([Path(case)], mode, write=write, legacy_env=setting(case))
    finally:
        os.chdir(old)


def migrate_case(case: str, mode: str, where: Path | None = None) -> tuple[dict[str, str], list[str]]:
    """Migrate a copy of the case's tree (run from its parent, so paths read ``case/...``).
    Returns ({relative path: new text} of the changed files, diagnostic lines)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(where or tmp)
        tree = _tree(case, base)
        before = {p.relative_to(tree): p.read_text() for p in tree.rglob("*.py")}
        outcome = _run(case, mode, base)
        assert not outcome.errors, outcome.errors
        changed = {
            str(rel): (tree / rel).read_text() for rel, text in before.items() if (tree / rel).read_text() != text
        }
        return changed, [d.format_text() for d in outcome.diagnostics]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_golden_files_and_diagnostics(case, mode, goldens):
    changed, diagnostics = migrate_case(case, mode)
    goldens.check(expected_dir(case, mode), changed, "".join(line + "\n" for line in diagnostics))
    for rel, text in changed.items():
        compile(text, rel, "exec")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_second_run_changes_nothing(case, mode, tmp_path):
    tree = _tree(case, tmp_path)
    _run(case, mode, tmp_path)
    after = {p: p.read_text() for p in tree.rglob("*.py")}
    again = _run(case, mode, tmp_path)
    assert {p: p.read_text() for p in tree.rglob("*.py")} == after
    assert not again.errors
    # nothing is fixed twice; the script says it already carries the change (BFM013)
    assert all(not d.fixed or d.code == "BFM013" for d in again.diagnostics), [
        d.format_text() for d in again.diagnostics
    ]


@pytest.mark.parametrize("case", CASES)
def test_a_model_cast_always_comes_with_its_inputs(case):
    """In the bf16 modes, every migrated script that casts a model either casts the inputs it
    can tell are floating at the call, or registers the run-time hook."""
    for mode in ("stochastic", "gpu-compatible"):
        changed, _ = migrate_case(case, mode)
        script = changed["train.py"]
        assert "model.to(torch.bfloat16)" in script
        assert ".to(torch.bfloat16))" in script or "register_forward_pre_hook(bf16_inputs_hook" in script, case


def test_module_of_the_tree_gets_the_switch_meaning():
    """bert_groups: the sibling optimizer switched FP32 state on the variable (with the .double()
    idiom): it keeps FP32 state after migration; the script's autocast flag is read."""
    changed, diagnostics = migrate_case("bert_groups", "stochastic")
    module = changed["fp32_state_adamw.py"]
    assert "XLA_DOWNCAST_BF16', '0') == '1'" not in module and "BF16_ENABLED == '1'" in module
    assert "p.grad.data.double()" not in module and "dtype=torch.double)" not in module
    assert "if not flags.enable_pt_autocast:\n        model.to(torch.bfloat16)" in changed["train.py"]
    assert any("BFM014" in line and "fp32_state_adamw.py" in line for line in diagnostics)


# -- on the XLA CPU device ------------------------------------------------------------------------


def _migrated_tree(case: str, mode: str, where: Path) -> Path:
    tree = _tree(case, where)
    outcome = _run(case, mode, where)
    assert not outcome.errors, outcome.errors
    return tree


@pytest.mark.xla
@pytest.mark.parametrize("mode", ("stochastic", "gpu-compatible"))
def test_gru_fed_from_a_tuple_runs_migrated(mode, tmp_path):
    """gru_tuple: under either legacy variable torch-xla 2.9's scan-based nn.GRU crashes (the
    legacy run cannot be made, measured: 'Call parameter must match argument ... f32 vs bf16');
    the migrated script, model and inputs in bf16, trains."""
    tree = _migrated_tree("gru_tuple", mode, tmp_path)
    env = {**os.environ, "PJRT_DEVICE": "CPU"}
    for name in ("XLA_USE_BF16", "XLA_DOWNCAST_BF16"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, str(tree / "train.py"), "--steps", "10"], capture_output=True, text=True, timeout=600, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "step 10 loss" in proc.stdout


VERIFIED = [
    ("mnist_loops", "stochastic"),
    ("mnist_loops", "gpu-compatible"),
    ("trainer_generator", "amp"),
    ("trainer_generator", "stochastic"),
    ("opaque_batches", "stochastic"),
    ("opaque_batches", "gpu-compatible"),
]


# mnist_loops in amp mode is left out on purpose: at 12 steps its full-bf16 legacy run stays
# within amp's tolerance of the FP32 reference too (control median 0.0018, limit 0.002), so
# verify says INCONCLUSIVE rather than PASS (measured); trainer_generator separates them.
@pytest.mark.xla
@pytest.mark.parametrize("case,mode", VERIFIED)
def test_verify_passes(case, mode, tmp_path):
    """`bf16-migrate verify` with the launcher's setting: the legacy run, the migrated copy and
    the FP32 reference on the XLA CPU device; the verdict passes (the migrated run does not
    crash on a dtype the legacy run handled, and matches it)."""
    out = tmp_path / "verify.json"
    ((key, value),) = setting(case).items()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bf16_migrate.cli",
            "verify",
            str(REAL / case / "train.py"),
            "--mode",
            mode,
            "--legacy-env",
            f"{key}={value}",
            "--steps",
            "12",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    assert_no_silent_f32_matmul(data)
    assert {p["name"]: p["status"] for p in data["parts"]} == dict.fromkeys(
        ("runs", "trains", "precision", "matches", "graph", "trace"), "PASS"
    )
