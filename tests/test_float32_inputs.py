"""float32-inputs (BFM023): in amp, and in verify's FP32 reference run, a model whose inputs'
dtype the code does not tell makes float64 inputs float32 at run time (autocast does not cast
float64; the legacy switch made it bf16 on the device). The run both ways: test_contract_shapes."""

from __future__ import annotations

import libcst as cst
import pytest

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


@pytest.mark.parametrize(
    "given",
    [
        "torch.from_numpy(x).float().to(device)",
        "torch.from_numpy(x).type(torch.float32).to(device)",
        "(torch.from_numpy(x) > 0.5).type(torch.float32).to(device)",
    ],
)
def test_an_input_the_code_tells_is_float32_gets_no_hook(given):
    """``.float()`` and ``.type(torch.float32)`` tell the dtype as ``.to(torch.float32)`` does."""
    result = migrate_source(TRAIN.replace("INPUT", given), "amp", "train.py")
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


def test_amp_makes_a_float64_arrival_float32_where_it_arrives():
    """amp: ``y = torch.from_numpy(targets).to(device)`` of NumPy float64 targets handed to the loss
    stayed float64 under autocast (which casts no float64), so the loss was computed in f64 where the
    legacy run had bf16 (bench/unseen/hunt10 hetero_tox, counts_compose): ``float64_to_float32`` where it
    arrives (BFM023 ``arrival``); a module moved to the device is no arrival; the bf16 modes are
    unchanged (their run-time cast is ``floating_to_bf16``)."""
    from bf16_migrate.python import migrate_source

    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport numpy as np\nimport torch\nimport torch_xla\n\n\n'
        "def main(features, targets):\n    device = torch_xla.device()\n"
        "    model = torch.nn.Linear(4, 1).to(device)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "    x = torch.randn(8, 4).to(device)\n    y = torch.from_numpy(targets).to(device)\n"
        "    loss = torch.nn.functional.gaussian_nll_loss(model(x).squeeze(1), y, torch.ones(8, device=device))\n"
        "    loss.backward()\n    opt.step()\n\n\nmain(None, np.zeros(8))\n"
    )
    result = migrate_source(source, "amp", "train.py")
    assert "    y = float64_to_float32(torch.from_numpy(targets).to(device))\n" in result.code
    assert "    model = torch.nn.Linear(4, 1).to(device)\n" in result.code
    arrivals = [(d.code, d.line) for d in result.diagnostics if "float64_to_float32()" in d.message]
    assert arrivals == [("BFM023", 13)], arrivals
    assert migrate_source(result.code, "amp", "train.py").code == result.code
    assert "float64_to_float32" not in migrate_source(source, "stochastic", "train.py").code


F64_BUFFER = """import os
import numpy as np
import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


class Scores(torch.nn.Module):
    def __init__(self, heads=4):
        super().__init__()
        self.q = torch.nn.Linear(8, 8)
        self.register_buffer("slopes", torch.from_numpy(2.0 ** -np.arange(1, heads + 1)).view(heads, 1, 1))

    def forward(self, x):
        return self.q(x) - self.slopes.sum()


def main():
    device = torch_xla.device()
    model = Scores().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(2, 8).to(device)
    loss = model(x).square().mean()
    loss.backward()
    opt.step()


main()
"""


def test_a_float64_buffer_is_made_float32_with_the_fp32_model():
    """amp: a buffer registered from NumPy's float64 (ALiBi slopes) was bf16 under the switch; autocast
    casts no float64, so left as it is the forward computes in f64 (a hunt's false PASS). The FP32
    model is made float32 after it reaches the device (BFM023 ``state``); a buffer of Python literals
    (float32) asks for nothing, nor do the bf16 modes, whose model cast covers it."""
    result = migrate_source(F64_BUFFER, "amp", "train.py")
    assert "    model = Scores().to(device)\n    model.to(torch.float32)\n    opt = " in result.code
    assert [(d.code, d.line) for d in result.diagnostics if d.code == "BFM023"] == [("BFM023", 13)]
    cst.parse_module(result.code)
    assert migrate_source(result.code, "amp", "train.py").code == result.code
    literal = F64_BUFFER.replace(
        "torch.from_numpy(2.0 ** -np.arange(1, heads + 1))", "torch.tensor([0.5, 0.25, 0.125, 0.0625])"
    )
    assert "model.to(torch.float32)" not in migrate_source(literal, "amp", "train.py").code
    assert "model.to(torch.float32)" not in migrate_source(F64_BUFFER, "stochastic", "train.py").code


def test_the_fp32_reference_makes_float64_state_float32_as_the_amp_migration_does():
    """A parameter made float64 (``nn.Parameter(torch.tensor(np.log(1 / 0.07)))``): the amp migration casts
    the model to float32 before its optimizer (BFM023 ``state``), and verify's FP32 reference must too; it
    kept the parameter float64, so an amp migration that also left it float64 passed as "FP32 where the FP32
    script has it" (a hunt's)."""
    from bf16_migrate.python import migrate_source

    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport numpy as np\nimport torch\nimport torch.nn as nn\n'
        "import torch_xla\n\n\nclass Pair(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(8, 8)\n        self.tau = nn.Parameter(torch.tensor(np.log(1 / 0.07)))\n\n"
        "    def forward(self, a):\n        return self.proj(a) * self.tau.exp()\n\n\n"
        "device = torch_xla.device()\nmodel = Pair().to(device)\nopt = torch.optim.AdamW(model.parameters(), lr=1e-3)\n"
        "loss = model(torch.randn(4, 8).to(device)).mean()\nloss.backward()\nopt.step()\n"
    )
    for mode in ("amp", "reference"):
        code = migrate_source(source, mode, "train.py").code
        assert "\nmodel.to(torch.float32)\nopt = torch.optim.AdamW(" in code, mode


def test_amp_reads_a_float64_arrival_through_an_index_or_a_view():
    """amp: a rollout buffer of NumPy float64 moved to the device and read as ``ret[idx] - v[idx]`` (a PPO
    minibatch) made the loss float64: the read through an index, or a view (``ret.view(-1)``), computes
    with it as the plain read does (bench/unseen/hunt22 amp_np_zeros_f64)."""
    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport numpy as np\nimport torch\nimport torch_xla\n\n'
        "device = torch_xla.device()\nmodel = torch.nn.Linear(4, 1).to(device)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nret_buf = np.zeros(16)\n"
        "x = torch.randn(16, 4).to(device)\nret = torch.from_numpy(ret_buf).to(device)\n"
        "v = model(x).squeeze(-1)\nidx = torch.randperm(16)[:8]\n"
        "loss = 0.5 * (READ - v[idx]).pow(2).mean()\nloss.backward()\nopt.step()\n"
    )
    for read in ("ret[idx]", "ret.view(-1)[idx]"):
        code = migrate_source(source.replace("READ", read), "amp", "ppo.py").code
        assert "ret = float64_to_float32(torch.from_numpy(ret_buf).to(device))\n" in code, read
        assert migrate_source(code, "amp", "ppo.py").code == code


LOADER_F64 = """\
import os
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_xla
import torch_xla.distributed.parallel_loader as pl

os.environ["XLA_USE_BF16"] = "1"


def main(loader):
    device = torch_xla.device()
    model = nn.Linear(8, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for x, y in pl.MpDeviceLoader(loader, device):
        loss = F.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_amp_makes_a_device_loaders_float64_loss_target_float32():
    """A device loader's batch of NumPy float64 labels was low precision on the device under the switch; under
    autocast, which casts no float64, the loss was float64 (a hunt's; verify named it, BFM204). Its read as the
    loss's target goes through ``float64_to_float32`` as a moved one does; its read as the model's input is the
    hook's."""
    result = migrate_source(LOADER_F64, "amp", "train.py")
    cst.parse_module(result.code)
    assert "binary_cross_entropy_with_logits(model(x).squeeze(1), float64_to_float32(y))" in result.code, result.code
    assert "model(float64_to_float32(x))" not in result.code


DOUBLE_MODEL = """\
import os
import torch
import torch.nn as nn
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def main(t, u):
    device = torch_xla.device()
    net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1)).double().to(device)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(3):
        loss = ((net(t.to(device)) - u.to(device)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def test_amp_makes_a_model_the_code_makes_float64_float32():
    """``nn.Sequential(...).double().to(device)``: its parameters were low precision on the device under the
    switch; kept float64 under autocast, which casts no float64, the forward met bf16 activations and raised (a
    hunt's). amp's FP32 model is float32: ``net.to(torch.float32)`` where the model reaches the device (BFM023
    ``double``); the bf16 modes cast it to bf16 as any model."""
    result = migrate_source(DOUBLE_MODEL, "amp", "train.py")
    cst.parse_module(result.code)
    assert "    net.to(torch.float32)\n" in result.code, result.code
    assert any(d.code == "BFM023" and "makes the model float64" in d.message for d in result.diagnostics)
    assert "net.to(torch.float32)" not in migrate_source(DOUBLE_MODEL, "stochastic", "train.py").code
