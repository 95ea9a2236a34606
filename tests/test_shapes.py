"""The hard Python shapes of real training code (fixtures/shapes): golden code and diagnostics for every
shape and mode, idempotence, re-parse, no legacy mention left without a change or a diagnostic,
and the flag-chooser fixture training after migration under each flag on the XLA CPU device."""

from __future__ import annotations

import difflib
import math
import os
import re
import subprocess
import sys

import libcst as cst
import libcst.matchers as m
import pytest

from bf16_migrate.python import migrate_source
from bf16_migrate.rules import load_rules

from conftest import FIXTURES, MODES
from goldens import expected_dir

SHAPES = FIXTURES / "shapes"
NAMES = sorted(p.name for p in SHAPES.iterdir() if (p / f"{p.name}.py").is_file())
LEGACY = set(load_rules().variables)


def source_of(name: str):
    """``fixtures/shapes/<name>/<name>.py``."""
    return SHAPES / name / f"{name}.py"


def golden(name: str, variant: str):
    """The golden migration of shape ``name`` (``variant``: a mode, or ``mode+option``)."""
    return expected_dir(SHAPES / name, variant) / f"{name}.py"


def migrate(name: str, mode: str):
    return migrate_source(source_of(name).read_text(), mode, f"{name}.py")


def test_every_issue_shape_has_a_fixture():
    assert set(NAMES) >= {
        "flag_chooser",
        "computed_values",
        "guarded_write",
        "reads_and_patches",
        "downcast_double",
        "no_op_and_late",
        "spellings",
        "test_legacy_switch",
        "hf_trainer",
        "lightning_module",
        "library_code",
        "test_env_reads",
    }


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_golden_code_and_diagnostics(name, mode, goldens):
    result = migrate(name, mode)
    text = "".join(d.format_text() + "\n" for d in result.diagnostics)
    goldens.check(expected_dir(SHAPES / name, mode), {f"{name}.py": result.code}, text)
    compile(result.code, f"{name}.{mode}.py", "exec")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", NAMES)
def test_second_run_changes_nothing(name, mode):
    once = migrate(name, mode)
    twice = migrate_source(once.code, mode, f"{name}.py")
    assert twice.code == once.code
    assert all(not d.fixed for d in twice.diagnostics), [d.format_text() for d in twice.diagnostics]


def _legacy_lines(source: str) -> set[int]:
    """Lines holding a string literal that names a legacy variable (docstrings excluded)."""
    wrapper = cst.metadata.MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(cst.metadata.PositionProvider)
    lines = set()
    for node in m.findall(wrapper.module, m.SimpleString()):
        assert isinstance(node, cst.SimpleString)
        if any(var in node.value for var in LEGACY):
            code = wrapper.module.code_for_node(node)
            if not code.startswith(('"""', "'''")):
                lines.add(positions[node].start.line)
    return lines


ALL_PYTHON_FIXTURES = [source_of(n) for n in NAMES] + sorted(FIXTURES.glob("*/train.py"))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", ALL_PYTHON_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_legacy_line_is_changed_or_diagnosed(path, mode):
    source = path.read_text()
    name = path.stem
    result = migrate_source(source, mode, path.name)
    changed: set[int] = set()
    matcher = difflib.SequenceMatcher(a=source.splitlines(), b=result.code.splitlines(), autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            changed.update(range(i1 + 1, i2 + 1))
    diagnosed = {d.line for d in result.diagnostics}
    missing = _legacy_lines(source) - changed - diagnosed
    assert not missing, f"{name}: lines {sorted(missing)} name a legacy variable, unchanged and undiagnosed"


FLAG_SETTINGS = [[], ["--use-mix-precision"], ["--use-gpu-compatible-precision"]]


@pytest.mark.xla
@pytest.mark.parametrize("flags", FLAG_SETTINGS, ids=["use_bf16", "downcast", "gpu_compatible"])
def test_flag_chooser_trains_after_migration(tmp_path, flags):
    script = tmp_path / "flag_chooser.py"
    script.write_text(golden("flag_chooser", "stochastic").read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_")} | {"PJRT_DEVICE": "CPU"}
    proc = subprocess.run(
        [sys.executable, str(script), "--steps", "30", *flags], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    losses = [float(x) for x in re.findall(r"step \d+ loss ([0-9.]+)", proc.stdout)]
    assert len(losses) == 3 and losses[-1] < losses[0] * 0.8, proc.stdout


def test_fp32_optimizer_state_golden(goldens):
    """--fp32-optimizer-state: the optimizer defined in the file upcasts its gradients and keeps
    its state in FP32 (the recipe of Neuron's guide "Migration From XLA_USE_BF16/XLA_DOWNCAST_BF16",
    awsdocs-neuron.readthedocs-hosted.com: ``grad = p.grad.data.float()``)."""
    source = source_of("custom_optimizer").read_text()
    result = migrate_source(source, "stochastic", "custom_optimizer.py", fp32_optimizer_state=True)
    text = "".join(d.format_text() + "\n" for d in result.diagnostics)
    goldens.check(
        expected_dir(SHAPES / "custom_optimizer", "stochastic+fp32-state"), {"custom_optimizer.py": result.code}, text
    )
    assert "grad = p.grad.data.float()" in result.code
    again = migrate_source(result.code, "stochastic", "custom_optimizer.py", fp32_optimizer_state=True)
    assert again.code == result.code


def test_gpu_compatible_wraps_an_optimizer_class_defined_in_the_file():
    result = migrate("custom_optimizer", "gpu-compatible")
    assert "optimizer = with_fp32_master_weights(ScaledAdam)(model.parameters(), lr=1e-2)" in result.code
    assert not result.unfixed


@pytest.mark.xla
@pytest.mark.parametrize("variant", ["stochastic+fp32-state", "gpu-compatible"])
def test_custom_optimizer_variants_run(tmp_path, variant):
    script = tmp_path / "custom_optimizer.py"
    script.write_text(golden("custom_optimizer", variant).read_text())
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_")} | {"PJRT_DEVICE": "CPU"}
    proc = subprocess.run(
        [sys.executable, str(script), "--steps", "20"], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    losses = [float(x) for x in re.findall(r"step \d+ loss ([0-9.]+)", proc.stdout)]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses), proc.stdout
