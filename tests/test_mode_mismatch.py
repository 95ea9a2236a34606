"""A launcher's setting for a script that already carries explicit precision code is removed
only when that code is the chosen mode's (convergence, docs/usage.md "In CI and pre-commit");
when it is another mode's (migrated in stochastic mode, then the launcher in gpu-compatible mode: no
FP32 master weights) the setting is kept and the reason given (BFM015 in BFM112)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from bf16_migrate.cli import main
from bf16_migrate.python import migrate_source

from conftest import MODES

RUN_SH = "#!/bin/bash\nset -e\nexport XLA_USE_BF16=1\npython train.py --epochs 3\n"

TRAIN = """import torch
import torch.nn as nn
import torch_xla
import torch_xla.core.xla_model as xm


def main():
    device = torch_xla.device()
    features = torch.randn(64, 8)
    targets = torch.randn(64, 1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = features.to(device), targets.to(device)
    for _ in range(10):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        xm.mark_step()


if __name__ == "__main__":
    main()
"""

# (the mode train.py was migrated in, the mode of the later run) -> the launcher's switch goes
ACCEPTED = {
    ("stochastic", "stochastic"),
    ("gpu-compatible", "gpu-compatible"),
    ("gpu-compatible", "stochastic"),  # a bf16 model with master weights is a stochastic migration and more
    ("amp", "amp"),
}


@pytest.mark.parametrize("later", MODES)
@pytest.mark.parametrize("first", MODES)
def test_the_launcher_keeps_its_switch_for_another_modes_script(tmp_path, first, later):
    migrated = migrate_source(TRAIN, first, "train.py", launched_with={"XLA_USE_BF16": "1"}).code
    assert migrated != TRAIN
    (tmp_path / "train.py").write_text(migrated)
    (tmp_path / "run.sh").write_text(RUN_SH)
    result = CliRunner().invoke(main, [str(tmp_path), "--mode", later])
    assert (tmp_path / "train.py").read_text() == migrated  # never a second change
    if (first, later) in ACCEPTED:
        assert result.exit_code == 0, result.output
        assert "XLA_USE_BF16" not in (tmp_path / "run.sh").read_text()
        assert "BFM015" not in result.output
    else:
        assert result.exit_code == 1, result.output
        assert (tmp_path / "run.sh").read_text() == RUN_SH  # kept: never a switch removed for the wrong change
        assert "BFM112" in result.output and "BFM015" in result.output
        expected = {
            "amp": "the model is cast to bf16, where amp keeps it in FP32",
            "gpu-compatible": "keeps no FP32 master weights" if first == "stochastic" else "runs under torch.autocast",
            "stochastic": "runs under torch.autocast",
        }[later]
        assert expected in result.output, result.output
