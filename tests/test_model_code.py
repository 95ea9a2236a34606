"""The audit of the model's own code (bf16_migrate/python/model_code.py): tensors a model and a tree
optimizer make themselves, which the legacy switch made bf16 and ``model.to(torch.bfloat16)`` does not.

fixtures/model_code/<case>/ are trees (a script and its sibling modules), migrated with the project
path: goldens per mode (every changed file and the findings), idempotence. The shapes below are small
sources asserting exactly what is written or reported. On the XLA CPU device (``-m xla``): what
``model.to`` casts and what it does not (measured, not assumed), the sibling optimizer's scalars and
the LSTM states made in forward proven by ``verify``, and the leaky norm's f32 shown by a migration
made without the audit.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from bf16_migrate.project import migrate_paths
from bf16_migrate.python import migrate_source
from bf16_migrate.verify.graphs import hlo_stats
from bf16_migrate.verify.runner import stage_script

from conftest import FIXTURES, MODES
from precision_guarantee import assert_no_silent_f32_matmul, assert_no_silent_f32_softmax, audit_off_rules, left_to_do

CASES_DIR = FIXTURES / "model_code"
CASES = sorted(p.name for p in CASES_DIR.iterdir() if (p / "train.py").is_file())


def _tree(case: str, where: Path) -> Path:
    target = where / case
    shutil.copytree(CASES_DIR / case, target, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    return target


def _migrate_tree(case: str, mode: str, where: Path):
    old = os.getcwd()
    os.chdir(where)
    try:
        return migrate_paths([Path(case)], mode, write=True)
    finally:
        os.chdir(old)


def test_there_are_cases():
    assert set(CASES) >= {
        "contrastive_fn",
        "lamb_sibling",
        "leaky_norm",
        "loss_module",
        "lstm_forecaster",
        "smoothed_criterion",
    }


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_golden_files_and_diagnostics(case, mode, goldens, tmp_path):
    tree = _tree(case, tmp_path)
    before = {p.relative_to(tree): p.read_text() for p in tree.rglob("*.py")}
    outcome = _migrate_tree(case, mode, tmp_path)
    assert not outcome.errors, outcome.errors
    changed = {str(rel): (tree / rel).read_text() for rel, text in before.items() if (tree / rel).read_text() != text}
    findings = "".join(d.format_text() + "\n" for d in outcome.diagnostics)
    goldens.check(CASES_DIR / case / "expected" / mode, changed, findings)
    for rel, text in changed.items():
        compile(text, rel, "exec")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_second_run_changes_nothing(case, mode, tmp_path):
    tree = _tree(case, tmp_path)
    _migrate_tree(case, mode, tmp_path)
    after = {p: p.read_text() for p in tree.rglob("*.py")}
    again = _migrate_tree(case, mode, tmp_path)
    assert {p: p.read_text() for p in tree.rglob("*.py")} == after
    assert not again.errors and all(not d.fixed for d in again.diagnostics)


def test_the_sibling_optimizers_scalars_take_the_parameters_dtype(tmp_path):
    """As aws-neuron-samples' maintainers migrated their LAMB (the scalars of `step` made without a
    dtype took the parameters'): here from the parameter whose device they are made on."""
    tree = _tree("lamb_sibling", tmp_path)
    outcome = _migrate_tree("lamb_sibling", "stochastic", tmp_path)
    module = (tree / "lamb_opt.py").read_text()
    assert "unit = torch.tensor(1.0, device=device, dtype=first.dtype)" in module
    assert "grad_sq_sum = torch.zeros(1, device=device, dtype=first.dtype)" in module
    assert 'limit = torch.tensor(self.defaults["max_grad_norm"], device=device, dtype=first.dtype)' in module
    codes = [(d.code, d.fixed) for d in outcome.diagnostics if d.path.endswith("lamb_opt.py")]
    assert codes.count(("BFM080", True)) == 3


def test_a_norm_that_never_casts_back_is_cast_back_where_it_leaves_the_module(tmp_path):
    """The norm's f32 (`x.float()`) would leave the submodule into the next layer: cast back there
    to the input's dtype (BFM088), the norm computed in f32 as written. It used to keep the switch
    (BFM083); cast back where it first meets the bf16 weight instead, the upcast would be a
    bf16->f32->bf16 round trip computing nothing (measured: verify's graph part FAILs it, 3 such)."""
    tree = _tree("leaky_norm", tmp_path)
    outcome = _migrate_tree("leaky_norm", "stochastic", tmp_path)
    text = (tree / "train.py").read_text()
    assert "return (self.weight * h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)" in text
    assert "h = x.float()" in text and "model.to(torch.bfloat16)" in text
    found = [(d.code, d.fixed, d.line) for d in outcome.diagnostics if d.code.startswith("BFM08")]
    assert found == [("BFM088", True, 28)]


# -- shapes --------------------------------------------------------------------------------------

HEADER = 'import os\nimport math\nimport torch\nimport torch_xla\n\nos.environ["XLA_USE_BF16"] = "1"\n'
TRAIN = """
model = {model}.to(torch_xla.device())
optimizer = {optimizer}(model.parameters(), lr=0.1)
"""


def migrate(body: str, mode: str = "stochastic", model: str = "Net()", optimizer: str = "torch.optim.SGD"):
    source = HEADER + textwrap.dedent(body) + TRAIN.format(model=model, optimizer=optimizer)
    return source, migrate_source(source, mode, "t.py")


def codes(result, fixed: bool | None = None) -> list[str]:
    return [d.code for d in result.diagnostics if d.code.startswith("BFM08") and (fixed is None or d.fixed == fixed)]


def test_a_mask_made_before_what_it_meets_takes_the_dtype_of_the_layer_that_makes_it():
    """The mask is made before `scores`: the dtype comes from what `scores` is computed from (the
    projection's output, which has its weight's dtype)."""
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.qk = torch.nn.Linear(8, 8)

            def forward(self, x):
                T = x.shape[1]
                mask = torch.full((T, T), float("-inf"), device=x.device).triu(1)
                scores = self.qk(x) @ x.transpose(-2, -1)
                return (scores + mask).softmax(-1) @ x
        """
    )
    assert (
        'mask = torch.full((T, T), float("-inf"), device=x.device, dtype=self.qk.weight.dtype).triu(1)' in result.code
    )
    assert codes(result) == ["BFM080"]


def test_a_plain_tensor_attribute_is_read_in_the_dtype_it_meets_and_a_buffer_is_left_alone():
    """`model.to` casts buffers (persistent or not) but not a plain tensor attribute (measured on the
    XLA device: test_what_model_to_casts_on_the_xla_device)."""
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self, max_len=32, dim=8):
                super().__init__()
                self.proj = torch.nn.Linear(dim, dim)
                self.register_buffer("table", torch.zeros(max_len, dim), persistent=False)
                self.pe = torch.zeros(max_len, dim)

            def forward(self, x):
                return self.proj(x) + self.pe[: x.shape[1]].to(x.device) + self.table[: x.shape[1]]
        """
    )
    assert "self.pe.to(self.proj.weight.dtype)[: x.shape[1]].to(x.device) + self.table[: x.shape[1]]" in result.code
    assert [(d.code, d.fixed, d.line) for d in result.diagnostics if d.code == "BFM080"] == [("BFM080", True, 16)]


def test_a_tensor_cached_on_the_first_forward_follows_what_it_meets():
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(8, 8)
                self.scale = None

            def forward(self, x):
                if self.scale is None:
                    self.scale = torch.ones(8, device=x.device)
                return self.proj(x) * self.scale
        """
    )
    assert "self.scale = torch.ones(8, device=x.device, dtype=self.proj.weight.dtype)" in result.code


def test_an_explicit_float32_and_a_fresh_upcast_follow():
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8)))
                self.q = torch.nn.Linear(8, 8)

            def forward(self, x):
                t = torch.arange(x.shape[1], device=x.device, dtype=torch.float32)
                steps = torch.arange(x.shape[1], device=x.device).float()
                freqs = torch.outer(t + steps, self.inv_freq)
                return self.q(x) * freqs.cos().repeat(1, 2)
        """
    )
    assert "t = torch.arange(x.shape[1], device=x.device, dtype=self.inv_freq.dtype)" in result.code
    assert "steps = torch.arange(x.shape[1], device=x.device).to(self.inv_freq.dtype)" in result.code
    assert sorted(
        (d.code, d.message.split(" in ")[1].split("`")[1]) for d in result.diagnostics if d.code == "BFM080"
    ) == [
        ("BFM080", "Net.forward"),
        ("BFM080", "Net.forward"),
    ]


def test_a_plain_tensor_attribute_a_function_of_the_file_makes_is_read_in_the_dtype_it_meets():
    """`self.table = make_table(6, 8)` returns a linspace: a plain attribute `model.to` leaves f32,
    which turned the residual stream f32 and crashed the next Linear (bench/unseen/hunt9 mha_envmodule)."""
    _, result = migrate(
        """
        def make_table(n, d):
            return torch.linspace(0, 1, n * d).view(n, d)


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(10, 8)
                self.table = make_table(6, 8)
                self.head = torch.nn.Linear(8, 2)

            def forward(self, ids):
                x = self.emb(ids)
                x = x + self.table[: ids.shape[1]].to(x.device)
                return self.head(x.mean(1))
        """
    )
    assert "x = x + self.table.to(x.dtype)[: ids.shape[1]].to(x.device)" in result.code
    assert codes(result) == ["BFM080"]
    # a table built in the function and returned by its name (a sinusoid filled in place)
    _, named = migrate(
        """
        def make_table(n, d):
            table = torch.zeros(n, d)
            table[:, 0::2] = torch.sin(torch.arange(n).unsqueeze(1) * 0.1)
            return table


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = torch.nn.Embedding(10, 8)
                self.table = make_table(6, 8)
                self.head = torch.nn.Linear(8, 2)

            def forward(self, ids):
                x = self.emb(ids)
                return self.head((x + self.table[: ids.shape[1]].to(x.device)).mean(1))
        """
    )
    assert "self.table.to(x.dtype)[: ids.shape[1]].to(x.device)" in named.code
    # a function that returns something else than a tensor made there is not followed
    _, other = migrate(
        """
        def make_table(n, d):
            if n:
                return torch.linspace(0, 1, n * d).view(n, d)
            return None


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.table = make_table(6, 8)
                self.head = torch.nn.Linear(8, 2)

            def forward(self, x):
                return self.head(x)
        """
    )
    assert codes(other) == []


def test_a_generator_handed_to_a_function_of_the_file_is_no_tensor():
    """`x, y = make(gen, 8)`: the value returned is not taken to carry `gen`'s dtype (a
    torch.Generator has none: `dtype=gen.dtype` crashed, bench/unseen/hunt9 sr_nohup)."""
    source = HEADER + textwrap.dedent(
        """
        def make(gen, n):
            x = torch.rand(n, 4, generator=gen)
            return x, x.sum(1, keepdim=True)


        gen = torch.Generator().manual_seed(0)
        device = torch_xla.device()
        model = torch.nn.Linear(4, 1).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        w = torch.zeros((), device=device)
        for _ in range(3):
            x, y = make(gen, 8)
            x, y = x.to(device), y.to(device)
            loss = w + ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
        """
    )
    result = migrate_source(source, "stochastic", "t.py")
    assert "gen.dtype" not in result.code
    assert "w = torch.zeros((), device=device, dtype=torch.bfloat16)" in result.code


def test_integer_comparison_and_index_uses_are_no_way_in():
    """An integer arange used as indices, a random mask compared to a probability, an embedding's
    input: none carries a floating dtype into the graph."""
    source, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = torch.nn.Embedding(16, 8)
                self.pos = torch.nn.Embedding(16, 8)

            def forward(self, idx):
                positions = torch.arange(idx.shape[1], device=idx.device)
                keep = torch.rand(idx.shape, device=idx.device) < 0.9
                return (self.tok(idx) + self.pos(positions)) * keep.unsqueeze(-1)
        """
    )
    assert codes(result) == []
    assert "model.to(torch.bfloat16)" in result.code


def test_a_tensor_returned_by_a_helper_is_cast_where_it_meets_what_it_is_added_to():
    """The helper's line knows no dtype; its value, followed into `forward`, meets `x` (BFM087)."""
    _, result = migrate(
        """
        def positions(n, d, device):
            return torch.arange(n, device=device).float().unsqueeze(1) / d


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(8, 8)

            def forward(self, x):
                return self.proj(x + positions(x.shape[1], 8, x.device))
        """
    )
    assert "return self.proj(x + positions(x.shape[1], 8, x.device).to(x.dtype))" in result.code
    assert "return torch.arange(n, device=device).float().unsqueeze(1) / d" in result.code
    assert [(d.code, d.fixed, d.line) for d in result.diagnostics if d.code.startswith("BFM08")] == [
        ("BFM087", True, 18)
    ]


def test_a_tensor_returned_where_it_cannot_be_followed_is_bf16_on_the_xla_device_at_run_time():
    """``positions(...)`` leaves the model in its output tuple: nothing tells the dtype it meets, but it is a fresh
    floating tensor, bf16 on the XLA device under the switch whoever reads it. It goes through ``bf16_on_xla``
    where it is made (the switch's own rule at run time). A file that keeps a module f32 on purpose (``.float()``
    by name) keeps the switch and names the line: a bf16 value handed to that module would raise."""
    body = """
        def positions(n, d, device):
            return torch.arange(n, device=device).float().unsqueeze(1) / d


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(8, 8)

            def forward(self, x):
                return self.proj(x), positions(x.shape[1], 8, x.device)
        """
    _, result = migrate(body)
    cst.parse_module(result.code)
    assert "    return bf16_on_xla(torch.arange(n, device=device).float()).unsqueeze(1) / d\n" in result.code
    assert "def bf16_on_xla(tensor):" in result.code
    assert [(d.code, d.fixed) for d in result.diagnostics if d.code.startswith("BFM08")] == [("BFM080", True)]
    assert migrate_source(result.code, "stochastic", "t.py").code == result.code
    source = HEADER + textwrap.dedent(body) + TRAIN.format(model="Net()", optimizer="torch.optim.SGD")
    kept = migrate_source(source + "model.proj.float()\n", "stochastic", "t.py")
    assert kept.code == source + "model.proj.float()\n"
    assert [(d.code, d.fixed) for d in kept.diagnostics if d.code.startswith("BFM08")] == [
        ("BFM085", False),
        ("BFM081", False),
    ]
    lost = next(d.message for d in kept.diagnostics if d.code == "BFM081")
    assert "leaves what can be followed at `self.proj(x), positions(x.shape[1], 8, x.device)` (line 18)" in lost


def test_an_island_that_reaches_a_layer_is_cast_back_where_it_meets_it():
    """`h` meets the bf16 weight of `self.out` (on the XLA device an f32 input makes the dot f32):
    cast back there (BFM088), as the legacy run computed that matmul."""
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.out = torch.nn.Linear(8, 4)

            def forward(self, x):
                h = x.float()
                return self.out(h).to(x.dtype)
        """
    )
    assert "return self.out(h.to(self.out.weight.dtype)).to(x.dtype)" in result.code
    assert codes(result) == ["BFM088"]


def test_an_f32_matmul_of_two_upcast_operands_keeps_the_switch():
    """No bf16 operand to cast back to: the f32 matmul is the code's own choice of cost (BFM084)."""
    source, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.out = torch.nn.Linear(8, 4)

            def forward(self, x):
                h = x.float()
                return self.out((h @ h.transpose(-2, -1)).to(x.dtype) @ x)
        """
    )
    assert result.code == source
    assert codes(result) == ["BFM085", "BFM084"]


def test_an_island_that_casts_back_is_kept_and_reported():
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.weight = torch.nn.Parameter(torch.ones(8))

            def forward(self, x):
                h = x.to(torch.float32)
                h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
                return self.weight * h.type_as(x)
        """
    )
    assert "h = x.to(torch.float32)" in result.code
    island = next(d for d in result.diagnostics if d.code == "BFM082")
    assert island.fixed and "casts back at `h.type_as(x)`" in island.message


def test_an_optimizer_class_of_the_file_makes_its_scalars_in_the_parameters_dtype():
    """Without a tensor whose device it is made on, a step's scalar takes the first parameter's."""
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x):
                return self.lin(x)


        class NormalisedSGD(torch.optim.Optimizer):
            def __init__(self, params, lr=0.1):
                super().__init__(params, dict(lr=lr))

            @torch.no_grad()
            def step(self):
                total = torch.zeros(())
                for group in self.param_groups:
                    for p in group["params"]:
                        total += p.grad.norm()
                for group in self.param_groups:
                    for p in group["params"]:
                        p.add_(p.grad / (total + 1e-6), alpha=-group["lr"])
        """,
        optimizer="NormalisedSGD",
    )
    assert 'total = torch.zeros((), dtype=self.param_groups[0]["params"][0].dtype)' in result.code


def test_an_optimizer_s_state_made_on_its_parameter_s_device_takes_that_parameter_s_dtype():
    """A hand-written optimizer's state, made in its step beside torch.optim's own loop and stored in
    ``self.state[p]`` before it meets the gradient (``torch.zeros(p.shape, device=p.device)``), was refused
    (BFM081: it met ``group["beta"]``, a hyperparameter, "whose dtype is known nowhere"); the switch made it
    bf16 with the parameters, so it takes ``p.dtype`` (FP32 on master weights in gpu-compatible mode)."""
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x):
                return self.lin(x)


        class SignMomentum(torch.optim.Optimizer):
            def __init__(self, params, lr=1e-3, beta=0.9):
                super().__init__(params, dict(lr=lr, beta=beta))

            @torch.no_grad()
            def step(self):
                for group in self.param_groups:
                    beta = group["beta"]
                    for p in group["params"]:
                        state = self.state[p]
                        if "m" not in state:
                            state["m"] = torch.zeros(p.shape, device=p.device)
                        state["m"].mul_(beta).add_(p.grad, alpha=1 - group["beta"])
                        p.add_(state["m"].sign(), alpha=-group["lr"])
        """,
        optimizer="SignMomentum",
    )
    assert 'state["m"] = torch.zeros(p.shape, device=p.device, dtype=p.dtype)' in result.code
    assert not [d.code for d in result.diagnostics if not d.fixed], result.diagnostics


def test_amp_leaves_the_models_code_to_autocast():
    source, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x):
                return self.lin(x) + torch.zeros(8, device=x.device)


        def train(model, x):
            return model(x).sum()
        """,
        mode="amp",
    )
    assert "torch.zeros(8, device=x.device)" in result.code and codes(result) == []


def test_under_xla_downcast_bf16_f64_was_f32_and_stays_so():
    """XLA_DOWNCAST_BF16 kept f64 as f32 on the device: `.double()` becomes `.float()` (BFM048), the `.float()`
    of such a value took it back to a float32 label, bf16 on the device, so it becomes `.to(torch.bfloat16)`
    (BFM048 cast_back), and a tensor made before `.double()` (bf16 on the device, then f32) now starts in the dtype it
    meets and becomes f32 as it did. Under XLA_USE_BF16 (f64 was bf16 too) the fresh tensor and its `.double()`
    follow what they meet."""
    body = """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(8, 8)

            def forward(self, x):
                h = self.lin(x)
                return h * h.double().mean().float() + torch.ones(8, device=x.device).double()
        """
    source, use = migrate(body)
    downcast = migrate_source(source.replace("XLA_USE_BF16", "XLA_DOWNCAST_BF16"), "stochastic", "t.py")
    expected = "h * h.float().mean().to(torch.bfloat16) + torch.ones(8, device=x.device, dtype=h.dtype).float()"
    assert expected in downcast.code
    assert any(
        d.code == "BFM048" and "back to float32, which the switch made bf16" in d.message for d in downcast.diagnostics
    )
    assert [d.code for d in downcast.diagnostics if d.code.startswith("BFM08")] == ["BFM080"]
    # under XLA_USE_BF16 `h.double()` is an island that leaves the model (nothing calls it here): one
    # finding for the chain
    assert use.code == source and codes(use) == ["BFM085", "BFM083"]
    _, fresh = migrate(body.replace("h * h.double().mean().float() + ", "h + "))
    assert "return h + torch.ones(8, device=x.device, dtype=h.dtype).to(h.dtype)" in fresh.code


MILESTONE_PENALTY = """import os
import torch
import torch_xla

os.environ["XLA_DOWNCAST_BF16"] = "1"

device = torch_xla.device()
model = torch.nn.Linear(8, 8).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(4):
    pred = model(torch.randn(4, 8).to(device))
    loss = pred.pow(2).mean()
    d2 = pred.double().diff(n=2, dim=1)
    loss = loss + 0.1 * d2.pow(2).mean().float()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_the_float_of_a_value_the_double_idiom_computed_is_its_way_back_to_bf16():
    """``d2 = pred.double().diff(...)`` then ``d2.pow(2).mean().float()`` under XLA_DOWNCAST_BF16: the penalty was
    computed in float32 (float64 on the device) and its ``.float()`` made it a float32 label again, bf16 there; kept
    as a deliberate f32 (BFM089) it made the loss f32 where the legacy run's was bf16 (a hunt's milestone penalty)."""
    result = migrate_source(MILESTONE_PENALTY, "stochastic", "train.py")
    cst.parse_module(result.code)
    assert "    d2 = pred.float().diff(n=2, dim=1)\n" in result.code
    assert "    loss = loss + 0.1 * d2.pow(2).mean().to(torch.bfloat16)\n" in result.code
    assert "BFM089" not in [d.code for d in result.diagnostics]


def test_stage_script_writes_a_migrated_module_into_the_copy_never_through_a_link(tmp_path):
    src = tmp_path / "src"
    (src / "pkg").mkdir(parents=True)
    (src / "train.py").write_text("import pkg.opt\n")
    (src / "pkg" / "opt.py").write_text("legacy = 1\n")
    (src / "pkg" / "other.py").write_text("other = 1\n")
    (src / "data.txt").write_text("x")
    staged = stage_script(
        "import pkg.opt\n# migrated\n", src / "train.py", tmp_path / "copy", {src / "pkg" / "opt.py": "new = 1\n"}
    )
    assert (staged.parent / "pkg" / "opt.py").read_text() == "new = 1\n"
    assert (src / "pkg" / "opt.py").read_text() == "legacy = 1\n"  # the original tree is untouched
    # the rest is a working copy (bf16_migrate.verify.workcopy): copies, not links, so a run writes none of the
    # user's files (they were symlinks: hunt9 G14)
    for name in ("pkg/other.py", "data.txt"):
        assert (staged.parent / name).is_file() and not (staged.parent / name).is_symlink(), name
        (staged.parent / name).write_text("a run's write\n")
    assert (src / "pkg" / "other.py").read_text() == "other = 1\n" and (src / "data.txt").read_text() == "x"
    assert not (staged.parent / "pkg").is_symlink()


def test_verify_migrates_the_modules_the_script_imports():
    """`verify SCRIPT` runs what the rewrite writes: the sibling optimizer's migrated text, with
    its findings among the migration's."""
    from bf16_migrate.rules import mode_named
    from bf16_migrate.verify import _migrate

    script = CASES_DIR / "lamb_sibling" / "train.py"
    migrated = _migrate(script.read_text(), mode_named("stochastic"), script)
    code, diagnostics, modules = migrated.code, migrated.diagnostics, migrated.modules
    assert "model.to(torch.bfloat16)" in code
    ((module, text),) = modules.items()
    assert module == (CASES_DIR / "lamb_sibling" / "lamb_opt.py").resolve()
    assert "dtype=first.dtype" in text
    assert [d.code for d in diagnostics if d.path.endswith("lamb_opt.py")].count("BFM080") == 3


MIXED_DOT = """HloModule m, entry_computation_layout={(f32[4,4]{1,0}, bf16[4,4]{1,0})->f32[4,4]{1,0}}

ENTRY %m (p0: f32[4,4], p1: bf16[4,4]) -> f32[4,4] {
  %p0 = f32[4,4]{1,0} parameter(0)
  %p1 = bf16[4,4]{1,0} parameter(1)
  %dot.1 = f32[4,4]{1,0} dot(f32[4,4]{1,0} %p0, bf16[4,4]{1,0} %p1), lhs_contracting_dims={1}
  %dot.2 = f32[4,4]{1,0} dot(f32[4,4]{1,0} %p0, f32[4,4]{1,0} %dot.1), lhs_contracting_dims={1}
  ROOT %dot.3 = bf16[4,4]{1,0} dot(bf16[4,4]{1,0} %p1, bf16[4,4]{1,0} %p1), lhs_contracting_dims={1}
}"""


def test_a_dot_of_f32_and_bf16_counts_as_an_f32_matmul():
    stats = hlo_stats(MIXED_DOT)
    assert (stats.matmuls, stats.matmuls_bf16, stats.matmuls_f32, stats.matmuls_other) == (3, 1, 1, 1)
    assert stats.matmuls_with_f32 == stats.f32_matmuls == 2


# -- the loss the step applies to the model's output (python/loss_reach.py) ----------------------

LOSS_HEADER = HEADER + "import torch.nn.functional as F\n"
ENCODER = """
class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x)
"""


def migrate_step(body: str, mode: str = "stochastic"):
    """A script: ``Encoder``, then ``body`` (the loss code and the training loop)."""
    source = LOSS_HEADER + ENCODER + textwrap.dedent(body)
    return source, migrate_source(source, mode, "t.py")


def findings(result) -> list[tuple[str, bool, int]]:
    return [(d.code, d.fixed, d.line) for d in result.diagnostics if d.code.startswith("BFM08")]


NT_XENT_STEP = """
def nt_xent(z1, z2, temperature):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = z.shape[0]
    sim = z @ z.T / temperature
    sim = sim - torch.eye(n, device=z.device) * 1e4
    targets = torch.arange(n, device=z.device).roll(n // 2)
    return F.cross_entropy(sim, targets)


def agreement(z1, z2):
    return (z1.argmax(-1) == z2.argmax(-1)).float().mean()


def main():
    device = torch_xla.device()
    model = Encoder().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(4, 8, device=device)
        z1 = model(x)
        z2 = model(x.flip(0))
        loss = nt_xent(z1, z2, 0.2)
        print(agreement(z1, z2).item())
        loss.backward()
        optimizer.step()
"""


def test_a_loss_function_the_step_calls_is_audited_as_forward_is():
    """NT-Xent's mask made without a dtype was bf16 under the switch; left f32 it would promote the
    logits, the softmax and the cross-entropy to f32. The integer targets stay integer, and a metric
    of the output that never reaches the loss is not the loss's code: the audit leaves it, and the
    script's own device tensors make it bf16 as the switch did (every call of ``agreement`` hands it
    the model's outputs, on the device: BFM154)."""
    source, result = migrate_step(NT_XENT_STEP)
    assert "sim = sim - torch.eye(n, device=z.device, dtype=sim.dtype) * 1e4" in result.code
    assert "targets = torch.arange(n, device=z.device).roll(n // 2)" in result.code
    assert "return (z1.argmax(-1) == z2.argmax(-1)).to(torch.bfloat16).mean()" in result.code
    assert findings(result) == [("BFM080", True, 21)]
    assert "`(z1.argmax(-1) == z2.argmax(-1)).float()` makes a fresh floating tensor" in " ".join(
        d.message for d in result.diagnostics if d.code == "BFM154"
    )
    assert "in `nt_xent`" in next(d.message for d in result.diagnostics if d.code == "BFM080")


def test_the_loss_code_is_found_through_an_alias_a_partial_and_a_train_step_that_returns_it():
    """``loss_fn = functools.partial(...)`` and a ``train_step`` whose caller runs backward: the
    value leaves the step function by its ``return``, so what leads there is the loss."""
    body = NT_XENT_STEP.replace(
        "def main():", "def train_step(model, x):\n    return loss_fn(model(x), model(x.flip(0)))\n\n\ndef main():"
    )
    body = body.replace("        loss = nt_xent(z1, z2, 0.2)\n", "        loss = train_step(model, x)\n")
    body = body.replace("def main():", "loss_fn = functools.partial(nt_xent, temperature=0.2)\n\n\ndef main():", 1)
    _, result = migrate_step("import functools\n" + body)
    assert "torch.eye(n, device=z.device, dtype=sim.dtype)" in result.code
    assert [code for code, _, _ in findings(result)] == ["BFM080"]


def test_a_criterion_class_builds_its_one_hot_in_the_logits_dtype_not_the_labels():
    """A label-smoothing criterion's one-hot from ``torch.zeros`` takes the logits' dtype: the
    labels it is scattered by are indices (``[flow.index_methods]``) and decide no dtype; an
    ``F.one_hot(...).float()`` is a fresh tensor that follows too."""
    _, result = migrate_step(
        """
        class SmoothedCE(torch.nn.Module):
            def __init__(self, classes, eps=0.1):
                super().__init__()
                self.classes = classes
                self.eps = eps

            def forward(self, logits, target):
                one_hot = torch.zeros(logits.shape, device=logits.device).scatter_(1, target.unsqueeze(1), 1.0)
                soft = one_hot * (1 - self.eps) + self.eps / self.classes
                hard = F.one_hot(target, self.classes).float()
                return -((soft + hard) * F.log_softmax(logits, -1)).sum(-1).mean()


        def main():
            device = torch_xla.device()
            model = Encoder().to(device)
            criterion = SmoothedCE(8).to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            x = torch.randn(4, 8, device=device)
            y = torch.randint(0, 8, (4,), device=device)
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        """
    )
    made = "torch.zeros(logits.shape, device=logits.device, dtype=logits.dtype)"
    assert f"one_hot = {made}.scatter_(1, target.unsqueeze(1), 1.0)" in result.code
    assert "hard = F.one_hot(target, self.classes).to(logits.dtype)" in result.code
    assert "criterion(model(x.to(torch.bfloat16)), y)" in result.code  # integer labels untouched
    assert [code for code, fixed, _ in findings(result) if fixed] == ["BFM080", "BFM080"]


STEP_TENSOR = """
def main():
    device = torch_xla.device()
    model = Encoder().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    running = torch.zeros((), device=device)
    for step in range(3):
        x = torch.randn(4, 8, device=device)
        z = model(x)
        sim = z @ z.T
        logits = sim - torch.eye(4, device=device) * 1e4
        loss = F.cross_entropy(logits, torch.arange(4, device=device))
        loss.backward()
        optimizer.step()
        running += loss.detach()
"""


def test_a_tensor_the_step_makes_on_the_device_on_the_way_to_the_loss_follows():
    """``torch.eye(4, device=device)`` between the model call and the loss meets the logits: it takes
    their dtype. The input made on the device, the integer targets and the loss accumulator (written
    into, it never reaches the loss) are no way in to the loss."""
    _, result = migrate_step(STEP_TENSOR)
    assert "logits = sim - torch.eye(4, device=device, dtype=sim.dtype) * 1e4" in result.code
    # the input and the accumulator are the script's own device tensors (BFM154, test_device_tensors.py):
    # the input bf16 as the switch made it, the accumulator of what `.backward()` is called on the
    # mode's FP32 one
    assert "x = torch.randn(4, 8, device=device, dtype=torch.bfloat16)\n" in result.code
    assert "F.cross_entropy(logits, torch.arange(4, device=device))" in result.code
    assert "running = torch.zeros((), device=device, dtype=torch.float32)\n" in result.code
    assert findings(result) == [("BFM080", True, 26)]
    # at module level too (a script without functions)
    flat = textwrap.dedent("\n".join(STEP_TENSOR.splitlines()[2:]))
    _, module_level = migrate_step(flat)
    assert "logits = sim - torch.eye(4, device=device, dtype=sim.dtype) * 1e4" in module_level.code
    assert "in `<module>`" in next(d.message for d in module_level.diagnostics if d.code == "BFM080")


def test_a_step_tensor_made_before_what_it_meets_is_cast_where_it_meets_it():
    """`mask` is made before `sim` is bound: no dtype is known at its line; at `sim - mask` there is."""
    _, result = migrate_step(
        STEP_TENSOR.replace("    running = ", "    mask = torch.eye(4, device=device) * 1e4\n    running = ").replace(
            "sim - torch.eye(4, device=device) * 1e4", "sim - mask"
        )
    )
    assert "mask = torch.eye(4, device=device) * 1e4\n" in result.code  # the audit's: not BFM154's
    assert "logits = sim - mask.to(sim.dtype)" in result.code
    assert [(code, fixed) for code, fixed, _ in findings(result)] == [("BFM087", True)]


def test_a_loss_target_made_on_the_device_is_left_to_the_input_casts():
    """A class weight given to a loss call with the model's output is a floating loss argument the
    input casts handle (``.to(torch.bfloat16)``): the audit adds nothing of its own there."""
    _, result = migrate_step(
        STEP_TENSOR.replace(
            "F.cross_entropy(logits, torch.arange(4, device=device))",
            "F.cross_entropy(z, torch.arange(4, device=device), weight=torch.ones(8, device=device))",
        )
    )
    assert "weight=torch.ones(8, device=device).to(torch.bfloat16))" in result.code
    # `logits` no longer reaches the loss: the mask is no way in for the audit, but a device tensor
    # of the script's own (BFM154)
    assert "sim - torch.eye(4, device=device, dtype=torch.bfloat16) * 1e4" in result.code
    assert findings(result) == []


CRITERION = """
        class Criterion(torch.nn.Module):
            def __init__(self):
                super().__init__()
                {state}

            def forward(self, logits, target):
                return F.cross_entropy(logits, target)


        def main(device_of):
            device = torch_xla.device()
            model = Encoder().to(device)
            criterion = Criterion().to({device})
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            loss = criterion(model(torch.randn(4, 8).to(device)), torch.randint(0, 8, (4,)).to(device))
            loss.backward()
            optimizer.step()
        """

STATES = [
    'self.register_buffer("weights", torch.ones(8))',
    "self.head = torch.nn.Linear(8, 8)",
    "self.ce = torch.nn.CrossEntropyLoss(weight=torch.ones(8))",
]


@pytest.mark.parametrize("state", STATES)
def test_a_criterion_keeping_tensors_of_its_own_is_cast_with_the_model(state):
    """``model.to`` does not cast the criterion: its buffer, layer or class weight would stay f32
    where the switch made it bf16 (measured: a weighted cross-entropy criterion left f32 crashes the
    migrated step on the XLA CPU device, "mixed precision is disallowed"). Put on the device by the
    script itself, it is cast right after (BFM086 fixed); amp leaves it FP32 with the model."""
    source, result = migrate_step(CRITERION.format(state=state, device="device"))
    assert "    criterion = Criterion().to(device)\n    criterion.to(torch.bfloat16)\n" in result.code
    assert ("BFM086", True) in [(code, fixed) for code, fixed, _ in findings(result)]
    assert not [code for code, fixed, _ in findings(result) if not fixed]
    _, amp = migrate_step(CRITERION.format(state=state, device="device"), mode="amp")
    assert "criterion.to(torch.bfloat16)" not in amp.code


@pytest.mark.parametrize("state", STATES)
def test_a_criterion_on_a_device_the_code_does_not_tell_keeps_the_switch(state):
    """The same criterion moved to a device the code does not tell: the switch is kept and the line
    named (BFM151, as for any module on such a device)."""
    source, result = migrate_step(CRITERION.format(state=state, device="device_of(model)"))
    assert result.code == source
    assert [(d.code, d.line, d.fixed) for d in result.diagnostics] == [("BFM151", 6, False), ("BFM151", 29, False)]
    assert "`criterion` is moved to `device_of(model)`" in result.diagnostics[1].message


def test_a_criterion_without_tensors_of_its_own_is_not_cast():
    """A stateless criterion (a torch loss without a weight) keeps nothing the switch made bf16."""
    source = CRITERION.format(state="self.ce = torch.nn.CrossEntropyLoss(label_smoothing=0.1)", device="device")
    _, plain = migrate_step(source)
    assert findings(plain) == [] and "model.to(torch.bfloat16)" in plain.code
    assert "criterion.to(torch.bfloat16)" not in plain.code


def test_the_loss_a_script_imports_from_its_tree_is_audited_in_the_module(tmp_path):
    """``from contrastive_losses import AlignmentPenalty, recall_at_1, symmetric_info_nce``: the
    function and the criterion class the step applies are audited in the module (migrated with the
    script, BFM014); the metric the loop prints is not (its accuracy, made on the device from a
    comparison, is bf16 as the switch made it: the script's own device tensors, BFM154).
    ``temperature``, a parameter nothing uses as a tensor, gives no dtype (``temperature.dtype``
    would fail on a float): the mask takes the logits'."""
    tree = _tree("loss_module", tmp_path)
    outcome = _migrate_tree("loss_module", "stochastic", tmp_path)
    module = (tree / "contrastive_losses.py").read_text()
    assert "margin = 0.2 * torch.eye(logits.shape[0], device=logits.device, dtype=logits.dtype) / temperature" in module
    assert "torch.arange(self.dim, device=queries.device).to(queries.dtype)" in module
    assert "return hits.to(torch.bfloat16).mean()" in module
    codes = [(d.code, d.fixed) for d in outcome.diagnostics if d.path.endswith("contrastive_losses.py")]
    assert codes == [("BFM014", True), ("BFM080", True), ("BFM080", True), ("BFM154", True)]


def test_a_parameter_used_as_a_number_is_no_dtype_to_take():
    """``margin`` and ``temperature`` are used only in arithmetic: as likely Python floats, they
    decide no dtype and promote nothing; the flow goes on to the logits they meet after."""
    _, result = migrate_step(
        NT_XENT_STEP.replace(
            "sim = sim - torch.eye(n, device=z.device) * 1e4",
            "sim = sim - torch.eye(n, device=z.device) * margin / temperature",
        ).replace("def nt_xent(z1, z2, temperature):", "def nt_xent(z1, z2, temperature, margin=None):")
    )
    assert "torch.eye(n, device=z.device, dtype=sim.dtype) * margin / temperature" in result.code


def test_an_upcast_in_the_loss_is_kept_as_written_and_amp_leaves_the_loss_to_autocast():
    """``sim.float()`` in a loss function was a no-op under the switch; it never meets the bf16 stream
    (it ends in the loss and its backward), so it is kept in f32 as written and reported (BFM089), as
    the same upcast written in the training loop is (one rule: :mod:`.deliberate_f32`). amp applies
    no audit: autocast runs the losses in f32 itself."""
    body = NT_XENT_STEP.replace("return F.cross_entropy(sim, targets)", "return F.cross_entropy(sim.float(), targets)")
    _, result = migrate_step(body)
    assert "return F.cross_entropy(sim.float(), targets)" in result.code and "model.to(torch.bfloat16)" in result.code
    assert [code for code, _, _ in findings(result)] == ["BFM080", "BFM089"]
    inline = NT_XENT_STEP.replace("loss = nt_xent(z1, z2, 0.2)", "loss = F.mse_loss(z1.float(), z2.float())")
    _, loop = migrate_step(inline)
    assert "loss = F.mse_loss(z1.float(), z2.float())" in loop.code and "model.to(torch.bfloat16)" in loop.code
    assert [(code, fixed) for code, fixed, _ in findings(loop)] == [("BFM089", True), ("BFM089", True)]
    _, amp = migrate_step(NT_XENT_STEP, mode="amp")
    assert "torch.eye(n, device=z.device) * 1e4" in amp.code and findings(amp) == []


def test_amp_puts_the_steps_loss_under_the_autocast_of_its_forward_pass():
    """The loss is what autocast runs in f32 where it should (the forward pass and the loss,
    PyTorch's torch.amp documentation): the region of each model call runs to the statement on the
    way to the loss (``nt_xent`` is no loss by its name), the two calls' regions made one; the print
    and backward stay out."""
    _, amp = migrate_step(NT_XENT_STEP, mode="amp")
    region = """        with torch.autocast("xla", dtype=torch.bfloat16):
            z1 = model(x)
            z2 = model(x.flip(0))
            loss = nt_xent(z1, z2, 0.2)
        print(agreement(z1, z2).item())
        loss.backward()
"""
    assert region in amp.code and amp.code.count("torch.autocast(") == 1


# -- a tensor made in forward and handed to a submodule (an RNN's initial state) ------------------


def test_an_lstm_state_beside_an_expression_takes_the_parameters_dtype(tmp_path):
    """The encoder's `(h0, c0)` meets the LSTM's bf16 parameters: beside an expression (the projected
    history, not hoisted into a name) the state takes `next(self.lstm.parameters()).dtype`, correct
    for any module; the refiner's state, handed as `hx=` through a name beside the plain name `seq`,
    takes `seq.dtype` (torch requires an LSTM's input in its parameters' dtype)."""
    tree = _tree("lstm_forecaster", tmp_path)
    outcome = _migrate_tree("lstm_forecaster", "stochastic", tmp_path)
    text = (tree / "train.py").read_text()
    parameters = "dtype=next(self.lstm.parameters()).dtype)"
    assert f"h0 = torch.zeros(self.layers, batch, self.hidden, device=history.device, {parameters}" in text
    assert f"c0 = torch.zeros(self.layers, batch, self.hidden, device=history.device, {parameters}" in text
    assert "h0 = torch.zeros(1, seq.size(0), self.hidden, device=seq.device, dtype=seq.dtype)" in text
    assert "c0 = torch.zeros(1, seq.size(0), self.hidden, device=seq.device, dtype=seq.dtype)" in text
    assert [d.line for d in outcome.diagnostics if d.code == "BFM080" and d.fixed] == [31, 32, 45, 46]
    assert not any(d.code in ("BFM081", "BFM085") for d in outcome.diagnostics)


def test_a_gru_state_alone_and_an_explicit_float32_take_the_plain_input_beside():
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.gru = torch.nn.GRU(8, 8, batch_first=True)
                self.cell = torch.nn.LSTMCell(8, 8)

            def forward(self, x):
                h0 = torch.zeros(1, x.size(0), 8, device=x.device)
                out, _ = self.gru(x, h0)
                h = torch.zeros(x.size(0), 8, device=x.device, dtype=torch.float32)
                c = torch.zeros(x.size(0), 8, device=x.device)
                h, c = self.cell(out[:, -1], hx=(h, c))
                return h
        """
    )
    assert "h0 = torch.zeros(1, x.size(0), 8, device=x.device, dtype=x.dtype)" in result.code
    assert "h = torch.zeros(x.size(0), 8, device=x.device, dtype=next(self.cell.parameters()).dtype)" in result.code
    assert "c = torch.zeros(x.size(0), 8, device=x.device, dtype=next(self.cell.parameters()).dtype)" in result.code
    assert codes(result) == ["BFM080"] * 3 and 'XLA_USE_BF16"' not in result.code


@pytest.mark.parametrize(
    "forward",
    [
        # `x` holds token ids at the state's line and the embedding only at the call
        "h0 = torch.zeros(1, x.size(0), 8, device=x.device)\n"
        "                x = self.embed(x)\n"
        "                return self.rnn(x, h0)[0]",
        # a PackedSequence has no `.dtype`
        "packed = pack_padded_sequence(self.embed(x), lengths, batch_first=True)\n"
        "                h0 = torch.zeros(1, x.size(0), 8, device=x.device)\n"
        "                return self.rnn(packed, h0)[0]",
    ],
)
def test_a_state_beside_a_rebound_or_packed_input_takes_the_parameters_dtype(forward):
    _, result = migrate(
        f"""
        from torch.nn.utils.rnn import pack_padded_sequence


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(16, 8)
                self.rnn = torch.nn.GRU(8, 8, batch_first=True)

            def forward(self, x, lengths=None):
                {forward}
        """
    )
    assert "h0 = torch.zeros(1, x.size(0), 8, device=x.device, dtype=next(self.rnn.parameters()).dtype)" in result.code
    assert codes(result) == ["BFM080"]


def test_a_state_handed_to_a_module_class_of_the_file_takes_its_parameters_dtype_never_its_input():
    """A module of the file may take token ids beside the state (`self.step(tokens, h0)`): the
    parameters' form, never `tokens.dtype`."""
    _, result = migrate(
        """
        class Step(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(16, 8)
                self.rnn = torch.nn.GRUCell(8, 8)

            def forward(self, tokens, h):
                return self.rnn(self.embed(tokens), h)


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.step = Step()

            def forward(self, tokens):
                h0 = torch.zeros(tokens.size(0), 8, device=tokens.device)
                return self.step(tokens, h0)
        """
    )
    assert "h0 = torch.zeros(tokens.size(0), 8, device=tokens.device, dtype=next(self.step.parameters()).dtype)" in (
        result.code
    )
    assert codes(result) == ["BFM080"]


RNN_STATE = """
def make_rnn():
    return torch.nn.{layer}(8, 8, batch_first=True)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = {built}

    def forward(self, x):
        h0 = torch.zeros(1, x.size(0), 8, device=x.device)
        return {call}
"""


@pytest.mark.parametrize(
    "built, after",
    [
        ("torch.nn.LSTM(8, 8, batch_first=True)", "model.rnn.float()\n"),  # kept f32 on purpose
        ("torch.nn.LSTM(8, 8, batch_first=True)", "model.rnn.to(dtype=torch.float32)\n"),
    ],
)
def test_a_state_handed_to_a_submodule_the_cast_may_not_reach_keeps_the_switch(built, after):
    body = RNN_STATE.format(layer="LSTM", built=built, call="self.rnn(x, (h0, h0))")
    source = HEADER + body + TRAIN.format(model="Net()", optimizer="torch.optim.SGD") + after
    result = migrate_source(source, "stochastic", "t.py")
    assert sorted(codes(result)) == ["BFM081", "BFM085"]
    assert result.code == source  # nothing half done: the switch stays, the state is left as it is


@pytest.mark.parametrize("built", ["torch.nn.GRU(8, 8, batch_first=True)", "make_rnn()"])
def test_a_state_handed_to_a_submodule_of_unknown_parameters_is_bf16_on_the_xla_device_at_run_time(built):
    """A state handed to a submodule whose parameters the file does not show (built by a function of the file)
    takes no carrier's dtype: under the switch it was bf16 on the XLA device whatever it met, so it goes through
    ``bf16_on_xla`` where it is made (it was refused, the switch kept, though the model cast reaches the
    submodule). A recurrent torch.nn layer still takes its input's dtype (the carrier)."""
    body = RNN_STATE.format(layer="GRU", built=built, call="self.rnn(x, h0)[0]")
    source = HEADER + body + TRAIN.format(model="Net()", optimizer="torch.optim.SGD")
    result = migrate_source(source, "stochastic", "t.py")
    cst.parse_module(result.code)
    if built == "make_rnn()":
        assert "        h0 = bf16_on_xla(torch.zeros(1, x.size(0), 8, device=x.device))\n" in result.code
    else:
        assert "        h0 = torch.zeros(1, x.size(0), 8, device=x.device, dtype=x.dtype)\n" in result.code
    assert codes(result) == ["BFM080"]


# -- on the XLA CPU device -----------------------------------------------------------------------

DTYPES_PROBE = textwrap.dedent(
    """
    import torch, torch_xla
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.register_buffer("persistent", torch.ones(4))
            self.register_buffer("nonpersistent", torch.ones(4), persistent=False)
            self.plain = torch.ones(4)
            self.cache = None
        def forward(self, x):
            if self.cache is None:
                self.cache = torch.ones(4, device=x.device)
            return self.lin(x) + torch.zeros(4, device=x.device)
    device = torch_xla.device()
    m = M().to(device).to(torch.bfloat16)
    out = m(torch.ones(2, 4, device=device, dtype=torch.bfloat16))
    made = torch.zeros(4, device=device)
    hlo = torch_xla._XLAC._get_xla_tensors_hlo([out, made])
    print({k: str(getattr(m, k).dtype) for k in ("persistent", "nonpersistent", "plain", "cache")})
    print("out", out.dtype, "made-in-hlo", "f32[4]" in hlo, "bf16[4]" in hlo)
    """
)


def _probe(env_extra: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_USE_BF16", "XLA_DOWNCAST_BF16")}
    env.update(PJRT_DEVICE="CPU", **env_extra)
    proc = subprocess.run([sys.executable, "-c", DTYPES_PROBE], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.xla
@pytest.mark.xla_full  # a probe of torch-xla itself, not of this tool: run with `-m xla_full`
def test_what_model_to_casts_on_the_xla_device():
    """Measured, torch-xla 2.9: `model.to(torch.bfloat16)` casts buffers, persistent or not; a plain
    tensor attribute, a tensor cached on the first forward and one made in forward stay f32 (the
    forward's output becomes f32: type promotion). Under XLA_USE_BF16 the same tensor made on the
    device is bf16 in the graph."""
    migrated = _probe({})
    assert "'persistent': 'torch.bfloat16', 'nonpersistent': 'torch.bfloat16'" in migrated
    assert "'plain': 'torch.float32', 'cache': 'torch.float32'" in migrated
    assert "out torch.float32 made-in-hlo True" in migrated
    legacy = _probe({"XLA_USE_BF16": "1"})
    assert "made-in-hlo False True" in legacy  # f32 on the device is bf16 in the legacy graph


def _verify_json(script: Path, mode: str, tmp_path: Path, env: dict[str, str] | None = None) -> tuple[int, dict, str]:
    out = tmp_path / f"{script.parent.name}-{mode}.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bf16_migrate.cli",
            "verify",
            str(script),
            "--mode",
            mode,
            "--steps",
            "12",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    return proc.returncode, json.loads(out.read_text()), proc.stdout + proc.stderr


@pytest.mark.xla
@pytest.mark.parametrize(
    "mode",
    [
        # CI verifies gpu-compatible, where the step runs on FP32 master weights and the scalars
        # follow them; stochastic runs with `-m xla_full`
        pytest.param("stochastic", marks=pytest.mark.xla_full),
        "gpu-compatible",
    ],
)
def test_verify_proves_the_sibling_optimizers_migration(mode, tmp_path):
    """The migrated run stages the migrated lamb_opt.py (scalars in the parameters' dtype; in
    gpu-compatible mode the step runs on the FP32 master weights, and the scalars follow them) and
    matches the legacy run; nothing is left to do but the docstring, and the step graph has no f32
    matmul. (amp leaves the optimizer to the FP32 model: its golden shows no change.)"""
    code, data, output = _verify_json(CASES_DIR / "lamb_sibling" / "train.py", mode, tmp_path)
    statuses = {p["name"]: p["status"] for p in data["parts"]}
    assert statuses == dict.fromkeys(("runs", "trains", "precision", "matches", "graph", "trace"), "PASS"), output
    assert sum(1 for d in data["diagnostics"] if d["code"] == "BFM080" and d["path"].endswith("lamb_opt.py")) == 3
    assert_no_silent_f32_matmul(data)
    assert code == 0, output


@pytest.mark.xla
@pytest.mark.parametrize(
    "case, follows",
    [
        ("contrastive_fn", 2),  # CI: a loss function's mask and a tensor the loop makes
        pytest.param("smoothed_criterion", 1, marks=pytest.mark.xla_full),  # a criterion class's one-hot
    ],
)
def test_verify_proves_the_migration_of_the_steps_loss(case, follows, tmp_path):
    """The loss's tensors take the dtype they meet (BFM080): the stochastic migration matches the
    legacy run, its step graph has every matmul bf16 (measured: contrastive_fn 19 of 19,
    smoothed_criterion 9 of 9) and its exponentials as the legacy run's, bf16 (5 and 2), nothing
    left to do but the docstring."""
    code, data, output = _verify_json(CASES_DIR / case / "train.py", "stochastic", tmp_path)
    statuses = {p["name"]: p["status"] for p in data["parts"]}
    assert statuses == dict.fromkeys(("runs", "trains", "precision", "matches", "graph", "trace"), "PASS"), output
    assert [d["code"] for d in data["diagnostics"] if d["code"] == "BFM080"] == ["BFM080"] * follows
    assert left_to_do(data) == []
    assert_no_silent_f32_matmul(data)
    assert_no_silent_f32_softmax(data)
    assert data["runs"]["migrated"]["graph"]["exponentials"] == data["runs"]["legacy"]["graph"]["exponentials"]
    assert code == 0, output


@pytest.mark.xla
def test_verify_proves_the_lstm_states_migration(tmp_path):
    """The LSTM states made in forward take the parameters' dtype (the encoder) and the plain input's
    (the refiner): the migrated run matches the legacy one, nothing is left to do but the docstring,
    and the step graph has no f32 matmul. One mode in CI (stochastic: the model cast with stochastic
    rounding; gpu-compatible writes the same states, amp leaves them to autocast: the goldens)."""
    code, data, output = _verify_json(CASES_DIR / "lstm_forecaster" / "train.py", "stochastic", tmp_path)
    statuses = {p["name"]: p["status"] for p in data["parts"]}
    assert statuses == dict.fromkeys(("runs", "trains", "precision", "matches", "graph", "trace"), "PASS"), output
    assert sum(1 for d in data["diagnostics"] if d["code"] == "BFM080" and d["fixed"]) == 4
    assert_no_silent_f32_matmul(data)
    assert code == 0, output


@pytest.mark.xla
def test_verify_proves_the_timestep_embeddings_migration(tmp_path):
    """A timestep embedding made from integer timesteps in a helper the model calls: nothing in it carries the
    model's dtype, so its fresh floating tensors go through ``bf16_on_xla`` (the switch was kept for it, BFM081).
    On the device the migrated run trains, its parameters and matmuls are bf16 and the trace finds no f32 the
    legacy run did not have."""
    code, data, output = _verify_json(CASES_DIR / "timestep_embedding" / "train.py", "stochastic", tmp_path)
    statuses = {p["name"]: p["status"] for p in data["parts"]}
    for part in ("runs", "trains", "precision", "graph", "trace"):
        assert statuses[part] == "PASS", output
    assert statuses["matches"] != "FAIL", output
    assert sum(1 for d in data["diagnostics"] if d["code"] == "BFM080" and d["fixed"]) == 2
    assert not [d for d in data["diagnostics"] if not d["fixed"]], output
    assert_no_silent_f32_matmul(data)


@pytest.mark.xla
@pytest.mark.xla_full  # the negative control of the test above: `-m xla_full`
@pytest.mark.parametrize("case", ["contrastive_fn", "smoothed_criterion"])
def test_the_loss_migrated_without_the_audit_says_nothing_is_left_and_computes_it_in_f32(case, tmp_path):
    """Why the loss is audited. Migrated without it (the audit's emit taken out of the rules, and the
    device-tensors rule's, which since reads the same masks where the loss function makes them on
    the device: with it alone the migration is right, verify PASS), the rewrite leaves nothing to do
    but the docstring, every matmul stays bf16, and yet the loss the run backpropagates is f32 where
    the legacy run's is bf16 (measured: verify's precision part FAILs, and matches: 0 of the first 3
    steps the same, median rel. diff 0.0058 / 0.0053)."""
    env = {**os.environ, "BF16_MIGRATE_RULES_DIR": str(audit_off_rules(tmp_path, also=("device-tensors",)))}
    code, data, output = _verify_json(CASES_DIR / case / "train.py", "stochastic", tmp_path, env=env)
    assert left_to_do(data) == []
    assert data["runs"]["migrated"]["graph"]["f32_matmuls"] == 0
    statuses = {p["name"]: p["status"] for p in data["parts"]}
    assert statuses["precision"] == "FAIL" and "backpropagates is f32" in output, output
    assert code == 1


@pytest.mark.xla
@pytest.mark.parametrize("mode", ["stochastic", pytest.param("gpu-compatible", marks=pytest.mark.xla_full)])
def test_verify_proves_the_leaky_norms_migration(mode, tmp_path):
    """The norm's f32 kept as written and cast back where it leaves the submodule (BFM088): the
    migrated run trains, every matmul of its step graph is bf16 (14 of 14), and, its norm's numbers
    f32 where the legacy run's were bf16, its losses are judged by their drift alone (measured 12
    steps: stochastic median rel. diff 0.0042, gpu-compatible 0.0048, limit 0.013)."""
    code, data, output = _verify_json(CASES_DIR / "leaky_norm" / "train.py", mode, tmp_path)
    statuses = {p["name"]: p["status"] for p in data["parts"]}
    assert statuses == dict.fromkeys(("runs", "trains", "precision", "matches", "graph", "trace"), "PASS"), output
    assert left_to_do(data) == []
    assert_no_silent_f32_matmul(data)
    assert "f32 kept where the script asks for it" in output
    assert code == 0, output


@pytest.mark.xla
def test_the_leaky_norm_migrated_without_the_audit_says_nothing_is_left_and_crashes(tmp_path):
    """Why the switch is kept. Migrated without the audit (its emit taken out of the rules), the
    rewrite leaves nothing to do but the docstring, and the migrated run dies at the first sync:
    the norm's f32 output meets the bf16 layer after it, which torch-xla 2.9's HLO verifier rejects
    ("mixed precision is disallowed"; measured), while the legacy run trains."""
    env = {**os.environ, "BF16_MIGRATE_RULES_DIR": str(audit_off_rules(tmp_path))}
    tree = _tree("leaky_norm", tmp_path)
    rewrite = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", str(tree), "--output-format", "json"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    found = json.loads(rewrite.stdout)["diagnostics"]
    assert [d["code"] for d in found if not d["fixed"]] == ["BFM091"]
    assert "model.to(torch.bfloat16)" in (tree / "train.py").read_text()
    out = tmp_path / "verify.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", "verify", str(CASES_DIR / "leaky_norm" / "train.py"), "--steps", "6"]
        + ["--json", str(out)],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    # a migration that breaks a script the legacy run trains is a failed check (exit 1), not a run that
    # could not be made (exit 2)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "mixed precision is disallowed" in proc.stdout and "the legacy run succeeded" in proc.stdout
    assert "VERDICT: FAIL" in proc.stdout
    assert json.loads(out.read_text())["error"]["broke"] is True


def test_the_float_of_a_bitwise_mask_is_a_fresh_tensor_not_a_deliberate_island():
    """`pairs = ((a > b) & valid).float()` in a loss helper: `&` is defined for boolean and integer
    tensors only, so the mask is fresh, bf16 under the switch; it was kept f32 as if the script had
    asked for it (BFM089), making a ranking loss f32 (bench/unseen/hunt9 ltr_sbatch)."""
    source = HEADER + textwrap.dedent(
        """
        def ranknet(scores, rel, valid):
            better = (rel[:, :, None] > rel[:, None, :]) & valid[:, :, None] & ~valid[:, None, :]
            diff = scores[:, :, None] - scores[:, None, :]
            pairs = better.float()
            return (torch.nn.functional.softplus(-diff) * pairs).sum() / pairs.sum().clamp_min(1.0)


        device = torch_xla.device()
        model = torch.nn.Linear(4, 1).to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            x = torch.randn(2, 5, 4).to(device)
            rel = torch.randint(0, 4, (2, 5)).to(device)
            valid = torch.ones(2, 5, dtype=torch.bool).to(device)
            loss = ranknet(model(x).squeeze(-1), rel, valid)
            loss.backward()
            optimizer.step()
        """
    )
    result = migrate_source(source, "stochastic", "t.py")
    assert "    pairs = better.to(diff.dtype)\n" in result.code
    assert "BFM089" not in [d.code for d in result.diagnostics]


def test_bernoulli_takes_no_dtype_and_is_cast_after():
    """``torch.bernoulli`` has no ``dtype=`` (torch 2.9: ``(input, *, generator, out)``): a stochastic-depth
    mask ``torch.bernoulli(torch.full(..., p, device=h.device))`` in ``forward`` is made bf16 by a cast after
    it, never by a keyword it would reject with a TypeError at the first forward (found by a hunt)."""
    source = (
        "import os\nimport torch\nimport torch_xla\nos.environ['XLA_USE_BF16'] = '1'\n\n\n"
        "class Block(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = torch.nn.Linear(8, 8)\n\n"
        "    def forward(self, h):\n        out = self.lin(h)\n"
        "        keep = torch.bernoulli(torch.full((h.shape[0], 1), 0.8, device=h.device))\n"
        "        return h + out * keep\n\n\n"
        "model = Block().to(torch_xla.device())\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model(torch.randn(4, 8).to(torch_xla.device())).sum().backward()\nopt.step()\n"
    )
    code = migrate_source(source, "stochastic", "train.py").code
    assert "torch.bernoulli(torch.full((h.shape[0], 1), 0.8, device=h.device, dtype=out.dtype)).to(out.dtype)" in code
    assert migrate_source(code, "stochastic", "train.py").code == code


POSITIONAL_TABLE = """import math
import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla


class PositionalEncoding(nn.Module):
    def __init__(self, d, max_len=32):
        super().__init__()
        pos = torch.arange(max_len).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2) * (-math.log(10000.0) / d))
        pe = torch.zeros(max_len, d)
        pe[:, 0::2] = torch.sin(pos * div)
        pe[:, 1::2] = torch.cos(pos * div)
        self.pe = pe

    def forward(self, x):
        return x + self.pe[: x.size(1)].to(x.device)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.pos = PositionalEncoding(16)
        self.out = nn.Linear(16, 5)

    def forward(self, ids):
        return self.out(self.pos(self.emb(ids)))


def main():
    device = torch_xla.device()
    model = Tagger().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    ids = torch.randint(0, 50, (8, 12)).to(device)
    tags = torch.randint(0, 5, (8, 12)).to(device)
    for step in range(3):
        loss = nn.functional.cross_entropy(model(ids).reshape(-1, 5), tags.reshape(-1))
        loss.backward()
        optimizer.step()
"""


@pytest.mark.parametrize("mode", ["stochastic", "gpu-compatible"])
def test_the_textbook_positional_table_kept_as_a_plain_attribute_is_read_in_the_dtype_it_meets(mode):
    """``pe = torch.zeros(n, d)`` filled in place, then ``self.pe = pe`` (not a buffer: ``model.to`` leaves
    it f32), read as ``x + self.pe[:t].to(x.device)`` in a submodule's ``forward``: under the switch the
    move made it bf16; left f32 it made the residual stream f32 and the next Linear raised (found by
    writing one). The submodule's ``x`` is the embedding's output, not the integer ids the model is
    called with: only the forward of the class the model is built from takes what its calls hand it."""
    result = migrate_source(POSITIONAL_TABLE, mode, "train.py")
    assert "        return x + self.pe.to(x.dtype)[: x.size(1)].to(x.device)\n" in result.code
    assert [d.code for d in result.diagnostics if d.code.startswith("BFM08")] == ["BFM080"]
    assert migrate_source(result.code, mode, "train.py").code == result.code


@pytest.mark.parametrize(
    "made, cast",
    [
        (
            "torch.arange(t, device=ids.device)[:, None] / 100.0",
            "(torch.arange(t, device=ids.device)[:, None] / 100.0)",
        ),
        ("torch.arange(t, device=ids.device)[:, None] * 0.01", "(torch.arange(t, device=ids.device)[:, None] * 0.01)"),
        ("torch.arange(t, device=ids.device)[:, None] / t", "(torch.arange(t, device=ids.device)[:, None] / t)"),
    ],
)
def test_an_integer_tensor_made_floating_by_arithmetic_takes_the_dtype_it_meets(made, cast):
    """``torch.arange(t)[:, None] / 100.0`` (or ``* 0.01``, or ``/ t`` of a Python int) in ``forward``: by
    type promotion a fresh f32 tensor, bf16 under the switch; left f32 it made the residual stream f32
    and the Linear after it raised (a hunt's position table). The whole result is cast, parenthesised.
    An integer times an integer stays an integer and is left."""
    _, result = migrate(
        f"""
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.tok = torch.nn.Embedding(10, 8)
                self.lin = torch.nn.Linear(8, 1)

            def forward(self, ids):
                t = ids.shape[1]
                pos = {made}
                twice = torch.arange(t, device=ids.device) * 2
                return self.lin(self.tok(ids + twice[None, :] % 10) + pos.sin()).mean()
        """
    )
    assert f"        pos = {cast}.to(self.tok.weight.dtype)\n" in result.code
    assert "        twice = torch.arange(t, device=ids.device) * 2\n" in result.code
    assert codes(result) == ["BFM080"]
    again = migrate_source(result.code, "stochastic", "t.py")
    assert again.code == result.code


def test_a_float_made_from_an_integer_factory_by_an_upcast_is_no_promotion_after_it():
    """``phase = torch.arange(w).float() * c`` then ``h + 0.1 * torch.sin(phase)``: the upcast is the site
    (it takes the dtype it meets); what follows it is floating, so ``0.1 * sin(phase)`` is not another
    integer made floating (it got a needless second cast: a hunt's forecaster)."""
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(8, 1)

            def forward(self, h):
                phase = torch.arange(h.shape[1], device=h.device).float() * 0.5
                h = h + 0.1 * torch.sin(phase)[None, :, None]
                return self.lin(h).mean()
        """
    )
    assert "        phase = torch.arange(h.shape[1], device=h.device).to(h.dtype) * 0.5\n" in result.code
    assert "        h = h + 0.1 * torch.sin(phase)[None, :, None]\n" in result.code


NOISY_ROUND = """import os
os.environ["XLA_USE_BF16"] = "1"
import torch
import torch.nn as nn
import torch_xla


class NoisyRound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        noise = torch.rand(x.shape, device=x.device) - 0.5
        ctx.save_for_backward(noise)
        return torch.round(x * scale + noise) / scale

    @staticmethod
    def backward(ctx, g):
        (noise,) = ctx.saved_tensors
        return g * (1 + 0 * noise), None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 8)
        self.b = nn.Linear(8, 1)

    def forward(self, x):
        return self.b(NoisyRound.apply(self.a(x), 16.0))


device = torch_xla.device()
model = Net().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loss = model(torch.randn(8, 4).to(device)).pow(2).mean()
loss.backward()
opt.step()
"""


def test_the_context_of_an_autograd_function_is_no_tensor_to_take_a_dtype_from():
    """``ctx`` of a ``torch.autograd.Function``'s ``forward`` is a context object: the noise it saves took
    ``dtype=ctx.dtype`` (AttributeError at run time, bench/unseen/hunt22 autograd_fn_ctx_dtype); it takes
    the dtype of the input it meets."""
    code = migrate_source(NOISY_ROUND, "stochastic", "train.py").code
    assert "noise = torch.rand(x.shape, device=x.device, dtype=x.dtype) - 0.5\n" in code
    assert "ctx.dtype" not in code
    assert migrate_source(code, "stochastic", "train.py").code == code


def test_a_causal_mask_made_in_forward_takes_the_attention_layers_parameters_dtype():
    """A transformer's causal mask made in ``forward`` (``nn.Transformer.generate_square_subsequent_mask``, or
    ``torch.full(..., -inf).triu(1)``) was bf16 under the switch and stays f32 after it unless given a dtype
    (a hunt's seq2seq: verify's trace named its ``torch.triu``, BFM201, after a migration with 0 left to do).
    Handed to an attention layer of torch.nn (``tgt_mask=``, ``attn_mask=``), it meets that layer's parameters:
    their dtype. A mask handed to a module of unknown parameters goes through ``bf16_on_xla``."""
    _, result = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = torch.nn.Embedding(16, 8)
                self.tf = torch.nn.Transformer(8, nhead=2, num_encoder_layers=1, num_decoder_layers=1)
                self.attn = torch.nn.MultiheadAttention(8, 2, batch_first=True)

            def forward(self, src, tgt):
                mask = torch.nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], device=src.device)
                h = self.tf(self.embed(src), self.embed(tgt), tgt_mask=mask)
                causal = torch.full((h.shape[1], h.shape[1]), float("-inf"), device=h.device).triu(1)
                return self.attn(h, h, h, attn_mask=causal)[0]
        """
    )
    parameters = "dtype=next(self.tf.parameters()).dtype"
    assert f"generate_square_subsequent_mask(tgt.shape[1], device=src.device, {parameters})" in result.code
    assert 'float("-inf"), device=h.device, dtype=next(self.attn.parameters()).dtype).triu(1)' in result.code
    assert codes(result) == ["BFM080", "BFM080"], result.code
    _, unknown = migrate(
        """
        class Net(torch.nn.Module):
            def __init__(self, block):
                super().__init__()
                self.block = block

            def forward(self, x):
                mask = torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
                return self.block(x, mask)
        """
    )
    mask = "bf16_on_xla(torch.nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device))"
    assert codes(unknown) == ["BFM080"] and mask in unknown.code, unknown.code


HOST_BATCH = """\
import os
import numpy as np
import torch
import torch.nn as nn
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def batch(n, rng):
    if n == 0:
        return torch.from_numpy(np.zeros((0, 4)))
    return torch.from_numpy(rng.normal(size=(n, 4)))


def main():
    device = torch_xla.device()
    model = nn.Linear(4, 4).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x0 = batch(16, rng).float().to(device)
        loss = (model(x0 * 2) - x0).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


main()
"""


def test_an_upcast_of_a_host_batch_a_function_of_the_file_returns_is_no_device_upcast():
    """``batch(16, rng).float().to(device)`` of a function whose every ``return`` is ``torch.from_numpy(...)``:
    the ``.float()`` runs on the host, as under the switch, and the move is made bf16 (BFM154). It was taken for
    a device upcast leaking into the bf16 stream (BFM083) and the switch was kept (a hunt's DDPM)."""
    result = migrate_source(HOST_BATCH, "stochastic", "t.py")
    assert not [d.code for d in result.diagnostics if not d.fixed], [d.message for d in result.diagnostics]
    assert "        x0 = batch(16, rng).float().to(device, dtype=torch.bfloat16)\n" in result.code
    returning_a_device_tensor = HOST_BATCH.replace("np.zeros((0, 4)))", "np.zeros((0, 4))).to('xla')")
    kept = migrate_source(returning_a_device_tensor, "stochastic", "t.py")
    assert "BFM085" in [d.code for d in kept.diagnostics], kept.code


TIMESTEPS = """\
import math
import os
import torch
import torch.nn as nn
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class Denoiser(nn.Module):
    def __init__(self, width=16, tdim=8):
        super().__init__()
        self.tdim = tdim
        self.temb = nn.Sequential(nn.Linear(tdim, width), nn.SiLU())
        self.body = nn.Linear(width, width)

    def forward(self, x, t):
        return self.body(x + self.temb(timestep_embedding(t, self.tdim)))


def main():
    device = torch_xla.device()
    model = Denoiser().to(device)
    opt = torch.optim.Adam(model.parameters())
    for _ in range(3):
        x = torch.randn(4, 16, device=device)
        t = torch.randint(0, 50, (4,), device=device)
        loss = model(x, t).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


main()
"""


def test_a_timestep_embedding_made_from_integers_and_python_floats_takes_no_number_s_dtype():
    """``-math.log(10000.0) * torch.arange(half, device=d) / half`` makes a fresh f32 tensor from an integer one
    (a Python float: ``math.log`` returns one), and ``half = dim // 2`` is a number: neither is a tensor whose
    dtype the embedding could take. It took ``freqs.dtype`` (f32: the migrated run crashed at the next layer, a
    hunt's DDPM), then ``half.dtype`` (an AttributeError), then the switch was kept (BFM081). The embedding leaves
    the function, where nothing tells its dtype: each fresh floating tensor it is made from goes through
    ``bf16_on_xla``, bf16 on the XLA device as the switch made it."""
    result = migrate_source(TIMESTEPS, "stochastic", "t.py")
    cst.parse_module(result.code)
    assert "half.dtype" not in result.code and "freqs.dtype" not in result.code, result.code
    for line in (
        "    freqs = torch.exp(bf16_on_xla(-math.log(10000.0) * torch.arange(half, device=t.device)) / half)\n",
        "    args = bf16_on_xla(t[:, None].float()) * freqs[None]\n",
    ):
        assert line in result.code, result.code
    assert not [d.code for d in result.diagnostics if not d.fixed], [d.message for d in result.diagnostics]
    assert 'os.environ["XLA_USE_BF16"]' not in result.code


SAMPLER = """\
import os
import torch
import torch.nn as nn
import torch_xla

os.environ["XLA_USE_BF16"] = "1"


def make_schedule(steps):
    betas = torch.linspace(1e-4, 0.02, steps, dtype=torch.float64)
    return {"betas": betas, "keep": (1.0 - betas).sqrt()}


def extract(table, t, shape):
    out = table.gather(0, t.cpu()).float()
    return out.reshape(t.shape[0], *([1] * (len(shape) - 1))).to(t.device)


@torch.no_grad()
def sample(model, sched, n, device):
    x = torch.randn(n, 8, device=device)
    for i in reversed(range(10)):
        t = torch.full((n,), i, device=device, dtype=torch.long)
        eps = model(x)
        mean = extract(sched["keep"], t, x.shape) * (x - extract(sched["betas"], t, x.shape) * eps)
        x = mean + extract(sched["betas"], t, x.shape).sqrt() * torch.randn_like(x)
    return x


def main():
    device = torch_xla.device()
    model = nn.Linear(8, 8).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = make_schedule(10)
    for _ in range(3):
        x = torch.randn(4, 8).to(device)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(sample(model, sched, 2, device).cpu())


main()
"""


def test_a_function_of_the_file_that_casts_or_moves_does_not_hand_on_its_arguments_dtype():
    """``extract(table, t, shape)`` gathers from a float64 table on the host, upcasts and moves the result to the
    device: its result does not have the table's dtype. Taken to carry it, a sampler's noise took
    ``sched["keep"].dtype`` (float64 on the device, a hunt's DDPM: verify's trace named the sampler's line); the
    noise made on the device is bf16, as the switch made it."""
    result = migrate_source(SAMPLER, "stochastic", "t.py")
    cst.parse_module(result.code)
    assert 'sched["keep"].dtype' not in result.code, result.code
    assert "    x = torch.randn(n, 8, device=device, dtype=torch.bfloat16)\n" in result.code, result.code
    assert not [d.code for d in result.diagnostics if not d.fixed], [d.message for d in result.diagnostics]


def test_under_the_downcast_switch_a_float64_module_keeps_the_run_time_cast_out():
    """Under XLA_DOWNCAST_BF16 a module built in float64 is float32 after the migration (the switch's rule): a
    value lost toward what it meets might be handed to it, where bf16 would raise, so the switch is kept and the
    line named (BFM081); without such a module the value goes through ``bf16_on_xla``."""
    body = """
        def positions(n, d, device):
            return torch.arange(n, device=device).float().unsqueeze(1) / d


        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(8, 8{dtype})

            def forward(self, x):
                return self.proj(x), positions(x.shape[1], 8, x.device)
        """
    train = TRAIN.format(model="Net()", optimizer="torch.optim.SGD")
    header = HEADER.replace("XLA_USE_BF16", "XLA_DOWNCAST_BF16")
    plain = migrate_source(header + textwrap.dedent(body.format(dtype="")) + train, "stochastic", "t.py")
    assert "bf16_on_xla(torch.arange(n, device=device).float())" in plain.code, plain.code
    source = header + textwrap.dedent(body.format(dtype=", dtype=torch.float64")) + train
    kept = migrate_source(source, "stochastic", "t.py")
    assert kept.code == source
    assert ("BFM081", False) in [(d.code, d.fixed) for d in kept.diagnostics], [d.message for d in kept.diagnostics]
