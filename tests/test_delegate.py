"""A thin entry script that hands its training to a module of the tree (:mod:`bf16_migrate.carriers.delegate`):
``XLA_USE_BF16=1 python run.py`` with ``run.py`` only ``import train; train.main()``, or the same as
``python -c``. The launch's settings are migrated with the module that builds the model and its optimizer;
the entry is left as it is. An entry that uses torch itself, or hands over to two such modules, keeps its
launch (and the setting, reported)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from test_trees import migrate_tree

SCRIPT = FIXTURES / "trees" / "sourced_env" / "train.py"  # a training script with a main()


def _tree(where: Path, launcher: str, entry: str | None, extra_module: bool = False) -> Path:
    tree = where / "proj"
    tree.mkdir()
    (tree / "train.py").write_text(SCRIPT.read_text())
    if entry is not None:
        (tree / "run.py").write_text(entry)
    if extra_module:
        (tree / "other.py").write_text((tree / "train.py").read_text())
    (tree / "smoke.sh").write_text("#!/bin/sh\nset -e\n" + launcher)
    return tree


@pytest.mark.parametrize(
    "launcher,entry",
    [
        ("XLA_USE_BF16=1 python run.py\n", "import train\n\nif __name__ == '__main__':\n    train.main()\n"),
        ("XLA_USE_BF16=1 python run.py\n", "from train import main\n\nmain()\n"),
        ('XLA_USE_BF16=1 python -c "import train; train.main()"\n', None),
    ],
)
def test_a_launch_of_a_thin_entry_migrates_the_module_it_hands_over_to(tmp_path, launcher, entry):
    _tree(tmp_path, launcher, entry)
    changed, diagnostics, outcome = migrate_tree(tmp_path, "proj", "stochastic")
    assert "XLA_USE_BF16" not in changed["smoke.sh"] and "NEURON_RT_STOCHASTIC_ROUNDING_EN=1" in changed["smoke.sh"]
    assert "    model.to(torch.bfloat16)\n" in changed["train.py"]
    assert "run.py" not in changed
    assert not [d for d in outcome.diagnostics if not d.fixed], diagnostics


@pytest.mark.parametrize(
    "entry,extra",
    [
        # the entry makes a tensor itself: it would stay f32 once the switch is gone
        ("import torch\nimport train\n\ntorch.manual_seed(0)\ntrain.main()\n", False),
        # two modules of the tree build an optimizer: which one trains cannot be told
        ("import train\nimport other\n\ntrain.main()\n", True),
    ],
)
def test_an_entry_that_uses_torch_or_two_trainers_keeps_its_launch(tmp_path, entry, extra):
    _tree(tmp_path, "XLA_USE_BF16=1 python run.py\n", entry, extra)
    changed, diagnostics, outcome = migrate_tree(tmp_path, "proj", "stochastic")
    assert "smoke.sh" not in changed and "train.py" not in changed, diagnostics
    assert [d for d in outcome.diagnostics if not d.fixed], diagnostics


def test_inline_code_importing_only_the_standard_library_is_no_launch(tmp_path):
    """``python -c "import sys; print(sys.version)"`` never reaches torch: the setting before it reaches no
    script (as before), whatever the tree holds."""
    _tree(tmp_path, 'XLA_USE_BF16=1 python -c "import sys; print(sys.version)"\n', None)
    changed, diagnostics, outcome = migrate_tree(tmp_path, "proj", "stochastic")
    assert changed == {} and [d.code for d in outcome.diagnostics if not d.fixed] == ["BFM110"], diagnostics


SPAWNED_MODULE = """\
import torch
import torch_xla.core.xla_model as xm


def _mp_fn(index):
    device = xm.xla_device()
    model = torch.nn.Linear(4, 2).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(8, 4).to(device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        xm.mark_step()
"""


@pytest.mark.parametrize(
    "imports,start",
    [
        ("import torch_xla.distributed.xla_multiprocessing as xmp\n", "xmp.spawn(_mp_fn, args=())"),
        ("import torch_xla\n", "torch_xla.launch(_mp_fn)"),
        ("from torch_xla.distributed.xla_multiprocessing import spawn\n", "spawn(_mp_fn)"),
    ],
)
def test_an_entry_that_spawns_its_modules_function_with_torch_xla_hands_its_training_over(tmp_path, imports, start):
    """``launch.py`` sets the switch, imports ``_mp_fn`` from the module that trains and starts it with
    ``xmp.spawn`` (or ``torch_xla.launch``): those run the function they are handed and make no tensor, so the
    entry hands its training to the module (it was BFM010 "no optimizer in this file", naming launch.py)."""
    tree = tmp_path / "proj"
    tree.mkdir()
    (tree / "train_mp.py").write_text(SPAWNED_MODULE)
    entry = f'import os\n\nos.environ["XLA_USE_BF16"] = "1"\n\n{imports}\nfrom train_mp import _mp_fn\n\n'
    (tree / "launch.py").write_text(entry + f'if __name__ == "__main__":\n    {start}\n')
    changed, diagnostics, outcome = migrate_tree(tmp_path, "proj", "stochastic")
    assert '"NEURON_RT_STOCHASTIC_ROUNDING_EN"' in changed["launch.py"] and "XLA_USE_BF16" not in changed["launch.py"]
    assert "    model.to(torch.bfloat16)\n" in changed["train_mp.py"], diagnostics
    assert not [d for d in outcome.diagnostics if not d.fixed], diagnostics
    (tree / "launch.py").write_text(
        entry + f'import torch\n\ntorch.manual_seed(0)\n\nif __name__ == "__main__":\n    {start}\n'
    )
    (tree / "train_mp.py").write_text(SPAWNED_MODULE)
    changed, diagnostics, outcome = migrate_tree(tmp_path, "proj", "stochastic")
    assert changed == {} and [d.code for d in outcome.diagnostics if not d.fixed] == ["BFM010"], diagnostics
