"""The Python codemod on small sources: every write spelling, the values, the diagnostics."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from bf16_migrate.python import ParseError, migrate_source
from bf16_migrate.rules import MODES

from conftest import FIXTURES, ROOT

TRAIN = """
def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(8, 4).to(device)
    ids = torch.randint(0, 10, (8,)).to(device)
    out = model(x, ids)
    loss = loss_fn(out, ids)
    loss.backward()
    optimizer.step()
"""


def run(source: str, mode: str = "stochastic"):
    result = migrate_source(textwrap.dedent(source), mode, "t.py")
    cst.parse_module(result.code)
    return result


def codes(result):
    return [(d.code, d.fixed) for d in result.diagnostics]


HEADER = "import os\nimport torch\nimport torch_xla\n"


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize(
    "write, renamed",
    [
        ('os.environ["XLA_USE_BF16"] = "1"', 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"'),
        ("os.environ['XLA_DOWNCAST_BF16'] = 'true'", "os.environ['NEURON_RT_STOCHASTIC_ROUNDING_EN'] = '1'"),
        (
            'os.environ.setdefault("XLA_USE_BF16", "1")',
            'os.environ.setdefault("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")',
        ),
        ('os.putenv("XLA_USE_BF16", "1")', 'os.putenv("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1")'),
        ('os.environ.update({"XLA_USE_BF16": "1"})', 'os.environ.update({"NEURON_RT_STOCHASTIC_ROUNDING_EN": "1"})'),
        (
            'os.environ.update(XLA_USE_BF16="1", OMP_NUM_THREADS="2")',
            'os.environ.update(NEURON_RT_STOCHASTIC_ROUNDING_EN="1", OMP_NUM_THREADS="2")',
        ),
        ('os.environ |= {"XLA_USE_BF16": "1"}', 'os.environ |= {"NEURON_RT_STOCHASTIC_ROUNDING_EN": "1"}'),
    ],
)
def test_every_write_spelling_becomes_stochastic_rounding(write, renamed):
    result = run(HEADER + write + "\n" + TRAIN)
    assert renamed in result.code
    assert "XLA_USE_BF16" not in result.code and "XLA_DOWNCAST_BF16" not in result.code
    assert codes(result) == [("BFM001", True)]
    assert result.diagnostics[0].line == 4


@pytest.mark.parametrize(
    "imports, write",
    [
        ("import os as _os\n", '_os.environ["XLA_USE_BF16"] = "1"'),
        ("from os import environ\n", 'environ["XLA_USE_BF16"] = "1"'),
        ("from os import environ as env\n", 'env.update({"XLA_USE_BF16": "1"})'),
    ],
)
def test_import_spellings(imports, write):
    result = run(imports + "import torch\n" + write + "\n" + TRAIN, mode="amp")
    assert "XLA_USE_BF16" not in result.code
    assert 'with torch.autocast("xla", dtype=torch.bfloat16):' in result.code
    assert codes(result) == [("BFM001", True)]


def test_floating_inputs_cast_and_integer_inputs_left_alone():
    result = run(HEADER + 'os.environ["XLA_USE_BF16"] = "1"\n' + TRAIN)
    assert "out = model(x.to(torch.bfloat16), ids)" in result.code
    assert "loss = loss_fn(out, ids)" in result.code
    assert "    model.to(torch.bfloat16)\n    optimizer = torch.optim.AdamW" in result.code


def test_update_with_other_keys_keeps_them_in_non_stochastic_modes():
    src = HEADER + 'os.environ.update({"OMP_NUM_THREADS": "1", "XLA_USE_BF16": "1"})\n' + TRAIN
    result = run(src, mode="gpu-compatible")
    assert 'os.environ.update({"OMP_NUM_THREADS": "1"})' in result.code


def test_update_with_only_legacy_keys_is_removed():
    src = HEADER + 'os.environ.update({"XLA_USE_BF16": "1", "XLA_DOWNCAST_BF16": "1"})\n' + TRAIN
    result = run(src, mode="amp")
    assert "os.environ.update" not in result.code
    assert codes(result) == [("BFM001", True), ("BFM001", True)]


@pytest.mark.parametrize(
    "write, amp",
    [
        ('os.environ |= {"XLA_USE_BF16": "1", "PJRT_DEVICE": "CPU"}\n', 'os.environ |= {"PJRT_DEVICE": "CPU"}\n'),
        ('os.environ |= {"XLA_USE_BF16": "1"}\n', ""),
        ('XLA_ENV = {"XLA_USE_BF16": "1"}\nos.environ.update(XLA_ENV)\n', "XLA_ENV = {}\nos.environ.update(XLA_ENV)\n"),
        (
            'XLA_ENV = dict(XLA_USE_BF16="1", XLA_IR_DEBUG="0")\nos.environ.update(XLA_ENV)\n',
            'XLA_ENV = dict(XLA_IR_DEBUG="0")\nos.environ.update(XLA_ENV)\n',
        ),
    ],
)
def test_a_merge_and_a_mapping_held_in_a_name_are_updates(write, amp):
    """``os.environ |= {...}`` (PEP 584) and ``os.environ.update(XLA_ENV)`` of a mapping bound once
    and read only there: their keys are written as an ``update({...})``'s (they were refused, BFM042:
    bench/unseen/hunt9 sac_tanh, vq_ema). The held mapping loses the key and keeps the update."""
    result = run(HEADER + write + TRAIN, mode="amp")
    assert "XLA_USE_BF16" not in result.code
    assert result.code.startswith(HEADER + amp + "\n")
    assert codes(result) == [("BFM001", True)]
    assert run(result.code, mode="amp").code == result.code
    stochastic = run(HEADER + write + TRAIN)
    assert "NEURON_RT_STOCHASTIC_ROUNDING_EN" in stochastic.code and "XLA_USE_BF16" not in stochastic.code


def test_a_mapping_read_elsewhere_too_is_not_an_update():
    """``XLA_ENV`` also handed to a child process: dropping its key would change that process, so
    the name is reported (BFM042) and the switch kept."""
    src = HEADER + 'XLA_ENV = {"XLA_USE_BF16": "1"}\nos.environ.update(XLA_ENV)\nprint(XLA_ENV)\n' + TRAIN
    result = run(src, mode="amp")
    assert result.code == src
    assert ("BFM042", False) in codes(result)


def test_an_env_entry_of_a_nested_config_literal_is_an_update():
    """``CFG = {"env": {...}, "optim": {...}}`` then ``os.environ.update(CFG["env"])``: the run's config as
    one nested literal (bench/unseen/hunt17 seg_bincount, refused before, BFM042). The entry loses the key,
    the config its other entries as they are, also when the config is handed on whole (``main(CFG)``); a
    second read of an ``"env"`` entry anywhere in the file keeps the switch."""
    config = 'CFG = {"env": {"XLA_USE_BF16": "1", "PJRT_DEVICE": "TPU"}, "optim": {"lr": 0.1}}\n'
    src = HEADER + config + 'os.environ.update(CFG["env"])\nprint(CFG["optim"]["lr"], CFG)\n' + TRAIN
    result = run(src, mode="amp")
    assert 'CFG = {"env": {"PJRT_DEVICE": "TPU"}, "optim": {"lr": 0.1}}\nos.environ.update(CFG["env"])\n' in result.code
    assert codes(result) == [("BFM001", True)] and "XLA_USE_BF16" not in result.code
    assert run(result.code, mode="amp").code == result.code
    stochastic = run(src).code
    assert '"env": {"NEURON_RT_STOCHASTIC_ROUNDING_EN": "1", "PJRT_DEVICE": "TPU"}' in stochastic
    read_again = src.replace('print(CFG["optim"]["lr"], CFG)', 'child_env = dict(CFG["env"])')
    kept = run(read_again, mode="amp")
    assert kept.code == read_again and ("BFM042", False) in codes(kept)


def test_value_zero_is_removed_and_nothing_added():
    src = HEADER + 'os.environ["XLA_USE_BF16"] = "0"\n' + TRAIN
    result = run(src)
    assert "XLA_USE_BF16" not in result.code
    assert "bfloat16" not in result.code and "NEURON_RT" not in result.code
    assert codes(result) == [("BFM002", True)]


@pytest.mark.parametrize("variable", ["XLA_USE_FP16", "XLA_DOWNCAST_FP16"])
def test_fp16_variables_removed_with_diagnostic(variable):
    src = HEADER + f'os.environ["{variable}"] = "1"\n' + TRAIN
    result = run(src)
    assert variable not in result.code and "bfloat16" not in result.code
    assert codes(result) == [("BFM003", True)]
    assert "since torch-xla 2.5" in result.diagnostics[0].message


@pytest.mark.parametrize("mode", ["stochastic", "amp"])
def test_an_fp16_variable_the_script_reads_is_kept(mode):
    """The write of an FP16 variable did nothing in torch-xla, but a read of it in the script decided
    Adam's eps (1e-4 under it, 1e-8 without): removing the write would change the optimisation (a
    hunt's autoencoder). It is kept and the finding names the read's line and the value it saw."""
    src = (
        HEADER
        + 'os.environ.setdefault("XLA_DOWNCAST_FP16", "1")\n'
        + ('EPS = 1e-4 if os.environ.get("XLA_DOWNCAST_FP16") == "1" else 1e-8\n')
        + TRAIN
    )
    result = migrate_source(src, mode, "train.py")
    assert result.code == src
    [kept] = [d for d in result.diagnostics if d.code == "BFM003"]
    assert not kept.fixed and "reads it at line" in kept.message and '("1")' in kept.message


F64_ACCUMULATOR = """import os
import torch
import torch.nn.functional as F
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(8, 1).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    total = torch.zeros((), dtype=torch.float64, device=device)
    host = torch.zeros((), dtype=torch.float64)
    for _ in range(3):
        x = torch.randn(32, 8).to(device)
        loss = F.mse_loss(model(x).squeeze(-1), x.sum(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.detach().double()
        host += loss.item()
    print(total.item(), host.double().item())


main()
"""


@pytest.mark.parametrize(
    ("mode", "dtype", "upcast"),
    [("stochastic", "torch.bfloat16", ".to(torch.bfloat16)"), ("amp", "torch.float32", ".float()")],
)
def test_float64_named_on_the_device_under_use_bf16_takes_the_modes_precision(mode, dtype, upcast):
    """Under XLA_USE_BF16 a float64 on the device was bf16 (only XLA_DOWNCAST_BF16 kept it f32): an
    accumulator made there with ``dtype=torch.float64`` and fed ``loss.detach().double()`` summed in
    bf16; left as written it is a real f64 on the device after the migration (a hunt's). It takes the
    mode's precision (amp: float32, autocast casts no float64); the host's float64 is left."""
    result = migrate_source(F64_ACCUMULATOR, mode, "train.py")
    code = result.code
    assert f"    total = torch.zeros((), dtype={dtype}, device=device)\n" in code
    assert f"        total += loss.detach(){upcast}\n" in code
    assert "    host = torch.zeros((), dtype=torch.float64)\n" in code and "host.double().item()" in code
    assert [d.line for d in result.diagnostics if d.code == "BFM048"] == [13, 21]
    cst.parse_module(code)
    assert migrate_source(code, mode, "train.py").code == code


def test_an_fp16_variable_named_where_the_codemod_cannot_rewrite_asks_for_no_code():
    """BFM042 for an fp16 variable (an ``env=`` dict of a task runner's call): removing it is the whole change,
    as it did nothing; the bf16 advice ("add the explicit code for --mode ...") would cast an fp32 run."""
    src = HEADER + 'RUN_ENV = {"XLA_USE_FP16": "1"}\n' + TRAIN
    [finding] = [d for d in migrate_source(src, "stochastic", "train.py").diagnostics if d.code == "BFM042"]
    assert "has done nothing since torch-xla 2.5" in finding.message and "add nothing" in finding.message
    assert "--mode" not in finding.message


def test_computed_value_is_reported_and_left():
    src = HEADER + 'os.environ["XLA_USE_BF16"] = os.environ.get("USE_BF16", "0")\n' + TRAIN
    result = run(src)
    assert result.code == textwrap.dedent(src)
    assert codes(result) == [("BFM040", False)]
    assert (result.diagnostics[0].line, result.diagnostics[0].col) == (4, 12)


def test_write_in_a_loop_is_reported_and_left():
    src = HEADER + 'for name in names:\n    os.environ["XLA_USE_BF16"] = "1"\n' + TRAIN
    result = run(src)
    assert result.code == src
    assert codes(result) == [("BFM041", False)]


def test_main_guard_is_not_a_condition():
    src = HEADER + TRAIN + '\nif __name__ == "__main__":\n    os.environ["XLA_USE_BF16"] = "1"\n    main()\n'
    result = run(src, mode="amp")
    assert codes(result) == [("BFM001", True)]
    assert 'if __name__ == "__main__":\n    main()\n' in result.code


def test_read_is_reported_in_amp_mode_where_its_meaning_is_unclear():
    src = HEADER + 'os.environ["XLA_USE_BF16"] = "1"\neps = 1e-4 if os.environ.get("XLA_USE_BF16") else 1e-8\n' + TRAIN
    result = run(src, mode="amp")
    assert ("BFM050", False) in codes(result)
    assert 'os.environ.get("XLA_USE_BF16")' in result.code


def test_read_in_a_file_that_never_sets_the_variable_is_reported():
    result = run(HEADER + 'dtype = torch.bfloat16 if os.getenv("XLA_USE_BF16") else torch.float32\n')
    assert codes(result) == [("BFM050", False)]


def test_no_optimizer_leaves_the_switch_and_reports():
    src = HEADER + 'os.environ["XLA_USE_BF16"] = "1"\nfrom mylib import train\ntrain()\n'
    result = run(src)
    assert result.code == src
    assert codes(result) == [("BFM010", False)]


def test_unknown_input_dtype_is_cast_at_run_time_not_guessed():
    src = (
        HEADER
        + 'os.environ["XLA_USE_BF16"] = "1"\n'
        + textwrap.dedent("""
    def main(loader):
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for batch in loader:
            out = model(batch)
    """)
    )
    result = run(src)
    assert "model(batch)" in result.code  # no static cast guessed at the call
    assert (
        "    model.to(torch.bfloat16)\n"
        "    model.register_forward_pre_hook(bf16_inputs_hook, "
        "with_kwargs=True)\n    optimizer = " in result.code
    )
    assert (
        "def floating_to_bf16(batch):" in result.code and "def bf16_inputs_hook(module, args, kwargs):" in result.code
    )
    assert ("BFM022", True) in codes(result)


def test_a_floating_input_of_a_hooked_model_is_cast_in_its_move():
    """The pre-hook casts on the device; a floating input whose move the code shows (a name last bound
    by ``w.float().to(device)``, or the move written in the call) is cast in the move instead, as the
    switch converted it there: an ``nn.EmbeddingBag`` falling back to the CPU made the hook's cast a
    graph of its own, compiled again for every batch shape (bench/unseen/hunt10 counts_compose: 2 more
    compilations a step, verify's graph FAIL). Inputs of unknown dtype stay the hook's."""
    src = (
        HEADER
        + 'os.environ["XLA_USE_BF16"] = "1"\n'
        + textwrap.dedent("""
    def main(loader, device):
        model = Net().to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for ids, w in loader:
            ids = ids.to(device)
            w = w.float().to(device)
            out = model(ids, w)
        out = model(ids, w.float().to(device))
    """)
    )
    result = run(src)
    assert "        w = w.float().to(device, dtype=torch.bfloat16)\n" in result.code
    assert "    out = model(ids, w.float().to(device, dtype=torch.bfloat16))\n" in result.code
    assert "        ids = ids.to(device)\n" in result.code
    assert "model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)" in result.code
    assert run(result.code).code == result.code


def test_runtime_helper_casts_floating_leaves_integer_tensors():
    """The emitted helper, executed with torch: floating tensors in nested containers become
    bf16, integer ones and non-tensors are untouched, namedtuples keep their type."""
    torch = pytest.importorskip("torch")
    import collections

    from bf16_migrate.python.snippets import BF16_INPUTS_SOURCE

    namespace = {"torch": torch}
    exec(compile(BF16_INPUTS_SOURCE, "<helper>", "exec"), namespace)
    Pair = collections.namedtuple("Pair", "x y")
    batch = {"a": [torch.zeros(2), torch.zeros(2, dtype=torch.int64)], "b": Pair(torch.ones(1, dtype=torch.float64), 3)}
    out = namespace["floating_to_bf16"](batch)
    assert out["a"][0].dtype == torch.bfloat16 and out["a"][1].dtype == torch.int64
    assert isinstance(out["b"], Pair) and out["b"].x.dtype == torch.bfloat16 and out["b"].y == 3
    args, kwargs = namespace["bf16_inputs_hook"](None, (torch.zeros(1),), {"mask": torch.ones(1, dtype=torch.bool)})
    assert args[0].dtype == torch.bfloat16 and kwargs["mask"].dtype == torch.bool


def test_existing_stochastic_rounding_setting_is_not_duplicated():
    src = HEADER + 'os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "0"\nos.environ["XLA_USE_BF16"] = "1"\n' + TRAIN
    result = run(src)
    assert result.code.count("NEURON_RT_STOCHASTIC_ROUNDING_EN") == 1
    assert "own NEURON_RT_STOCHASTIC_ROUNDING_EN setting is kept" in result.diagnostics[0].message


def test_removed_write_keeps_its_comment_and_empty_block_gets_pass():
    # setup() runs before main(): the write was in force (a setup() nothing calls is BFM049)
    src = (
        HEADER + TRAIN + '\ndef setup():\n    # bf16 on the device\n    os.environ["XLA_USE_BF16"] = "1"\n'
        '\n\nif __name__ == "__main__":\n    setup()\n    main()\n'
    )
    result = run(src, mode="amp")
    assert "def setup():\n    # bf16 on the device\n    pass\n" in result.code
    assert codes(result) == [("BFM001", True)]


def test_amp_refuses_region_with_backward_inside():
    src = (
        HEADER
        + 'os.environ["XLA_USE_BF16"] = "1"\n'
        + textwrap.dedent("""
    def main():
        model = Net()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(2, 2)
        out = model(x)
        out.sum().backward()
        loss = loss_fn(out, x)
    """)
    )
    result = run(src, mode="amp")
    assert ("BFM030", False) in codes(result)
    assert "autocast" not in result.code


ONE_STATEMENT_STEP = """
def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in batches(device):
        optimizer.zero_grad()
        STEP
        optimizer.step()
"""


@pytest.mark.parametrize(
    "step, loss, backward",
    [
        ("F.nll_loss(model(x), y).backward()", "loss = F.nll_loss(model(x), y)", "loss.backward()"),
        (
            "(F.mse_loss(model(x), y) + 0.1 * model.penalty()).backward(retain_graph=True)",
            "loss = F.mse_loss(model(x), y) + 0.1 * model.penalty()",
            "loss.backward(retain_graph=True)",
        ),
    ],
)
def test_amp_splits_a_loss_backpropagated_in_the_statement_that_computes_it(step, loss, backward):
    """``F.nll_loss(model(x), y).backward()``: the loss is bound to a name under autocast and its
    backward runs after the block (no backward under autocast: PyTorch's torch.amp documentation);
    the switch goes. A second run changes nothing."""
    src = HEADER + 'os.environ["XLA_USE_BF16"] = "1"\n' + ONE_STATEMENT_STEP.replace("STEP", step)
    result = run(src, mode="amp")
    region = f'        with torch.autocast("xla", dtype=torch.bfloat16):\n            {loss}\n        {backward}\n'
    assert region in result.code
    assert ("BFM001", True) in codes(result) and all(fixed for _, fixed in codes(result))  # BFM023: `x` unknown
    assert run(result.code, mode="amp").code == result.code


BRANCHED_LOSS = """
def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step, (xa, xb) in enumerate(pairs(device)):
        za, zb = model(xa), model(xb)
        if step < 100:
            loss = F.mse_loss(za, zb)
        else:
            loss = pair_loss(za, zb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_amp_puts_a_loss_chosen_by_an_if_under_the_autocast_of_its_forward_pass():
    """A loss switched after a warm-up (``if step < warmup: loss = ... else: loss = ...``) after the forward pass:
    the ``if`` binds the loss ``backward()`` runs on, so it goes under autocast with the forward pass (left out, the
    loss ran on the bf16 outputs outside autocast, where amp computes losses in f32)."""
    result = run(HEADER + 'os.environ["XLA_USE_BF16"] = "1"\n' + BRANCHED_LOSS, mode="amp")
    region = """        with torch.autocast("xla", dtype=torch.bfloat16):
            za, zb = model(xa), model(xb)
            if step < 100:
                loss = F.mse_loss(za, zb)
            else:
                loss = pair_loss(za, zb)
        optimizer.zero_grad()
"""
    assert region in result.code, result.code
    assert run(result.code, mode="amp").code == result.code


def test_amp_splits_a_loss_backpropagated_in_the_statement_after_the_forward_pass():
    """``out = model(x)`` then ``F.nll_loss(out, y).backward()`` (a Fisher estimate's loop): the forward pass and the
    loss go under autocast, the backward after the block (the switch was kept, BFM030)."""
    step = "out = model(x)\n        F.nll_loss(F.log_softmax(out, 1), y).backward()"
    result = run(HEADER + 'os.environ["XLA_USE_BF16"] = "1"\n' + ONE_STATEMENT_STEP.replace("STEP", step), mode="amp")
    region = """        with torch.autocast("xla", dtype=torch.bfloat16):
            out = model(x)
            loss = F.nll_loss(F.log_softmax(out, 1), y)
        loss.backward()
"""
    assert region in result.code, result.code
    assert all(fixed for _, fixed in codes(result))


def test_amp_binds_the_split_loss_to_a_name_the_function_does_not_use():
    """``loss`` already names something in the function (a running total): the split loss takes
    another name, so the total is not overwritten."""
    step = "F.nll_loss(model(x), y).backward()\n        loss = loss + 1"
    src = HEADER + 'os.environ["XLA_USE_BF16"] = "1"\n' + ONE_STATEMENT_STEP.replace("STEP", step)
    code = run(src, mode="amp").code
    assert "            amp_loss = F.nll_loss(model(x), y)\n        amp_loss.backward()\n" in code


FORWARD_HELPER = """
def forward(model, batch):
    x, y = batch
    return {"logits": model(x), "y": y}


def accuracy(model, batch):
    x, y = batch
    logits = model(x)
    return (logits.argmax(1) == y).float().mean()


def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for batch in batches(device):
        out = forward(model, batch)
        loss = compute_loss(out)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(accuracy(model, next(batches(device))).item())
"""


def test_amp_puts_a_forward_helpers_call_and_the_loss_computed_from_it_under_autocast():
    """A function that returns the model's output as it is (``return {"logits": model(x), "y": y}``) and a loss
    computed where it is called (``loss = compute_loss(out)``): the call and the loss go under autocast there;
    wrapping the function's body alone left the loss outside autocast, in bf16 on the bf16 logits where amp
    computes it in f32. A function returning a value computed from the output (an accuracy) keeps its own
    region. A second run changes nothing."""
    result = run(HEADER + 'os.environ["XLA_USE_BF16"] = "1"\n' + FORWARD_HELPER, mode="amp")
    region = """        with torch.autocast("xla", dtype=torch.bfloat16):
            out = forward(model, batch)
            loss = compute_loss(out)
        optimizer.zero_grad()
"""
    assert region in result.code, result.code
    assert '    return {"logits": model(x), "y": y}' in result.code  # not wrapped again in its function
    assert '    with torch.autocast("xla", dtype=torch.bfloat16):\n        logits = model(x)\n' in result.code
    assert "XLA_USE_BF16" not in result.code
    assert run(result.code, mode="amp").code == result.code


def test_amp_keeps_the_region_of_a_forward_helper_that_steps():
    """A function that runs the forward pass and steps (a whole training loop) is no forward helper: its
    call is not wrapped, its own forward pass and loss are."""
    helper = FORWARD_HELPER.replace(
        '    return {"logits": model(x), "y": y}',
        "    out = model(x)\n    F.nll_loss(out, y).backward()\n    return out",
    )
    result = run(HEADER + 'os.environ["XLA_USE_BF16"] = "1"\n' + helper, mode="amp")
    assert "            out = forward(model, batch)" not in result.code, result.code
    assert '    with torch.autocast("xla", dtype=torch.bfloat16):\n        out = model(x)\n' in result.code


METRIC_AFTER_STEP = """
def cosine(a, b):
    return (a / a.norm(dim=1, keepdim=True)) @ (b / b.norm(dim=1, keepdim=True)).T


def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in batches(device):
        pred = model(x)
        loss = (pred - y).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        sim = cosine(pred.detach(), y).diagonal().mean()
        gap = (pred.detach() - y).abs().mean()
        print(sim.item(), gap.item())
"""


def test_amp_puts_a_matrix_product_with_the_regions_output_after_the_step_under_autocast():
    """``sim = cosine(pred.detach(), y)`` after the step: the region's bf16 output meets the f32 target in a matrix
    product (in a function of the file) outside autocast, f32 on the XLA device and an error in eager, where the
    legacy run's operands were both bf16 (a hunt's metric): the statement gets an autocast block of its own. One
    computing no product (an absolute error) stays as it is."""
    result = run(HEADER + 'os.environ["XLA_USE_BF16"] = "1"\n' + METRIC_AFTER_STEP, mode="amp")
    region = """        with torch.autocast("xla", dtype=torch.bfloat16):
            sim = cosine(pred.detach(), y).diagonal().mean()
        gap = (pred.detach() - y).abs().mean()
"""
    assert region in result.code, result.code
    assert run(result.code, mode="amp").code == result.code


def test_gpu_compatible_keeps_the_switch_of_an_optimizer_without_master_weights():
    """An optimizer class that is neither torch.optim's nor an Optimizer subclass the codemod
    knows (here: of unknown origin) cannot take FP32 master weights: removing the switch would
    update bf16 weights in bf16, so it stays, and nothing else changes (BFM017)."""
    src = HEADER + 'os.environ["XLA_USE_BF16"] = "1"\n' + TRAIN.replace("torch.optim.AdamW", "MyLamb")
    result = run(src, mode="gpu-compatible")
    assert codes(result) == [("BFM017", False)]
    assert result.code == src


def test_gpu_compatible_wraps_stock_optimizer_and_emits_helper_once():
    result = run(HEADER + 'os.environ["XLA_USE_BF16"] = "1"\n' + TRAIN, mode="gpu-compatible")
    assert "optimizer = with_fp32_master_weights(torch.optim.AdamW)(model.parameters(), lr=1e-3)" in result.code
    assert result.code.count("def with_fp32_master_weights(") == 1
    assert "NEURON_RT_STOCHASTIC_ROUNDING_EN" not in result.code


def test_loss_accumulator_made_float32():
    src = (
        HEADER
        + 'os.environ["XLA_USE_BF16"] = "1"\n'
        + TRAIN
        + "    total = torch.zeros(1, device=device)\n    total += loss.detach()\n"
    )
    result = run(src)
    assert "total = torch.zeros(1, device=device, dtype=torch.float32)" in result.code


def test_import_torch_added_when_missing():
    src = 'import os\nimport torch.nn as nn\nos.environ["XLA_USE_BF16"] = "1"\n' + TRAIN
    result = run(src)
    assert "\nimport torch\n" in result.code or result.code.startswith("import torch\n")


def test_parse_error_names_file_and_line():
    with pytest.raises(ParseError, match=r"^bad\.py:2:"):
        migrate_source("x = 1\ndef (:\n", "stochastic", "bad.py")


def test_unknown_mode_rejected():
    with pytest.raises(ValueError):
        migrate_source("x = 1\n", "fp8", "t.py")


def test_files_without_legacy_variables_unchanged():
    result = run(TRAIN)
    assert result.code == textwrap.dedent(TRAIN) and result.diagnostics == []


def test_switch_set_by_launcher_migrates_script_that_never_names_it():
    result = migrate_source(HEADER + TRAIN, "stochastic", "t.py", launched_with={"XLA_USE_BF16": "1"})
    assert "model.to(torch.bfloat16)" in result.code and "x.to(torch.bfloat16)" in result.code
    assert "NEURON_RT_STOCHASTIC_ROUNDING_EN" not in result.code  # the launcher's carrier gets it
    assert [(d.code, d.fixed, d.line) for d in result.diagnostics] == [("BFM001", True, 1)]
    off = migrate_source(HEADER + TRAIN, "stochastic", "t.py", launched_with={"XLA_USE_BF16": "0"})
    assert off.code == HEADER + TRAIN and off.diagnostics == []


@pytest.mark.parametrize("mode", MODES)
def test_launcher_setting_on_an_already_migrated_script_adds_nothing(mode):
    once = migrate_source(HEADER + TRAIN, mode, "t.py", launched_with={"XLA_USE_BF16": "1"})
    twice = migrate_source(once.code, mode, "t.py", launched_with={"XLA_USE_BF16": "1"})
    assert twice.code == once.code
    # it says why nothing was added (the launcher's entry may then go: the script carries the change)
    assert [(d.code, d.fixed) for d in twice.diagnostics] == [("BFM013", True)]
    assert "already has the explicit code" in twice.diagnostics[0].message


ARITHMETIC_LOSS = """
os.environ["XLA_USE_BF16"] = "1"

def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(10):
        x = torch.randn(8, 4).to(device)
        y, w = torch.randn(8, 1).to(device), torch.rand(8, 1).to(device)
        ids = torch.randint(0, 10, (8,)).to(device)
        scale = 0.5
        pred = model(x)
        err = pred - y
        loss = (w * err ** 2).mean() * scale + (pred * ids).mean()
        loss.backward()
        optimizer.step()
        report = pred - y_eval
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible"])
def test_a_loss_written_as_arithmetic_gets_its_floating_operands_cast(mode):
    """``loss = (w * (pred - y) ** 2).mean()``: the floating tensors the output meets are cast as
    a loss call's target is (left f32 they would promote the loss to f32); the output followed
    through ``err``; integer tensors and Python numbers left; nothing after backward."""
    code = run(HEADER + ARITHMETIC_LOSS, mode).code
    assert "err = pred - y.to(torch.bfloat16)" in code
    assert "loss = (w.to(torch.bfloat16) * err ** 2).mean() * scale + (pred * ids).mean()" in code
    assert "report = pred - y_eval" in code
    assert run(code, mode).code == code  # a second run changes nothing


def test_amp_leaves_an_arithmetic_loss_to_autocast():
    code = run(HEADER + ARITHMETIC_LOSS, "amp").code
    assert "y.to(torch.bfloat16)" not in code and "w.to(torch.bfloat16)" not in code


ENCODER_DECODER = """import os
import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def main():
    device = torch_xla.device()
    enc, dec = torch.nn.Linear(4, 8).to(device), torch.nn.Linear(8, 4).to(device)
    opt = torch.optim.Adam(list(enc.parameters()) + list(dec.parameters()), lr=1e-3)
    for _ in range(3):
        x = torch.randn(2, 4).to(device)
        loss = dec(enc(x)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


main()
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible"])
def test_an_optimizer_over_several_models_casts_each_before_it(mode):
    """``Adam(list(enc.parameters()) + list(dec.parameters()))``: both models were bf16 on the device
    under the switch; each is cast before the optimizer (re-parsed, idempotent). A module made by a
    call among them cannot be named: the switch is kept (BFM011)."""
    result = migrate_source(ENCODER_DECODER, mode, "train.py")
    assert "    enc.to(torch.bfloat16)\n    dec.to(torch.bfloat16)\n" in result.code
    assert result.code.index("dec.to(torch.bfloat16)") < result.code.index("opt = ")
    assert not result.unfixed, [d.format_text() for d in result.unfixed]
    assert migrate_source(result.code, mode, "train.py").code == result.code
    unnamed = ENCODER_DECODER.replace("list(dec.parameters())", "list(make_head().parameters())")
    kept = migrate_source(unnamed, mode, "train.py")
    assert kept.code == unnamed and [d.code for d in kept.unfixed] == ["BFM131", "BFM011"]  # the switch kept, named


def test_a_model_run_by_functional_call_is_called_in_the_file():
    """``torch.func.functional_call(model, params, (x,))`` runs ``model``'s forward pass, here and in a
    function of the file handed the model (MAML's inner loop): amp puts both under autocast with their
    losses, and the inputs the pre-hook is told of are the tuple's (amp refused it before: "`model` is
    never called in this file", bench/unseen/hunt10 maml_argparse)."""
    src = HEADER + textwrap.dedent("""
    from torch.func import functional_call
    os.environ["XLA_USE_BF16"] = "1"


    def adapt(model, params, x, y):
        pred = functional_call(model, params, (x,))
        loss = torch.nn.functional.mse_loss(pred, y)
        grads = torch.autograd.grad(loss, list(params.values()), create_graph=True)
        return {n: p - 0.1 * g for (n, p), g in zip(params.items(), grads)}


    def main(loader, device):
        model = torch.nn.Linear(1, 1).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for x, y in loader:
            fast = adapt(model, dict(model.named_parameters()), x, y)
            q = functional_call(model, fast, (x,))
            loss = torch.nn.functional.mse_loss(q, y)
            loss.backward()
            opt.step()
    """)
    result = run(src, "amp")
    assert ("BFM021", False) not in codes(result) and ("BFM033", False) not in codes(result)
    assert (
        '    with torch.autocast("xla", dtype=torch.bfloat16):\n'
        "        pred = functional_call(model, params, (x,))\n"
        "        loss = torch.nn.functional.mse_loss(pred, y)\n"
        "    grads = " in result.code
    )
    assert (
        '        with torch.autocast("xla", dtype=torch.bfloat16):\n'
        "            q = functional_call(model, fast, (x,))\n"
        "            loss = torch.nn.functional.mse_loss(q, y)\n"
        "        loss.backward()\n" in result.code
    )
    finding = next(d for d in result.diagnostics if d.code == "BFM023")
    assert "`x`" in finding.message and "`params`" not in finding.message and "`model`, " not in finding.message
    assert run(result.code, "amp").code == result.code


def test_a_model_a_class_of_the_file_keeps_is_called_where_the_class_calls_it():
    """``RangeTest(model, opt)`` whose ``__init__`` keeps ``self.model, self.opt = model, opt`` and
    whose ``run`` calls ``self.model(x)``: the model's forward pass is there, which amp puts under
    autocast with its loss (refused before as never called: bench/unseen/hunt10 lrfind_actions)."""
    src = HEADER + textwrap.dedent("""
    os.environ["XLA_USE_BF16"] = "1"


    class RangeTest:
        def __init__(self, model, opt):
            self.model, self.opt = model, opt

        def run(self, batches):
            for x, y in batches:
                loss = torch.nn.functional.cross_entropy(self.model(x), y)
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()


    def main(batches, device):
        model = torch.nn.Linear(4, 3).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        RangeTest(model, opt).run(batches)
    """)
    result = run(src, "amp")
    assert ("BFM021", False) not in codes(result)
    assert (
        '            with torch.autocast("xla", dtype=torch.bfloat16):\n'
        "                loss = torch.nn.functional.cross_entropy(self.model(x), y)\n" in result.code
    )
    assert run(result.code, "amp").code == result.code
    kept_elsewhere = src.replace("self.model, self.opt = model, opt", "self.net, self.opt = model, opt")
    assert ("BFM021", False) in codes(run(kept_elsewhere, "amp"))


def test_a_device_handed_to_a_models_method_is_no_tensor():
    """``flow.sample(2048, device)``, a method of the model run without its pre-hook: its floating
    arguments are cast, the device is not (it was wrapped in ``floating_to_bf16(device)``: a hunt's
    normalising flow)."""
    src = HEADER + textwrap.dedent("""
    os.environ["XLA_USE_BF16"] = "1"


    def main(loader):
        device = torch_xla.device()
        model = Net().to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for x in loader:
            loss = model(x.to(device)).mean()
            loss.backward()
            optimizer.step()
        z = model.sample(16, device, torch.randn(4).to(device))
    """)
    result = run(src)
    assert "    z = model.sample(16, device, torch.randn(4).to(device).to(torch.bfloat16))\n" in result.code


SHADOW = """import os
import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(8, 4).to(device)
    shadow = {n: p.detach().clone() for n, p in model.named_parameters()}
    initial = model.state_dict()
    count = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(2, 8).to(device)).sum()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for n, p in model.named_parameters():
                shadow[n].mul_(0.9).add_(p, alpha=0.1)
    print(count, initial["weight"].sum().item())


def on_host():
    model = torch.nn.Linear(8, 4)
    kept = [p.detach().clone() for p in model.parameters()]
    model.to(torch_xla.device())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return kept, opt


main()
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible"])
def test_copies_of_the_weights_on_the_device_come_after_the_cast(mode):
    """A copy of the model's weights made on the device before the optimizer (an EMA's dict of
    ``p.detach().clone()``, a state dict kept) was bf16 under the switch: the cast goes before it, or
    the copy and all it computes stay f32 (verify's trace named the EMA update's line, BFM203). A count
    of the parameters is no copy; a copy on the host, before the model moves, was f32 there."""
    code = migrate_source(SHADOW, mode, "train.py").code
    assert (
        "    model = torch.nn.Linear(8, 4).to(device)\n    model.to(torch.bfloat16)\n"
        "    shadow = {n: p.detach().clone() for n, p in model.named_parameters()}\n"
    ) in code
    assert "    kept = [p.detach().clone() for p in model.parameters()]\n    model.to(torch_xla.device())\n" in code
    assert "    model.to(torch_xla.device())\n    model.to(torch.bfloat16)\n" in code
    assert migrate_source(code, mode, "train.py").code == code


EMA_CLASS = """import os
import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


class EMA:
    def __init__(self, model, decay=0.99):
        self.decay = decay
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}


class Meter:
    def __init__(self, model):
        self.size = sum(p.numel() for p in model.parameters())


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(8, 4).to(device)
    meter = Meter(model)
    ema = EMA(model, decay=0.9)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(2, 8).to(device)).sum()
    loss.backward()
    opt.step()
    print(meter.size, len(ema.shadow))


main()
"""


def test_a_class_of_the_file_that_copies_the_weights_comes_after_the_cast():
    """``ema = EMA(model)`` whose ``__init__`` keeps ``state_dict()`` clones: the copy was bf16 under the
    switch, so the cast goes before the call; a class that only counts the parameters does not move it."""
    code = migrate_source(EMA_CLASS, "stochastic", "train.py").code
    assert "    meter = Meter(model)\n    model.to(torch.bfloat16)\n    ema = EMA(model, decay=0.9)\n" in code
    assert migrate_source(code, "stochastic", "train.py").code == code


def test_optimizers_built_in_a_comprehension_over_parts_keep_the_switch():
    """``{name: Adam(part.parameters()) for name, part in parts.items()}``: ``part`` is the
    comprehension's own variable; a cast or an input hook on it before the comprehension raised
    NameError (found by a hunt). The switch stays, BFM011 names the line."""
    source = (
        "import os\nimport torch\nimport torch_xla\nos.environ['XLA_USE_BF16'] = '1'\n"
        "device = torch_xla.device()\n"
        "parts = torch.nn.ModuleDict({'enc': torch.nn.Linear(4, 4), 'head': torch.nn.Linear(4, 2)}).to(device)\n"
        "opts = {name: torch.optim.Adam(part.parameters()) for name, part in parts.items()}\n"
        "x = torch.randn(3, 4).to(device)\n"
        "parts['head'](parts['enc'](x)).sum().backward()\n"
        "for opt in opts.values():\n    opt.step()\n"
    )
    for mode in ("stochastic", "gpu-compatible", "amp"):
        result = migrate_source(source, mode, "train.py")
        assert result.code == source
        assert not [d for d in result.diagnostics if d.code == "BFM021"]  # "never called" would be false
        found = [d for d in result.diagnostics if d.code == "BFM011"]
        assert found and "comprehension from `part` (line 7)" in found[0].message


HYBRID = """import os
import torch
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


class Tables(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.user = torch.nn.Embedding(100, 8, sparse=True)

    def forward(self, ids):
        return self.user(ids)


def main():
    device = torch_xla.device()
    emb = Tables()
    tower = torch.nn.Linear(8, 1).to(device)
    emb_opt = torch.optim.SparseAdam(emb.parameters(), lr=0.01)
    opt = torch.optim.Adam(tower.parameters(), lr=0.01)
    ids = torch.randint(0, 100, (4,))
    loss = tower(emb(ids).to(device)).sum()
    loss.backward()
    opt.step()
    emb_opt.step()
    print(emb.user.weight[ids[0]].norm().item())


main()
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible"])
def test_a_module_that_stays_on_the_host_is_not_cast(mode):
    """An embedding table kept on the CPU (never moved, handed to nothing, in a function that moves the
    tower to the device): the switch acts on XLA tensors only, so its weights and SparseAdam's state
    stayed float32 on the host; cast, they became bf16 there (found by a hunt, verify PASSed it). The
    tower is cast; the table and its optimizer are left as written."""
    code = migrate_source(HYBRID, mode, "train.py").code
    assert "emb.to(torch.bfloat16)" not in code and "emb.register_forward_pre_hook" not in code
    assert "tower.to(torch.bfloat16)" in code
    assert "emb_opt = torch.optim.SparseAdam(emb.parameters(), lr=0.01)" in code
    assert migrate_source(code, mode, "train.py").code == code
    # a class that moves itself (`self.to(...)` in `__init__`) is on the device: cast, or the switch kept
    # (gpu-compatible: SparseAdam gets no master weights, BFM017), never left f32 without the switch
    moved = HYBRID.replace(
        "        self.user = torch.nn.Embedding(100, 8, sparse=True)\n",
        "        self.user = torch.nn.Embedding(100, 8, sparse=True)\n        self.to(torch_xla.device())\n",
    )
    code = migrate_source(moved, mode, "train.py").code
    assert "emb.to(torch.bfloat16)" in code if mode == "stochastic" else 'os.environ["XLA_USE_BF16"]' in code


HOST_HELPER = """import os
import torch
import torch.nn.functional as F
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x)


def train_on_host():
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = torch.randn(64, 8), torch.randint(0, 3, (64,))
    for _ in range(5):
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.state_dict()


def load_on_device(state, device):
    net = Net()
    net.load_state_dict(state)
    return net.to(device).eval()


device = torch_xla.device()
model = load_on_device(train_on_host(), device)
with torch.no_grad():
    out = model(torch.randn(4, 8).to(device))
print(out.cpu().sum().item())
"""


def test_a_module_a_helper_trains_on_the_host_is_not_cast():
    """A helper trains a module on the host and hands back its state dict; another loads it onto the
    device. The helper moves nothing itself, but the file places its tensors: the host module stays
    float32 (its training was float32 under the switch, a hunt's ensemble) and the device one is cast."""
    code = migrate_source(HOST_HELPER, "stochastic", "train.py").code
    host = code[code.index("def train_on_host") : code.index("def load_on_device")]
    assert "bfloat16" not in host and "register_forward_pre_hook" not in host
    assert "    net.to(torch.bfloat16)\n    return net.to(device).eval()\n" in code
    cst.parse_module(code)
    assert migrate_source(code, "stochastic", "train.py").code == code


def test_amp_keeps_the_switch_for_device_modules_called_through_a_list():
    """amp: an ensemble's members are loaded onto the device by a helper that returns them, kept in a
    list and called in a comprehension. The codemod does not follow those calls, so it cannot put them
    under autocast: left as they were, the evaluation ran in f32 where the legacy run computed in bf16 (a
    hunt's). The switch is kept and the finding names the helper's line (BFM021 ``returned``); a module a
    helper returns to a caller who calls it is wrapped where it is called, as before."""
    source = HOST_HELPER.replace(
        "model = load_on_device(train_on_host(), device)\n",
        "members = [load_on_device(train_on_host(), device) for _ in range(2)]\n",
    ).replace(
        "    out = model(torch.randn(4, 8).to(device))\n",
        "    out = torch.stack([m(torch.randn(4, 8).to(device)) for m in members])\n",
    )
    result = migrate_source(source, "amp", "train.py")
    assert result.code == source
    [finding] = [d for d in result.diagnostics if d.code == "BFM021"]
    assert finding.line == 33 and "is returned (line 33)" in finding.message
    direct = migrate_source(HOST_HELPER, "amp", "train.py").code
    assert '    with torch.autocast("xla", dtype=torch.bfloat16):\n        out = model(' in direct


DOWNCAST_HEAD = """import os
import torch
import torch_xla

os.environ["XLA_DOWNCAST_BF16"] = "1"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(4, 8)
        self.head = torch.nn.Linear(8, 3, dtype=torch.float64)

    def forward(self, x):
        return self.head(self.body(x).double())


def main():
    device = torch_xla.device()
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 4).to(device)).sum().backward()
    opt.step()


main()
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible"])
def test_a_float64_head_under_downcast_is_built_float64_and_cast_to_float32_with_the_model(mode):
    """Under XLA_DOWNCAST_BF16 a float64 submodule was f32 on the device while the body was bf16. Cast
    with the rest by ``model.to(torch.bfloat16)``, its float32 input met bf16 weights ("mixed precision
    is disallowed": a hunt's script, on the XLA CPU device); built in float32 instead, it draws other
    initial values from the seed (verify FAILs matches). So its constructor keeps float64 and the model's
    cast is the switch's rule, ``downcast_bf16(model)``: float32 to bf16, float64 to float32. Under
    XLA_USE_BF16 the head was bf16: never the downcast rule."""
    result = migrate_source(DOWNCAST_HEAD, mode, "train.py")
    code = result.code
    assert "        self.head = torch.nn.Linear(8, 3, dtype=torch.float64)\n" in code
    assert "    model = Net().to(device)\n    downcast_bf16(model)\n    opt = " in code
    assert "def downcast_bf16(module):" in code and "model.to(torch.bfloat16)" not in code and "XLA_" not in code
    assert "return self.head(self.body(x).float())" in code
    assert any(d.code == "BFM048" and d.line == 12 for d in result.diagnostics)
    cst.parse_module(code)
    assert migrate_source(code, mode, "train.py").code == code
    use = migrate_source(DOWNCAST_HEAD.replace("XLA_DOWNCAST_BF16", "XLA_USE_BF16"), mode, "train.py").code
    assert "downcast_bf16" not in use  # (a refusal today: BFM081 names the `.double()` input of the head)


PRETRAINED_TABLE = """import os
import numpy as np
import torch
import torch_xla
os.environ["XLA_DOWNCAST_BF16"] = "1"


class Bag(torch.nn.Module):
    def __init__(self, table):
        super().__init__()
        self.emb = torch.nn.Embedding.from_pretrained(torch.from_numpy(table), freeze=True)
        self.out = torch.nn.Linear(4, 2)

    def forward(self, ids):
        return self.out(self.emb(ids).mean(1).float())


def main():
    device = torch_xla.device()
    model = Bag(np.random.default_rng(0).normal(size=(10, 4))).to(device)
    opt = torch.optim.SGD(model.out.parameters(), lr=0.1)
    loss = model(torch.randint(0, 10, (2, 3)).to(device)).sum()
    loss.backward()
    opt.step()


main()
"""


@pytest.mark.parametrize("mode", ["stochastic", "amp"])
def test_a_pretrained_table_from_numpy_is_float64_state(mode):
    """``nn.Embedding.from_pretrained(torch.from_numpy(table))`` holds NumPy's float64: under
    XLA_DOWNCAST_BF16 it was float32 on the device. The casting modes cast the model with
    ``downcast_bf16`` (``model.to(torch.bfloat16)`` made the table bf16 where the legacy run pooled in
    f32), amp makes it float32 (it pooled in f64 under autocast; bench/unseen/hunt23 text_f64emb)."""
    code = migrate_source(PRETRAINED_TABLE, mode, "train.py").code
    if mode == "amp":
        assert "    model.to(torch.float32)\n" in code
    else:
        assert "    downcast_bf16(model)\n" in code and "model.to(torch.bfloat16)" not in code
    assert migrate_source(code, mode, "train.py").code == code


@pytest.mark.parametrize("mode", ["stochastic", "amp"])
@pytest.mark.parametrize("switch", ["XLA_DOWNCAST_BF16", "XLA_USE_BF16"])
def test_a_pretrained_table_handed_to_the_constructor_is_float64_state(mode, switch):
    """The same table made from NumPy in the script and handed to the constructor (``Bag(vectors)``, its
    ``from_pretrained(table)``): amp left it float64 on the device (autocast casts no float64: the forward
    raised on an f64/bf16 mix, a hunt's pretrained vectors), the casting modes cast it with ``model.to``'s
    bf16 where XLA_DOWNCAST_BF16 had kept it float32."""
    source = (
        PRETRAINED_TABLE.replace("torch.from_numpy(table)", "table")
        .replace(
            "Bag(np.random.default_rng(0).normal(size=(10, 4)))",
            "Bag(torch.from_numpy(np.random.default_rng(0).normal(size=(10, 4))))",
        )
        .replace("XLA_DOWNCAST_BF16", switch)
    )
    code = migrate_source(source, mode, "train.py").code
    if mode == "amp":
        assert "    model.to(torch.float32)\n" in code, code
    elif switch == "XLA_DOWNCAST_BF16":
        assert "    downcast_bf16(model)\n" in code and "model.to(torch.bfloat16)" not in code
    else:
        assert "    model.to(torch.bfloat16)\n" in code  # the switch made float64 bf16 too
    assert migrate_source(code, mode, "train.py").code == code


def test_a_float64_head_under_a_guarded_downcast_is_made_float32_after_its_constructor():
    """With the switch on under a condition, the path without it runs the same model: the float64
    head is built as before and made float32 right after (the double idiom's ``.float()`` input meets
    it in both paths), and the guarded cast puts it back to float32 after ``model.to(torch.bfloat16)``."""
    source = DOWNCAST_HEAD.replace('os.environ["XLA_DOWNCAST_BF16"] = "1"\n', "").replace(
        "def main():\n", 'def main(bf16=True):\n    if bf16:\n        os.environ["XLA_DOWNCAST_BF16"] = "1"\n'
    )
    code = migrate_source(source, "stochastic", "train.py").code
    assert "        self.head = torch.nn.Linear(8, 3, dtype=torch.float64).float()\n" in code
    assert "    if bf16:\n        model.to(torch.bfloat16)\n        model.head.to(torch.float32)\n    opt = " in code
    assert "downcast_bf16" not in code
    cst.parse_module(code)
    assert migrate_source(code, "stochastic", "train.py").code == code


def test_a_float64_head_under_downcast_in_amp_is_built_float64_then_made_float32():
    """amp keeps the model FP32: the float64 head is built as before (the legacy run's initial values)
    and made float32 right after its constructor, as the switch held it on the device."""
    source = DOWNCAST_HEAD.replace(
        "    model(torch.randn(2, 4).to(device)).sum().backward()\n",
        "    loss = model(torch.randn(2, 4).to(device)).sum()\n    loss.backward()\n",
    )
    code = migrate_source(source, "amp", "train.py").code
    assert "XLA_DOWNCAST_BF16" not in code
    assert "        self.head = torch.nn.Linear(8, 3, dtype=torch.float64).float()\n" in code
    assert "downcast_bf16" not in code and "model.to(torch.bfloat16)" not in code
    cst.parse_module(code)
    assert migrate_source(code, "amp", "train.py").code == code


HOST_FIT = (FIXTURES / "contract" / "host_fit_device_eval" / "evaluate.py").read_text()


def test_a_module_a_helper_trains_and_returns_is_cast_where_its_caller_moves_it():
    """A helper fits a module on the host and returns it; the caller moves each to the device. The
    helper's training stays float32 (it was on the host under the switch): before, its `net` was taken
    for the model, cast and fed bf16 on the CPU. The cast goes where the caller moves the module."""
    code = migrate_source(HOST_FIT, "stochastic", "evaluate.py", launched_with={"XLA_USE_BF16": "1"}).code
    helper = code[code.index("def fit_member") : code.index("def main")]
    assert "bfloat16" not in helper and "register_forward_pre_hook" not in helper
    assert "        member.to(device).eval()\n        member.to(torch.bfloat16)\n" in code
    assert migrate_source(code, "stochastic", "evaluate.py").code == code


def test_a_module_moved_in_a_comprehension_keeps_the_switch_and_names_the_line():
    """`[m.to(device).eval() for m in committee]`: a cast after the statement cannot name `m` (it was
    added there before, a NameError after a rewrite that said nothing was left). The switch is kept
    and BFM151 names the line. Written with its dtype by hand (the finding's advice), the module needs no
    cast of the rule's and the script migrates as an inference script does (it was BFM010 before: the
    only optimizer is the helper's, on the host)."""
    source = HOST_FIT.replace(
        "    for member in committee:\n        member.to(device).eval()\n",
        "    committee = [m.to(device).eval() for m in committee]\n",
    )
    assert source != HOST_FIT
    result = migrate_source(source, "stochastic", "evaluate.py", launched_with={"XLA_USE_BF16": "1"})
    assert result.code == source
    [finding] = [d for d in result.diagnostics if d.code == "BFM151" and d.line == 46]
    assert "inside a comprehension" in finding.message
    by_hand = source.replace("m.to(device).eval()", "m.to(device, dtype=torch.bfloat16).eval()")
    fixed = migrate_source(by_hand, "stochastic", "evaluate.py", launched_with={"XLA_USE_BF16": "1"})
    assert not fixed.unfixed and [d.code for d in fixed.diagnostics if d.code in ("BFM001", "BFM154")] == [
        "BFM001",
        "BFM154",
    ]


AUTOENCODER = """import os
import torch
import torch.nn.functional as F
import torch_xla
from torch.distributions import Bernoulli, Normal
os.environ["XLA_USE_BF16"] = "1"


class Coder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Linear(8, 3)
        self.dec = torch.nn.Linear(3, 8)

    def encode(self, x):
        return torch.tanh(self.enc(x))

    def decode(self, z):
        return self.dec(z)


class Density(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(8, 2)

    def forward(self, x):
        mu, log_s = self.body(x).unbind(-1)
        return Normal(mu, log_s.exp())


def main():
    device = torch_xla.device()
    coder, density = Coder().to(device), Density().to(device)
    optimizer = torch.optim.Adam([*coder.parameters(), *density.parameters()], lr=1e-3)
    for _ in range(3):
        x = (torch.rand(16, 8) > 0.5).float().to(device)
        y = torch.randn(16).to(device)
        logits = coder.decode(coder.encode(x))
        rec = F.binary_cross_entropy_with_logits(logits, x)
        nll = -Bernoulli(logits=coder.decode(coder.encode(x))).log_prob(x).sum(-1).mean()
        dist = density(x)
        fit = -dist.log_prob(y).mean()
        (rec + nll + fit).backward()
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible"])
def test_loss_targets_of_method_calls_and_of_a_distributions_log_prob_are_cast(mode):
    """The model called through its own methods (`coder.decode(coder.encode(x))`) and a likelihood's
    observed value (`dist.log_prob(y)`): their targets were left f32 and promoted the loss to f32, where
    the legacy run computed it in bf16 (a hunt's VAE; verify's trace named them). ``x``, read by the
    model, two losses and a likelihood, is cast where it is moved to the device, as the switch made it
    there; ``y``, read by the likelihood alone, where it is read."""
    code = migrate_source(AUTOENCODER, mode, "train.py").code
    assert "x = (torch.rand(16, 8) > 0.5).float().to(device, dtype=torch.bfloat16)\n" in code
    assert "rec = F.binary_cross_entropy_with_logits(logits, x)\n" in code
    assert ".log_prob(x).sum(-1).mean()\n" in code and "dist = density(x)\n" in code
    assert "fit = -dist.log_prob(y.to(torch.bfloat16)).mean()\n" in code
    assert migrate_source(code, mode, "train.py").code == code


def test_a_python_number_handed_to_a_loss_is_no_target():
    """``beta=1 / 9`` of ``F.smooth_l1_loss`` is a Python number: ``(1 / 9).to(torch.bfloat16)`` raised
    AttributeError after a rewrite that said nothing was left (bench/unseen/hunt22 det_compose); the
    tensor target beside it is still cast."""
    src = (
        HEADER
        + 'os.environ["XLA_USE_BF16"] = "1"\n'
        + "import torch.nn.functional as F\nDELTA = 0.5\n"
        + "model = torch.nn.Linear(4, 4).to(dev)\n"
        + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + "y = torch.randn(8, 4).to(dev)\n"
        + "out = model(torch.randn(8, 4).to(dev))\n"
        + "loss = F.smooth_l1_loss(out, y, beta=1 / 9) + F.huber_loss(out, y, delta=DELTA * 2)\n"
        + "loss.backward()\n"
        + "opt.step()\n"
    )
    code = migrate_source(src, "stochastic", "train.py").code
    assert "F.smooth_l1_loss(out, y, beta=1 / 9) + F.huber_loss(out, y, delta=DELTA * 2)\n" in code
    assert "y = torch.randn(8, 4).to(dev, dtype=torch.bfloat16)\n" in code
    assert migrate_source(code, "stochastic", "train.py").code == code


@pytest.mark.parametrize(
    "build, use",
    [("mse = torch.nn.MSELoss()\n", "mse(out, y)"), ("", "torch.nn.SmoothL1Loss(beta=0.5)(out, y)")],
)
def test_a_torch_nn_loss_module_is_a_loss_whatever_its_name(build, use):
    """``mse = nn.MSELoss()`` then ``mse(out, y)``: its target was left f32 because the name says neither
    loss nor criterion (bench/unseen/hunt22 loss_module_name: a crash in backward); the module's class
    tells it, as does ``nn.SmoothL1Loss(...)(out, y)`` called where it is built."""
    src = (
        HEADER
        + 'os.environ["XLA_USE_BF16"] = "1"\n'
        + "model = torch.nn.Linear(4, 4).to(dev)\n"
        + build
        + "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + "y = torch.randn(8, 4).to(dev)\n"
        + "out = model(torch.randn(8, 4).to(dev))\n"
        + f"loss = {use}\n"
        + "loss.backward()\n"
        + "opt.step()\n"
    )
    code = migrate_source(src, "stochastic", "train.py").code
    assert f"loss = {use.replace('y)', 'y.to(torch.bfloat16))')}\n" in code
    assert migrate_source(code, "stochastic", "train.py").code == code


DOWNCAST_SCORES = """import os
import numpy as np
import torch
import torch_xla
os.environ["XLA_DOWNCAST_BF16"] = "1"


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(6, 1).to(device).eval()
    scores, probs = [], []
    with torch.no_grad():
        for _ in range(3):
            xb = torch.randn(8, 6).to(device)
            z = model(xb).double()
            scores.append((z * 2.5 + 1.0).cpu().numpy())
            probs.append(torch.sigmoid(model(xb)).cpu().numpy())
    np.save("scores.npy", np.concatenate(scores))
    np.save("probs.npy", np.concatenate(probs))
"""


def test_a_float64_value_leaves_the_device_as_float64_under_downcast():
    """XLA_DOWNCAST_BF16 kept `.double()` tensors as f32 on the device and reported them float64: the
    host got float64 (the saved scores were float64). The `.double()` becomes `.float()` on the device and
    the copy to the host gets `.double()` back; a bf16 value's copy gets `.float()` as before (a hunt's)."""
    code = migrate_source(DOWNCAST_SCORES, "stochastic", "score.py").code
    assert "            z = model(xb.to(torch.bfloat16)).float()\n" in code
    assert "scores.append((z * 2.5 + 1.0).cpu().double().numpy())\n" in code
    assert "probs.append(torch.sigmoid(model(xb.to(torch.bfloat16))).cpu().float().numpy())\n" in code
    assert migrate_source(code, "stochastic", "score.py").code == code


HOST_TARGETS = """import os
import numpy as np
import torch
import torch_xla
os.environ["XLA_USE_BF16"] = "1"


def main():
    device = torch_xla.device()
    rng = np.random.default_rng(0)
    features, prices = rng.normal(size=(256, 5)), rng.normal(size=256)
    xt = torch.from_numpy(features).float()
    yt = torch.from_numpy((prices - prices.mean()) / prices.std()).float()
    model = torch.nn.Linear(5, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        idx = torch.randint(0, 256, (32,))
        xb, yb = xt[idx].to(device), yt[idx].to(device)
        loss = torch.nn.functional.mse_loss(model(xb).squeeze(-1), yb)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


def test_the_upcast_of_a_host_tensor_made_from_numpy_is_no_deliberate_f32():
    """`torch.from_numpy(y).float()` runs on the host: under the switch its device copies were bf16.
    It was reported kept f32 on purpose (BFM089), which made verify skip its onset check (a hunt's); the
    batch's target is cast where the loss reads it, as any input's."""
    result = migrate_source(HOST_TARGETS, "stochastic", "train.py")
    assert not [d for d in result.diagnostics if d.code in ("BFM088", "BFM089")]
    assert "mse_loss(model(xb.to(torch.bfloat16)).squeeze(-1), yb.to(torch.bfloat16))" in result.code
    assert not result.outcome.kept_f32


OWN_AUTOCAST_AND_SWITCH = """import os
import torch
import torch_xla
os.environ["XLA_USE_BF16"] = "1"


def main():
    device = torch_xla.device()
    model = torch.nn.Linear(4, 2).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(3):
        with torch.autocast("xla", dtype=torch.bfloat16):
            loss = model(torch.randn(8, 4).to(device)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible", "amp"])
def test_a_script_setting_the_switch_beside_its_own_autocast_is_told_what_the_mode_lacks(mode):
    """The switch goes by hand (BFM013): in amp that is the whole migration; in the casting modes the
    script would then run its autocast, not the mode's bf16 model, and the finding says so (it told
    every mode to remove the switch, which in stochastic made an amp run: a hunt's)."""
    result = migrate_source(OWN_AUTOCAST_AND_SWITCH, mode, "train.py")
    assert result.code == OWN_AUTOCAST_AND_SWITCH
    [finding] = [d for d in result.diagnostics if d.code == "BFM013"]
    if mode == "amp":
        assert "remove the switch by hand once that code covers every model and input" in finding.message
    else:
        assert f"that code is not --mode {mode}'s: it runs under torch.autocast (amp)" in finding.message


HAND_UPDATE = """import os
import torch
import torch_xla
os.environ["XLA_USE_BF16"] = "1"


def momentum_step(params, velocity, lr=0.05, beta=0.9):
    with torch.no_grad():
        for i, p in enumerate(params):
            velocity[i] = beta * velocity[i] + p.grad
            p -= lr * velocity[i]
            p.grad = None


def main():
    device = torch_xla.device()
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).to(device)
    params = list(model.parameters())
    velocity = [torch.zeros_like(p) for p in params]
    for step in range(5):
        x = torch.randn(16, 4).to(device)
        loss = model(x).pow(2).mean()
        loss.backward()
        if step % 1 == 0:
            momentum_step(params, velocity)
        torch_xla.sync()
"""


def test_the_cast_for_a_hand_written_update_made_at_every_step_goes_before_the_loop():
    """The update is a function of the file called in the loop after the forward and backward: the cast
    went right before that call, inside the loop, so the first forward met the bf16 input with the f32
    model (a crash after a rewrite that said nothing was left). It goes before the loop; the velocity
    made from the parameters before it is cast too (copies of the weights on the device were bf16)."""
    code = migrate_source(HAND_UPDATE, "stochastic", "train.py").code
    head = code[code.index("def main") : code.index("    for step in range(5):")]
    assert "    model.to(torch.bfloat16)\n" in head
    assert head.index("model.to(torch.bfloat16)") < head.index("velocity = [torch.zeros_like(p)")
    loop = code[code.index("    for step in range(5):") :]
    assert "model.to(torch.bfloat16)" not in loop
    assert migrate_source(code, "stochastic", "train.py").code == code


def test_a_comprehension_of_host_copies_is_saved_as_it_is():
    """`torch.save({k: v.cpu() for ...})`: each copy goes through host_float32 where it leaves the device;
    the dict made of them holds no bf16 and is not wrapped again (it was: a hunt's noise)."""
    source = HAND_UPDATE.replace(
        "        torch_xla.sync()\n",
        "        torch_xla.sync()\n    torch.save({k: v.cpu() for k, v in model.state_dict().items()}, 'weights.pt')\n",
    )
    code = migrate_source(source, "stochastic", "train.py").code
    assert "    torch.save({k: host_float32(v.cpu()) for k, v in model.state_dict().items()}, 'weights.pt')\n" in code


PROCESS_LAUNCHER = """import os
import subprocess
import sys


def main():
    env = dict(os.environ)
    env.update(PJRT_DEVICE="TPU", XLA_USE_BF16="1")
    cmd = [sys.executable, os.path.join(os.path.dirname(__file__), "fit_gp.py"), "--steps", "20"]
    return subprocess.run(cmd, env=env, check=True).returncode


if __name__ == "__main__":
    sys.exit(main())
"""


def test_a_switch_in_an_environment_a_subprocess_gets_names_the_script_it_starts():
    """The write is a keyword of `env.update(...)` for `subprocess.run(cmd, env=env)`: BFM042 names the
    script the argument list starts and how to migrate it (it said only "by hand": a hunt's)."""
    result = migrate_source(PROCESS_LAUNCHER, "stochastic", "launch.py")
    assert result.code == PROCESS_LAUNCHER
    [finding] = [d for d in result.diagnostics if d.code == "BFM042"]
    assert "in the environment `subprocess.run` (line 10) starts fit_gp.py with" in finding.message
    assert "migrate fit_gp.py with `--legacy-env XLA_USE_BF16=1`" in finding.message


UNPICKLED_TEACHER = """import os
import torch
import torch.nn as nn
import torch_xla
os.environ["XLA_USE_BF16"] = "1"


def main():
    device = torch_xla.device()
    teacher = torch.load("teacher_full.pt", weights_only=False).to(device).eval()
    student = nn.Linear(8, 4).to(device)
    optimizer = torch.optim.SGD(student.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(16, 8).to(device)
        with torch.no_grad():
            soft = teacher(x).softmax(-1)
        loss = -(soft * student(x).log_softmax(-1)).sum(-1).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("mode", ["stochastic", "amp"])
def test_a_module_unpickled_whole_and_moved_to_the_device_is_migrated(mode):
    """`torch.load(path, weights_only=False).to(device).eval()` then called: a module on the device, bf16
    under the switch. It was taken for no module and ran in f32, its input f32 too (a hunt's teacher)."""
    code = migrate_source(UNPICKLED_TEACHER, mode, "train.py").code
    if mode == "amp":
        assert (
            '            with torch.autocast("xla", dtype=torch.bfloat16):\n                soft = teacher(x)' in code
        )
    else:
        assert "    teacher.to(torch.bfloat16)\n" in code and "soft = teacher(x).softmax(-1)" in code
        # `x`, read by the student and the teacher, is cast where it is moved to the device
        assert "        x = torch.randn(16, 8).to(device, dtype=torch.bfloat16)\n" in code
    assert migrate_source(code, mode, "train.py").code == code


def test_a_distributions_own_draw_is_no_loss_target_to_cast():
    """`action = dist.sample()` then `dist.log_prob(action)`: the draw has the model's dtype (or is an
    integer): nothing to cast, where an observed value is cast (`log_prob(y)` above)."""
    source = AUTOENCODER.replace(
        "        fit = -dist.log_prob(y).mean()\n",
        "        draw = dist.rsample()\n        fit = -dist.log_prob(y).mean() - dist.log_prob(draw).mean()\n",
    )
    assert source != AUTOENCODER
    code = migrate_source(source, "stochastic", "train.py").code
    assert "fit = -dist.log_prob(y.to(torch.bfloat16)).mean() - dist.log_prob(draw).mean()\n" in code


def test_batches_of_a_list_comprehension_are_read_through_its_items():
    """``data = [(torch.randn(32, 10), torch.randint(0, 2, (32,)).float()) for _ in range(4)]`` then
    ``for x, y in data``: the item tells each part's dtype, so the input and the loss target are cast
    where they are used, as for a list written out, not through the run-time hook and
    ``floating_to_bf16`` (which the comprehension's items made the codemod fall back to)."""
    src = (
        HEADER
        + 'os.environ["XLA_USE_BF16"] = "1"\n'
        + (
            "\n\ndef main():\n"
            "    device = torch_xla.device()\n"
            "    model = torch.nn.Linear(10, 1).to(device)\n"
            "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "    data = [(torch.randn(32, 10), torch.randint(0, 2, (32,)).float()) for _ in range(4)]\n"
            "    for x, y in data:\n"
            "        loss = torch.nn.functional.mse_loss(model(x.to(device)).squeeze(-1), y.to(device))\n"
            "        loss.backward()\n"
            "        optimizer.step()\n"
        )
    )
    code = run(src).code
    assert "model(x.to(device).to(torch.bfloat16)).squeeze(-1), y.to(device).to(torch.bfloat16))" in code
    assert "floating_to_bf16" not in code and "register_forward_pre_hook" not in code


def test_a_target_cast_to_the_dtype_of_a_floating_input_is_a_floating_target():
    """``target = y.to(x.dtype)`` of integer labels, ``x`` the model's floating input: the target is
    floating (the dtype class of ``x``), so it is cast at the loss. ``x`` is cast only at the model call,
    so ``x.dtype`` stays float32 and the f32 target met the bf16 output (a crash in the loss's backward:
    a hunt's); it was read as the integer class of ``y``."""
    src = (
        HEADER
        + 'os.environ["XLA_USE_BF16"] = "1"\n'
        + (
            "\ndevice = torch_xla.device()\nmodel = torch.nn.Linear(4, 1).to(device)\n"
            "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
            "x = torch.randn(16, 4).to(device)\ny = torch.randint(0, 3, (16,)).to(device)\ntarget = y.to(x.dtype)\n"
            "loss = torch.nn.functional.mse_loss(model(x).squeeze(-1), target)\nloss.backward()\noptimizer.step()\n"
        )
    )
    code = run(src).code
    # `x`, read for its dtype too, is cast where it is moved to the device
    assert "x = torch.randn(16, 4).to(device, dtype=torch.bfloat16)\n" in code
    assert "mse_loss(model(x).squeeze(-1), target.to(torch.bfloat16))" in code
    assert run(code).code == code


LIGHTNING_BY_HAND = (ROOT / "bench" / "unseen" / "hunt18" / "repros" / "lit_self_amp" / "repro.py").read_text()


def test_amp_wraps_the_forward_a_lightning_style_module_runs_on_itself():
    """A module whose ``configure_optimizers`` builds ``AdamW(self.parameters())`` and whose
    ``training_step`` calls ``self(x)``, driven by a hand loop: amp puts ``self(x)`` and its loss under
    autocast (it kept the switch, BFM021 "`self` is never called": a hunt's); building the optimizer is no
    forward pass, so ``configure_optimizers()`` is not wrapped."""
    result = run(LIGHTNING_BY_HAND, mode="amp")
    code = result.code
    assert (
        '        with torch.autocast("xla", dtype=torch.bfloat16):\n            return F.mse_loss(self(x), y)\n' in code
    )
    assert "\nopt = lit.configure_optimizers()\n" in code
    assert "XLA_USE_BF16" not in code and "BFM021" not in [d.code for d in result.diagnostics]
    assert run(code, mode="amp").code == code


def test_a_model_also_run_by_functional_call_gets_the_input_hook_in_the_casting_modes():
    """A SAM step: ``model(x)``, then ``functional_call(model, perturbed, (x,))`` with the same ``x``. A cast
    written at ``model(x)`` does not reach the tuple ``functional_call`` hands the module, whose f32 ``x``
    met the bf16 weights (the XLA verifier raised: a hunt's). The module is called inside ``functional_call``,
    so the pre-hook registered after the cast fires there and casts its inputs."""
    src = HEADER + textwrap.dedent("""
    from torch.func import functional_call
    os.environ["XLA_USE_BF16"] = "1"


    def main(device):
        model = torch.nn.Linear(4, 3).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x, y = torch.randn(8, 4).to(device), torch.randint(0, 3, (8,)).to(device)
        params = dict(model.named_parameters())
        loss = torch.nn.functional.cross_entropy(model(x), y)
        grads = torch.autograd.grad(loss, list(params.values()))
        shifted = {k: p.detach() + 0.05 * g for (k, p), g in zip(params.items(), grads)}
        sharp = torch.nn.functional.cross_entropy(functional_call(model, shifted, (x,)), y)
        sharp.backward()
        opt.step()
    """)
    for mode in ("stochastic", "gpu-compatible"):
        result = run(src, mode)
        assert "    model.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)\n" in result.code
        finding = next(d for d in result.diagnostics if d.code == "BFM022")
        assert "`functional_call` runs its forward with inputs of its own" in finding.message
        assert run(result.code, mode).code == result.code


def test_a_model_traced_by_torch_jit_trace_gets_the_input_hook_and_stays_out_of_autocast():
    """``torch.jit.trace(model, sample)`` after training runs the model once on ``sample``: after the cast an f32
    sample met the bf16 weights (the XLA verifier raised "mixed precision is disallowed": a hunt's, with "0 left
    to do"). The trace calls the module, so the pre-hook fires there and its cast is recorded in the trace (the
    traced module then takes f32 samples too). amp does not wrap the trace in autocast, under which tracing
    fails, and only adds the float64 hook."""
    src = HEADER + textwrap.dedent("""
    os.environ["XLA_USE_BF16"] = "1"
    dev = torch_xla.device()
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.randn(32, 8), torch.randn(32, 1)
    for step in range(3):
        loss = torch.nn.functional.mse_loss(model(x.to(dev)), y.to(dev))
        opt.zero_grad()
        loss.backward()
        opt.step()
    sample = x[:2].to(dev)
    traced = torch.jit.trace(model, sample)
    print(traced(sample).cpu())
    """)
    for mode in ("stochastic", "gpu-compatible"):
        result = run(src, mode)
        assert "\nmodel.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)\n" in result.code
        finding = next(d for d in result.diagnostics if d.code == "BFM022")
        assert "`torch.jit.trace` runs its forward with inputs of its own" in finding.message
        assert run(result.code, mode).code == result.code
    result = run(src, "amp")
    assert "\ntraced = torch.jit.trace(model, sample)\n" in result.code
    assert "\nmodel.register_forward_pre_hook(float32_inputs_hook, with_kwargs=True)\n" in result.code


def test_a_model_that_needs_the_input_hook_keeps_the_switch_where_torch_jit_script_compiles_it():
    """TorchScript compiles a module's forward pre-hooks with it and refuses the ``with_kwargs`` one the migration
    registers; a ScriptModule takes no hook at all: a model whose inputs need the run-time cast and is scripted
    (after training, for export, or made by ``torch.jit.script``) would raise where the legacy run ran, so every
    mode keeps the switch and names the scripting line (BFM024). Without the script call the hook is written."""
    body = textwrap.dedent("""
    os.environ["XLA_USE_BF16"] = "1"


    def main(loader):
        dev = torch_xla.device()
        model = torch.nn.Linear(4, 2).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x.to(dev)), y.to(dev))
            opt.zero_grad()
            loss.backward()
            opt.step()
    """)
    exported = HEADER + body + '    torch.jit.script(model.cpu().eval()).save("model.pt")\n'
    made = HEADER + body.replace("torch.nn.Linear(4, 2).to(dev)", "torch.jit.script(torch.nn.Linear(4, 2)).to(dev)")
    for mode in MODES:
        for src, line in ((exported, exported.count("\n")), (made, line_of(made, "torch.jit.script"))):
            result = run(src, mode)
            assert result.code == src
            finding = next(d for d in result.diagnostics if d.code == "BFM024")
            assert f"`torch.jit.script` (line {line}) compiles it with its hooks" in finding.message
            assert "the dtype of `x.to(dev)` cannot be told" in finding.message
        plain = run(HEADER + body, mode)
        assert "model.register_forward_pre_hook(" in plain.code and 'os.environ["XLA_USE_BF16"]' not in plain.code


def test_a_training_forward_behind_functools_partial_goes_under_autocast_and_gets_the_input_casts():
    """``loss_fn = functools.partial(compute_loss, model)`` then ``loss_fn(x, y)``: the model is handed to
    ``compute_loss``, a function of the file whose forward and loss are the training's. amp left them f32 and
    wrapped only a direct evaluation call, "0 left to do" (a hunt's); they go under autocast where they are, and
    the casting modes cast the target there."""
    src = HEADER + textwrap.dedent("""
    import functools
    os.environ["XLA_USE_BF16"] = "1"


    def compute_loss(model, x, y):
        out = model(x)
        return torch.nn.functional.mse_loss(out, y)


    dev = torch_xla.device()
    model = torch.nn.Linear(8, 1).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = functools.partial(compute_loss, model)
    for step in range(3):
        x = torch.randn(16, 8).to(dev)
        loss = loss_fn(x, x.sum(1, keepdim=True))
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    amp = run(src, "amp")
    assert (
        '    with torch.autocast("xla", dtype=torch.bfloat16):\n        out = model(x)\n'
        "        return torch.nn.functional.mse_loss(out, y)\n" in amp.code
    )
    assert run(amp.code, "amp").code == amp.code
    stochastic = run(src, "stochastic")
    assert "torch.nn.functional.mse_loss(out, floating_to_bf16(y))" in stochastic.code


def test_a_move_in_a_lambda_is_cast_where_it_is_made():
    """``tree_map(lambda t: t.to(dev), batch)`` moves a nested batch whose targets reach a loss the input casts do
    not follow (a dict of lambda losses): the targets stayed f32 and the loss computed in f32 (a hunt's). The
    lambda hands its move back, as a function's ``return`` does: it goes through the run-time cast there."""
    src = HEADER + textwrap.dedent("""
    from torch.utils._pytree import tree_map
    os.environ["XLA_USE_BF16"] = "1"
    LOSSES = {"mse": lambda out, tgt: torch.nn.functional.mse_loss(out, tgt["y"])}
    dev = torch_xla.device()
    model = torch.nn.Linear(8, 1).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(3):
        x = torch.randn(16, 8)
        batch = tree_map(lambda t: t.to(dev) if torch.is_tensor(t) else t, {"x": x, "targets": {"y": x.sum(1)}})
        out = model(batch["x"]).squeeze(-1)
        loss = sum(fn(out, batch["targets"]) for fn in LOSSES.values())
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    for mode in ("stochastic", "gpu-compatible"):
        result = run(src, mode)
        assert "tree_map(lambda t: floating_to_bf16(t.to(dev)) if torch.is_tensor(t) else t, " in result.code
        assert run(result.code, mode).code == result.code


def test_a_generator_of_device_batches_in_an_imported_module_moves_them_as_bf16():
    """``def batches(n, dev): ... yield x.to(dev), y.to(dev)`` in a module a legacy script imports: ``dev``, a
    parameter named for the device as ``device`` is, is the XLA device the script hands it; its floating batches
    were bf16 there (a hunt's on-device augmentation computed in f32 with the module left as it was)."""
    src = textwrap.dedent("""\
        import torch


        def batches(n, dev):
            for _ in range(n):
                x = torch.randn(16, 8)
                yield x.to(dev), x.sum(1, keepdim=True).to(dev)
        """)
    result = migrate_source(src, "stochastic", "feed.py", imported_under={"XLA_USE_BF16": "1"})
    assert "yield x.to(dev, dtype=torch.bfloat16), x.sum(1, keepdim=True).to(dev, dtype=torch.bfloat16)" in result.code
    plain = src.replace("dev", "out")
    assert migrate_source(plain, "stochastic", "feed.py", imported_under={"XLA_USE_BF16": "1"}).code == plain


def test_a_switch_set_at_module_level_under_options_travels_into_the_function_that_builds_the_model():
    """``args = ap.parse_args()`` and ``if args.bf16: os.environ[...] = "1"`` at module level, the model built
    in ``main()``, which reads the module's ``args`` when it runs: the changes go there under the same
    condition (refused before, BFM041: a hunt's, the commonest argparse shape). So for ``main(args)`` when
    every call hands it that global; a ``main`` with a parameter of the same name no call fills reads
    another binding: still refused."""
    src = textwrap.dedent("""\
        import argparse
        import os

        ap = argparse.ArgumentParser()
        ap.add_argument("--bf16", action="store_true")
        args = ap.parse_args()
        if args.bf16:
            os.environ["XLA_USE_BF16"] = "1"

        import torch
        import torch_xla


        def main():
            device = torch_xla.device()
            model = torch.nn.Linear(8, 2).to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            x, y = torch.randn(16, 8).to(device), torch.randint(0, 2, (16,)).to(device)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()


        if __name__ == "__main__":
            main()
        """)
    code = run(src).code
    assert "    if args.bf16:\n        model.to(torch.bfloat16)\n" in code
    assert "model(x.to(torch.bfloat16) if args.bf16 else x)" in code and "XLA_USE_BF16" not in code
    assert run(code).code == code
    shadowed = src.replace("def main():", "def main(args=None):")
    kept = run(shadowed)
    assert 'os.environ["XLA_USE_BF16"] = "1"' in kept.code and "BFM041" in [d.code for d in kept.diagnostics]
    handed = shadowed.replace("    main()\n", "    main(args)\n")  # every call hands it the same global
    assert "    if args.bf16:\n        model.to(torch.bfloat16)\n" in run(handed).code


CRITERIA_DICT = (
    HEADER
    + 'os.environ["XLA_USE_BF16"] = "1"\n\ndev = torch_xla.device()\n'
    + "\n\nclass TwoHead(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    + '        self.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(8, 3), "reg": torch.nn.Linear(8, 2)})\n\n'
    + "    def forward(self, x):\n        return {k: head(x) for k, head in self.heads.items()}\n\n\n"
    + "model = TwoHead().to(dev)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    + 'criteria = {"cls": torch.nn.CrossEntropyLoss(), "reg": torch.nn.MSELoss()}\n'
    + "for _ in range(3):\n"
    + '    tgt = {"cls": torch.randint(0, 3, (4,)), "reg": torch.randn(4, 2)}\n'
    + "    tgt = {k: v.to(dev) for k, v in tgt.items()}\n"
    + "    out = model(torch.randn(4, 8).to(dev))\n"
    + "    losses = {k: criteria[k](out[k], tgt[k]) for k in out}\n"
    + "    loss = sum(losses.values())\n    loss.backward()\n    opt.step()\n"
)


def test_loss_modules_held_in_a_dict_are_losses():
    """``criteria[k](out[k], tgt[k])`` of a dict of ``torch.nn`` loss modules: their targets were left f32
    (a crash in backward) and amp left the losses outside autocast (bench/unseen/hunt24 criteria_dict)."""
    code = migrate_source(CRITERIA_DICT, "stochastic", "train.py").code
    assert "losses = {k: criteria[k](out[k], floating_to_bf16(tgt[k])) for k in out}\n" in code
    amp = migrate_source(CRITERIA_DICT, "amp", "train.py").code
    assert "        losses = {k: criteria[k](out[k], tgt[k]) for k in out}\n" in amp
    assert 'with torch.autocast("xla", dtype=torch.bfloat16):' in amp
    for mode, text in (("stochastic", code), ("amp", amp)):
        assert migrate_source(text, mode, "train.py").code == text


def test_numpy_with_force_is_an_exit_whose_receiver_is_cast_on_the_host():
    """``t.numpy(force=True)`` copies a device tensor to the host itself (torch docs: ``t.detach().cpu()
    ...numpy()``), float32 under the switch, bf16 after the model cast (NumPy raises): the receiver gets
    ``.cpu().float()`` (a floating one) or goes through ``host_float32`` (one of unknown dtype); a plain
    ``.numpy()`` raises for a device tensor in the legacy run too and is left (bench/unseen/hunt24 numpy_force)."""
    src = (
        HEADER
        + 'os.environ["XLA_USE_BF16"] = "1"\nimport numpy as np\n\ndev = torch_xla.device()\n'
        + "model = torch.nn.Linear(4, 2).to(dev)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        + "x = torch.randn(3, 4).to(dev)\nout = model(x)\nout.sum().backward()\nopt.step()\n"
        + "probs = torch.randn(3, 2).to(dev).softmax(-1)\n"
        + 'np.save("p.npy", probs.numpy(force=True))\nnp.save("o.npy", out.numpy(force=True))\n'
        + 'np.save("h.npy", out.cpu().numpy())\n'
    )
    code = migrate_source(src, "stochastic", "train.py").code
    assert 'np.save("p.npy", probs.cpu().float().numpy(force=True))\n' in code
    assert 'np.save("o.npy", host_float32(out).numpy(force=True))\n' in code
    assert 'np.save("h.npy", host_float32(out.cpu()).numpy())\n' in code
    assert migrate_source(code, "stochastic", "train.py").code == code


TRAIN_STATE = (
    "import os\nfrom dataclasses import dataclass\n\nimport torch\nimport torch_xla\n"
    'os.environ["XLA_USE_BF16"] = "1"\n\n\n@dataclass\nclass TrainState:\n    model: torch.nn.Module\n'
    "    optimizer: torch.optim.Optimizer\n    step: int = 0\n\n\n"
    "dev = torch_xla.device()\nmodel = torch.nn.Linear(8, 2).to(dev)\n"
    "state = TrainState(model, torch.optim.SGD(model.parameters(), lr=0.1))\n"
    "for _ in range(3):\n    xb, yb = torch.randn(4, 8).to(dev), torch.randn(4, 2).to(dev)\n"
    "    loss = torch.nn.functional.mse_loss(state.model(xb), yb)\n"
    "    loss.backward()\n    state.optimizer.step()\n    state.step += 1\n"
)


@pytest.mark.parametrize("mode", ["stochastic", "amp"])
def test_a_model_kept_in_a_dataclass_is_called_through_its_field(mode):
    """``state = TrainState(model, opt)`` of a ``@dataclass``, then ``state.model(xb)``: the call is the
    model's (its field by position), so amp puts it under autocast (it said the model was never called:
    bench/unseen/hunt24 state_model_target) and the casting modes cast its input at the call."""
    code = migrate_source(TRAIN_STATE, mode, "train.py").code
    if mode == "amp":
        assert '    with torch.autocast("xla", dtype=torch.bfloat16):\n        loss = ' in code
    else:
        assert "state.model(xb.to(torch.bfloat16)), yb.to(torch.bfloat16))" in code
        assert "register_forward_pre_hook" not in code
    assert migrate_source(code, mode, "train.py").code == code


@pytest.mark.parametrize(
    ("moved", "kept", "made"),
    [
        ("", False, "torch.nn.Linear(4, 2)"),
        ("    base.to(device)\n", True, "torch.nn.Linear(4, 2)"),
        # a factory that moves what it builds: the parameters updated are the device's (no master weights)
        ("", True, "torch.nn.Linear(4, 2).to(torch_xla.device())"),
        ("", True, "torch.nn.Linear(4, 2, device=torch_xla.device())"),
    ],
)
def test_gpu_compatible_an_update_of_a_host_modules_parameters_is_no_training_on_the_device(moved, kept, made):
    """An evaluation script perturbs a host copy's parameters to make checkpoints (``for prm in base.parameters():
    prm.add_(...)`` in a loop, no optimizer) and evaluates one on the device: gpu-compatible said it updated its
    parameters by hand and kept the switch (BFM017, a hunt's over-refusal). The copy is never moved: no update of the
    device's weights. Moved, it is one."""
    src = (
        HEADER + f'os.environ["XLA_USE_BF16"] = "1"\n\n\ndef make():\n    return {made}\n\n\n'
        "def perturbed(n, device):\n    base = make()\n" + moved + "    states = []\n    for _ in range(n):\n"
        "        with torch.no_grad():\n            for prm in base.parameters():\n"
        "                prm.add_(0.01 * torch.randn_like(prm))\n"
        "        states.append({k: v.clone() for k, v in base.state_dict().items()})\n    return states\n\n\n"
        "device = torch_xla.device()\nmodel = make().to(device)\nmodel.load_state_dict(perturbed(3, device)[-1])\n"
        "with torch.no_grad():\n    print(model(torch.randn(8, 4).to(device)).sum().item())\n"
    )
    result = run(src, mode="gpu-compatible")
    assert ('os.environ["XLA_USE_BF16"] = "1"' in result.code) == kept, codes(result)
    if kept:  # named, needing a hand (BFM017; BFM151 where the device the module is built on is not shown)
        assert {c for c, fixed in codes(result) if not fixed} & {"BFM017", "BFM151"}, codes(result)
    else:
        assert ("BFM017", False) not in codes(result)
