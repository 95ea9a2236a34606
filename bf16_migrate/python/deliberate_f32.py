"""f32 the script asks for on purpose, once the legacy switch no longer makes it bf16.

Under ``XLA_USE_BF16`` / ``XLA_DOWNCAST_BF16`` an upcast did nothing on the device: ``x.float()``,
``x.to(torch.float32)`` and ``torch.zeros_like(p, dtype=torch.float32)`` were bf16 there
(torch_xla/csrc/dtype.cpp, ``MaybeDowncastToXlaDeviceType``). After the migration they are real f32,
as their author wrote them: an optimizer's FP32 state (the ``AdamW_FP32OptimParams`` idea of
aws-neuron-samples' dp_bert_hf_pretrain), a loss computed in f32 (``F.cross_entropy(logits.float(),
y)``), a norm's statistics, a softmax computed in f32. One rule decides them all, wherever they are
written (the model's ``forward``, a loss function, the training loop, an optimizer's ``step``):

* the f32 value is followed as far as it goes (:class:`~.meet.ValueReach`, through every op, into
  the callers, the optimizer's state). Where it **leaks into the bf16 stream** (it reaches a matmul
  or a layer, a submodule, or the output of a module of the model), the migrated run would compute
  there in f32 where the legacy run had bf16 (PyTorch's type promotion; on the XLA device an f32
  operand makes the dot f32: measured with torch-xla 2.9), so it is **cast back where it meets a
  tensor of the stream** (``attn.to(v.dtype) @ v``; the ``return`` of a submodule's ``forward``:
  to the dtype of the tensor it was upcast from): :attr:`Decision.casts`, BFM088. An f32 matmul
  of two f32 operands the code made itself (no bf16 operand to cast back to) is a choice of cost the
  code does not state: :attr:`Decision.matmul`, BFM084, the switch kept. A value that leaves what
  can be followed before it meets one: :attr:`Decision.lost`, BFM083, the switch kept.
* where it does not leak (it ends in the loss and its backward, a host value, a tensor it is written
  into, which keeps its dtype, the optimizer's state and the update written into the parameters),
  it is **kept as written**: the migrated run computes there in f32 as asked, where the legacy run
  had bf16 (:attr:`Decision.kept`, BFM089; an island that casts itself back, BFM082). verify's
  tolerances judge the difference (measured on fixtures/model_code/fp32_loss and fp32_state_adam:
  bench/RESULTS.md); its precision part counts no f32 matmul there, and accepts the f32 loss the
  migration reports.

:func:`decide` takes the sources and returns one :class:`Decision` each; the audit
(:mod:`.model_code`) plans and reports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import libcst as cst

from .meet import Cast, Reach, ValueReach
from .tensor_flow import Meet
from .unit_examples import Example, script

__all__ = ["EXAMPLES", "Decision", "Verdict", "Where", "decide", "leaks"]

_MAX_ROUNDS = 6


class Verdict(Enum):
    """What becomes of one deliberate f32 value."""

    KEPT = "kept"
    """It never meets the bf16 stream: kept in f32 as written (BFM089, or BFM082 for an island
    that casts itself back)."""
    CASTS = "casts"
    """It leaks into the stream: cast back where it meets it (BFM088)."""
    MATMUL = "matmul"
    """It reaches a matmul whose other operand is f32 too (BFM084: the switch is kept)."""
    LOST = "lost"
    """It leaves what can be followed before meeting the stream (BFM083: the switch is kept)."""


class Where(Enum):
    """Where the deliberate f32 is written, for the finding that reports it kept."""

    OPTIMIZER = "optimizer"
    LOSS = "loss"
    MODEL = "model"


@dataclass
class Decision:
    """One source of deliberate f32 (``node``: the upcast or the factory asking for f32) and what
    becomes of it (``verdict``): the ``casts`` written where it meets the stream, the node that
    decides a ``matmul`` or ``lost`` verdict (``at``), the casts back the code has itself
    (``casts_back``: an island, BFM082), ``where`` it is written, and whether anything computes on
    it (``computes``: a value only read on the host, ``loss.float().item()``, is no finding)."""

    node: cst.CSTNode
    verdict: Verdict
    where: Where
    casts: list[Cast] = field(default_factory=list)
    at: cst.CSTNode | None = None
    casts_back: list[cst.CSTNode] = field(default_factory=list)
    computes: bool = True


CarrierAt = Callable[[cst.CSTNode, Meet, frozenset[int]], "str | None"]
"""``carrier_at(source, meet, exclude)``: the code of a tensor known at ``meet.at`` whose dtype is that
of what the value meets there (never a node of ``exclude``), or None."""


def decide(
    reach: ValueReach,
    sources: list[tuple[cst.CSTNode, Where, cst.BaseExpression | None]],
    fresh: frozenset[int],
    carrier_at: CarrierAt,
) -> list[Decision]:
    """Decide each source ``(node, where, upcast_of)`` (``upcast_of``: the tensor an upcast takes,
    whose dtype a module's output is cast back to; None for a factory). ``fresh``: the nodes that
    carry the tensors the audited code makes without a dtype (they are decided on their own)."""
    region = _regions(reach, [node for node, _, _ in sources], fresh)
    return [_decide_one(reach, node, where, upcast_of, fresh, region, carrier_at) for node, where, upcast_of in sources]


def _regions(reach: ValueReach, starts: list[cst.CSTNode], fresh: frozenset[int]) -> frozenset[int]:
    """The nodes every source's f32 reaches before it meets a tensor that is not deliberate f32
    itself: what one source meets there is f32 too, and no stream to cast back to."""
    region = frozenset(id(node) for node in starts)
    for _ in range(_MAX_ROUNDS):
        grown = region | frozenset().union(*(reach.follow([s], False, fresh | region).visited for s in starts))
        if grown == region:
            break
        region = grown
    return region


def leaks(found: Reach) -> cst.CSTNode | None:
    """Where a value followed through every op (``through``) reaches the bf16 stream: a matmul or a
    layer, a submodule, a module's output, or what cannot be followed; None when it ends in the loss,
    a host value, a tensor it is written into, the optimizer's state."""
    for meet in found.meets:
        if meet.kind in ("matmul", "module"):
            return meet.at
    if found.matmuls:
        return found.matmuls[0]
    if found.exits:
        return found.exits[0]
    return found.lost[0] if found.lost else None


def _decide_one(
    reach: ValueReach,
    node: cst.CSTNode,
    where: Where,
    upcast_of: cst.BaseExpression | None,
    fresh: frozenset[int],
    region: frozenset[int],
    carrier_at: CarrierAt,
) -> Decision:
    whole = reach.follow([node], True, fresh | region)
    leak = leaks(whole)
    if leak is None:
        calls = {id(call) for call in reach.reached.model_calls}
        if any(id(flow.start) in calls for flow in whole.flows):
            where = Where.LOSS  # the model's output, f32 as written, is the loss's input
        return Decision(
            node,
            Verdict.KEPT,
            where,
            casts_back=whole.casts_back,
            computes=bool(whole.meets or whole.casts_back or len(whole.visited) > 1),
        )
    # on through the element-wise ops (they compute in f32 as written, the bf16 tensors they meet
    # promoted), to the matmuls, layers and submodules it would make f32 and the module outputs it
    # would leave in f32: cast back there
    found = reach.follow([node], False, fresh | region, matmuls=True)
    exclude = fresh | region | frozenset(found.visited)
    casts: list[Cast] = []
    for meet in found.meets:
        if meet.fresh:  # another value of the f32 regions: f32 meets f32
            if meet.kind == "matmul":
                return Decision(node, Verdict.MATMUL, where, at=meet.at)
            continue
        if meet.kind not in ("matmul", "module"):
            continue  # element-wise: computed in f32 as written, what it meets promoted
        carrier = carrier_at(node, meet, exclude)
        if carrier is None or meet.via is None:
            return Decision(node, Verdict.LOST, where, at=meet.at)
        casts.append(Cast(meet.via, carrier, meet.at))
    for ret in found.exits:
        back = _back_to(ret, upcast_of, node, carrier_at, exclude)
        if back is None:
            return Decision(node, Verdict.LOST, where, at=ret)
        casts.append(back)
    if found.lost:
        return Decision(node, Verdict.LOST, where, at=found.lost[0])
    return Decision(node, Verdict.CASTS, where, casts=casts)


def _back_to(
    ret: cst.Return,
    upcast_of: cst.BaseExpression | None,
    node: cst.CSTNode,
    carrier_at: CarrierAt,
    exclude: frozenset[int],
) -> Cast | None:
    """The cast of a submodule's output back to the dtype of the tensor the value was upcast from
    (known at the ``return``), or None."""
    if upcast_of is None or ret.value is None:
        return None
    carrier = carrier_at(node, Meet(upcast_of, ret, "arith", via=ret.value), exclude)
    return Cast(ret.value, carrier, ret) if carrier is not None else None


# -- the unit's examples (tests/test_unit_examples.py) -------------------------------------------------
_STEP = """

def main():
    device = torch_xla.device()
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 8, device=device), torch.randint(0, 4, (8,), device=device)
    for step in range(3):
        optimizer.zero_grad()
        {loss}
        loss.backward()
        optimizer.step()
"""
_NET = """
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        weights = (q @ k.transpose(-2, -1)).float().softmax(dim=-1)
        return self.head(weights @ v)
"""

EXAMPLES = (
    Example(
        "an upcast softmax that feeds a matmul",
        script(_NET),
        False,
        ("        return self.head(weights.to(self.qkv.weight.dtype) @ v)",),
        ("BFM088",),
    ),
    Example(
        "an upcast softmax that casts itself back",
        script(_NET.replace(".softmax(dim=-1)", ".softmax(dim=-1).type_as(v)")),
        True,
        ("        weights = (q @ k.transpose(-2, -1)).float().softmax(dim=-1).type_as(v)",),
        ("BFM082",),
    ),
    Example(
        "a loss computed in f32, in a function and in the loop",
        script(
            _NET.replace(".float().softmax", ".softmax")
            + """

def smoothed(logits, target):
    logp = logits.float().log_softmax(dim=-1)
    return -(0.9 * logp.gather(1, target.unsqueeze(1)).squeeze(1) + 0.1 * logp.mean(dim=-1)).mean()
""",
            _STEP.format(
                loss="logits = model(x)\n"
                "        loss = smoothed(logits, y) + 1e-3 * logits.float().logsumexp(-1).pow(2).mean()"
            ),
        ),
        True,
        (
            "    logp = logits.float().log_softmax(dim=-1)",
            "        loss = smoothed(logits, y) + 1e-3 * logits.float().logsumexp(-1).pow(2).mean()",
        ),
        ("BFM089", "BFM089"),
    ),
    Example(
        "an optimizer's FP32 state",
        script(
            _NET.replace(".float().softmax", ".softmax")
            + """

class AdamFP32(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if not state:
                    state["m"] = torch.zeros_like(p, dtype=torch.float32)
                    state["v"] = torch.zeros_like(p, dtype=torch.float32)
                grad = p.grad.float()
                m, v = state["m"], state["v"]
                m.mul_(0.9).add_(grad, alpha=0.1)
                v.mul_(0.999).addcmul_(grad, grad, value=0.001)
                p.add_(m / (v.sqrt() + 1e-8), alpha=-group["lr"])
""",
            "\n\nmodel = Net().to(torch_xla.device())\noptimizer = AdamFP32(model.parameters(), lr=0.1)\n",
        ),
        True,
        (
            '                    state["m"] = torch.zeros_like(p, dtype=torch.float32)',
            "                grad = p.grad.float()",
        ),
        ("BFM089", "BFM089", "BFM089"),
    ),
    Example(
        "an f32 matmul of two upcast operands",
        script(
            _NET.replace(
                "weights = (q @ k.transpose(-2, -1)).float()", "weights = (q.float() @ k.float().transpose(-2, -1))"
            )
        ),
        True,
        ("        weights = (q.float() @ k.float().transpose(-2, -1)).softmax(dim=-1)",),
        ("BFM085", "BFM084", "BFM084"),
        kept=True,
    ),
)
"""VALID and INVALID examples of the deliberate f32 rule (:func:`decide`)."""
