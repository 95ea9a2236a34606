"""A model reached through something else than its own name: the module an ``AveragedModel`` (or DDP)
wraps, ``ema.module``, handed to an evaluation function; a loop variable over a written-out collection
of the model and its EMA copy (a tuple of pairs, a dict's ``.items()``), handed on or called in the loop.
Its calls are the model's: their floating inputs are cast in the modes that cast the model, and its
forward goes under autocast in amp (found by a hunt: the evaluation crashed with "mat1 and mat2 must
have the same dtype" in stochastic / gpu-compatible, and ran in f32 in amp, "0 left to do by hand").
Where the collection is used in a way the codemod does not follow (an indexed call), the casting modes
register the run-time pre-hook and amp reports the forward it cannot wrap (BFM021) and keeps the switch.
"""

from __future__ import annotations

import libcst as cst
import pytest

from bf16_migrate.python import migrate_source

SCRIPT = """import os

os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn
import torch_xla


def score(net, feats):
    with torch.no_grad():
        logits = net(feats)
    return logits.argmax(1).cpu()


device = torch_xla.device()
model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)).to(device)
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.95))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(4):
    feats, labels = torch.rand(12, 6).to(device), torch.randint(0, 3, (12,)).to(device)
    loss = F.cross_entropy(model(feats), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.update_parameters(model)
held_out = torch.rand(12, 6).to(device)
"""

EMA_MODULE = "print(score(ema.module, held_out))\n"
PAIRS = 'for tag, net in (("live", model), ("ema", ema.module)):\n    print(tag, score(net, held_out))\n'
ITEMS = 'for tag, net in {"live": model, "ema": ema.module}.items():\n    print(tag, score(net, held_out))\n'
INLINE = (
    'for tag, net in (("live", model), ("ema", ema)):\n'
    "    with torch.no_grad():\n"
    "        print(tag, net(held_out).argmax(1).cpu())\n"
)
COMPREHENSION = 'nets = {"live": model, "ema": ema.module}\nouts = {tag: net(held_out) for tag, net in nets.items()}\n'

# what every casting migration of SCRIPT changes (stochastic mode)
STOCHASTIC = [
    ('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"'),
    (
        "ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.95))\n",
        "ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.95))\n"
        "ema.to(torch.bfloat16)\nmodel.to(torch.bfloat16)\n",
    ),
    ("model(feats), labels)", "model(feats.to(torch.bfloat16)), labels)"),
]
# the evaluation function's forward, cast / under autocast
SCORE_CAST = [("logits = net(feats)", "logits = net(feats.to(torch.bfloat16))")]
SCORE_AUTOCAST = [
    (
        "        logits = net(feats)\n",
        '        with torch.autocast("xla", dtype=torch.bfloat16):\n            logits = net(feats)\n',
    )
]
AMP = [
    ('\nos.environ["XLA_USE_BF16"] = "1"\n', ""),
    (
        "    loss = F.cross_entropy(model(feats), labels)\n",
        '    with torch.autocast("xla", dtype=torch.bfloat16):\n        loss = F.cross_entropy(model(feats), labels)\n',
    ),
]


def _expected(source: str, edits: list[tuple[str, str]]) -> str:
    """``source`` with each edit made, each ``old`` found exactly once."""
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


def _migrated(tail: str, mode: str) -> str:
    result = migrate_source(SCRIPT + tail, mode, "train.py")
    assert migrate_source(result.code, mode, "train.py").code == result.code  # a second run changes nothing
    cst.parse_module(result.code)
    return result.code


@pytest.mark.parametrize("tail", [EMA_MODULE, PAIRS, ITEMS], ids=["ema.module", "pairs", "items"])
def test_a_model_handed_on_as_ema_module_or_a_loop_variable_has_its_input_cast(tail):
    """``score(ema.module, x)`` alone, or ``score(net, x)`` in a loop over the model and ``ema.module``:
    the input cast is written inside ``score`` (it crashed with mixed dtypes)."""
    assert _migrated(tail, "stochastic") == _expected(SCRIPT + tail, STOCHASTIC + SCORE_CAST)


@pytest.mark.parametrize("tail", [EMA_MODULE, PAIRS, ITEMS], ids=["ema.module", "pairs", "items"])
def test_amp_puts_the_forward_of_a_model_handed_on_as_ema_module_or_a_loop_variable_under_autocast(tail):
    """amp: ``score``'s forward goes under autocast (it ran in f32 where the legacy run was bf16)."""
    assert _migrated(tail, "amp") == _expected(SCRIPT + tail, AMP + SCORE_AUTOCAST)


def test_a_loop_variable_called_in_the_loop_has_its_input_cast():
    expected = _expected(
        SCRIPT + INLINE,
        [*STOCHASTIC, ("net(held_out).argmax", "net(held_out.to(torch.bfloat16)).argmax")],
    )
    assert _migrated(INLINE, "stochastic") == expected


def test_amp_puts_a_loop_variables_call_under_autocast():
    wrapped = (
        "        print(tag, net(held_out).argmax(1).cpu())\n",
        '        with torch.autocast("xla", dtype=torch.bfloat16):\n'
        "            print(tag, net(held_out).argmax(1).cpu())\n",
    )
    assert _migrated(INLINE, "amp") == _expected(SCRIPT + INLINE, [*AMP, wrapped])


@pytest.mark.parametrize("tail", [PAIRS, INLINE], ids=["pairs", "inline"])
def test_gpu_compatible_casts_the_inputs_of_a_loop_variable(tail):
    code = _migrated(tail, "gpu-compatible")
    assert "with_fp32_master_weights(torch.optim.AdamW)" in code and "register_forward_pre_hook" not in code
    assert "logits = net(feats.to(torch.bfloat16))" in code or "net(held_out.to(torch.bfloat16))" in code


def test_a_comprehension_over_a_name_bound_to_a_dict_of_the_models_is_followed():
    stochastic = _migrated(COMPREHENSION, "stochastic")
    assert "outs = {tag: net(held_out.to(torch.bfloat16)) for tag, net in nets.items()}" in stochastic
    assert "register_forward_pre_hook" not in stochastic
    amp = _migrated(COMPREHENSION, "amp")
    assert (
        'with torch.autocast("xla", dtype=torch.bfloat16):\n'
        "    outs = {tag: net(held_out) for tag, net in nets.items()}\n" in amp
    )


INDEXED = "nets = [model, ema.module]\nwith torch.no_grad():\n    print(nets[1](held_out).argmax(1).cpu())\n"


def test_a_model_called_through_an_index_gets_the_run_time_hook_on_it_and_on_the_module_it_wraps():
    """``nets[1](x)`` is not followed: the pre-hook casts at run time. ``ema.module`` runs without ``ema``'s
    hooks (and the AveragedModel copied the model before the model's hook): the wrapped module gets one too."""
    result = migrate_source(SCRIPT + INDEXED, "stochastic", "train.py")
    for module in ("ema", "ema.module", "model"):
        assert f"\n{module}.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)\n" in result.code
    why = {d.message.split("`")[1]: d.message for d in result.diagnostics if d.code == "BFM022"}
    assert "since it is held in `nets`, whose calls the codemod does not follow" in why["model"]
    assert "since it is not called in this file" in why["ema"]
    assert migrate_source(result.code, "stochastic", "train.py").code == result.code
    cst.parse_module(result.code)


@pytest.mark.parametrize(
    "tail",
    [INDEXED, "for net in [model, ema][::-1]:\n    print(net(held_out).argmax(1).cpu())\n"],
    ids=["indexed", "reversed"],
)
def test_amp_reports_a_model_called_where_it_cannot_follow_and_keeps_the_switch(tail):
    result = migrate_source(SCRIPT + tail, "amp", "train.py")
    assert result.code == SCRIPT + tail
    held = [d for d in result.diagnostics if d.code == "BFM021"]
    assert {d.message.split("`")[1] for d in held} == {"model", "ema"}
    assert all("whose calls the codemod does not follow" in d.message and not d.fixed for d in held)
    assert any(d.code == "BFM033" for d in result.diagnostics)


def test_a_loop_not_followed_that_runs_nothing_it_iterates_adds_no_hook_and_keeps_amp_going():
    """``for net in [model, ema] + []: net.eval()`` is not followed, but its body calls none of the modules
    nor hands them on: no pre-hook, and amp migrates."""
    tail = "for net in [model, ema] + []:\n    net.eval()\n"
    stochastic = _migrated(tail, "stochastic")
    assert "register_forward_pre_hook" not in stochastic and "model.to(torch.bfloat16)" in stochastic
    amp = migrate_source(SCRIPT + tail, "amp", "train.py")
    assert "XLA_USE_BF16" not in amp.code and not [d for d in amp.diagnostics if d.code == "BFM021"]
