"""The host edge (bf16_migrate/python/host_exits.py): the rule's own VALID/INVALID examples in every
mode they hold for, the rows of rules/host_exits.toml, and the run-time ``host_float32`` as code."""

from __future__ import annotations

import collections
import shutil
from pathlib import Path

import libcst as cst
import pytest

from bf16_migrate.python import migrate_source, snippets
from bf16_migrate.python.host_exits import HARNESS, INVALID, VALID, Example
from bf16_migrate.rules import RuleError, load_rules

from conftest import ROOT

RULES = load_rules()
MODES = list(RULES.modes.values())


def _cases():
    for kind, examples in (("invalid", INVALID), ("valid", VALID)):
        for k, example in enumerate(examples):
            for mode in MODES:
                if example.applies(mode):
                    yield pytest.param(example, mode, id=f"{kind}{k}-{mode.name}")


@pytest.mark.parametrize("example, mode", list(_cases()))
def test_rule_examples(example: Example, mode):
    source = HARNESS + example.code
    result = migrate_source(source, mode, "example.py")
    harness_only = migrate_source(HARNESS, mode, "harness.py")
    want = example.fixed if example.fixed is not None else example.code
    # the harness migrates as it does alone; the example's lines become the fixed text
    assert result.code.endswith(want)
    body = result.code[: -len(want)]
    helper = f"def {snippets.HOST_FLOAT32}("
    helper_lines = [line for line in snippets.HOST_FLOAT32_SOURCE.splitlines() if line.strip()]
    lines = [line for line in body.splitlines() if line.strip()]
    if helper_lines[0] in lines:  # the helper, written once after the imports, and nothing else
        start = lines.index(helper_lines[0])
        assert lines[start : start + len(helper_lines)] == helper_lines
        del lines[start : start + len(helper_lines)]
    assert lines == [line for line in harness_only.code.splitlines() if line.strip()]
    assert (helper in body) == (snippets.HOST_FLOAT32 + "(" in want)
    first = len(HARNESS.splitlines())
    found = [d for d in result.diagnostics if d.line > first]
    assert tuple(d.code for d in found) == example.codes
    assert all(d.fixed == (d.code == "BFM160") for d in found)
    assert result.outcome.host_edge_examined
    # idempotent, and the output re-parses
    again = migrate_source(result.code, mode, "example.py")
    assert again.code == result.code
    cst.parse_module(result.code)


def test_every_float32_row_has_an_example_and_the_examples_name_their_codes():
    """Each exit the rule changes is shown changed by an INVALID example (a function row by one
    of its names, a method row by its method)."""
    shown = "".join(e.code for e in INVALID)
    for row in RULES.host_exits:
        if row.hands != "float32":
            continue
        spelled = {n.rsplit(".", 1)[-1] for n in row.functions} | ({row.method} if row.method else set())
        if row.exit.startswith("SummaryWriter.") and row.method != "add_histogram":
            continue  # the logging methods share one path: add_histogram's example stands for them
        assert any(f"{name}(" in shown for name in spelled), row.exit
    assert all(e.codes for e in INVALID)


def test_a_script_that_keeps_its_switch_has_its_host_edge_untouched():
    """No model to cast (BFM010): nothing changes, so nothing leaves the device differently."""
    source = (
        'import os\nos.environ["XLA_USE_BF16"] = "1"\nimport torch\nx = torch.ones(2, device="xla").cpu().numpy()\n'
    )
    result = migrate_source(source, MODES[0], "no_model.py")
    assert result.code == source
    assert not result.outcome.host_edge_examined
    assert not any(d.code in ("BFM160", "BFM161") for d in result.diagnostics)


def test_an_exit_with_unpacked_arguments_is_reported():
    source = HARNESS + "payload = (model.state_dict(), 'model.pt')\nxm.save(*payload)\n"
    result = migrate_source(source, MODES[0], "unpacked.py")
    assert result.code.endswith("xm.save(*payload)\n")
    found = [d for d in result.diagnostics if d.code == "BFM161"]
    assert len(found) == 1 and not found[0].fixed and "unpacked" in found[0].message


def test_a_logging_method_of_the_scripts_own_class_is_not_tensorboards():
    source = HARNESS + (
        "class Log:\n    def add_histogram(self, name, values):\n        print(name, values)\n\n\n"
        'Log().add_histogram("w", model.weight)\n'
    )
    result = migrate_source(source, MODES[0], "own_logger.py")
    assert result.code.endswith('Log().add_histogram("w", model.weight)\n')


def test_a_module_passed_to_a_function_is_told_from_the_call_site():
    source = HARNESS + "def export(net):\n    return net.cpu()\n\n\nexport(model)\n"
    result = migrate_source(source, MODES[0], "export.py")
    assert "return net.cpu()\n" in result.code
    assert [d.code for d in result.diagnostics if d.code.startswith("BFM16")] == ["BFM161"]


def test_a_builtins_name_is_neither_a_parameter_nor_a_binding():
    """A name the scope binds as a builtin (no node of the file) is followed nowhere: found on the
    AWS BERT sample, where the rule raised AttributeError on one."""
    source = HARNESS + 'n = xm.mesh_reduce("n", len, np.mean)\nsize = xm.mesh_reduce("size", input, np.mean)\n'
    result = migrate_source(source, MODES[0], "builtins.py")
    assert result.code.endswith('size = xm.mesh_reduce("size", host_float32(input), np.mean)\n')


def test_a_host_device_named_once_is_followed():
    source = HARNESS + 'host = torch.device("cpu")\nkept = torch.sigmoid(logits).to(host)\n'
    result = migrate_source(source, MODES[0], "host_name.py")
    assert result.code.endswith("kept = torch.sigmoid(logits).to(host).float()\n")


def test_to_another_device_or_with_a_dtype_is_no_exit():
    source = (
        HARNESS + "a = logits.to(device)\nb = logits.to('cpu', torch.float32)\nc = logits.to(dtype=torch.float32)\n"
    )
    result = migrate_source(source, MODES[0], "not_exits.py")
    assert result.code.endswith(source.split("loss = torch.nn.functional.cross_entropy(logits, y)\n")[1])
    assert not any(d.code.startswith("BFM16") for d in result.diagnostics)


# -- the rows ---------------------------------------------------------------------------------
def test_the_rows_cover_the_exits_of_the_contract():
    rows = {r.exit: r for r in RULES.host_exits}
    cast = {name for name, r in rows.items() if r.hands == "float32"}
    assert {".cpu()", '.to("cpu")', "xm.save", "torch.save", "xm.mesh_reduce", "SummaryWriter.add_histogram"} <= cast
    assert {rows[n].hands for n in (".tolist()", ".item()")} == {"python"}
    assert rows[".numpy()"].hands == rows["np.asarray"].hands == "never"
    assert rows["xm.save"].saved and rows["torch.save"].saved and not rows[".cpu()"].saved


@pytest.mark.parametrize(
    "row, error",
    [
        ('exit = "x"\nhands = "float32"\nmeasured = "m"\n', "either method"),
        ('exit = "x"\nmethod = "cpu"\nhands = "sometimes"\nmeasured = "m"\n', "hands 'sometimes'"),
        ('exit = "x"\nfunction = ["a.b"]\nhands = "float32"\nmeasured = "m"\n', "names the argument"),
        ('exit = "x"\nmethod = "cpu"\nhands = "float32"\nmeasured = "m"\nargument = 1\n', "argument"),
        ('exit = "x"\nmethod = "cpu"\nhands = "float32"\nmeasured = "m"\ncolour = "red"\n', "keys among"),
    ],
)
def test_a_malformed_row_is_refused_naming_the_file(tmp_path: Path, row: str, error: str):
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules)
    (rules / "host_exits.toml").write_text("[[exit]]\n" + row)
    load_rules.cache_clear()
    try:
        with pytest.raises(RuleError, match=error) as raised:
            load_rules(rules)
        assert "host_exits.toml" in str(raised.value)
    finally:
        load_rules.cache_clear()


# -- host_float32 as code ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def host_float32():
    torch = pytest.importorskip("torch")
    namespace = {"torch": torch}
    exec(snippets.HOST_FLOAT32_SOURCE, namespace)
    return namespace["host_float32"]


def test_host_float32_makes_bf16_tensors_float32_and_leaves_the_rest(host_float32):
    import torch

    weight = torch.tensor([0.1, -2.5, 3.0]).to(torch.bfloat16)
    labels = torch.tensor([1, 2, 3])
    kept = torch.tensor([0.5], dtype=torch.float64)
    state = collections.OrderedDict([("w", weight), ("labels", labels), ("f64", kept), ("step", 7)])
    state._metadata = {"": {"version": 1}}  # type: ignore[attr-defined]  # what nn.Module.state_dict attaches
    Pair = collections.namedtuple("Pair", "a b")
    out = host_float32({"model": state, "pairs": [Pair(weight, labels)], "name": "run"})
    assert out["model"]["w"].dtype == torch.float32
    assert torch.equal(out["model"]["w"], weight.float())
    assert out["model"]["labels"] is labels and out["model"]["f64"] is kept and out["model"]["step"] == 7
    assert type(out["model"]) is collections.OrderedDict
    assert out["model"]._metadata == state._metadata  # type: ignore[attr-defined]
    assert isinstance(out["pairs"][0], Pair) and out["pairs"][0].a.dtype == torch.float32
    assert out["name"] == "run"
    assert state["w"] is weight  # the input is not changed
    back = host_float32([weight], back_to_device=True)[0]
    assert back.dtype == torch.float32 and back.device == weight.device
    assert host_float32(2.5) == 2.5


def test_host_float32_copies_a_module_float32_without_the_input_hooks(host_float32):
    """A module leaving the device (``torch.save(model)``, a CPU copy) was float32 under the switch, and
    a module ``torch.save`` pickled must load in another process: the copy is float32 and carries none
    of the input hooks the migration registered (functions of the migrated script), other hooks kept;
    the module itself is not changed (found by a hunt: a whole-module checkpoint no other process
    could load)."""
    import pickle

    import torch

    def bf16_inputs_hook(module, args, kwargs):  # the migration's hook, by name
        return args, kwargs

    def users_hook(module, args):
        return None

    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Embedding(3, 2)).to(torch.bfloat16)
    module.register_forward_pre_hook(bf16_inputs_hook, with_kwargs=True)
    module.register_forward_pre_hook(users_hook)
    out = host_float32(module, back_to_device=True)
    assert out is not module and module[0].weight.dtype == torch.bfloat16
    assert {p.dtype for p in out.parameters()} == {torch.float32}
    first, copied = module[0], out[0]
    assert isinstance(first, torch.nn.Linear) and isinstance(copied, torch.nn.Linear)
    assert torch.equal(copied.weight, first.weight.float())
    assert list(out._forward_pre_hooks.values()) == [users_hook] and not out._forward_pre_hooks_with_kwargs
    assert len(module._forward_pre_hooks) == 2
    del out._forward_pre_hooks[next(iter(out._forward_pre_hooks))]  # the user's local function cannot pickle
    pickle.loads(pickle.dumps(out))


def test_a_float32_checkpoint_loads_back_into_the_bf16_model(host_float32):
    import torch

    model = torch.nn.Linear(3, 2).to(torch.bfloat16)
    saved = host_float32(model.state_dict())
    assert {t.dtype for t in saved.values()} == {torch.float32}
    again = torch.nn.Linear(3, 2).to(torch.bfloat16)
    again.load_state_dict(saved)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    assert again.weight.dtype == torch.bfloat16


@pytest.mark.parametrize("saved", ["Net().state_dict()", "Net()"])
def test_the_state_of_a_module_built_right_there_is_saved_as_it_is(saved):
    """``torch.save(Net().state_dict(), path)`` or ``torch.save(Net(), path)`` (a pickled teacher: a
    hunt's): a module of the file built in place and never moved holds host tensors; nothing to cast
    (it got a needless ``host_float32(..., back_to_device=True)``, said to save bf16 tensors)."""
    from bf16_migrate.python import migrate_source

    source = (
        "import os\nimport torch\nimport torch_xla\n\nos.environ['XLA_USE_BF16'] = '1'\n\n\n"
        "class Net(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.fc = torch.nn.Linear(4, 2)\n\n    def forward(self, x):\n        return self.fc(x)\n\n\n"
        f"def main():\n    torch.save({saved}, 'init.pt')\n    device = torch_xla.device()\n"
        "    model = Net()\n    model.load_state_dict(torch.load('init.pt'))\n    model = model.to(device)\n"
        "    with torch.no_grad():\n        print(model(torch.randn(2, 4).to(device)).sum().item())\n\n\nmain()\n"
    )
    code = migrate_source(source, "stochastic", "t.py").code
    assert f"    torch.save({saved}, 'init.pt')\n" in code and "model.to(torch.bfloat16)" in code


SAVED_LIST = """\
import os
import torch
import torch.nn as nn
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def main(batches):
    device = torch_xla.device()
    model = nn.Linear(6, 3).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in batches:
        loss = model(x.to(device)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    preds, names = [], ["a", "b"]
    with torch.no_grad():
        for x in batches:
            preds.append(model(x.to(device)))
    torch.save(preds, "preds.pt")
    torch.save(names, "names.pt")
"""


@pytest.mark.parametrize("mode", ["stochastic", "amp"])
def test_a_list_filled_with_device_tensors_is_saved_as_float32(mode):
    """``preds = []``, ``preds.append(model(x))``, ``torch.save(preds, path)``: the empty literal was taken for a
    host value, and the file held bf16 where the legacy run saved float32 (a hunt's, every mode). What the code
    appends decides; a list of strings is left as it is."""
    result = migrate_source(SAVED_LIST, mode, "train.py")
    cst.parse_module(result.code)
    assert '    torch.save(host_float32(preds, back_to_device=True), "preds.pt")\n' in result.code, result.code
    assert '    torch.save(names, "names.pt")\n' in result.code
