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
