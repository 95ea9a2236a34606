"""A model handed to code of another file (an imported function) may be called there with inputs this
file never sees: its floating inputs are cast at run time (the forward pre-hook, BFM022), as the legacy
switch made every floating tensor on the device bf16. Found on an evaluation module's
``predict_proba(model, loader, device)``: the migration cast the model and the training inputs only,
and the evaluation crashed (``Input type (float) and bias type (c10::BFloat16)``)."""

from __future__ import annotations

import libcst as cst
import pytest

from bf16_migrate.python import migrate_source

SCRIPT = """import os
os.environ["XLA_USE_BF16"] = "1"
import copy
import torch
import torch_xla
{imports}

def main():
    device = torch_xla.device()
    model = torch.nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(8, 4).to(device)
        loss = model(x).sum()
        loss.backward()
        optimizer.step()
    {use}


main()
"""


@pytest.mark.parametrize(
    "imports, use",
    [
        ("from evaluation import predict_proba", "print(predict_proba(model, device))"),
        ("import evaluation", "evaluation.report(model=model)"),
    ],
)
def test_a_model_handed_to_an_imported_function_casts_its_inputs_at_run_time(imports, use):
    result = migrate_source(SCRIPT.format(imports=imports, use=use), "stochastic", "train.py")
    assert "model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)" in result.code
    (hook,) = [d for d in result.diagnostics if d.code == "BFM022"]
    assert "code of another file that may call it" in hook.message and hook.fixed
    assert migrate_source(result.code, "stochastic", "train.py").code == result.code
    cst.parse_module(result.code)


@pytest.mark.parametrize(
    "imports, use",
    [
        ("", "ema = copy.deepcopy(model)"),
        ("", "print(model)"),
        ("", "compiled = torch.compile(model)"),
        ("", "def score(m):\n        return m(torch.randn(2, 4).to(device))\n    print(score(model))"),
    ],
)
def test_a_model_handed_to_torch_copy_builtins_or_the_files_own_code_casts_its_inputs_where_they_are(imports, use):
    result = migrate_source(SCRIPT.format(imports=imports, use=use), "stochastic", "train.py")
    assert "register_forward_pre_hook" not in result.code
    assert "model(x.to(torch.bfloat16))" in result.code


CLOSURE = """import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn.functional as F
import torch_xla


def run_phase(model, opt, t, y, iters):
    def closure():
        opt.zero_grad()
        loss = F.mse_loss(model(t), y)
        loss.backward()
        return loss

    for _ in range(iters):
        opt.step(closure)


def main():
    device = torch_xla.device()
    t = torch.linspace(0, 1, 32).unsqueeze(1).to(device)
    y = torch.sin(t).to(device)
    model = torch.nn.Sequential(torch.nn.Linear(1, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).to(device)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4)
    run_phase(model, opt, t, y, 3)


main()
"""


def test_the_model_called_in_a_closure_of_a_function_handed_it_is_followed():
    """L-BFGS's ``opt.step(closure)``: the only training forward is ``model(t)`` in ``closure()``,
    defined in the helper the model is handed to. stochastic casts what it is given (the crash was
    "mixed precision is disallowed" at the first step); amp puts it under autocast (every L-BFGS
    evaluation ran in f32)."""
    stochastic = migrate_source(CLOSURE, "stochastic", "train.py").code
    assert "loss = F.mse_loss(model(t.to(torch.bfloat16)), y.to(torch.bfloat16))" in stochastic
    amp = migrate_source(CLOSURE, "amp", "train.py").code
    assert (
        '        with torch.autocast("xla", dtype=torch.bfloat16):\n            loss = F.mse_loss(model(t), y)\n' in amp
    )
    for code in (stochastic, amp):
        cst.parse_module(code)


def test_gpu_compatible_keeps_the_switch_for_an_optimizer_that_evaluates_its_closure_several_times():
    """L-BFGS is torch.optim's, but its line search calls the closure again and again; the master-weights
    helper calls it once: BFM017 says so (it said "neither torch.optim's nor ...")."""
    result = migrate_source(CLOSURE, "gpu-compatible", "train.py")
    assert result.code == CLOSURE
    [finding] = [d for d in result.diagnostics if d.code == "BFM017"]
    assert "`torch.optim.LBFGS` (line 24) evaluates the closure it is given several times" in finding.message
