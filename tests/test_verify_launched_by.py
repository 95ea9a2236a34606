"""``verify SCRIPT`` for a script whose switch its launchers set (a shell script's ``export``, a Dockerfile's
``ENV``): the legacy run takes their setting, as the codemod migrates the script under it, and says where it came
from. Launchers that set different ones are named, never chosen between. The XLA test runs on the CPU device.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import nbformat
import pytest

from bf16_migrate.rules import mode_named
from bf16_migrate.verify import RunError, _implied_legacy_env, verify_script

TRAIN = (
    "import torch\nimport torch_xla\n\n\n"
    "def main():\n    torch.manual_seed(0)\n    device = torch_xla.device()\n"
    "    model = torch.nn.Linear(4, 2).to(device)\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    data = torch.randn(8, 4)\n"
    "    for _ in range(6):\n        x = data.to(device)\n        loss = model(x).pow(2).mean()\n"
    "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n        print(loss.item())\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)
RUN = '#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py "$@"\n'
DOCKERFILE = 'FROM python:3.11\nENV XLA_DOWNCAST_BF16=1\nCOPY . /app\nCMD ["python", "/app/train.py"]\n'


def _tree(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    return tmp_path


def test_the_launchers_setting_is_the_legacy_runs(tmp_path):
    """It was refused: "the legacy script names no legacy variable" (exit 2), while the codemod migrated the
    script under run.sh's setting and printed that `--legacy-env` command."""
    tree = _tree(tmp_path, **{"train.py": TRAIN, "run.sh": RUN})
    env, sources, module = _implied_legacy_env(
        tree / "train.py", TRAIN, mode_named("stochastic"), {}, [], given_legacy=False
    )
    assert dict(env) == {"XLA_USE_BF16": "1"} and list(sources) == ["run.sh:3, which launches the script"]
    assert module is None
    given, said, _ = _implied_legacy_env(
        tree / "train.py",
        TRAIN,
        mode_named("stochastic"),
        {"XLA_DOWNCAST_BF16": "1"},
        ["--legacy-env"],
        given_legacy=False,
    )
    assert dict(given) == {"XLA_DOWNCAST_BF16": "1"} and list(said) == ["--legacy-env"]  # what the user gives wins


def test_launchers_that_set_different_settings_are_named(tmp_path):
    tree = _tree(tmp_path, **{"train.py": TRAIN, "run.sh": RUN, "Dockerfile": DOCKERFILE})
    with pytest.raises(RunError) as info:
        _implied_legacy_env(tree / "train.py", TRAIN, mode_named("stochastic"), {}, [], given_legacy=False)
    said = str(info.value)
    assert "run.sh:3 (XLA_USE_BF16=1)" in said and "Dockerfile:4 (XLA_DOWNCAST_BF16=1)" in said, said
    assert "--legacy-env" in (info.value.hint or "")


def test_a_script_no_launcher_switches_is_still_refused(tmp_path):
    tree = _tree(tmp_path, **{"train.py": TRAIN, "run.sh": RUN.replace("export XLA_USE_BF16=1\n", "")})
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_")}
    with pytest.raises(RunError, match="names no legacy variable"):
        verify_script(tree / "train.py", "stochastic", env=env)


@pytest.mark.xla
def test_verify_runs_the_legacy_side_under_the_launchers_setting(tmp_path):
    tree = _tree(tmp_path, **{"train.py": TRAIN, "run.sh": RUN})
    report = verify_script(tree / "train.py", "stochastic", steps=4, timeout=300)
    assert dict(report.legacy_env) == {"XLA_USE_BF16": "1"}
    assert list(report.legacy_env_source) == ["run.sh:3, which launches the script"]
    assert report.verdict.status == "PASS", [(p.name, p.status, p.detail) for p in report.parts]


def test_a_notebooks_setting_for_the_script_it_runs_is_the_legacy_runs(tmp_path):
    """``%env XLA_USE_BF16=1`` then ``!python train.py``: the codemod migrates both (the notebook is a launcher);
    verify left notebooks out of the launchers it reads, so the script was refused (or, with ``--against``, its
    legacy side ran FP32)."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%env XLA_USE_BF16=1"), nbformat.v4.new_code_cell("!python train.py")]
    tree = _tree(tmp_path, **{"train.py": TRAIN, "run.ipynb": nbformat.writes(nb)})
    env, sources, _ = _implied_legacy_env(
        tree / "train.py", TRAIN, mode_named("stochastic"), {}, [], given_legacy=False
    )
    assert dict(env) == {"XLA_USE_BF16": "1"} and list(sources) == ["run.ipynb:1, which launches the script"]
