"""The FP32 master-weights optimizer that gpu-compatible mode writes into scripts
(``snippets.MASTER_WEIGHTS_SOURCE``), run for real: on torch's CPU device here (fast, bit-exact),
and on the XLA CPU device through the resume fixture (``-m xla``).

What it must do (Neuron's migration guide, "BF16 in GPU-compatible mode"; torch-xla's
``ZeroRedundancyOptimizer(save_master_weights=True)`` for the checkpoint): the update runs in FP32
on a master copy, the optimizer state is FP32 (also after ``load_state_dict``, which casts floating
state to each parameter's dtype), the master copy is in ``state_dict()``, and a resumed run is
bit-identical to one that never stopped.
"""

from __future__ import annotations

import io
import sys
import warnings

import pytest

from bf16_migrate.python.snippets import MASTER_WEIGHTS_SOURCE

from conftest import FIXTURES

torch = pytest.importorskip("torch")


def factory():
    namespace = {"torch": torch}
    exec(compile(MASTER_WEIGHTS_SOURCE, "<with_fp32_master_weights>", "exec"), namespace)
    return namespace["with_fp32_master_weights"]


def make_model(seed=0):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.GELU(), torch.nn.Linear(16, 3))
    return model.to(torch.bfloat16)


def groups(model, weight_decay=0.1):
    decay = [p for p in model.parameters() if p.ndim == 2]
    rest = [p for p in model.parameters() if p.ndim < 2]
    return [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0, "lr": 5e-3}]


def batches(n, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(16, 8, generator=gen).to(torch.bfloat16), torch.randint(0, 3, (16,), generator=gen))
        for _ in range(n)
    ]


def train(model, optimizer, data, scheduler=None, clip=None):
    losses = []
    for x, y in data:
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return losses


def build(optimizer_class=torch.optim.AdamW, seed=0):
    model = make_model(seed)
    optimizer = factory()(optimizer_class)(groups(model), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0 / (1 + 0.1 * step))
    return model, optimizer, scheduler


def checkpoint(model, optimizer, scheduler) -> bytes:
    buffer = io.BytesIO()
    torch.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, buffer
    )
    return buffer.getvalue()


def resume(blob: bytes, optimizer_class=torch.optim.AdamW, drop_master_weights=False):
    state = torch.load(io.BytesIO(blob), weights_only=False)
    if drop_master_weights:
        del state["optimizer"]["fp32_master_weights"]
    model, optimizer, scheduler = build(
        optimizer_class, seed=123
    )  # other initial weights: everything must come from the checkpoint
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    return model, optimizer, scheduler


@pytest.mark.parametrize("optimizer_class", [torch.optim.AdamW, torch.optim.Adam, torch.optim.SGD])
def test_resumed_run_is_bit_identical_to_one_that_never_stopped(optimizer_class):
    data = batches(12)
    model, optimizer, scheduler = build(optimizer_class)
    straight = train(model, optimizer, data, scheduler, clip=1.0)

    model, optimizer, scheduler = build(optimizer_class)
    first = train(model, optimizer, data[:5], scheduler, clip=1.0)
    blob = checkpoint(model, optimizer, scheduler)
    del model, optimizer, scheduler
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a checkpoint with master weights resumes silently
        model, optimizer, scheduler = resume(blob, optimizer_class)
        second = train(model, optimizer, data[5:], scheduler, clip=1.0)
    assert first + second == straight
    for state in optimizer.state.values():  # load_state_dict cast it to bf16 before: the crash in Adam's lerp
        assert all(
            v.dtype == torch.float32
            for k, v in state.items()
            if torch.is_tensor(v) and v.is_floating_point() and k != "step"
        )
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())


def test_checkpoint_without_master_weights_warns_once_and_loses_only_their_low_bits():
    data = batches(12)
    model, optimizer, scheduler = build()
    straight = train(model, optimizer, data, scheduler)
    model, optimizer, scheduler = build()
    first = train(model, optimizer, data[:5], scheduler)
    blob = checkpoint(model, optimizer, scheduler)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        model, optimizer, scheduler = resume(blob, drop_master_weights=True)
        second = train(model, optimizer, data[5:], scheduler)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "no FP32 master weights" in messages[0], messages
    assert first + second != straight  # the sensitivity of the test above: the low bits mattered
    assert max(abs(a - b) for a, b in zip(second, straight[5:])) < 0.05
    assert all(v.dtype == torch.float32 for s in optimizer.state.values() for k, v in s.items() if k != "step")


def test_master_weights_keep_updates_below_bf16_resolution():
    model = make_model()
    optimizer = factory()(torch.optim.SGD)(model.parameters(), lr=1e-4)
    before = [p.detach().clone() for p in model.parameters()]
    train(model, optimizer, batches(30))
    masters = optimizer.state_dict()["fp32_master_weights"]
    params = list(model.parameters())
    assert len(masters) == len(params)
    # the bf16 weights are the masters rounded, and the masters moved where bf16 alone could not
    assert all(torch.equal(masters[i].to(torch.bfloat16), p) for i, p in enumerate(params))
    moved = sum(int((masters[i] != b.float()).sum()) for i, b in enumerate(before))
    moved_bf16 = sum(int((p != b).sum()) for p, b in zip(params, before))
    assert moved > 2 * moved_bf16 > 0


def test_weights_loaded_after_the_optimizer_stepped_are_kept():
    model, optimizer, _ = build()
    train(model, optimizer, batches(3))
    other = make_model(seed=7)
    model.load_state_dict(other.state_dict())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        optimizer.zero_grad()
        model(batches(1)[0][0]).float().sum().backward()
        for group in optimizer.param_groups:
            group["lr"] = 0.0  # a step that moves nothing: what stays is what was loaded
        optimizer.step()
    assert any("changed outside the optimizer" in str(w.message) for w in caught)
    for p, q in zip(model.parameters(), other.parameters()):
        assert torch.equal(p, q)


def test_param_groups_add_param_group_closure_and_zero_grad_to_zero():
    model = make_model()
    extra = torch.nn.Parameter(torch.zeros(4, dtype=torch.bfloat16))
    fp32 = torch.nn.Parameter(torch.ones(2))
    optimizer = factory()(torch.optim.Adam)(groups(model), lr=1e-2)
    optimizer.add_param_group({"params": [extra, fp32], "lr": 1e-1})
    x, y = batches(1)[0]

    def closure():
        optimizer.zero_grad(set_to_none=False)
        loss = torch.nn.functional.cross_entropy(model(x).float(), y) + (extra.float() - 1).pow(2).sum() + fp32.sum()
        loss.backward()
        return loss

    for _ in range(3):
        loss = optimizer.step(closure)
    assert torch.is_tensor(loss)
    assert extra.dtype == torch.bfloat16 and fp32.dtype == torch.float32
    assert float(extra.detach()[0]) > 0.2 and float(fp32.detach()[0]) < 1.0
    masters = optimizer.state_dict()["fp32_master_weights"]
    index = {id(p): i for i, p in enumerate(p for g in optimizer.param_groups for p in g["params"])}
    assert index[id(extra)] in masters and index[id(fp32)] not in masters  # FP32 parameters need no copy
    assert [g["lr"] for g in optimizer.param_groups] == [1e-2, 5e-3, 1e-1]
    assert isinstance(optimizer, torch.optim.Adam) and type(optimizer).__name__ == "AdamWithFP32MasterWeights"


def test_state_made_before_the_first_step_from_the_bf16_weights_is_fp32():
    """Adagrad makes its ``sum`` in ``__init__``, from the bf16 weights: the first step makes it FP32 like the
    state an update makes itself (it stayed bf16 under the helper, and verify's precision part said so)."""
    model = make_model()
    optimizer = factory()(torch.optim.Adagrad)(model.parameters(), lr=1e-2)
    assert all(optimizer.state[p]["sum"].dtype == torch.bfloat16 for p in model.parameters())
    train(model, optimizer, batches(2))
    assert all(optimizer.state[p]["sum"].dtype == torch.float32 for p in model.parameters())
    assert all(p.dtype == torch.bfloat16 for p in model.parameters())


def test_the_helper_is_small_and_names_no_legacy_variable():
    lines = MASTER_WEIGHTS_SOURCE.strip().splitlines()
    assert len(lines) <= 100  # one screen, docstring included
    assert "XLA_" not in MASTER_WEIGHTS_SOURCE and "Neuron's migration guide" in MASTER_WEIGHTS_SOURCE


RESUME = FIXTURES / "resume_checkpoint" / "train.py"


@pytest.mark.xla
def test_resume_fixture_on_xla_continues_bit_identically(tmp_path):
    """The migrated resume fixture (gpu-compatible) on the XLA CPU device: a run preempted at
    step 8 and resumed from its checkpoint records the same loss, bit for bit, at every one of
    16 steps as a run that never stopped; its optimizer state is FP32 on the device."""
    import os

    from bf16_migrate.python import migrate_source
    from bf16_migrate.verify.runner import Workspace, run_specs, stage_script

    migrated = migrate_source(RESUME.read_text(), "gpu-compatible", str(RESUME)).code
    with Workspace() as ws:
        script = stage_script(migrated, RESUME, ws.root)
        specs = [
            ws.spec(
                name,
                script,
                RESUME,
                base_env=os.environ,
                args=["--restart-at", restart, "--checkpoint-dir", str(tmp_path / name), "--steps", "40"],
                steps=16,
                timeout=600,
                graphs=False,
            )
            for name, restart in (("straight", "0"), ("resumed", "8"))
        ]
        for spec in specs:
            (tmp_path / spec.name).mkdir()
        records = run_specs(specs, sys.executable, jobs=2)
        logs = {spec.name: spec.log.read_text() for spec in specs}
    straight, resumed = records["straight"], records["resumed"]
    assert straight.error is None and resumed.error is None, logs
    assert "resumed from" in logs["resumed"] and "master weights" not in logs["resumed"], logs["resumed"]
    assert len(straight.losses) == len(resumed.losses) == 16
    assert straight.losses == resumed.losses
    assert set(straight.device_param_dtypes or {}) == {"bf16"}, straight.device_param_dtypes
    # (recorded at the first step, before the resume; after it, bf16 state would crash Adam's lerp)
    assert set((resumed.state_dtypes or {}).get("exp_avg", {})) == {"float32/f32"}, resumed.state_dtypes


def clip_function():
    from bf16_migrate.python.snippets import FP32_GRAD_NORM_SOURCE

    namespace = {"torch": torch}
    exec(compile(FP32_GRAD_NORM_SOURCE, "<clip_grad_norm_fp32_>", "exec"), namespace)
    return namespace["clip_grad_norm_fp32_"]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
def test_fp32_clip_equals_torch_on_fp32_gradients(norm_type):
    clip = clip_function()
    gen = torch.Generator().manual_seed(3)
    a = [torch.nn.Parameter(torch.zeros(n)) for n in (300, 17, 5)]
    b = [torch.nn.Parameter(torch.zeros(n)) for n in (300, 17, 5)]
    for p, q in zip(a, b):
        p.grad = torch.randn(p.numel(), generator=gen)
        q.grad = p.grad.clone()
    ours = clip(a, 0.5, norm_type=norm_type)
    theirs = torch.nn.utils.clip_grad_norm_(b, 0.5, norm_type=norm_type)
    assert torch.allclose(ours, theirs, rtol=1e-6)
    for p, q in zip(a, b):
        assert torch.allclose(p.grad, q.grad, rtol=1e-6, atol=0)


def test_fp32_clip_takes_the_norm_of_bf16_gradients_in_fp32():
    clip = clip_function()
    gen = torch.Generator().manual_seed(0)
    params = [torch.nn.Parameter(torch.zeros(n, dtype=torch.bfloat16)) for n in (1_000_000, 4096)]
    for p in params:
        p.grad = (torch.randn(p.numel(), generator=gen) * 1e-2).to(torch.bfloat16)
    exact = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params)).item()
    bf16_norm = torch.nn.utils.clip_grad_norm_(params, 1e9).item()  # torch's, in the gradients' dtype
    ours = clip(params, 1e9)
    assert ours.dtype == torch.float32
    # FP32 accumulation over a million terms: within 1e-4 (measured 4e-5 on torch's CPU kernels,
    # 2e-8 on the XLA CPU device); the bf16 norm is off by 2e-3 here, 1e-2 on the XLA CPU device
    assert abs(ours.item() - exact) / exact < 1e-4
    assert abs(bf16_norm - exact) / exact > 10 * abs(ours.item() - exact) / exact
    assert all(p.grad.dtype == torch.bfloat16 for p in params)  # clipped in place, dtype kept
    assert float(clip([], 1.0)) == 0.0
    with pytest.raises(RuntimeError, match="non-finite"):
        bad = torch.nn.Parameter(torch.zeros(2))
        bad.grad = torch.tensor([float("nan"), 1.0])
        clip([bad], 1.0, error_if_nonfinite=True)
