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
