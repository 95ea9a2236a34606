"""Optimizers built over a submodule of the model (``model.head.parameters()``, parameter groups of
``model.encoder`` and ``model.decoder``, a factory of the tree that takes them from the model it is
given): the whole model is cast before the first of them, as the legacy switch ran every parameter
in bf16; an argument that is not called as a model keeps the switch."""

from __future__ import annotations

import shutil
from pathlib import Path

from bf16_migrate.python import migrate_source

from conftest import FIXTURES
from test_trees import migrate_tree

LINEAR_PROBE = """
import os
import torch
import torch.nn as nn
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64))
        self.classifier = nn.Linear(64, 5)

    def forward(self, x):
        return self.classifier(self.backbone(x))


def main():
    device = torch_xla.device()
    model = Probe().to(device)
    for p in model.backbone.parameters():
        p.requires_grad_(False)
    optimizer = torch.optim.SGD(model.classifier.parameters(), lr=0.1, momentum=0.9)
    for step in range(4):
        x = torch.randn(16, 32).to(device)
        y = torch.randint(0, 5, (16,)).to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch_xla.sync()
"""


def test_an_optimizer_over_one_submodule_casts_the_whole_model():
    """Only the classifier is trained (a linear probe): the legacy run had the frozen backbone in
    bf16 too, so the whole model is cast before the optimizer, not `model.classifier` alone."""
    result = migrate_source(LINEAR_PROBE, "stochastic", "probe.py")
    assert not result.unfixed, [d.format_text() for d in result.unfixed]
    assert (
        "        p.requires_grad_(False)\n    model.to(torch.bfloat16)\n"
        "    optimizer = torch.optim.SGD(model.classifier.parameters()"
    ) in result.code
    assert "model.classifier.to(torch.bfloat16)" not in result.code
    # the floating input cast, the int64 labels untouched
    assert "loss = nn.functional.cross_entropy(model(x.to(torch.bfloat16)), y)\n" in result.code


GROUPS = LINEAR_PROBE.replace(
    "torch.optim.SGD(model.classifier.parameters(), lr=0.1, momentum=0.9)",
    "torch.optim.AdamW("
    '[{"params": model.backbone.parameters(), "lr": 1e-4}, {"params": model.classifier.parameters()}])',
).replace("    for p in model.backbone.parameters():\n        p.requires_grad_(False)\n", "")


def test_parameter_groups_of_two_submodules_are_one_model_with_master_weights():
    result = migrate_source(GROUPS, "gpu-compatible", "probe.py")
    assert not result.unfixed, [d.format_text() for d in result.unfixed]
    assert "    model = Probe().to(device)\n    model.to(torch.bfloat16)\n    optimizer = " in result.code
    assert "optimizer = with_fp32_master_weights(torch.optim.AdamW)([{" in result.code
    again = migrate_source(result.code, "gpu-compatible", "probe.py")
    assert again.code == result.code


def test_a_submodule_of_what_is_not_called_as_a_model_stays_the_receiver():
    """`runner.net.parameters()` where `runner` is never called: `runner` is no model to cast."""
    source = LINEAR_PROBE.replace(
        "model = Probe().to(device)", "runner = Runner(Probe().to(device))\n    model = runner.net"
    )
    source = source.replace("model.classifier.parameters()", "runner.net.parameters()")
    result = migrate_source(source, "stochastic", "probe.py")
    assert "runner.to(torch.bfloat16)" not in result.code


def test_a_tree_factory_over_submodules_of_an_argument_that_is_not_called_keeps_the_switch(tmp_path):
    """A factory taking the optimizer's modules from an object the script never calls as a model
    (`build(trainer)` over `trainer.model.parameters()`): which object to cast cannot be told."""
    tree = tmp_path / "proj"
    tree.mkdir()
    (tree / "optim_factory.py").write_text(
        "import torch\n\n\ndef build(trainer, lr):\n    return torch.optim.Adam(trainer.model.parameters(), lr=lr)\n"
    )
    (tree / "train.py").write_text(
        "import os\nimport torch\nimport torch_xla\nfrom optim_factory import build\n\n"
        'os.environ["XLA_USE_BF16"] = "1"\n\n\nclass Trainer:\n    def __init__(self, model):\n'
        "        self.model = model\n\n\ndef main():\n    device = torch_xla.device()\n"
        "    trainer = Trainer(torch.nn.Linear(4, 2).to(device))\n    optimizer = build(trainer, 1e-3)\n"
        "    for _ in range(3):\n        trainer.model(torch.randn(2, 4).to(device)).sum().backward()\n"
        "        optimizer.step()\n"
    )
    changed, diagnostics, outcome = migrate_tree(tmp_path, "proj", "stochastic")
    assert changed == {}, changed
    assert "BFM011" in [d.code for d in outcome.diagnostics if not d.fixed], diagnostics


def test_the_recsys_shape_of_a_tree_factory_over_two_towers(tmp_path):
    """fixtures/trees/submodule_groups: one AdamW over parameter groups of `model.encoder` and
    `model.head`, built in tabular/optim.py; the script casts `net` before the call."""
    shutil.copytree(FIXTURES / "trees" / "submodule_groups", tmp_path / "t", ignore=shutil.ignore_patterns("expected"))
    changed, _, outcome = migrate_tree(tmp_path, "t", "stochastic")
    assert not [d for d in outcome.diagnostics if not d.fixed]
    script = changed["train.py"]
    assert "    net = PriceModel(FIELDS, NUMERIC).to(device)\n    net.to(torch.bfloat16)\n" in script
    assert 'smooth_l1_loss(predicted, floating_to_bf16(batch["log_price"]))' in script
    assert Path("tabular/optim.py").as_posix() not in changed  # stochastic: no master weights


TWO_OPTIMIZERS = (
    LINEAR_PROBE.replace(
        "    optimizer = torch.optim.SGD(model.classifier.parameters(), lr=0.1, momentum=0.9)\n",
        "    opt_a = torch.optim.Adagrad(model.backbone.parameters(), lr=0.05)\n"
        "    opt_b = torch.optim.Adam(model.classifier.parameters(), lr=1e-3)\n",
    )
    .replace("    for p in model.backbone.parameters():\n        p.requires_grad_(False)\n", "")
    .replace("optimizer.step()", "opt_a.step()\n        opt_b.step()")
    .replace("optimizer.zero_grad()", "opt_a.zero_grad()\n        opt_b.zero_grad()")
)


def test_two_optimizers_over_two_submodules_cast_the_model_once_before_the_first():
    result = migrate_source(TWO_OPTIMIZERS, "gpu-compatible", "probe.py")
    assert not result.unfixed, [d.format_text() for d in result.unfixed]
    assert (
        "    model = Probe().to(device)\n    model.to(torch.bfloat16)\n"
        "    opt_a = with_fp32_master_weights(torch.optim.Adagrad)(model.backbone.parameters(), lr=0.05)\n"
        "    opt_b = with_fp32_master_weights(torch.optim.Adam)(model.classifier.parameters(), lr=1e-3)\n"
    ) in result.code
    assert result.code.count(".to(torch.bfloat16)\n") == 1


RESUMED = """import os

import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


class Fit(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(1, 1)

    def forward(self, t):
        return self.net(t)


def train(model, opt, t, y):
    for _ in range(3):
        loss = torch.nn.functional.mse_loss(model(t), y)
        loss.backward()
        opt.step()
        opt.zero_grad()


def main():
    device = torch_xla.device()
    t = torch.linspace(0, 1, 16).unsqueeze(1).to(device)
    y = (2 * t).to(device)
    model = Fit().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, opt, t, y)
    state = model.state_dict()
    model = Fit().to(device)
    model.load_state_dict(state)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    train(model, opt, t, y)
    print(model(t).sum().item())


main()
"""


def test_a_model_name_bound_again_to_a_new_module_gets_its_own_cast():
    """A resume in the same script (``model = Fit().to(device)`` again, loaded, a new optimizer):
    the second module was left f32 (its phase trained in f32 where the legacy run trained in bf16);
    each model the name holds is cast before its own optimizer, in every mode that casts."""
    for mode in ("stochastic", "gpu-compatible"):
        code = migrate_source(RESUMED, mode, "train.py").code
        first, second = code.split("    state = model.state_dict()\n")
        assert first.count("    model.to(torch.bfloat16)\n") == 1
        assert "    model.load_state_dict(state)\n    model.to(torch.bfloat16)\n    opt = " in second
        assert migrate_source(code, mode, "train.py").code == code
