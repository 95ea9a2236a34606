import os

# Run the suite the way production trains: bf16 on the XLA device.
os.environ["XLA_USE_BF16"] = "1"
os.environ.setdefault("PJRT_DEVICE", "CPU")

import pytest  # noqa: E402
import torch  # noqa: E402
import torch_xla  # noqa: E402


@pytest.fixture(scope="session")
def device():
    return torch_xla.device()


@pytest.fixture
def model(device):
    from kpi.train_lib import Forecaster

    torch.manual_seed(0)
    return Forecaster().to(device)
