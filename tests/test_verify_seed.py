"""verify's runs of a script that seeds nothing start from the same random state (the harness seeds torch's,
NumPy's and Python's generators at the script's ``import torch``): their losses are comparable step by step. The
test runs on the CPU device."""

from __future__ import annotations

import pytest

from bf16_migrate.verify import verify_script
from bf16_migrate.verify.parts import PASS

from conftest import part_of

UNSEEDED = (
    'import os\nos.environ["XLA_USE_BF16"] = "1"\n'
    "import numpy as np\nimport torch\nimport torch_xla\n\n\n"
    "def main():\n    device = torch_xla.device()\n"
    "    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)).to(device)\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    for _ in range(6):\n"
    "        x = torch.from_numpy(np.random.randn(8, 4).astype(np.float32)).to(device)\n"
    "        loss = model(x).pow(2).mean()\n"
    "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n        print(loss.item())\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


@pytest.mark.xla
def test_a_script_that_seeds_nothing_is_compared_from_the_same_weights(tmp_path):
    """Unseeded, each run built its own random weights and batches: the migration's losses were another run's,
    and a right migration FAILed ("trains" and "matches", the rel. diff 0.4 at step 1)."""
    script = tmp_path / "train.py"
    script.write_text(UNSEEDED)
    report = verify_script(script, "stochastic", steps=4, timeout=300)
    assert report.verdict.status == PASS, [(p.name, p.status, p.detail) for p in report.parts]
    assert "of the first 3 steps the same" in part_of(report.verdict, "matches").detail
