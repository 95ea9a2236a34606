"""A launcher's setting reaches a training script and a script that keeps its tensors on the host (an
exporter turning the checkpoint into NumPy, run after training by the same Dockerfile ``CMD``): the
legacy switch acted on the XLA device's tensors only, so it changed nothing in the exporter, which
no longer holds the launcher's migration back (it was BFM010 "no optimizer" and the setting kept)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from bf16_migrate.project import migrate_paths

TRAIN = """import torch
import torch_xla


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(8, 4).to(device)).sum()
        loss.backward()
        optimizer.step()
    torch.save({"model": model.state_dict()}, "last.pt")


if __name__ == "__main__":
    main()
"""

EXPORT = """import argparse

import numpy as np
import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ckpt", default="last.pt")
    args = parser.parse_args()
    state = torch.load(args.ckpt, map_location="cpu", weights_only=False)["model"]
    np.savez("export.npz", **{name: tensor.numpy() for name, tensor in state.items()})


if __name__ == "__main__":
    main()
"""

LAUNCHER = "#!/bin/sh\nexport XLA_USE_BF16=1\npython train.py && python export.py --ckpt last.pt\n"


def _tree(tmp_path: Path, export: str) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "export.py").write_text(export)
    (tmp_path / "run.sh").write_text(LAUNCHER)
    return tmp_path


def test_the_exporter_does_not_hold_the_launcher_back(tmp_path):
    tree = _tree(tmp_path, EXPORT)
    outcome = migrate_paths([tree], "stochastic", True)
    assert not outcome.errors, outcome.errors
    assert "XLA_USE_BF16" not in (tree / "run.sh").read_text()
    assert "NEURON_RT_STOCHASTIC_ROUNDING_EN=1" in (tree / "run.sh").read_text()
    assert "model.to(torch.bfloat16)" in cst.parse_module((tree / "train.py").read_text()).code
    assert (tree / "export.py").read_text() == EXPORT
    assert not [d for d in outcome.diagnostics if not d.fixed and d.code != "BFM091"], outcome.diagnostics


@pytest.mark.parametrize(
    "change",
    [
        ('map_location="cpu"', "map_location=args.device"),  # a device the code does not tell
        ("import numpy as np\n", "import numpy as np\nimport torch_xla\n"),  # the XLA runtime in reach
        ("    np.savez(", "    import subprocess\n    subprocess.run(['python', 'serve.py'])\n    np.savez("),
    ],
    ids=["device-from-arguments", "imports-torch-xla", "starts-a-process"],
)
def test_an_exporter_that_may_reach_the_device_still_holds_it_back(tmp_path, change):
    export = EXPORT.replace(*change)
    assert export != EXPORT
    tree = _tree(tmp_path, export)
    outcome = migrate_paths([tree], "stochastic", True)
    assert (tree / "run.sh").read_text() == LAUNCHER
    codes = {(Path(d.path).name, d.code) for d in outcome.diagnostics}
    assert ("run.sh", "BFM112") in codes and ("export.py", "BFM010") in codes
