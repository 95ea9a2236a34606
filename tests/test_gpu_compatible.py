"""gpu-compatible mode on the shapes long training jobs use: gradient clipping, torch-xla's ZeRO-1,
wrappers that own the optimizer, a model built by a function that returns it (golden-style: the
exact lines the codemod writes, the diagnostics, a second run that changes nothing)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from bf16_migrate.python import migrate_source

HEADER = (
    'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\n'
    "import torch_xla\nimport torch_xla.core.xla_model as xm\n"
)


def run(body: str, mode: str = "gpu-compatible"):
    result = migrate_source(HEADER + textwrap.dedent(body), mode, "train.py")
    cst.parse_module(result.code)
    again = migrate_source(result.code, mode, "train.py")
    assert again.code == result.code  # a second run changes nothing
    return result


def codes(result):
    return [(d.code, d.fixed) for d in result.diagnostics]


LOOP = """
def main(args):
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for x, y in loader:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        {clip}
        xm.optimizer_step(optimizer)
"""


@pytest.mark.parametrize(
    "clip",
    [
        "torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_norm)",
        "grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0, norm_type=2.0)",
    ],
)
def test_clip_grad_norm_computed_in_fp32(clip):
    result = run(LOOP.format(clip=clip))
    new = clip.replace("torch.nn.utils.clip_grad_norm_", "clip_grad_norm_fp32_")
    assert f"        {new}\n" in result.code
    assert result.code.count("def clip_grad_norm_fp32_(") == 1
    assert ("BFM064", True) in codes(result)


def test_clip_imported_by_name_and_under_the_scripts_flag():
    body = LOOP.format(clip="clip_grad_norm_(model.parameters(), 1.0)").replace(
        "def main(args):", "from torch.nn.utils import clip_grad_norm_\n\n\ndef main(args):"
    )
    result = run(body)
    assert "        clip_grad_norm_fp32_(model.parameters(), 1.0)\n" in result.code
    guarded = "import os\nimport torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n\n" + textwrap.dedent(
        LOOP.format(clip="torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)")
    ).replace(
        "    device = torch_xla.device()",
        '    if args.bf16:\n        os.environ["XLA_USE_BF16"] = "1"\n    device = torch_xla.device()',
    )
    out = migrate_source(guarded, "gpu-compatible", "train.py")
    assert (
        "        (clip_grad_norm_fp32_ if args.bf16 else torch.nn.utils.clip_grad_norm_)(model.parameters(), 1.0)\n"
        in out.code
    )


def test_stochastic_mode_keeps_torch_clipping():
    result = run(LOOP.format(clip="torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"), mode="stochastic")
    assert "clip_grad_norm_fp32_" not in result.code and "BFM064" not in {c for c, _ in codes(result)}


ZERO1 = """
from torch_xla.distributed.zero_redundancy_optimizer import ZeroRedundancyOptimizer


def main(args):
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = ZeroRedundancyOptimizer(
        model.parameters(),
        torch.optim.AdamW,
        lr=args.lr,  # peak
        pin_layout=False,
    )
    for x in loader:
        model(x.to(device)).sum().backward()
        optimizer.step()
{save}"""


def test_zero1_gets_fp32_optimizer_dtype_and_saves_master_weights_when_it_checkpoints():
    result = run(ZERO1.format(save='    xm.save({"optimizer": optimizer.state_dict()}, "ckpt.pt")\n'))
    assert (
        "        lr=args.lr,  # peak\n"
        "        pin_layout=False,\n"
        "        optimizer_dtype=torch.float32,\n"
        "        save_master_weights=True,\n"
        "    )\n"
    ) in result.code
    assert "with_fp32_master_weights" not in result.code  # ZeRO-1 keeps the master weights itself
    assert ("BFM063", True) in codes(result) and "BFM060" not in {c for c, _ in codes(result)}


def test_zero1_without_checkpoint_and_with_its_own_dtype():
    result = run(ZERO1.format(save=""))
    assert "optimizer_dtype=torch.float32," in result.code and "save_master_weights" not in result.code
    own = run(
        ZERO1.format(save="").replace("pin_layout=False,", "pin_layout=False,\n        optimizer_dtype=torch.bfloat16,")
    )
    assert "optimizer_dtype=torch.bfloat16," in own.code and "torch.float32" not in own.code.split("def main")[1]
    assert ("BFM063", False) in codes(own)


def test_wrappers_that_own_the_optimizer_are_reported_with_their_setting():
    body = """
    import neuronx_distributed as nxd


    def main(args):
        device = torch_xla.device()
        model = Net().to(device)
        optimizer = nxd.initialize_parallel_optimizer(config, torch.optim.AdamW, model.parameters(), lr=1e-3)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model(x).sum().backward()
    """
    result = run(body)
    owner = [d for d in result.diagnostics if d.code == "BFM060"]
    assert len(owner) == 1 and not owner[0].fixed and "use_master_weights" in owner[0].message, owner


def test_model_returned_by_a_builder_is_followed_to_its_calls():
    body = """
    def build(args, device):
        model = Net().to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
        return model, optimizer


    def main(args):
        device = torch_xla.device()
        model, optimizer = build(args, device)
        for step in range(args.steps):
            x, y = torch.randn(8, 4).to(device), torch.randn(8, 2).to(device)
            logits = model(x)
            loss = loss_fn(logits, y)
            loss.backward()
            optimizer.step()
    """
    result = run(body)
    # before, the calls in main() were not seen: a run-time input hook, and the f32 target left
    # in front of the bf16 output (MSE-style losses then fail on the dtype mismatch)
    assert (
        "        logits = model(x.to(torch.bfloat16))\n        loss = loss_fn(logits, y.to(torch.bfloat16))\n"
        in result.code
    )
    assert "bf16_inputs_hook" not in result.code
    amp = run(body, mode="amp")
    assert (
        '        with torch.autocast("xla", dtype=torch.bfloat16):\n'
        "            logits = model(x)\n            loss = loss_fn(logits, y)\n" in amp.code
    )
