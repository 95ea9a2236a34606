"""Models behind wrappers and scripts by what they do (fixtures/wrappers/, our own writing).

A model compiled by dynamo (`torch.compile(..., backend="openxla")`) and called through the
compiled callable; one wrapped in DDP whose dtype is read (logged, named in the output
directory) before the wrap; two sharded with torch-xla's FSDP (an MLP, for which
`compute_dtype=torch.bfloat16` runs, and a CNN with conv biases and batch norm, for which it
fails in torch-xla 2.9); a training script named like a test (`test_train_*.py`, as
pytorch/xla's examples are) beside a real pytest test; a notebook whose kernel sets the
variable and whose `!` line sets its own. Goldens per mode (every changed file and the
diagnostics), idempotence, re-parse; on the XLA CPU device (``-m xla``) ``verify`` passes in
every mode that migrates, and where the switch is kept the rewrite says why with the wrapper's
own code.
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
from bf16_migrate.python import migrate_source
from bf16_migrate.python.test_or_script import is_test_module

from conftest import FIXTURES, MODES

WRAPPERS = FIXTURES / "wrappers"
CASES = sorted(p.name for p in WRAPPERS.iterdir() if p.is_dir())
SETTING = "launcher_setting.txt"


def setting(case: str) -> dict[str, str] | None:
    path = WRAPPERS / case / SETTING
    if not path.is_file():
        return None
    key, value = path.read_text().strip().split("=", 1)
    return {key: value}


def _tree(case: str, where: Path) -> Path:
    target = where / case
    shutil.copytree(WRAPPERS / case, target, ignore=shutil.ignore_patterns("expected", SETTING, "__pycache__"))
    return target


def _run(case: str, mode: str, where: Path, paths: list[str] | None = None):
    old = os.getcwd()
    os.chdir(where)
    try:
        return migrate_paths([Path(p) for p in paths or [case]], mode, write=True, legacy_env=setting(case))
    finally:
        os.chdir(old)


def _texts(tree: Path) -> dict[str, str]:
    return {str(p.relative_to(tree)): p.read_text() for p in sorted(tree.rglob("*")) if p.is_file()}


def migrate_case(case: str, mode: str, where: Path, paths: list[str] | None = None):
    """Migrate a copy of the case's tree (run from its parent, so paths read ``case/...``).
    Returns ({relative path: new text} of the changed files, diagnostic lines, the outcome)."""
    tree = _tree(case, where)
    before = _texts(tree)
    outcome = _run(case, mode, where, paths)
    assert not outcome.errors, outcome.errors
    after = _texts(tree)
    changed = {rel: text for rel, text in after.items() if before.get(rel) != text}
    return changed, [d.format_text() for d in outcome.diagnostics], outcome


def codes(lines: list[str], unfixed: bool = False) -> set[str]:
    return {line.split(": ", 2)[1].split()[0] for line in lines if not (unfixed and line.endswith("[fixed]"))}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_golden_files_and_diagnostics(case, mode, goldens, tmp_path):
    changed, diagnostics, _ = migrate_case(case, mode, tmp_path)
    goldens.check(WRAPPERS / case / "expected" / mode, changed, "".join(line + "\n" for line in diagnostics))
    for rel, text in changed.items():
        if rel.endswith(".py"):
            compile(text, rel, "exec")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_second_run_changes_nothing(case, mode, tmp_path):
    tree = _tree(case, tmp_path)
    first = _run(case, mode, tmp_path)
    after = _texts(tree)
    again = _run(case, mode, tmp_path)
    assert _texts(tree) == after
    assert not again.errors
    assert not any(d.fixed and d.code != "BFM013" for d in again.diagnostics), [
        d.format_text() for d in again.diagnostics
    ]
    # what was left to do by hand is still left, for the same reason
    assert {d.code for d in first.diagnostics if not d.fixed} <= {d.code for d in again.diagnostics if not d.fixed}


# -- the compiled model ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ("stochastic", "gpu-compatible"))
def test_compiled_model_is_cast_before_compile_and_fed_at_the_compiled_call(mode, tmp_path):
    """The loop calls the compiled callable: its inputs are the model's, cast (no run-time hook,
    BFM022) where they are moved to the device, which under dynamo saves the XLA compilation a
    cast at the call costs (measured, rules/torch_api.toml); the module is cast before
    `torch.compile` wraps it."""
    changed, diagnostics, _ = migrate_case("compiled_model", mode, tmp_path)
    script = changed["train.py"]
    assert "BFM022" not in codes(diagnostics) and "register_forward_pre_hook" not in script
    cast = script.index("    model.to(torch.bfloat16)\n")
    assert cast < script.index('compiled = torch.compile(model, backend="openxla")')
    assert "images, labels = images.to(device, dtype=torch.bfloat16), labels.to(device)" in script
    assert "logits = compiled(images)" in script  # integer class labels stay integer


def test_compiled_input_without_a_transfer_in_sight_is_cast_at_the_call():
    source = """import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch_xla

device = torch_xla.device()
model = torch.nn.Linear(4, 2).to(device)
step_model = torch.compile(model, backend="openxla")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(3, 4, device=device)
step_model(x).sum().backward()
opt.step()
"""
    code = migrate_source(source, "stochastic", "train.py").code
    assert "step_model(x.to(torch.bfloat16)).sum().backward()" in code


def test_compiled_model_is_autocast_in_amp(tmp_path):
    """amp: the compiled call is the forward pass (not BFM021 'never called', which kept the switch)."""
    changed, diagnostics, _ = migrate_case("compiled_model", "amp", tmp_path)
    assert (
        'with torch.autocast("xla", dtype=torch.bfloat16):\n                logits = compiled(images)'
        in (changed["train.py"])
    )
    assert not codes(diagnostics) & {"BFM021", "BFM033"}


# -- DDP, and reads of the model's dtype ------------------------------------------------------------


@pytest.mark.parametrize("mode", ("stochastic", "gpu-compatible"))
def test_ddp_module_is_cast_before_its_dtype_is_read_and_before_the_wrap(mode, tmp_path):
    changed, _, _ = migrate_case("ddp_dtype_log", mode, tmp_path)
    script = changed["train.py"]
    lines = script.splitlines()
    cast = lines.index("    model.to(torch.bfloat16)")
    assert lines[cast - 1] == "    model = BagOfTokens(args.dim, args.hidden).to(device)"
    assert lines[cast + 1] == "    model_dtype = get_dtype(model)"
    assert lines.index("    model = DDP(model, gradient_as_bucket_view=True)") > cast
    assert script.count(".to(torch.bfloat16)") == 1  # token ids and labels are integers: nothing else


def test_dtype_read_through_a_function_of_the_file_moves_the_cast():
    source = """import os
os.environ["XLA_USE_BF16"] = "1"
import torch


def describe(net):
    return f"{sum(p.numel() for p in net.parameters())} parameters in {next(net.parameters()).dtype}"


def main():
    model = torch.nn.Linear(4, 2)
    banner = describe(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print(banner)
    opt.zero_grad()
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
"""
    code = migrate_source(source, "stochastic", "train.py").code
    assert "    model.to(torch.bfloat16)\n    banner = describe(model)\n" in code
    # a dtype read after the optimizer is built is after the cast already: nothing moves
    later = source.replace(
        "    banner = describe(model)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    banner = describe(model)\n",
    )
    assert (
        "    model.to(torch.bfloat16)\n    opt = torch.optim.SGD"
        in migrate_source(later, "stochastic", "train.py").code
    )


# -- FSDP ---------------------------------------------------------------------------------------------


def test_fsdp_model_is_never_cast(tmp_path):
    for mode in MODES:
        changed, _, _ = migrate_case("fsdp_mlp", mode, tmp_path / mode)
        assert ".to(torch.bfloat16)" not in changed.get("train.py", ""), mode


def test_fsdp_whose_compute_dtype_run_was_not_equivalent_keeps_the_switch(tmp_path):
    """Every layer of fsdp_mlp runs with FSDP's compute_dtype=torch.bfloat16, but verify measured
    that run computing 7 of 17 matmuls and the loss in f32 where the legacy run had bf16
    (rules/torch_api.toml ``not_equivalent``): gpu-compatible keeps the switch and says so."""
    changed, diagnostics, _ = migrate_case("fsdp_mlp", "gpu-compatible", tmp_path)
    assert changed == {}
    (line,) = [line for line in diagnostics if " BFM056 " in line]
    assert "runs its layers with `compute_dtype=torch.bfloat16`, but verify measured" in line
    assert not codes(diagnostics, unfixed=True) & {"BFM010", "BFM011", "BFM110", "BFM111"}


def test_fsdp_full_bf16_keeps_the_switch_with_the_wrapper_code(tmp_path):
    """stochastic mode wants bf16 weights, which FSDP's FP32-only shards cannot hold: the switch
    stays, and the reason is the wrapper (BFM056), never 'no optimizer' (BFM010) or 'no launch'."""
    changed, diagnostics, _ = migrate_case("fsdp_mlp", "stochastic", tmp_path)
    assert changed == {}
    unfixed = codes(diagnostics, unfixed=True)
    assert "BFM056" in unfixed and not unfixed & {"BFM010", "BFM011", "BFM110", "BFM111"}
    assert any("takes FP32 parameters only" in line for line in diagnostics)


@pytest.mark.parametrize("mode", ("stochastic", "gpu-compatible"))
def test_fsdp_with_a_layer_compute_dtype_fails_on_keeps_the_switch(mode, tmp_path):
    changed, diagnostics, _ = migrate_case("fsdp_cnn", mode, tmp_path)
    assert changed == {}
    (line,) = [line for line in diagnostics if " BFM056 " in line]
    assert "`nn.Conv2d(3, channels, 3, padding=1)` fails in torch-xla 2.9" in line
    assert "bias type (float)" in line


FSDP_SHAPES = {
    "unknown layer": (
        "model = FSDP(Net().to(device))",
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.body = timm_like.Backbone()\n",
        "unknown_layers",
    ),
    "helper wraps": (
        "model = shard(Net().to(device))",
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 1)\n\n\ndef shard(module):\n    return FSDP(module)\n",
        "unlinked",
    ),
    "own compute_dtype": (
        "model = FSDP(Net().to(device), compute_dtype=torch.float32)",
        "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = nn.Linear(4, 1)\n",
        "own_setting",
    ),
}


PHRASES = {
    "unknown_layers": "cannot all be read here (`timm_like.Backbone` in `Net`",
    "unlinked": "cannot tie to the model the optimizer is built from",
    "own_setting": "already sets `compute_dtype=torch.float32`",
}


@pytest.mark.parametrize("shape", sorted(FSDP_SHAPES))
def test_fsdp_shapes_the_codemod_cannot_read_keep_the_switch(shape):
    wrap, classes, variant = FSDP_SHAPES[shape]
    source = f"""import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
import timm_like
from torch_xla.distributed.fsdp import XlaFullyShardedDataParallel as FSDP


{classes}

device = torch_xla.device()
{wrap}
opt = torch.optim.AdamW(model.parameters())
loss = model(torch.randn(2, 4).to(device)).sum()
loss.backward()
opt.step()
"""
    result = migrate_source(source, "gpu-compatible", "train.py")
    assert result.code == source
    (finding,) = [d for d in result.diagnostics if d.code == "BFM056"]
    assert not finding.fixed and PHRASES[variant] in finding.message, finding.message


@pytest.mark.parametrize("mode", ("stochastic", "gpu-compatible"))
def test_a_launcher_of_an_fsdp_script(mode, tmp_path):
    """A shell launcher sets the variable for an FSDP script: both model-casting modes keep it,
    citing the wrapper (stochastic: FP32-only shards; gpu-compatible: compute_dtype measured not
    equivalent to the legacy run)."""
    tree = tmp_path / "job"
    tree.mkdir()
    legacy = (WRAPPERS / "fsdp_mlp" / "train.py").read_text()
    (tree / "train.py").write_text(legacy.replace('os.environ["XLA_USE_BF16"] = "1"\n', ""))
    (tree / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py --steps 20\n")
    outcome = migrate_paths([tree], mode, write=True)
    assert not outcome.errors, outcome.errors
    (launcher,) = [d.format_text() for d in outcome.diagnostics if d.path.endswith("run.sh")]
    assert "export XLA_USE_BF16=1" in (tree / "run.sh").read_text()
    assert " BFM112 " in launcher and "BFM056" in launcher
    why = "takes FP32 parameters only" if mode == "stochastic" else "but verify measured"
    assert why in launcher, launcher


UNMEASURED_WRAPS = {
    "FSDPv2": (
        "from torch_xla.experimental.spmd_fully_sharded_data_parallel import SpmdFullyShardedDataParallel as FSDP",
        "model = FSDP(Net().to(device))",
    ),
    "PyTorch's FSDP": (
        "from torch.distributed.fsdp import FullyShardedDataParallel",
        "model = FullyShardedDataParallel(Net().to(device))",
    ),
    "fully_shard": ("from torch.distributed.fsdp import fully_shard", "model = Net().to(device)\nfully_shard(model)"),
}


@pytest.mark.parametrize("shape", sorted(UNMEASURED_WRAPS))
def test_a_wrapper_never_measured_with_a_bf16_model_keeps_the_switch(shape):
    """A sharding wrapper torch-xla 2.9 was not measured with under a bf16-cast model: stochastic and
    gpu-compatible keep the switch and name the wrapper (BFM057), never a cast before or after it;
    amp autocasts the wrapped model's calls and migrates."""
    imports, wrap = UNMEASURED_WRAPS[shape]
    source = f"""import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla
{imports}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


device = torch_xla.device()
{wrap}
opt = torch.optim.AdamW(model.parameters())
loss = model(torch.randn(2, 4).to(device)).sum()
loss.backward()
opt.step()
"""
    for mode in ("stochastic", "gpu-compatible"):
        result = migrate_source(source, mode, "train.py")
        assert result.code == source, mode
        (finding,) = [d for d in result.diagnostics if d.code == "BFM057"]
        assert not finding.fixed and "not measured with torch-xla 2.9" in finding.message, finding.message
        assert not result.outcome.took
    amp = migrate_source(source, "amp", "train.py")
    assert amp.outcome.took and 'with torch.autocast("xla", dtype=torch.bfloat16):' in amp.code


# -- a script is a script by what it does ------------------------------------------------------------


def test_test_named_training_script_named_directly_is_migrated(tmp_path):
    """pytorch/xla's examples are `test_train_*.py`: named directly with --legacy-env, such a file
    is the script the setting is for (not BFM110 'no script can receive it'), as under a directory."""
    for paths in (["test_named_script/test_train_regressor.py"], ["test_named_script"]):
        changed, diagnostics, _ = migrate_case("test_named_script", "stochastic", tmp_path / str(len(paths[0])), paths)
        assert set(changed) == {"test_train_regressor.py"}
        assert "BFM110" not in codes(diagnostics)
        assert "model.to(torch.bfloat16)" in changed["test_train_regressor.py"]


def test_the_pytest_test_beside_it_stays_a_test(tmp_path):
    changed, diagnostics, _ = migrate_case("test_named_script", "stochastic", tmp_path)
    assert "test_regressor_precision.py" not in changed
    assert any(
        line.startswith("test_named_script/test_regressor_precision.py:9:") and " BFM052 " in line
        for line in diagnostics
    )


def test_a_launcher_starting_a_test_module_keeps_its_setting(tmp_path):
    """A launcher that runs a pytest module under the switch: the module collects tests, so it is
    not migrated (BFM052) and the launcher's setting stays (BFM112), as before the rule."""
    tree = _tree("test_named_script", tmp_path)
    (tree / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython test_regressor_precision.py\n")
    (tree / "test_regressor_precision.py").write_text(
        (tree / "test_regressor_precision.py").read_text().replace('    monkeypatch.setenv("XLA_USE_BF16", "1")\n', "")
    )
    outcome = migrate_paths([tree / "run.sh"], "stochastic", write=False)
    (kept,) = [d for d in outcome.diagnostics if d.code == "BFM112"]
    assert not kept.fixed and "(BFM052 at line 1: tests are not rewritten" in kept.message
    assert not outcome.changed


SCRIPT_OR_TEST = {
    # name, source, launched -> is a test module
    "pytorch/xla shape": (
        "test_train_mp_x.py",
        "def train(): loss.backward(); xm.optimizer_step(opt)\nif __name__ == '__main__':\n    xmp.spawn(train)\n",
        False,
        False,
    ),
    "launched, no entry point": ("test_train_x.py", "loss.backward()\nopt.step()\n", True, False),
    "not launched, no entry point": ("test_train_x.py", "loss.backward()\nopt.step()\n", False, True),
    "unittest.main entry": (
        "test_ops.py",
        "loss.backward(); opt.step()\nif __name__ == '__main__':\n    unittest.main()\n",
        False,
        True,
    ),
    "collects a test function": (
        "test_x.py",
        "def test_step(): loss.backward(); opt.step()\nif __name__ == '__main__':\n    test_step()\n",
        False,
        True,
    ),
    "collects a TestCase": (
        "test_x.py",
        "class Precision(unittest.TestCase):\n    pass\nloss.backward()\nopt.step()\n",
        True,
        True,
    ),
    "no training loop": ("test_x.py", "if __name__ == '__main__':\n    print(1)\n", True, True),
    "conftest": ("conftest.py", "loss.backward(); opt.step()\nif __name__ == '__main__':\n    pass\n", True, True),
    "not a test's name": ("train.py", "def test_step(): pass\n", False, False),
}


@pytest.mark.parametrize("case", sorted(SCRIPT_OR_TEST))
def test_test_module_or_script(case):
    name, source, launched, expected = SCRIPT_OR_TEST[case]
    assert is_test_module(source, f"src/{name}", launched=launched) is expected


# -- a notebook's kernel and its `!` lines -------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_notebook_kernel_migrates_beside_a_bang_line_with_its_own_setting(mode, tmp_path):
    """The `!XLA_USE_BF16=1 python -c ...` line sets its own variable: it is judged alone and no
    longer holds the kernel's %env back. Its code is read as the script it is: it makes a tensor
    and builds no optimizer, so the setting is kept (BFM112) with the code's own finding at its
    place in the line (BFM010)."""
    changed, diagnostics, _ = migrate_case("notebook_kernel", mode, tmp_path)
    cells = ["".join(c["source"]) for c in json.loads(changed["explore.ipynb"])["cells"] if c["cell_type"] == "code"]
    assert "%env XLA_USE_BF16=1" not in cells[0]
    assert cells[3].startswith("# a fresh process") and "!XLA_USE_BF16=1 python -c" in cells[3]
    kept = [line for line in diagnostics if not line.endswith("[fixed]")]
    assert [line.split(" ")[1] for line in kept] == ["BFM112", "BFM010"]
    assert all("#cell5:2:" in line for line in kept)
    if mode == "amp":
        assert 'with torch.autocast("xla", dtype=torch.bfloat16):' in cells[2]
    else:
        assert "autoencoder.to(torch.bfloat16)" in cells[1]


# -- ZeRO-1 ------------------------------------------------------------------------------------------------


def test_zero1_keeps_the_legacy_bf16_state_in_stochastic_mode():
    """Measured: the legacy run's ZeRO-1 state is bf16 on the device; the default FP32 state drifts
    from it (verify fails at 20 steps), `optimizer_dtype=torch.bfloat16` follows it."""
    source = (FIXTURES / "zero1_sharded" / "train.py").read_text()
    result = migrate_source(source, "stochastic", "zero1_sharded/train.py")
    assert "        optimizer_dtype=torch.bfloat16,\n" in result.code
    assert any(d.code == "BFM066" and d.fixed for d in result.diagnostics)
    gpu = migrate_source(source, "gpu-compatible", "zero1_sharded/train.py").code
    assert "optimizer_dtype=torch.float32" in gpu and "torch.bfloat16,\n" not in gpu
    assert "optimizer_dtype" not in migrate_source(source, "amp", "zero1_sharded/train.py").code
    kept = source.replace("pin_layout=False,", "pin_layout=False,\n        optimizer_dtype=torch.float32,")
    again = migrate_source(kept, "stochastic", "zero1_sharded/train.py")
    assert [(d.code, d.fixed) for d in again.diagnostics if d.code == "BFM066"] == [("BFM066", False)]


def test_verify_refuses_a_test_module_before_any_run(tmp_path):
    """verify decides through the same function as the rewrite: the pytest module is a test, so
    nothing is migrated and nothing runs (exit 2, with the reason), while its `test_train_*.py`
    neighbour is verified as the script it is (the xla test below)."""
    from bf16_migrate.verify import RunError, verify_script

    tree = _tree("test_named_script", tmp_path)
    with pytest.raises(RunError, match="a test module"):
        verify_script(tree / "test_regressor_precision.py", "stochastic", 3, legacy_env={"XLA_USE_BF16": "1"})


# -- on the XLA CPU device ------------------------------------------------------------------------------


def _verify(script: Path, mode: str, tmp_path: Path, *extra: str, steps: int = 12) -> tuple[int, dict, str]:
    out = tmp_path / f"verify-{mode}.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", "verify", str(script), "--mode", mode, "--steps", str(steps)]
        + ["--json", str(out), *extra],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    data = json.loads(out.read_text()) if out.is_file() else {}
    return proc.returncode, data, proc.stdout + proc.stderr


def _statuses(data: dict) -> dict[str, str]:
    return {p["name"]: p["status"] for p in data["parts"]}


ALL_PASS = dict.fromkeys(("runs", "trains", "precision", "matches", "graph", "trace"), "PASS")

# One mode per fixture in CI (the other modes are covered by the goldens; bench/bench_wrappers.py
# verifies every fixture in every mode it migrates, figures in bench/RESULTS.md).
VERIFIED = [
    ("compiled_model", "stochastic", ()),
    ("ddp_dtype_log", "gpu-compatible", ()),
    # its own --steps (40) ends it soon after verify's 12: the runs then trace its held-out evaluation too,
    # where 40 unsynced steps under the trace ran into the deadline first (250-540 s a run)
    ("test_named_script", "stochastic", ("--legacy-env", "XLA_USE_BF16=1", "--", "--steps", "16")),
]


@pytest.mark.xla
@pytest.mark.parametrize("case,mode,extra", VERIFIED)
def test_verify_passes(case, mode, extra, tmp_path):
    script = next(p for p in sorted((WRAPPERS / case).glob("*.py")) if not p.name.startswith("test_regressor"))
    code, data, output = _verify(script, mode, tmp_path, *extra)
    assert code == 0 and _statuses(data) == ALL_PASS, output


@pytest.mark.xla
def test_verify_of_a_kept_switch_fails_naming_the_wrapper(tmp_path):
    """stochastic mode keeps FSDP's switch: verify's migrated run still sees the variable (the
    precision part fails, exit 1) and the migration's finding names the wrapper, not a missing
    optimizer or launch."""
    code, data, output = _verify(WRAPPERS / "fsdp_mlp" / "train.py", "stochastic", tmp_path, steps=4)
    assert code == 1 and _statuses(data)["precision"] == "FAIL", output
    assert "BFM056" in output and "BFM010" not in output and "BFM110" not in output


def _kernel_script(notebook: str) -> str:
    """The notebook's kernel code as one script: `%env K=V` is `os.environ["K"] = "V"` (IPython's
    %env), `!` lines run in shells of their own and are left out."""
    lines = ["import os"]
    for cell in json.loads(notebook)["cells"]:
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            if line.startswith("%env "):
                key, value = line[5:].split("=", 1)
                lines.append(f"os.environ[{key.strip()!r}] = {value.strip()!r}")
            elif not line.lstrip().startswith(("!", "%")):
                lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.xla
def test_verify_notebook_kernel(tmp_path):
    """The kernel's code, legacy and migrated (stochastic), as scripts: verify passes."""
    from bf16_migrate.verify import verify_script

    changed, _, _ = migrate_case("notebook_kernel", "stochastic", tmp_path / "migrated")
    legacy = tmp_path / "kernel.py"
    legacy.write_text(_kernel_script((WRAPPERS / "notebook_kernel" / "explore.ipynb").read_text()))
    report = verify_script(
        legacy, "stochastic", 12, migrated_source=_kernel_script(changed["explore.ipynb"]), env={**os.environ}
    )
    assert report.passed, [(p.name, p.status, p.detail) for p in report.parts]


def test_a_wrap_under_a_flag_gets_one_cast_before_the_flag():
    """pytorch/xla's MNIST example wraps in DDP only under `--ddp`: one cast before the `if`
    (never a second one after the wrap)."""
    source = COND_DDP
    code = migrate_source(source, "stochastic", "test_train_cond.py", launched_with={"XLA_USE_BF16": "1"}).code
    assert code.count("model.to(torch.bfloat16)") == 1
    assert "    model.to(torch.bfloat16)\n    if flags.ddp:\n        model = DDP(model" in code


COND_DDP = """import torch
import torch.nn as nn
import torch_xla
from torch.nn.parallel import DistributedDataParallel as DDP


def train(flags):
    device = torch_xla.device()
    model = nn.Linear(4, 2).to(device)
    if flags.ddp:
        model = DDP(model, gradient_as_bucket_view=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(8, 4).to(device)
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()


if __name__ == "__main__":
    train(None)
"""
