"""A framework's precision plugin (written for hunt51 in the shape of Lightning's XLA precision plugins): it
turns the legacy switch on while it is in use and takes it out of the environment in teardown()."""
import os

import torch


class XLABf16Precision:
    def __init__(self, precision="bf16-true"):
        self.precision = precision
        if precision == "bf16-true":
            os.environ["XLA_USE_BF16"] = "1"
        self._dtype = torch.bfloat16 if precision == "bf16-true" else torch.float32

    def convert_input(self, data):
        return data.to(self._dtype) if torch.is_floating_point(data) else data

    def teardown(self):
        os.environ.pop("XLA_USE_BF16", None)
