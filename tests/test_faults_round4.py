"""The faults of the fourth attack round (settings in places people put them, encodings,
permissions, nesting, special files), each a regression test: every one of them failed before its
fix, silently (exit 0, "0 left to do" on a file that sets the variable) or with a traceback.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from bf16_migrate.project import migrate_paths

ROOT = Path(__file__).resolve().parent.parent
TRAIN = (ROOT / "fixtures" / "project" / "src" / "train.py").read_text()
"""A training script of our own that never names a variable: the launchers set it."""
CAST = "model.to(torch.bfloat16)"


def codes(outcome, name: str | None = None) -> list[str]:
    return [d.code for d in outcome.diagnostics if name is None or Path(d.path).name == name]


# -- hidden directories ------------------------------------------------------------------------------------------------
def test_a_launcher_in_a_hidden_directory_is_migrated_with_its_script(tmp_path):
    """`.ci/run.sh` was passed over (only CI directories such as `.github` were walked)."""
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / ".ci").mkdir()
    (tmp_path / ".ci" / "run.sh").write_text("#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py --steps 5\n")
    outcome = migrate_paths([tmp_path], "stochastic", write=True)
    assert outcome.errors == []
    assert (tmp_path / ".ci" / "run.sh").read_text() == (
        "#!/bin/bash\nexport NEURON_RT_STOCHASTIC_ROUNDING_EN=1\npython train.py --steps 5\n"
    )
    assert CAST in (tmp_path / "train.py").read_text()


def test_tool_managed_hidden_directories_are_still_passed_over(tmp_path):
    """Version control's data, environments and caches are not the project's files."""
    for name in (".git", ".tox", ".venv", ".mypy_cache", ".ipynb_checkpoints"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "run.sh").write_text("export XLA_USE_BF16=1\npython train.py\n")
    (tmp_path / ".idea").mkdir()
    (tmp_path / ".idea" / "workspace.xml").write_text('<env name="XLA_USE_BF16" value="1" />\n')
    outcome = migrate_paths([tmp_path], "stochastic", write=False)
    assert [(Path(d.path).relative_to(tmp_path).as_posix(), d.code) for d in outcome.diagnostics] == [
        (".idea/workspace.xml", "BFM090")
    ]
