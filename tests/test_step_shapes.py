"""Shapes of a training step a hunt of our own found the rewrite missing (each checked on the XLA
CPU device with verify before and after; the scripts are ours): a loss helper named for no loss,
a model output meeting a target in its own statement, a model's own method run outside ``forward``,
a window function made in ``forward``. Under the legacy switch every floating tensor on the device
was bf16 (torch-xla ``torch_xla/csrc/dtype.cpp``); each shape left f32 (or FP32 in amp) computes in
f32 where the legacy run computed in bf16, or crashes."""

from __future__ import annotations

import libcst as cst

from bf16_migrate.python import migrate_source

HEAD = """import os
import torch
import torch.nn as nn
import torch_xla

os.environ["XLA_USE_BF16"] = "1"
"""


def _migrate(body: str, mode: str = "stochastic") -> str:
    result = migrate_source(HEAD + body, mode, "train.py")
    cst.parse_module(result.code)
    assert migrate_source(result.code, mode, "train.py").code == result.code  # a second run changes nothing
    return result.code


HELPER_LOSS = """

def gaussian_nll(mean, log_var, target):
    return (0.5 * log_var + (target - mean) ** 2 / (2 * log_var.exp())).mean()


def main():
    device = torch_xla.device()
    model = nn.Linear(3, 2).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(3):
        x = torch.randn(16, 3).to(device)
        y = torch.randn(16, 1).to(device)
        scale = 0.5
        loss = gaussian_nll(*model(x).chunk(2, dim=-1), y) * scale
        loss.backward()
        optimizer.step()
"""


def test_a_loss_helper_named_for_no_loss_gets_its_target_cast():
    """``gaussian_nll`` is the loss because ``backward`` is called on what it returns: its target
    is cast like a loss call's, the model's output left alone."""
    code = _migrate(HELPER_LOSS)
    assert "loss = gaussian_nll(*model(x.to(torch.bfloat16)).chunk(2, dim=-1), y.to(torch.bfloat16)) * scale" in code


def test_a_helper_whose_result_is_not_backpropagated_is_no_loss():
    """The same helper as a metric (its result printed, another value backpropagated): no loss."""
    body = HELPER_LOSS.replace(
        "        loss = gaussian_nll(*model(x).chunk(2, dim=-1), y) * scale\n        loss.backward()\n",
        "        print(gaussian_nll(*model(x).chunk(2, dim=-1), y).item())\n        model(x).sum().backward()\n",
    )
    assert body != HELPER_LOSS
    code = _migrate(body)
    assert "print(gaussian_nll(*model(x.to(torch.bfloat16)).chunk(2, dim=-1), y).item())" in code


def test_a_target_in_the_model_calls_own_statement_is_cast():
    code = _migrate(
        """

def main():
    device = torch_xla.device()
    model = nn.Linear(4, 4).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        x = torch.randn(8, 4).to(device)
        loss = (model(x) - x).pow(2).mean()
        loss.backward()
        optimizer.step()
"""
    )
    # `x`, the model's input and the loss's target, is cast where it is moved to the device
    assert "        x = torch.randn(8, 4).to(device, dtype=torch.bfloat16)\n" in code
    assert "loss = (model(x) - x).pow(2).mean()" in code


METHOD = """

class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 2)
        self.dec = nn.Linear(2, 8)

    def decode(self, z):
        return self.dec(z)

    def forward(self, x):
        return self.decode(self.enc(x))


def main():
    device = torch_xla.device()
    model = AutoEncoder().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(3):
        x = torch.randn(4, 8).to(device)
        loss = torch.nn.functional.mse_loss(model(x), x)
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        samples = model.decode(torch.randn(2, 2).to(device))
    print(samples.cpu())
"""


def test_a_models_own_method_gets_its_inputs_cast_in_the_bf16_modes():
    """``model.decode(z)`` runs the bf16 model without the forward pre-hook: its floating input
    is cast there (left f32 it crashes the bf16 layer)."""
    code = _migrate(METHOD)
    assert "samples = model.decode(torch.randn(2, 2).to(device).to(torch.bfloat16))" in code


def test_a_models_own_method_runs_under_autocast_in_amp():
    code = _migrate(METHOD, "amp")
    lines = [line.strip() for line in code.splitlines()]
    at = lines.index("samples = model.decode(torch.randn(2, 2).to(device))")
    assert lines[at - 1] == 'with torch.autocast("xla", dtype=torch.bfloat16):'


def test_a_method_called_in_a_condition_is_reported_and_the_rest_migrated():
    body = METHOD.replace(
        "        samples = model.decode(torch.randn(2, 2).to(device))\n",
        "        if model.decode(torch.randn(2, 2).to(device)).mean() > 0:\n            print('positive')\n"
        "        samples = torch.zeros(1)\n",
    )
    result = migrate_source(HEAD + body, "amp", "train.py")
    assert 'with torch.autocast("xla", dtype=torch.bfloat16):' in result.code
    assert [(d.code, d.fixed) for d in result.diagnostics if d.code == "BFM030"] == [("BFM030", False)]
    assert "XLA_USE_BF16" not in result.code.split('"""')[-1]


def test_a_window_made_in_forward_follows_what_it_meets():
    """``torch.hann_window(n, device=...)`` makes f32 without ``dtype=`` (torch docs): in a bf16
    model it crashed the migrated run (verify exit 2); it now takes the frames' dtype."""
    code = _migrate(
        """

class Frontend(nn.Module):
    def __init__(self, n=8):
        super().__init__()
        self.n = n
        self.proj = nn.Linear(n, 3)

    def forward(self, wav):
        frames = wav.unfold(-1, self.n, self.n // 2)
        window = torch.hann_window(self.n, device=wav.device)
        return self.proj(frames * window).mean(1)


def main():
    device = torch_xla.device()
    model = Frontend().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        loss = model(torch.randn(4, 32).to(device)).pow(2).mean()
        loss.backward()
        optimizer.step()
"""
    )
    assert "window = torch.hann_window(self.n, device=wav.device, dtype=frames.dtype)" in code


def test_an_autograd_functions_backward_is_the_models_code():
    """A ``torch.autograd.Function`` the model applies runs its ``backward`` in the step: its fresh
    ``.float()`` was bf16 under the switch. Read with the model's code, it follows what it meets: the
    tensors the forward saved (``ctx.saved_tensors``) and the gradient ``backward`` is handed have
    the model's dtype (torch docs, "Extending torch.autograd"); what it cannot tell keeps the switch,
    named. Never left to compute in f32 silently (a hunt of our own found the f32 gradient)."""
    body = """

class ClipSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(x, s)
        return torch.clamp(x, -1, 1) * s

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        inside = (x.abs() <= 1).float()
        return grad * inside * s, (grad * x).sum().reshape(1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.s = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return ClipSTE.apply(self.lin(x), self.s)


def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(4, 8).to(device)).pow(2).mean()
    loss.backward()
    optimizer.step()
"""
    result = migrate_source(HEAD + body, "stochastic", "train.py")
    codes = [(d.code, d.fixed, d.line) for d in result.diagnostics if d.code in ("BFM080", "BFM081", "BFM085")]
    assert codes == [("BFM080", True, 18)]
    assert "        inside = (x.abs() <= 1).to(grad.dtype)\n" in result.code  # the first it meets: the gradient
    assert 'os.environ["XLA_USE_BF16"] = "1"' not in result.code
    # tensors kept as attributes of ctx (not saved) cannot be told, but the gradient it meets first can: its
    # dtype, whatever precision the file keeps a module in (`model.lin.float()`: no bf16 value forced on it)
    attributes = body.replace("x, s = ctx.saved_tensors", "x, s = ctx.x, ctx.s")
    kept = attributes.replace("    optimizer = torch", "    model.lin.float()\n    optimizer = torch")
    for text in (attributes, kept):
        result = migrate_source(HEAD + text, "stochastic", "train.py")
        codes = [(d.code, d.fixed, d.line) for d in result.diagnostics if d.code in ("BFM080", "BFM081", "BFM085")]
        assert codes == [("BFM080", True, 18)]
        assert "        inside = (x.abs() <= 1).to(grad.dtype)\n" in result.code


GENERATE = """

class TinyLM(nn.Module):
    def __init__(self, vocab=32, width=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.head = nn.Linear(width, vocab)

    def step(self, token):
        return self.head(torch.tanh(self.embed(token)))


@torch.no_grad()
def generate(lm, token, length):
    tokens = []
    for _ in range(length):
        probs = torch.softmax(lm.step(token), dim=-1)
        token = torch.multinomial(probs, 1).squeeze(1)
        tokens.append(token)
    return torch.stack(tokens, 1)


device = torch_xla.device()
model = TinyLM().to(device).eval()
print(generate(model, torch.zeros(2, dtype=torch.long, device=device), 4).cpu().tolist())
"""


def test_a_method_of_the_model_called_in_a_function_it_is_handed_to_runs_under_autocast():
    """An inference script whose model runs only through ``lm.step(token)`` in ``generate(model, ...)``:
    in amp the call goes under autocast as a forward of ``model(...)`` there would (the switch was
    removed with nothing in its place before: FP32 where the legacy run was bf16, and verify PASSed
    it). A method named ``step`` is the model's forward pass, not an optimizer's step."""
    lines = [line.strip() for line in _migrate(GENERATE, "amp").splitlines()]
    at = lines.index("probs = torch.softmax(lm.step(token), dim=-1)")
    assert lines[at - 1] == 'with torch.autocast("xla", dtype=torch.bfloat16):'
    assert "XLA_USE_BF16" not in "\n".join(lines)
    top = GENERATE.replace(
        "print(generate(model,",
        "print(model.step(torch.zeros(2, dtype=torch.long, device=device)))\nprint(generate(model,",
    )
    lines = [line.strip() for line in _migrate(top, "amp").splitlines()]
    at = lines.index("print(model.step(torch.zeros(2, dtype=torch.long, device=device)))")
    assert lines[at - 1] == 'with torch.autocast("xla", dtype=torch.bfloat16):'


THROUGH_METHODS = """

class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def nll(self, x, y):
        return 0.5 * (self.forward(x) - y).pow(2).mean()


device = torch_xla.device()
model = Regressor().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(3):
    x = torch.randn(32, 4).to(device)
    loss = model.nll(x, x.sum(1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""


def test_a_model_trained_through_its_own_method_alone_runs_under_autocast():
    """``loss = model.nll(x, y)`` is the model's only forward pass: amp wraps it (it kept the switch
    with BFM021, "never called", an untrue reason)."""
    lines = [line.strip() for line in _migrate(THROUGH_METHODS, "amp").splitlines()]
    at = lines.index("loss = model.nll(x, x.sum(1))")
    assert lines[at - 1] == 'with torch.autocast("xla", dtype=torch.bfloat16):'
    assert "XLA_USE_BF16" not in "\n".join(lines)


def test_a_backward_that_returns_f32_gradients_is_an_island_autograd_casts_back():
    """``return grad.float() * keep, None``: the engine casts each gradient a Function returns to its
    input's dtype (torch/csrc/autograd/engine.cpp, validate_outputs), so the f32 computed in ``backward``
    does not leave it; it is kept as written and reported (BFM089), not refused as lost (a hunt's
    soft-threshold activation). A mask made f32 that meets only that f32 stays f32."""
    body = """

class Shrink(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lam):
        ctx.save_for_backward(x)
        ctx.lam = lam
        return torch.sign(x) * torch.clamp(x.abs() - lam, min=0.0)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        keep = (x.float().abs() > ctx.lam).float()
        return grad_out.float() * keep, None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return Shrink.apply(self.lin(x), 0.05)


def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(4, 8).to(device)).pow(2).mean()
    loss.backward()
    optimizer.step()
"""
    result = migrate_source(HEAD + body, "stochastic", "train.py")
    codes = sorted({d.code for d in result.diagnostics})
    assert "BFM085" not in codes and "BFM083" not in codes and "BFM081" not in codes, codes
    assert "BFM089" in codes and "    model.to(torch.bfloat16)\n" in result.code
    assert "        return grad_out.float() * keep, None\n" in result.code


def test_a_fresh_tensor_meeting_an_item_of_a_dict_the_model_returns_takes_the_items_dtype():
    """The model returns ``{"logits": ..., "aux": ...}``; the loss makes ``one_hot(...).float()`` and meets
    ``out["logits"]``. The cast took ``out.dtype``, the dict's (an AttributeError at the first step after a
    rewrite that said nothing was left: a hunt's); it takes the item's."""
    body = """

class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 5)

    def forward(self, x):
        logits = self.proj(x)
        return {"logits": logits, "aux": logits.pow(2).mean()}


def soft_loss(out, labels):
    target = F.one_hot(labels, 5).float() * 0.9 + 0.02
    return -(target * F.log_softmax(out["logits"], -1)).sum(-1).mean() + 0.1 * out["aux"]


def main():
    device = torch_xla.device()
    model = Tagger().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    labels = torch.randint(0, 5, (4,)).to(device)
    loss = soft_loss(model(torch.randn(4, 8).to(device)), labels)
    loss.backward()
    optimizer.step()
"""
    source = HEAD.replace("import torch.nn as nn\n", "import torch.nn as nn\nimport torch.nn.functional as F\n") + body
    result = migrate_source(source, "stochastic", "train.py")
    assert '    target = F.one_hot(labels, 5).to(out["logits"].dtype) * 0.9 + 0.02\n' in result.code
    assert ".to(out.dtype)" not in result.code


def test_a_fresh_tensor_meeting_an_integer_input_of_the_model_takes_the_dtype_of_the_floats_it_meets():
    """``valid.float() / lengths[:, None]`` in ``forward``, where every call hands ``lengths`` an integer
    tensor: ``valid.to(lengths.dtype)`` left the mask int64 and the quotient f32, which met the bf16 head
    (a crash after a rewrite that said nothing was left: a hunt's). An integer tensor decides no floating
    dtype (type promotion keeps the float operand's): the mask takes the dtype of the embedding it meets
    after the division, bf16 as under the switch."""
    body = """

class MeanPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, ids, lengths):
        valid = torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]
        share = valid.float() / lengths[:, None]
        return self.head((share.unsqueeze(-1) * self.emb(ids)).sum(1))


def main():
    device = torch_xla.device()
    model = MeanPool().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ids = torch.randint(0, 40, (4, 6)).to(device)
    lengths = torch.tensor([6, 3, 2, 5]).to(device)
    loss = model(ids, lengths).pow(2).mean()
    loss.backward()
    optimizer.step()
"""
    result = migrate_source(HEAD + body, "stochastic", "train.py")
    assert "lengths.dtype" not in result.code and 'os.environ["XLA_USE_BF16"] = "1"' not in result.code
    assert "        share = valid.to(self.emb.weight.dtype) / lengths[:, None]\n" in result.code
    assert [d.code for d in result.diagnostics if d.code.startswith("BFM08")] == ["BFM080"]


def test_a_mask_saved_for_backward_takes_the_gradients_dtype_where_backward_meets_it():
    """A straight-through estimator makes its mask in ``forward`` (``.to(torch.float32)`` of a comparison) and
    saves it with ``ctx.save_for_backward``; ``backward`` gets it back from ``ctx.saved_tensors`` and multiplies
    the gradient by it. bf16 under the switch: it is cast to the gradient's dtype where it meets it (it was read
    as meeting ``ctx``, whose dtype is known nowhere, and the switch was kept: a hunt's quantisation-aware
    training)."""
    body = """

class RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        inside = (x.abs() <= 2).to(torch.float32)
        ctx.save_for_backward(inside)
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad):
        (inside,) = ctx.saved_tensors
        return grad * inside


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return RoundSTE.apply(self.lin(x))


def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(torch.randn(4, 8).to(device)).pow(2).mean()
    loss.backward()
    optimizer.step()
"""
    result = migrate_source(HEAD + body, "stochastic", "train.py")
    assert "        return grad * inside.to(grad.dtype)\n" in result.code, result.code
    assert 'os.environ["XLA_USE_BF16"] = "1"' not in result.code
    assert not [d for d in result.diagnostics if d.code in ("BFM081", "BFM085")]
