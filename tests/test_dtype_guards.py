"""Guards on a tensor's dtype that name float32 (:mod:`bf16_migrate.python.dtype_guards`): under the
switch a device tensor said float32 while it held bf16, so a model's input validation passed; migrated,
the guard accepts bf16 too (BFM078) instead of raising at the first step. No torch."""

from __future__ import annotations

import libcst as cst
import pytest

from bf16_migrate.python import migrate_source

GUARDED = """import os
import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        if x.dtype != torch.float32:
            raise TypeError(f"expects float32, got {x.dtype}")
        assert x.dtype == torch.float32, "float32 only"
        if not x.is_floating_point() or x.dtype not in (torch.float32, torch.float16):
            raise TypeError("floating features only")
        h = self.fc(x)
        if h.dtype == torch.float32:
            h = h * 2
        return h


def main():
    device = torch_xla.device()
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(3, 4).to(device)).sum()
    loss.backward()
    opt.step()


main()
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible", "amp"])
def test_a_dtype_guard_accepts_bf16_and_a_branch_is_left(mode):
    result = migrate_source(GUARDED, mode, "train.py")
    code = result.code
    assert "        if x.dtype not in (torch.float32, torch.bfloat16):\n            raise TypeError" in code
    assert '        assert x.dtype in (torch.float32, torch.bfloat16), "float32 only"\n' in code
    assert "x.dtype not in (torch.float32, torch.bfloat16, torch.float16):" in code
    assert "        if h.dtype == torch.float32:\n            h = h * 2\n" in code  # a branch, not a guard
    assert [d.line for d in result.diagnostics if d.code == "BFM078"] == [14, 16, 17]
    cst.parse_module(code)
    assert migrate_source(code, mode, "train.py").code == code


def test_a_guard_that_names_bf16_already_is_left():
    source = GUARDED.replace(
        "x.dtype not in (torch.float32, torch.float16):", "x.dtype not in (torch.float32, torch.bfloat16):"
    )
    assert source != GUARDED
    result = migrate_source(source, "stochastic", "train.py")
    assert 'x.dtype not in (torch.float32, torch.bfloat16):\n            raise TypeError("floating' in result.code
    assert [d.line for d in result.diagnostics if d.code == "BFM078"] == [14, 16]


CLAMPED = """import os
import torch
import torch.nn.functional as F
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def smoothed_nll(logits, y):
    probs = logits.softmax(-1)
    logp = torch.log(probs.clamp(min=torch.finfo(probs.dtype).eps))
    p = torch.sigmoid(logits)
    bce = -(torch.log(p + torch.finfo(p.dtype).tiny)).mean()
    masked = logits.masked_fill(y[:, None] == 0, torch.finfo(logits.dtype).min)
    return F.nll_loss(logp, y) + bce + masked.mean()


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(4, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 4).to(device), torch.randint(0, 3, (8,)).to(device)
    loss = smoothed_nll(model(x), y)
    loss.backward()
    opt.step()


main()
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible", "amp"])
def test_a_resolution_constant_read_from_a_tensors_dtype_is_float32s(mode):
    """``torch.finfo(probs.dtype).eps`` was float32's under the switch (the tensor said float32 while it held bf16):
    it becomes ``torch.finfo(torch.float32).eps`` (bf16's 0.0078 clamped a third of the probabilities of a hunt's
    loss), ``.tiny`` likewise (BFM079); ``.min`` is left as written."""
    result = migrate_source(CLAMPED, mode, "train.py")
    cst.parse_module(result.code)
    assert "torch.log(probs.clamp(min=torch.finfo(torch.float32).eps))" in result.code
    assert "torch.log(p + torch.finfo(torch.float32).tiny)" in result.code
    assert "torch.finfo(logits.dtype).min" in result.code
    assert [d.line for d in result.diagnostics if d.code == "BFM079"] == [11, 13]
    assert migrate_source(result.code, mode, "train.py").code == result.code
