"""``bf16-migrate PATHS --legacy-env KEY=VALUE``: scripts that run under a legacy setting made
outside the tree (a job spec) get the mode's code change, as a script a launcher of the tree
starts with that setting does; modules and tests are left alone; a setting no script can take is
a finding (BFM110, exit 1); a wrong --legacy-env is a usage error (exit 2)."""

from __future__ import annotations

import json

import libcst as cst
import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main

from conftest import FIXTURES, MODES

LEGACY_WRITE = '    os.environ.update({"XLA_DOWNCAST_BF16": "1", "OMP_NUM_THREADS": "1"})\n'
DOCSTRING_MENTION = "XLA_DOWNCAST_BF16, set in main()"
MODULE = "import torch\n\n\nclass Head(torch.nn.Module):\n    def forward(self, x):\n        return x.relu()\n"
TEST = (
    "import torch\n\n\ndef test_step():\n    model = torch.nn.Linear(2, 2)\n"
    "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n    optimizer.step()\n"
)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def cnn_tree(tmp_path, keep_write: bool = False):
    """A tree with the CNN trainer (its own legacy write removed unless ``keep_write``), a
    module that builds no optimizer and a test: only the trainer is a training script. Its
    docstring no longer names the variable (a finding of its own, BFM091: test_never_silent.py)."""
    source = (FIXTURES / "cnn_trainer" / "train.py").read_text()
    assert LEGACY_WRITE in source and DOCSTRING_MENTION in source
    source = source.replace(DOCSTRING_MENTION, "the legacy downcast variable")
    if not keep_write:
        source = source.replace(LEGACY_WRITE, '    os.environ.update({"OMP_NUM_THREADS": "1"})\n')
    tree = tmp_path / "src"
    tree.mkdir()
    (tree / "train.py").write_text(source)
    (tree / "layers.py").write_text(MODULE)
    (tree / "test_train.py").write_text(TEST)
    return tree


def snapshot(tree):
    return {p.name: p.read_text() for p in sorted(tree.rglob("*.py"))}


def assert_reparses(tree):
    for path in tree.rglob("*.py"):
        cst.parse_module(path.read_text())
        compile(path.read_text(), str(path), "exec")


@pytest.mark.parametrize("mode", MODES)
def test_scripts_get_the_change_modules_and_tests_are_left_alone(tmp_path, mode):
    tree = cnn_tree(tmp_path)
    before = snapshot(tree)
    assert 'os.environ.update({"OMP_NUM_THREADS": "1"})' in before["train.py"]
    result = invoke(tree, "--mode", mode, "--legacy-env", "XLA_DOWNCAST_BF16=1")
    assert result.exit_code == 0, result.output
    after = snapshot(tree)
    train = after["train.py"]
    if mode == "amp":
        assert 'with torch.autocast("xla", dtype=torch.bfloat16):' in train
        assert "self.model.to(torch.bfloat16)" not in train and "images.to(torch.bfloat16)" not in train
    else:
        assert "        self.model.to(torch.bfloat16)\n        self.optimizer = " in train
        assert "logits = self.model(images.to(torch.bfloat16))" in train
        assert "labels.to(torch.bfloat16)" not in train  # integer class ids stay as they are
    if mode == "gpu-compatible":
        assert "with_fp32_master_weights(torch.optim.SGD)(self.model.parameters()" in train
    # stochastic rounding belongs to the job spec that sets the variable, not to the script
    assert "NEURON_RT_STOCHASTIC_ROUNDING_EN" not in train
    assert after["layers.py"] == before["layers.py"] and after["test_train.py"] == before["test_train.py"]
    assert f"{tree / 'train.py'}:1:1: BFM001 XLA_DOWNCAST_BF16 " in result.output
    assert "layers.py" not in result.output and "test_train.py" not in result.output
    assert "left to do by hand" in result.output and " 0 left to do by hand" in result.output
    assert_reparses(tree)

    again = invoke(tree, "--mode", mode, "--legacy-env", "XLA_DOWNCAST_BF16=1", "--check")
    assert again.exit_code == 0, again.output
    assert snapshot(tree) == after
    assert "0 file(s) would change" in again.output and " 0 left to do by hand" in again.output


def test_diff_and_check_write_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tree = cnn_tree(tmp_path)
    before = snapshot(tree)
    diff = invoke(tree, "--legacy-env", "XLA_USE_BF16=1", "--diff")
    assert diff.exit_code == 1, diff.output
    assert f"--- a/{tree.relative_to(tmp_path) / 'train.py'}" in diff.stdout
    assert "+        self.model.to(torch.bfloat16)" in diff.output
    assert "+                logits = self.model(images.to(torch.bfloat16))" in diff.output
    assert "layers.py" not in diff.output
    check = invoke(tree, "--legacy-env", "XLA_USE_BF16=1", "--check")
    assert check.exit_code == 1 and "1 file(s) would change" in check.output
    assert snapshot(tree) == before


def test_json_format(tmp_path):
    tree = cnn_tree(tmp_path)
    result = CliRunner().invoke(main, [str(tree), "--check", "--format", "json", "--legacy-env", "XLA_USE_BF16=1"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["errors"] == []
    assert [(d["code"], d["path"], d["fixed"]) for d in data["diagnostics"]] == [
        ("BFM001", str(tree / "train.py"), True)
    ]
    assert "XLA_USE_BF16" in data["diagnostics"][0]["message"]


def test_with_the_scripts_own_write_and_a_repeated_option(tmp_path):
    tree = cnn_tree(tmp_path, keep_write=True)
    args = (tree, "--legacy-env", "XLA_USE_BF16=1", "--legacy-env", "XLA_DOWNCAST_BF16=1")
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    train = (tree / "train.py").read_text()
    assert 'XLA_DOWNCAST_BF16": "1"' not in train
    assert '"NEURON_RT_STOCHASTIC_ROUNDING_EN": "1", "OMP_NUM_THREADS": "1"' in train  # its own write, replaced
    assert train.count("self.model.to(torch.bfloat16)") == 1
    assert train.count("images.to(torch.bfloat16)") == 1
    assert_reparses(tree)
    first = snapshot(tree)
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert snapshot(tree) == first


def test_a_launcher_in_the_tree_and_the_outside_setting_together(tmp_path):
    tree = cnn_tree(tmp_path)
    (tree / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py\n")
    result = invoke(tree, "--legacy-env", "XLA_DOWNCAST_BF16=1")
    assert result.exit_code == 0, result.output
    assert (tree / "run.sh").read_text() == "#!/bin/bash\nexport NEURON_RT_STOCHASTIC_ROUNDING_EN=1\npython train.py\n"
    train = (tree / "train.py").read_text()
    assert train.count("self.model.to(torch.bfloat16)") == 1
    assert_reparses(tree)
    first = snapshot(tree)
    assert invoke(tree, "--legacy-env", "XLA_DOWNCAST_BF16=1", "--check").exit_code == 0
    assert snapshot(tree) == first


def test_no_script_can_take_it_is_a_finding(tmp_path):
    tree = tmp_path / "lib"
    tree.mkdir()
    (tree / "layers.py").write_text(MODULE)
    (tree / "test_layers.py").write_text(TEST)
    before = snapshot(tree)
    result = invoke(tree, "--legacy-env", "XLA_USE_BF16=1")
    assert result.exit_code == 1, result.output
    assert (
        f"{tree}:1:1: BFM110 --legacy-env XLA_USE_BF16=1: no Python script under {tree} can receive the code change"
        in result.output
    )
    assert "BFM010" not in result.output  # the module itself gets no diagnostic
    assert snapshot(tree) == before
    data = json.loads(
        CliRunner().invoke(main, [str(tree), "--format", "json", "--legacy-env", "XLA_USE_BF16=1"]).stdout
    )
    assert [(d["code"], d["fixed"]) for d in data["diagnostics"]] == [("BFM110", False)]


def test_a_module_named_directly_says_why(tmp_path):
    module = tmp_path / "layers.py"
    module.write_text(MODULE)
    result = invoke(module, "--legacy-env", "XLA_USE_BF16=1", "--check")
    assert result.exit_code == 1
    assert f"{module}:1:1: BFM010 XLA_USE_BF16: no optimizer" in result.output
    assert f"{module}:1:1: BFM110 --legacy-env XLA_USE_BF16=1" in result.output
    assert module.read_text() == MODULE


def test_an_empty_tree_is_a_finding(tmp_path):
    result = invoke(tmp_path, "--legacy-env", "XLA_DOWNCAST_BF16=1", "--check")
    assert result.exit_code == 1
    assert "BFM110 --legacy-env XLA_DOWNCAST_BF16=1" in result.output


@pytest.mark.parametrize("setting", ["XLA_USE_BF16=0", "XLA_USE_FP16=1", "XLA_DOWNCAST_BF16="])
def test_a_setting_that_asks_for_no_bf16_changes_nothing(tmp_path, setting):
    tree = cnn_tree(tmp_path)
    before = snapshot(tree)
    result = invoke(tree, "--legacy-env", setting, "--check")
    assert result.exit_code == 0, result.output
    assert "BFM" not in result.output
    assert snapshot(tree) == before


@pytest.mark.parametrize(
    "value, message",
    [
        ("XLA_USE_BF16", "usage error: --legacy-env expects KEY=VALUE, got 'XLA_USE_BF16'"),
        ("=1", "usage error: --legacy-env expects KEY=VALUE, got '=1'"),
        (
            "XLA_USE_BF17=1",
            "usage error: --legacy-env XLA_USE_BF17: not a legacy variable (one of "
            "XLA_DOWNCAST_BF16, XLA_DOWNCAST_FP16, XLA_USE_BF16, XLA_USE_FP16)",
        ),
        ("PJRT_DEVICE=CPU", "usage error: --legacy-env PJRT_DEVICE: not a legacy variable"),
    ],
)
def test_usage_errors(tmp_path, value, message):
    tree = cnn_tree(tmp_path)
    before = snapshot(tree)
    result = invoke(tree, "--legacy-env", value)
    assert result.exit_code == 2
    assert result.output.startswith(message) and result.output.count("\n") == 1, result.output
    assert snapshot(tree) == before


EVALUATE = """import torch
import torch_xla


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(4, 2).to(device)
    model.load_state_dict(torch.load("model.pt"))
    with torch.no_grad():
        print(model(torch.randn(3, 4).to(device)).cpu())


main()
"""


def test_an_evaluation_script_beside_the_trainer_gets_the_change(tmp_path):
    """An evaluation script under the directory puts its model on the device without an optimizer: it runs
    under the setting too and is migrated with the trainer, as when it is named alone (it was skipped without
    a word: found by a hunt)."""
    tree = cnn_tree(tmp_path)
    (tree / "evaluate.py").write_text(EVALUATE)
    result = invoke(tree, "--mode", "stochastic", "--legacy-env", "XLA_USE_BF16=1")
    assert result.exit_code == 0, result.output
    migrated = (tree / "evaluate.py").read_text()
    assert "model.to(torch.bfloat16)" in migrated and migrated != EVALUATE
    assert (tree / "layers.py").read_text() == MODULE
    assert_reparses(tree)
