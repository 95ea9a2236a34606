"""float32-inputs (BFM023): in amp, and in verify's FP32 reference run, a model whose inputs'
dtype the code does not tell makes float64 inputs float32 at run time (autocast does not cast
float64; the legacy switch made it bf16 on the device). The run both ways: test_contract_shapes."""

from __future__ import annotations

import libcst as cst

from bf16_migrate.python import REFERENCE, migrate_source

HOOK = "model.register_forward_pre_hook(float32_inputs_hook, with_kwargs=True)"

TRAIN = """
import os
import numpy as np
import torch
import torch_xla
os.environ["XLA_USE_BF16"] = "1"


def main(rows):
    device = torch_xla.device()
    model = torch.nn.Linear(4, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in np.array_split(rows, 4):
        loss = model(INPUT).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""

INFER = """
import copy
import os
import numpy as np
import torch
import torch_xla
os.environ["XLA_USE_BF16"] = "1"


def main(rows):
    device = torch_xla.device()
    model = torch.nn.Linear(4, 1).to(device)
    model.eval()
    twin = copy.deepcopy(model)
    with torch.no_grad():
        for x in np.array_split(rows, 4):
            print(model(torch.from_numpy(x).to(device)).cpu(), twin(torch.from_numpy(x).to(device)).cpu())
"""


def _lines(code: str) -> list[str]:
    cst.parse_module(code)  # every output re-parses
    return [line.strip() for line in code.splitlines()]


def test_an_input_of_unknown_dtype_gets_the_hook_before_the_optimizer_in_amp():
    result = migrate_source(TRAIN.replace("INPUT", "torch.from_numpy(x).to(device)"), "amp", "train.py")
    lines = _lines(result.code)
    assert lines.index(HOOK) == lines.index("optimizer = torch.optim.SGD(model.parameters(), lr=0.1)") - 1
    assert "def float64_to_float32(batch):" in lines and "def float32_inputs_hook(module, args, kwargs):" in lines
    assert [d.code for d in result.diagnostics if d.code == "BFM023"] == ["BFM023"] and not result.unfixed
    again = migrate_source(result.code, "amp", "train.py")
    assert again.code == result.code  # idempotent: the switch is gone, nothing more to do


def test_an_input_the_code_tells_is_float32_gets_no_hook():
    result = migrate_source(TRAIN.replace("INPUT", "torch.from_numpy(x).float().to(device)"), "amp", "train.py")
    assert "float32_inputs_hook" not in result.code and "float64_to_float32" not in result.code
    assert "BFM023" not in {d.code for d in result.diagnostics}


def test_the_bf16_modes_cast_instead_and_write_no_float32_hook():
    for mode in ("stochastic", "gpu-compatible"):
        code = migrate_source(TRAIN.replace("INPUT", "torch.from_numpy(x).to(device)"), mode, "train.py").code
        assert "bf16_inputs_hook" in code and "float32_inputs_hook" not in code, mode


def test_an_inference_module_gets_the_hook_after_its_move_and_its_copy_keeps_it():
    result = migrate_source(INFER, "amp", "infer.py")
    lines = _lines(result.code)
    move = lines.index("model = torch.nn.Linear(4, 1).to(device)")
    assert lines[move + 1] == HOOK
    # the deepcopy is made after the registration: it keeps the source's pre-hooks, no second one
    assert [line for line in lines if "register_forward_pre_hook" in line] == [HOOK]


def test_the_fp32_reference_run_gets_the_hook_and_nothing_else():
    result = migrate_source(TRAIN.replace("INPUT", "torch.from_numpy(x).to(device)"), REFERENCE, "train.py")
    lines = _lines(result.code)
    assert HOOK in lines and 'os.environ["XLA_USE_BF16"] = "1"' not in lines
    assert "torch.autocast" not in result.code and "torch.bfloat16" not in result.code
