"""pytest: the regression tests train for a few steps on the TPU in bf16, as production does."""
import os


def pytest_configure(config):
    os.environ.setdefault("PJRT_DEVICE", "TPU")
    os.environ["XLA_USE_BF16"] = "1"
