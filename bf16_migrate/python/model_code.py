"""The audit of the model's own code: every place f32 can enter once the legacy switch is gone.

Under ``XLA_USE_BF16`` / ``XLA_DOWNCAST_BF16`` every f32 tensor on the XLA device was bf16, the
ones the model makes itself included (torch_xla/csrc/dtype.cpp, ``MaybeDowncastToXlaDeviceType``).
``model.to(torch.bfloat16)`` casts parameters and buffers only (torch ``nn.Module._apply``): a mask
made in ``forward`` (``torch.full((T, T), float("-inf"), device=...)``), a position table from
``torch.arange(T).float()``, a norm computed in ``x.to(torch.float32)``, a plain tensor attribute,
an optimizer's scalars made without a dtype are real f32 after the migration, and by type
promotion one of them in the residual stream makes every later matmul f32 (measured with
torch-xla 2.9 on the XLA CPU device, fixtures/causal_lm: 0 of 39 matmuls bf16 without this audit,
39 of 39 under the switch). The knowledge (which factories make f32, what casts, which layers
carry a weight) is ``rules/model_code.toml``.

The code audited is what the model's training step runs (:mod:`.model_reach`): the model's and the
optimizers' code, and the loss the step applies to the model's output (:mod:`.loss_reach`: its
functions and criterion classes, and the tensors the step makes on the device on the way to the
loss; a criterion keeping tensors of its own, which ``model.to`` does not cast, is BFM086). Each way
in is a :class:`Site`, followed with :class:`~.tensor_flow.TensorFlow` to the tensors it meets, and:

* made f32 (a factory without ``dtype=``, ``dtype=torch.float32``, ``.float()`` of a fresh tensor,
  a plain tensor attribute read in a step): it **follows** the dtype of a tensor it meets, known
  at that line (``dtype=scores.dtype``, ``.to(self.tok_emb.weight.dtype)``), which is what the
  legacy run computed (the switch made both bf16); in an optimizer's ``step``, what it meets are
  the parameters (``dtype=first.dtype``, as aws-neuron-samples' LAMB was migrated by its
  maintainers). BFM080, fixed. Where nothing of the dtype it meets is known there, BFM081.
* an upcast of a tensor of the model (``x.to(torch.float32)``): a **deliberate f32 island** when
  every path casts back before leaving the function (``.to(input_dtype)``, ``.type_as(x)``): kept
  in f32 as the code says, BFM082; one that leaves the function in f32 leaks f32 into what follows
  (BFM083); one whose f32 reaches a matmul computes it in f32 (BFM084).

:func:`audit_model_code` decides (a value, :class:`ModelCodeAudit`, no edit and no report);
:func:`plan_model_code` writes the follows into the plan and reports them;
:func:`report_blocked` reports the places that keep the switch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import libcst as cst
import libcst.matchers as m
from libcst.metadata import Assignment

from . import deliberate_f32, snippets
from .apply import EditPlan
from .bindings import assigned_value, assigned_values, definitions, dtype_names, python_float, self_assigned
from .context import FileContext, findall
from .deliberate_f32 import Verdict, Where
from .dtype_flow import FLOAT, INT, DtypeFlow
from .loss_reach import loss_state
from .meet import Cast, ValueReach, plan_cast
from .model_reach import Reached, float64_state_attributes
from .optimizers import append_keyword
from .outcome import F32Island, KeptF32
from .submodule_inputs import casts_an_attribute_to_full_precision
from .tensor_flow import Flow, Meet, TensorFlow

__all__ = ["ModelCodeAudit", "Site", "audit_model_code", "factory_dtype_class", "plan_model_code", "report_blocked"]

_PARAMETER_ROOT = "self.param_groups"
_FIRST_PARAMETER = 'self.param_groups[0]["params"][0]'
_MAX_TRACE = 6
_MAX_ROUNDS = 6
_INTEGER = "integer"
_OTHER = "other dtype"


@dataclass
class Site:
    """One way f32 enters: ``node`` the call that makes it (a factory, an upcast) or the read of a
    plain tensor attribute; ``kind``: ``"factory"`` (no ``dtype=``), ``"explicit"`` (``dtype=`` f32, or a dtype
    the class stores from outside, ``unsure`` then),
    ``"upcast"`` (of a fresh tensor), ``"promoted"`` (arithmetic making an integer tensor floating:
    ``ids / 100.0``), ``"attribute"`` (a plain tensor attribute read in a step),
    ``"island"`` (an upcast of the model's own tensors). ``dtype_arg``: the argument that names f32
    (explicit, ``.to(torch.float32)``). ``unsure``: the factory's result may be an integer
    (``torch.tensor(v)`` of a value of unknown type). ``flow``: where it goes."""

    node: cst.CSTNode
    kind: str
    flow: Flow
    dtype_arg: cst.Arg | None = None
    unsure: bool = False
    optimizer: bool = False


@dataclass
class Blocked:
    """A site that cannot be made to follow, with its diagnostic: ``code``, ``variant``, ``fields``."""

    site: Site
    code: str
    variant: str | None
    fields: dict[str, object]


@dataclass
class ModelCodeAudit:
    """The audit's outcome: ``follows`` (site, the code of the tensor whose dtype it takes),
    ``meetings`` (site, the casts written where its value meets a tensor of known dtype, its own
    line taking none: :mod:`.meet`), ``islands`` (deliberate f32 islands that cast themselves back,
    kept), ``kept`` (deliberate f32 that never meets the bf16 stream, kept as written, and where it
    is written), ``casts_back`` (site, the casts written where deliberate f32 would leak into the
    stream: :mod:`.deliberate_f32`), ``blocked`` (what needs a hand: BFM081, BFM083, BFM084,
    BFM086). ``clean``: nothing blocks."""

    follows: list[tuple[Site, str]] = field(default_factory=list)
    meetings: list[tuple[Site, list[Cast]]] = field(default_factory=list)
    islands: list[Site] = field(default_factory=list)
    kept: list[tuple[Site, Where]] = field(default_factory=list)
    casts_back: list[tuple[Site, list[Cast]]] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)
    downcasts: list[cst.Call] = field(default_factory=list)
    """``.float()`` of a value computed from a float64 one under XLA_DOWNCAST_BF16 (``d2 = pred.double().diff();
    d2.pow(2).mean().float()``): float64 was float32 on the device and the float32 it makes was bf16 there (the
    double idiom's way back to the model's precision, torch_xla/csrc/dtype.cpp), so in the modes that cast the model
    it is ``.to(torch.bfloat16)`` (kept f32 it made the loss f32 where the legacy run's was bf16: a hunt's)."""
    on_xla: list[Site] = field(default_factory=list)
    """Fresh floating tensors whose values meet no tensor of a known dtype (a timestep embedding made from
    integer timesteps, handed back to the model): each goes through ``bf16_on_xla`` where it is made."""
    reached: Reached | None = None
    """The code audited (None: none was)."""
    step_factories: frozenset[int] = frozenset()
    """The ids of the factories the steps make on the way to the loss (not the model's code)."""

    def hand_over(self, made_bf16: frozenset[int]) -> None:
        """Take out of ``blocked`` the factories the planner makes bf16 itself (``made_bf16``: the
        script's own device tensors, :mod:`.device_tensors`, which never reads the model's, its
        optimizers' or its losses' classes): the step's, and those of a function of the file the step
        runs (a rollout's ``env_step``). What they meet is the model's output, or a tensor whose dtype
        no line names (``dist.log_prob(a)``), but a tensor the script makes on the device was bf16
        under the switch whatever it meets."""
        self.blocked = [b for b in self.blocked if not (b.code == "BFM081" and id(b.site.node) in made_bf16)]
        self.on_xla = [site for site in self.on_xla if id(site.node) not in made_bf16]

    @property
    def loss_kept_f32(self) -> bool:
        """A loss the script computes in f32 on purpose is kept so (:mod:`.deliberate_f32`)."""
        return any(where is Where.LOSS for _, where in self.kept)

    @property
    def clean(self) -> bool:
        return not self.blocked

    @property
    def decided(self) -> frozenset[int]:
        """The ids of the nodes the audit decided (followed, cast where they meet, kept, cast back)."""
        sites = [s for s, _ in self.follows] + [s for s, _ in self.meetings] + self.islands
        sites += [s for s, _ in self.kept] + [s for s, _ in self.casts_back]
        return frozenset(id(site.node) for site in sites)


def low_precision_dtypes(ctx: FileContext, variables: Iterable[str]) -> frozenset[str]:
    """The dtypes (``"f32"``, ``"f64"``) that were low precision on the device under ``variables``:
    f32 always; f64 where the variable's ``f64_becomes`` is its low precision (XLA_USE_BF16; under
    XLA_DOWNCAST_BF16 f64 was f32, which BFM048 keeps)."""
    low = {"f32"}
    for name in variables:
        rule = ctx.rules.variables[name]
        if rule.f64_becomes == rule.low_precision:
            low.add("f64")
    return frozenset(low)


def audit_model_code(ctx: FileContext, reached: Reached, low: frozenset[str]) -> ModelCodeAudit:
    """Audit the code ``reached`` (:mod:`.model_reach`) for the dtypes ``low`` (what was low
    precision under the switch: :func:`low_precision_dtypes`). Plans nothing, reports nothing."""
    return _Audit(ctx, reached, low).run()


def factory_dtype_class(ctx: FileContext, call: cst.Call) -> str | None:
    """For a torch factory of ``float_factories`` (``rules/model_code.toml``) without ``dtype=``:
    ``"float"`` when its tensor is floating, ``"int"`` when integer, ``"unknown"`` when its
    arguments do not tell (``torch.tensor(values)``, ``torch.arange(n)`` of bounds of unknown type);
    None for a call that is no such factory, or that names a dtype."""
    audit = ctx.memo(("factory classes",), lambda: _Audit(ctx, Reached(), frozenset({"f32"})))
    factory = audit._factory_name(call)
    if factory is None or _keyword(call, "dtype") is not None:
        return None
    cls = audit._factory_class(call, factory)
    return "float" if cls == FLOAT else "int" if cls == INT else "unknown"


def is_factory(ctx: FileContext, call: cst.Call) -> bool:
    """Whether ``call`` is a torch factory of ``float_factories`` (``rules/model_code.toml``), whatever
    dtype it names."""
    audit = ctx.memo(("factory classes",), lambda: _Audit(ctx, Reached(), frozenset({"f32"})))
    return audit._factory_name(call) is not None


def casts_after(ctx: FileContext, call: cst.CSTNode) -> bool:
    """Whether the factory ``call`` is given a dtype by ``.to(dtype)`` after it rather than by
    ``dtype=`` (``cast_after_factories`` of ``rules/model_code.toml``: ``torch.linspace``, whose bf16
    tensor made on the XLA device gives f32 from unary math)."""
    return isinstance(call, cst.Call) and _torch_short_name(ctx, call) in ctx.rules.model_code.cast_after_factories


def cast_after(node: cst.CSTNode, dtype: cst.BaseExpression) -> cst.Call:
    """``node.to(dtype)``: the edit for a factory that :func:`casts_after`."""
    assert isinstance(node, cst.BaseExpression), "a factory is an expression"
    return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("to")), args=[cst.Arg(dtype)])


def _a_device_move(call: cst.Call) -> bool:
    """``x.to(...)`` (which may name a device), ``x.cuda()``, ``x.cpu()``."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in ("to", "cuda", "cpu")


def _torch_short_name(ctx: FileContext, call: cst.Call) -> str | None:
    """``linspace`` for a call of ``torch.linspace`` (any import spelling), else None."""
    for name in ctx.qualified_names(call.func):
        if name.startswith("torch.") and name.count(".") == 1:
            return name[len("torch.") :]
    return None


def _plan_downcasts(ctx: FileContext, plan: EditPlan, downcasts: list[cst.Call]) -> None:
    """Each of :attr:`ModelCodeAudit.downcasts` becomes ``.to(torch.bfloat16)``, reported (BFM048 ``cast_back``)."""
    for call in downcasts:
        if id(call) not in plan.replace:
            plan.replace[id(call)] = _to_bf16
            ctx.report("BFM048", call, fixed=True, variant="cast_back", code=short_code(ctx, call))


def _to_bf16(call: cst.Call) -> cst.Call:
    """``x.float()`` -> ``x.to(torch.bfloat16)``."""
    assert isinstance(call.func, cst.Attribute), "a `.float()` call"
    return call.with_changes(func=call.func.with_changes(attr=cst.Name("to")), args=[cst.Arg(_BF16.deep_clone())])


_BF16 = cst.parse_expression("torch.bfloat16")


def plan_model_code(ctx: FileContext, plan: EditPlan, audit: ModelCodeAudit) -> None:
    """Write the follows of ``audit`` into ``plan`` and report them (BFM080) and the islands kept
    (BFM082). The edits need no guard: a tensor that follows the dtype it meets computes what it
    did whether the model was cast or not."""
    for site, carrier in audit.follows:
        if id(site.node) in plan.replace:
            continue  # a step's tensor the mode already changes: a loss target's cast, an FP32 accumulator
        dtype = f"{carrier}.dtype"
        _plan_follow(ctx, plan, site, dtype)
        ctx.report(
            "BFM080",
            site.node,
            fixed=True,
            variant="stored" if site.kind == "explicit" and site.unsure else site.kind,
            code=short_code(ctx, site.node),
            inside=inside(ctx, site.node),
            dtype=dtype,
        )
    for site, casts in audit.meetings:
        for cast in casts:
            plan_cast(plan, cast)
            finding = ctx.report(
                "BFM087",
                cast.via,
                fixed=True,
                value=short_code(ctx, cast.via),
                code=short_code(ctx, site.node),
                inside=inside(ctx, site.node),
                made=ctx.pos(site.node)[0],
                dtype=f"{cast.carrier}.dtype",
            )
            # the value is computed f32 where it is made and cast where it meets bf16: both the run's
            # trace excuses (the function that makes it, or its line in the training step; the cast's line)
            first, last = _kept_lines(ctx, site.node, Where.MODEL)
            ctx.outcome.f32_islands.append(F32Island(first, last, finding))
            line = ctx.span(cast.via)[0][0]
            ctx.outcome.f32_islands.append(F32Island(line, ctx.span(cast.via)[1][0], finding))
    _plan_downcasts(ctx, plan, audit.downcasts)
    for site in audit.on_xla:
        if id(site.node) in plan.replace:
            continue
        if not any(isinstance(st, cst.FunctionDef) and st.name.value == snippets.BF16_ON_XLA for st in plan.prelude):
            plan.prelude.append(snippets.bf16_on_xla_helper())
        plan.replace[id(site.node)] = lambda node: snippets.bf16_on_xla_call(node)
        ctx.report(
            "BFM080",
            site.node,
            fixed=True,
            variant="on_xla",
            code=short_code(ctx, site.node),
            inside=inside(ctx, site.node),
        )
    for site in audit.islands:
        back = short_code(ctx, site.flow.casts_back[0])
        finding = ctx.report(
            "BFM082", site.node, fixed=True, code=short_code(ctx, site.node), inside=inside(ctx, site.node), back=back
        )
        last = max(ctx.span(site.node)[1][0], *(ctx.span(node)[1][0] for node in site.flow.casts_back))
        ctx.outcome.f32_islands.append(F32Island(ctx.span(site.node)[0][0], last, finding))
    for site, casts in audit.casts_back:
        for cast in casts:
            plan_cast(plan, cast)
            finding = ctx.report(
                "BFM088",
                cast.via,
                fixed=True,
                variant="exit" if isinstance(cast.at, cst.Return) else None,
                value=short_code(ctx, cast.via),
                code=short_code(ctx, site.node),
                line=ctx.pos(site.node)[0],
                dtype=f"{cast.carrier}.dtype",
            )
            # the f32 computed from the upcast to the cast back is the author's: the run's trace excuses it
            last = max(ctx.span(site.node)[1][0], ctx.span(cast.via)[1][0])
            ctx.outcome.f32_islands.append(F32Island(min(ctx.span(site.node)[0][0], last), last, finding))
    if audit.loss_kept_f32:
        ctx.outcome.kept_f32.add(KeptF32.LOSS)
    if any(where is not Where.OPTIMIZER for _, where in audit.kept) or any(
        site.kind == "island" for site, _ in audit.casts_back
    ):
        ctx.outcome.kept_f32.add(KeptF32.FORWARD)
    for site, where in audit.kept:
        finding = ctx.report(
            "BFM089",
            site.node,
            fixed=True,
            variant=where.value,
            code=short_code(ctx, site.node),
            inside=inside(ctx, site.node),
        )
        first, last = _kept_lines(ctx, site.node, where)
        ctx.outcome.f32_islands.append(F32Island(first, last, finding))


def _kept_lines(ctx: FileContext, node: cst.CSTNode, where: Where) -> tuple[int, int]:
    """The lines where f32 kept as written (BFM089) or followed to its meeting (BFM087) lives, for
    the run's trace to excuse: an
    optimizer's FP32 state the whole optimizer class (made in one method, updated in ``step``), a
    loss kept f32 the function that computes it; only the line itself where that function is the
    training step (it calls ``backward``: f32 elsewhere in it is no one's choice)."""
    owner: cst.CSTNode | None = ctx.enclosing(node, cst.FunctionDef)
    if where is Where.OPTIMIZER:
        owner = ctx.enclosing(node, cst.ClassDef) or owner
    backward = m.Call(func=m.Attribute(attr=m.Name("backward")))
    if owner is None or findall(owner, backward, ctx.index):
        owner = node
    (first, _col), (last, _end) = ctx.span(owner)
    return first, last


def report_blocked(ctx: FileContext, audit: ModelCodeAudit) -> None:
    """Report the places of ``audit`` that need a hand (unfixed)."""
    for blocked in audit.blocked:
        ctx.report(blocked.code, blocked.site.node, fixed=False, variant=blocked.variant, **blocked.fields)


def inside(ctx: FileContext, node: cst.CSTNode) -> str:
    """Where ``node`` is, for a message: ``Class.method`` or ``function``."""
    func = ctx.enclosing(node, cst.FunctionDef)
    if func is None:
        return "<module>"
    cls = ctx.enclosing(func, cst.ClassDef)
    return f"{cls.name.value}.{func.name.value}" if cls is not None else func.name.value


def short_code(ctx: FileContext, node: cst.CSTNode, limit: int = 60) -> str:
    """``node``'s code on one line (runs of white space made one space), cut to ``limit`` characters
    with an ellipsis: how a finding quotes an expression."""
    text = " ".join(ctx.code(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plan_follow(ctx: FileContext, plan: EditPlan, site: Site, dtype: str) -> None:
    value = cst.parse_expression(dtype)
    if site.kind in ("factory", "explicit") and casts_after(ctx, site.node):
        # an explicit `dtype=torch.float32` kept, the cast after it
        plan.replace[id(site.node)] = lambda node: cast_after(node, value)
    elif site.dtype_arg is not None:
        plan.replace[id(site.dtype_arg.value)] = lambda node: value.with_changes(lpar=node.lpar, rpar=node.rpar)
    elif site.kind == "factory":
        plan.replace[id(site.node)] = lambda node: append_keyword(node, "dtype", value)
    elif site.kind in ("attribute", "global"):
        plan.replace[id(site.node)] = lambda node: cst.Call(
            func=cst.Attribute(value=node, attr=cst.Name("to")), args=[cst.Arg(value)]
        )
    elif site.kind == "promoted":  # `(ids / 100.0).to(x.dtype)`: parenthesised, the cast is the whole result's
        plan.replace[id(site.node)] = lambda node: cst.Call(
            func=cst.Attribute(
                value=node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]), attr=cst.Name("to")
            ),
            args=[cst.Arg(value)],
        )
    else:  # `.float()` / `.double()` of a fresh tensor
        plan.replace[id(site.node)] = lambda node: node.with_changes(
            func=node.func.with_changes(attr=cst.Name("to")), args=[cst.Arg(value)]
        )


class _Audit:
    """One audit (see the module docstring): the sites, their flows, then a decision per site."""

    def __init__(self, ctx: FileContext, reached: Reached, low: frozenset[str]) -> None:
        self.ctx = ctx
        self.reached = reached
        self.low = low
        self.rules = ctx.rules.model_code
        self.dtypes = DtypeFlow(ctx, reached.model_calls, reached.roots)
        self.flows = TensorFlow(ctx, self.dtypes)
        self.reach = ValueReach(ctx, self.flows, reached)
        self.result = ModelCodeAudit(reached=reached)
        self._arithmetic: list[cst.BinaryOperation] | None = None

    def run(self) -> ModelCodeAudit:
        factories, int_roots, upcasts = self._calls()
        attributes: list[tuple[cst.BaseExpression, str]] = [(read, "attribute") for read in self._attribute_reads()]
        attributes += [(read, "global") for read in self._global_reads()]
        creations: list[Site] = []
        islands: list[tuple[cst.Call, cst.Arg | None]] = []
        fresh: frozenset[int] = frozenset()
        for _ in range(_MAX_ROUNDS):  # what is fresh grows as the flows go through fresh operands
            creations, islands, found = self._creations(factories, int_roots, upcasts, attributes, fresh)
            if found == fresh:
                break
            fresh = found
        islands += [(call, arg) for call, arg in self._step_upcasts(fresh) if not any(call is c for c, _ in islands)]
        kept = self._deliberate(creations, islands, fresh)
        self._decide_creations([site for site in creations if id(site.node) not in kept], fresh)
        self._loss_state()
        return self.result

    def _deliberate(
        self, creations: list[Site], islands: list[tuple[cst.Call, cst.Arg | None]], fresh: frozenset[int]
    ) -> set[int]:
        """Decide the deliberate f32 (:mod:`.deliberate_f32`): the upcasts of the model's own
        tensors (``islands``; an upcast inside one already followed, ``h.double().mean().float()``,
        is one with it) and the factories asking for f32 (``dtype=torch.float32``). Returns the ids
        of the factories kept as written (the others follow the dtype they meet, as made f32)."""
        explicit = [site for site in creations if site.kind == "explicit"]
        ordered = sorted(islands, key=lambda island: self.ctx.span(island[0])[1])  # inner ones first
        sources: list[tuple[cst.CSTNode, Where, cst.BaseExpression | None]] = [
            (call, self._where(call), call.func.value if isinstance(call.func, cst.Attribute) else None)
            for call, _ in ordered
        ]
        sources += [(site.node, self._where(site.node), None) for site in explicit]
        decisions = deliberate_f32.decide(self.reach, sources, fresh, self._carrier_at)
        in_islands: set[int] = set()
        kept: set[int] = set()
        for (call, arg), decision in zip(ordered, decisions):
            receiver = call.func.value if isinstance(call.func, cst.Attribute) else call
            if id(receiver) in in_islands:
                continue  # an upcast inside an island already followed (`h.double().mean().float()`)
            site = Site(call, "island", self.flows.follow(call, through=True, fresh=fresh), arg)
            in_islands |= site.flow.visited
            self._decide_island(site, decision)
        for site, decision in zip(explicit, decisions[len(ordered) :]):
            if decision.verdict is Verdict.KEPT:
                kept.add(id(site.node))
                if decision.computes:
                    self.result.kept.append((site, decision.where))
        return kept

    def _where(self, node: cst.CSTNode) -> Where:
        """Where deliberate f32 is written: an optimizer's step, the loss code, or the model."""
        cls = self.ctx.enclosing(node, cst.ClassDef)
        if cls is not None and any(c is cls for c in self.reached.optimizers):
            return Where.OPTIMIZER
        func = self.ctx.enclosing(node, cst.FunctionDef)
        scope = func if func is not None else self.ctx.module
        if self.reached.uncast(cls) or any(s is scope for s in self.reached.steps) or self.reached.in_loss(func):
            return Where.LOSS
        return Where.MODEL

    def _carrier_at(self, source: cst.CSTNode, meet: Meet, exclude: frozenset[int]) -> str | None:
        """The code of a tensor known at ``meet.at`` with the dtype of what the value meets there
        (:meth:`_carrier` anchored at the meeting), never one of the ``exclude`` nodes."""
        site = Site(source, "meeting", Flow(source), optimizer=self._in_optimizer(source))
        return self._carrier(site, [meet], exclude, anchor=meet.at)

    def _creations(self, factories, int_roots, upcasts, attributes, fresh: frozenset[int]):
        """The sites that make a tensor, followed knowing ``fresh``; the upcasts of tensors that
        are not fresh (islands); and the nodes that carry a fresh value."""
        follow = self.flows.follow
        sites = [
            Site(call, kind, follow(call, fresh=fresh), _keyword(call, "dtype") if kind == "explicit" else None, unsure)
            for call, kind, unsure in factories
        ]
        sites += [Site(read, kind, follow(read, fresh=fresh)) for read, kind in attributes]
        found: set[int] = set()
        for root in int_roots:
            found |= follow(root, fresh=fresh).visited
        sites += [Site(op, "promoted", follow(op, fresh=fresh)) for op in self._promotions(found)]
        islands = []
        for call, arg in upcasts:
            receiver = self._upcast_of(call)
            if receiver is not None and (id(receiver) in fresh or id(receiver) in found or self._integer(receiver)):
                sites.append(Site(call, "upcast", follow(call, fresh=fresh), arg))
            else:
                islands.append((call, arg))
        for site in sites:
            site.optimizer = self._in_optimizer(site.node)
            found |= site.flow.visited
        return sites, islands, frozenset(found)

    # -- the ways in -------------------------------------------------------------------------
    def _promotions(self, integer: set[int]) -> list[cst.BinaryOperation]:
        """The arithmetic of the model's code that makes a fresh floating tensor from an integer one
        (``integer``: ids of the nodes that carry an integer factory's tensor): a true division
        (``torch.arange(t, device=d)[:, None] / 100.0``, ``/ t`` of a size, ``counts / counts.sum()``) or an
        operation with a Python float (``pos * 0.01``, ``-math.log(10000.0) * torch.arange(half)``: a hunt's
        DDPM timestep embedding took ``freqs.dtype``, f32, and crashed at the next convolution). By PyTorch's
        type promotion the result is the default dtype, f32, where the switch made it bf16; left so it made the
        residual stream f32 and the next Linear raise (a hunt's position table). A name may hold an int."""
        found: list[cst.BinaryOperation] = []
        if self._arithmetic is None:  # once per audit: the rounds ask again as the fresh values grow
            self._arithmetic = [
                op
                for func in self.reached.runtime
                for op in findall(func.body, m.BinaryOperation(), self.ctx.index)
                if isinstance(op, cst.BinaryOperation)
            ]
        for op in self._arithmetic:
            if id(op.left) in integer and self.dtypes.infer(op.left) != FLOAT:
                other = op.right
            elif id(op.right) in integer and self.dtypes.infer(op.right) != FLOAT:
                other = op.left
            else:
                continue  # past an upcast the integer factory's flow carries a float (`sin(pos.float())`)
            divide = isinstance(op.operator, cst.Divide)
            arithmetic = isinstance(op.operator, (cst.Multiply, cst.Add, cst.Subtract, cst.Power))
            if (divide and (id(other) in integer or not self.flows.tensor_like(other))) or (
                arithmetic and python_float(self.ctx, other)
            ):
                found.append(op)
        return found

    def _runtime_calls(self) -> list[cst.Call]:
        calls: list[cst.Call] = []
        seen: set[int] = set()
        for func in self.reached.runtime:
            for call in findall(func.body, m.Call(), self.ctx.index):
                if id(call) not in seen:
                    seen.add(id(call))
                    calls.append(call)
        return calls

    def _calls(self):
        """The factories that make a floating tensor ((call, kind, unsure)), the integer factories
        (their ``.float()`` is a way in), and the upcasts ((call, the argument naming f32)); the
        step's own factories on its loss path among them (:meth:`_step_calls`)."""
        factories, int_roots, upcasts = [], [], []
        for call in self._runtime_calls():
            made = self._made(call)
            if made == _INTEGER:
                int_roots.append(call)
            elif isinstance(made, tuple):
                factories.append((call, *made))
            elif made is None:
                upcast = self._upcast(call)
                if upcast is not None and self._from_kept_f64(call):
                    self._downcast(call)
                elif upcast is not None:
                    upcasts.append((call, upcast if isinstance(upcast, cst.Arg) else None))
        step_factories, step_int_roots = self._step_calls()
        self.result.step_factories = frozenset(id(call) for call, _, _ in step_factories)
        return factories + step_factories, int_roots + step_int_roots, upcasts

    def _made(self, call: cst.Call) -> tuple[str, bool] | str | None:
        """For a torch factory: (kind, unsure) when it makes a floating tensor of a low dtype
        (``"explicit"``: ``dtype=torch.float32``; ``"factory"``: no ``dtype=``, unsure when its
        result may be an integer), ``_INTEGER`` for an integer one, ``_OTHER`` for another dtype;
        None for a call that is no factory."""
        factory = self._factory_name(call)
        if factory is None:
            return None
        dtype_arg = _keyword(call, "dtype")
        if dtype_arg is not None:
            if self._is_low(dtype_arg.value):
                return ("explicit", False)
            return ("explicit", True) if self._stored_dtype(dtype_arg.value) else _OTHER
        cls = self._factory_class(call, factory)
        if cls == INT or (cls != FLOAT and factory == "arange"):
            # an arange of bounds of unknown type is taken as integer: a floating use of it
            # goes through an upcast (`.float()`), which is audited
            return _INTEGER
        return ("factory", cls != FLOAT)

    def _stored_dtype(self, value: cst.BaseExpression) -> bool:
        """Whether ``value`` is a dtype the class stores from outside the code it shows (``self.dtype`` of
        ``self.dtype = dtype``, an argument of its constructor read from a config: ``getattr(torch, "float32")``):
        f32 under the switch was bf16 on the device, and which dtype it holds the code does not tell. Its factory
        takes the dtype of what its value meets where that is known (the edit is right for any floating dtype it
        may hold), and is left where nothing is; a ``.dtype`` read of a tensor (``self.dtype = x.dtype``) is
        not stored from outside."""
        if not (isinstance(value, cst.Attribute) and m.matches(value.value, m.Name("self"))):
            return False
        cls = self.ctx.enclosing(value, cst.ClassDef)
        if cls is None:
            return False
        stored = self_assigned(self.ctx, cls, value.attr.value)
        return bool(stored) and not any(
            dtype_names(self.ctx, v) or m.matches(v, m.Attribute(attr=m.Name("dtype"))) for v in stored
        )

    def _step_calls(self):
        """The factories the functions calling the model make on the device themselves (``mask =
        torch.eye(n, device=device)`` between the model call and the loss) whose value meets the
        step's loss path (:mod:`.loss_reach`), and the integer factories there. A factory of the
        step that meets no value on that path (the data, a metric, an accumulator) is not a way in
        to the loss; one made on the host and moved (``torch.rand(64, 1).to(device)``) is data,
        which the input casts handle where they can tell it (:mod:`.inputs`)."""
        factories, int_roots = [], []
        for scope in self.reached.steps:
            if isinstance(scope, cst.FunctionDef) and self.reached.is_runtime(scope):
                continue  # audited whole already
            for call in findall(scope.body if isinstance(scope, cst.FunctionDef) else scope, m.Call(), self.ctx.index):
                if (self.ctx.enclosing(call, cst.FunctionDef) or self.ctx.module) is not scope:
                    continue
                made = self._made(call)
                if made == _INTEGER:
                    int_roots.append(call)
                elif (
                    isinstance(made, tuple)
                    and _keyword(call, "device") is not None
                    and not (made[1] and self._of_its_data(call))
                    and self._meets_path(call)
                ):
                    factories.append((call, *made))
        return factories, int_roots

    def _of_its_data(self, call: cst.Call) -> bool:
        """A factory whose dtype is its data's (``[factories]`` ``"literal"``/``"unknown"`` of
        ``rules/torch_api.toml``: ``torch.as_tensor(weights, device=d)``): of data the code does not
        tell it may be float64, not "made f32"; the step's run-time cast decides it where it is made
        (:mod:`.device_tensors`, BFM154). Followed to its meetings instead, its gather and sum ran in
        float64 on the device (a hunt's class weights from NumPy, verify's trace)."""
        factory = self._factory_name(call)
        return factory is not None and self.dtypes.api.factories.get(factory) in ("literal", "unknown")

    def _step_upcasts(self, fresh: frozenset[int]) -> list[tuple[cst.Call, cst.Arg | None]]:
        """The upcasts the functions calling the model make on the step's loss path themselves
        (``F.cross_entropy(logits.float(), y)``, ``F.mse_loss(pred, y.float())`` in the training
        loop): deliberate f32 decided as one written in a loss function is (:mod:`.deliberate_f32`).
        An upcast of the model's input is the input casts' (:mod:`.inputs`)."""
        found: list[tuple[cst.Call, cst.Arg | None]] = []
        path = self.reached.loss_path
        for scope in self.reached.steps:
            if isinstance(scope, cst.FunctionDef) and self.reached.is_runtime(scope):
                continue  # audited whole already
            for call in findall(scope.body if isinstance(scope, cst.FunctionDef) else scope, m.Call(), self.ctx.index):
                if (self.ctx.enclosing(call, cst.FunctionDef) or self.ctx.module) is not scope:
                    continue
                upcast = self._upcast(call)
                if upcast is not None and self._made(call) is None and self._from_kept_f64(call):
                    self._downcast(call)
                    continue
                if upcast is None or self._made(call) is not None:
                    continue
                receiver = self._upcast_of(call)
                if receiver is not None and (
                    id(receiver) in fresh or self._integer(receiver) or _from_numpy(self.ctx, receiver)
                ):
                    continue  # a host tensor's upcast (`torch.from_numpy(y).float()`): real f32 there, bf16 once moved
                on_path = receiver is not None and id(receiver) in path
                if on_path or any(id(meet.at) in path for meet in self.flows.follow(call).meets):
                    found.append((call, upcast if isinstance(upcast, cst.Arg) else None))
        return found

    def _meets_path(self, call: cst.Call) -> bool:
        """Whether the value ``call`` makes meets the loss path, other than as an argument of a
        loss call whose floating arguments the input casts handle (a loss target: :mod:`.inputs`)."""
        path, cast = self.reached.loss_path, self.reached.cast_losses
        return any(id(meet.at) in path and id(meet.at) not in cast for meet in self.flows.follow(call).meets)

    def _upcast_to_f32(self, expr: cst.BaseExpression) -> bool:
        """``x.float()``: a value the code makes f32 itself (``[upcast_methods]``), whatever ``x`` was."""
        return (
            isinstance(expr, cst.Call)
            and isinstance(expr.func, cst.Attribute)
            and not expr.args
            and self.rules.upcast_methods.get(expr.func.attr.value) == "f32"
        )

    def _downcast(self, call: cst.Call) -> None:
        """Record ``call``, a ``.float()`` of a value the double idiom computed in float32, as a downcast to bf16
        (:attr:`ModelCodeAudit.downcasts`), once, where the mode casts the model."""
        if "f32" in self.low and not any(c is call for c in self.result.downcasts):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "float" and not call.args:
                self.result.downcasts.append(call)

    def _from_kept_f64(self, call: cst.Call, depth: int = 0) -> bool:
        """Whether the receiver of an upcast is computed from an f64 value that was not low
        precision (XLA_DOWNCAST_BF16 kept f64 as f32: ``x.double().sum()`` computed in f32 there), inline
        or through a name bound once to such a value (``d2 = pred.double().diff(n=2)``)."""
        if "f64" in self.low or not isinstance(call.func, cst.Attribute):
            return False
        expr: cst.BaseExpression = call.func.value
        while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript, cst.BinaryOperation)):
            if isinstance(expr, cst.BinaryOperation):
                expr = expr.left
                continue
            if isinstance(expr, cst.Call):
                func = expr.func
                if isinstance(func, cst.Attribute) and self.rules.upcast_methods.get(func.attr.value) == "f64":
                    return True
                if any(
                    self.ctx.qualified_names(a.value) & self.rules.f64_dtypes
                    for a in expr.args
                    if a.keyword is None or a.keyword.value == "dtype"
                ):
                    return True
                expr = func
            else:
                expr = expr.value
        if isinstance(expr, cst.Name) and depth < 3:
            values = assigned_values(self.ctx, expr)
            return len(values) == 1 and self._from_kept_f64(
                cst.Call(cst.Attribute(values[0], cst.Name("float"))), depth + 1
            )
        return False

    def _factory_name(self, call: cst.Call) -> str | None:
        """``zeros`` for ``torch.zeros(...)`` (``float_factories``), the qualified name of a library factory
        (``library_factories``: a transformer's causal mask), else None."""
        for name in self.ctx.qualified_names(call.func):
            if name.startswith("torch.") and name.count(".") == 1 and name[6:] in self.rules.float_factories:
                return name[6:]
            if name in self.rules.library_factories:
                return name
        return None

    def _factory_class(self, call: cst.Call, factory: str) -> str:
        """FLOAT, INT or UNKNOWN for a factory without ``dtype=``: ``torch.full`` by its fill value,
        ``torch.arange`` by its bounds (integer-valued names: sizes, lengths, integer constants)."""
        if factory in self.rules.library_factories:
            return FLOAT
        positional = [a.value for a in call.args if a.keyword is None]
        if factory == "full" and len(positional) >= 2:
            fill = positional[1]  # torch.full's dtype is its fill value's (an int fills an int64 tensor)
            if isinstance(fill, cst.Integer) or self._integer_valued(fill):
                return INT
            return FLOAT if self._float_valued(fill) else "unknown"
        if factory == "arange":
            if any(isinstance(v, cst.Float) for v in positional):
                return FLOAT
            return INT if positional and all(self._integer_valued(v) for v in positional) else "unknown"
        return self.dtypes.infer(call)

    def _integer_valued(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """Whether ``expr`` is a Python integer: an int literal, a size (``x.shape[1]``,
        ``x.size(0)``, ``len(...)``), ``//`` or ``int(...)``, or a name or ``self.<attr>`` bound only
        to such, or an ``int``-annotated or int-defaulted parameter."""
        if depth > 6:
            return False
        if isinstance(expr, cst.Integer):
            return True
        if isinstance(expr, cst.UnaryOperation):
            return self._integer_valued(expr.expression, depth + 1)
        if isinstance(expr, cst.BinaryOperation):
            if isinstance(expr.operator, cst.FloorDivide):
                return True
            if isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Modulo)):
                return self._integer_valued(expr.left, depth + 1) and self._integer_valued(expr.right, depth + 1)
            return False
        if isinstance(expr, cst.Subscript) and m.matches(expr.value, m.Attribute(attr=m.Name("shape"))):
            return True
        if isinstance(expr, cst.Call):
            if m.matches(expr.func, m.Attribute(attr=m.Name("size") | m.Name("numel") | m.Name("dim"))):
                return True
            return bool(self.ctx.qualified_names(expr.func) & {"builtins.len", "builtins.int"})
        if isinstance(expr, cst.Attribute) and m.matches(expr.value, m.Name("self")):
            cls = self.ctx.enclosing(expr, cst.ClassDef)
            values = self_assigned(self.ctx, cls, expr.attr.value) if cls is not None else []
            return bool(values) and all(self._integer_valued(v, depth + 1) for v in values)
        if isinstance(expr, cst.Name):
            return self._name_integer_valued(expr, depth)
        return False

    def _float_valued(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is a Python float for sure: a float literal (signed), ``float(...)``, a
        true division, a ``math`` constant, or a name bound only to such; or a float as
        :func:`.bindings.python_float` reads one (``math.log(1 / 0.07)``, a learnable temperature's fill:
        a hunt's ``torch.full((), math.log(...), device=dev)`` was left f32)."""
        if isinstance(expr, cst.UnaryOperation):
            return self._float_valued(expr.expression)
        if isinstance(expr, cst.Float):
            return True
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide):
            return True
        names = self.ctx.qualified_names(expr.func if isinstance(expr, cst.Call) else expr)
        if names & {"builtins.float", "math.inf", "math.pi", "math.e", "math.nan"}:
            return True
        if isinstance(expr, cst.Name):
            values = assigned_values(self.ctx, expr)
            return bool(values) and all(self._float_valued(v) for v in values if v is not expr)
        return python_float(self.ctx, expr)

    def _name_integer_valued(self, name: cst.Name, depth: int) -> bool:
        scope = self.ctx.scopes.get(name)
        if scope is None:
            return False
        assignments = [a for a in scope[name.value] if isinstance(a, Assignment)]
        if not assignments:
            return False
        for a in assignments:
            node = a.node
            if isinstance(node, cst.Param):
                annotation = node.annotation.annotation if node.annotation is not None else None
                if not (isinstance(annotation, cst.Name) and annotation.value == "int") and not isinstance(
                    node.default, cst.Integer
                ):
                    return False
                continue
            target = self.ctx.parent(node)
            holder = self.ctx.parent(target)
            if isinstance(target, cst.For) and target.target is node:  # `for i in range(n)`
                if not m.matches(
                    target.iter,
                    m.Call(func=m.Name("range"))
                    | m.Call(func=m.Name("reversed"), args=[m.Arg(m.Call(func=m.Name("range")))]),
                ):
                    return False
                continue
            if isinstance(target, cst.Element):  # `B, T, C = x.shape`, `N_SAMPLES, L_FREQ = 24, 6`
                assign = self.ctx.parent(self.ctx.parent(holder)) if isinstance(holder, cst.Tuple) else None
                element = assigned_value(self.ctx, node)
                if element is not None and self._integer_valued(element, depth + 1):
                    continue
                if not isinstance(assign, cst.Assign) or not m.matches(
                    assign.value, m.Attribute(attr=m.Name("shape")) | m.Call(func=m.Attribute(attr=m.Name("size")))
                ):
                    return False
                continue
            if not (isinstance(target, cst.AssignTarget) and isinstance(holder, cst.Assign)):
                return False
            if not self._integer_valued(holder.value, depth + 1):
                return False
        return True

    def _is_low(self, value: cst.BaseExpression) -> bool:
        """Whether ``value`` names a dtype that was low precision on the device (``self.low``)."""
        names = dtype_names(self.ctx, value)
        return bool(
            ("f32" in self.low and names & self.rules.f32_dtypes)
            or ("f64" in self.low and names & self.rules.f64_dtypes)
        )

    def _upcast(self, call: cst.Call) -> cst.Arg | bool | None:
        """For an upcast to a dtype of ``self.low`` (``.float()``, ``.to(torch.float32)``,
        ``.type(torch.float32)``, a torch op with ``dtype=torch.float32``): the argument that names
        the dtype, or True when the method itself does (``.float()``); None for anything else."""
        func = call.func
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if not call.args and self.rules.upcast_methods.get(name) in self.low:
                return True
            if name in ("to", "type"):
                for arg in call.args:
                    if (arg.keyword is None or arg.keyword.value == "dtype") and self._is_low(arg.value):
                        return arg
                return None
        keyword = _keyword(call, "dtype")
        return keyword if keyword is not None and self._is_low(keyword.value) else None

    def _upcast_of(self, call: cst.Call) -> cst.BaseExpression | None:
        """What the upcast ``call`` makes floating: the receiver of ``x.float()``, the input of
        ``torch.ones_like(ids, dtype=torch.float)`` (a ``"like"`` factory of ``rules/torch_api.toml``, whose
        named dtype replaces its input's), else None."""
        if isinstance(call.func, cst.Attribute) and not self.ctx.qualified_names(call.func) & self._like_factories():
            return call.func.value
        if self.ctx.qualified_names(call.func) & self._like_factories():
            return next((a.value for a in call.args if a.keyword is None), None)
        return None

    def _like_factories(self) -> frozenset[str]:
        """The qualified names of torch's ``*_like`` factories (``rules/torch_api.toml`` ``[factories]``)."""
        return frozenset(f"torch.{name}" for name, kind in self.dtypes.api.factories.items() if kind == "like")

    def _integer(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is an integer or boolean tensor made here (``F.one_hot(y, C)``, ``(a ==
        b)``, ``idx.long()``): its upcast makes a fresh floating tensor, not an island of the
        model's own floating tensors (``rules/model_code.toml`` ``[flow] integer_results``)."""
        while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value not in ("unsqueeze", "view"):
                break
            expr = expr.func.value  # shape-only methods keep the dtype
        if isinstance(expr, cst.Comparison):
            return True
        if isinstance(expr, cst.Call) and self.ctx.qualified_names(expr.func) & self.rules.integer_results:
            return True
        return self.dtypes.infer(expr) == INT

    def _in_optimizer(self, node: cst.CSTNode) -> bool:
        cls = self.ctx.enclosing(node, cst.ClassDef)
        return cls is not None and any(c is cls for c in self.reached.optimizers)

    def _attribute_reads(self) -> list[cst.Attribute]:
        """Reads, in a step, of a plain tensor attribute made in ``__init__`` (``self.pe =
        torch.zeros(...)``, not a parameter nor a buffer): ``model.to`` casts neither it nor its
        device, so it reaches the step in f32 where the switch made it bf16."""
        reads: list[cst.Attribute] = []
        for func in self.reached.init:
            cls = self.ctx.enclosing(func, cst.ClassDef)
            if cls is None:
                continue
            for assign in findall(func.body, m.Assign(), self.ctx.index):
                for target in assign.targets:
                    if m.matches(target.target, m.Attribute(value=m.Name("self"))) and self._plain_tensor(assign.value):
                        assert isinstance(target.target, cst.Attribute), "matched an Attribute"
                        reads += self._reads_in_steps(cls, target.target.attr.value)
        return reads

    def _global_reads(self) -> list[cst.Name]:
        """Reads, in a step, of a module-level name bound only to a floating tensor (``TABLE =
        torch.randn(64, d)``, made at import on the host and moved in ``forward``): f32 on the device
        where the switch made it bf16, as a plain tensor attribute is."""
        reads: list[cst.Name] = []
        for statement in self.ctx.module.body:
            if not (
                isinstance(statement, cst.SimpleStatementLine)  # the cheap test first
                and m.matches(statement, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())])]))
            ):
                continue
            assert isinstance(statement, cst.SimpleStatementLine), "matched"
            assign = statement.body[0]
            assert isinstance(assign, cst.Assign) and isinstance(assign.targets[0].target, cst.Name), "matched"
            name = assign.targets[0].target
            scope = self.ctx.scopes.get(name)
            if scope is None:
                continue
            bindings = [a for a in scope.assignments[name.value]]
            if len(bindings) != 1 or not self._plain_tensor(assign.value):
                continue
            for access in bindings[0].references:
                read = access.node
                if isinstance(read, cst.Name) and self.reached.is_runtime(self.ctx.enclosing(read, cst.FunctionDef)):
                    reads.append(read)
        return reads

    def _plain_tensor(self, value: cst.BaseExpression, depth: int = 0) -> bool:
        """A floating tensor made here and kept as is: a float factory or an upcast at its root,
        not wrapped in a parameter or a buffer; or what a function of the file returns when each of
        its returns is one (``self.table = make_table(6, 8)``: left f32, it turned the residual stream
        f32 and crashed the next Linear, bench/unseen/hunt9 mha_envmodule)."""
        if isinstance(value, cst.Call) and self.ctx.qualified_names(value.func) & self.rules.registers:
            return False
        if isinstance(value, cst.Name) and depth < 2:
            # `pe = torch.zeros(n, d)`, filled in place (`pe[:, 0::2] = ...`), then `self.pe = pe`: every
            # binding of the name an assignment of such a tensor (the textbook positional table)
            scope = self.ctx.scopes.get(value)
            bindings = list(scope[value.value]) if scope is not None else []
            made = list(_values_of(self.ctx, value))
            return bool(made) and len(made) == len(bindings) and all(self._plain_tensor(v, depth + 1) for v in made)
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and depth < 2:
            functions = [d for d in definitions(self.ctx, value.func) if isinstance(d, cst.FunctionDef)]
            if len(functions) == 1:
                returns = [r.value for r in findall(functions[0].body, m.Return()) if isinstance(r, cst.Return)]
                values = [v for v in returns if v is not None]
                # a returned name: what it is assigned in the function (`pe = torch.zeros(n, d)`, then
                # filled in place, `pe[:, 0::2] = ...`, which keeps its dtype)
                made = [w for v in values for w in (_values_of(self.ctx, v) if isinstance(v, cst.Name) else [v])]
                return (
                    bool(made) and len(values) == len(returns) and all(self._plain_tensor(v, depth + 1) for v in made)
                )
        expr = value
        while isinstance(expr, (cst.Call, cst.Subscript)) or isinstance(expr, cst.Attribute):
            if isinstance(expr, cst.Call):
                if self._upcast(expr) is not None:
                    return True
                factory = self._factory_name(expr)
                if factory is not None:
                    dtype_arg = _keyword(expr, "dtype")
                    if dtype_arg is not None:
                        return self._is_low(dtype_arg.value)
                    return self._factory_class(expr, factory) == FLOAT
                expr = expr.func
            else:
                expr = expr.value
        return False

    def _reads_in_steps(self, cls: cst.ClassDef, attr: str) -> list[cst.Attribute]:
        pattern = m.Attribute(value=m.Name("self"), attr=m.Name(attr))
        reads = []
        for func in self.reached.runtime:
            if self.ctx.enclosing(func, cst.ClassDef) is not cls:
                continue
            for read in findall(func.body, pattern, self.ctx.index):
                if isinstance(read, cst.Attribute) and not isinstance(self.ctx.parent(read), cst.AssignTarget):
                    reads.append(read)
        return reads

    # -- decisions ---------------------------------------------------------------------------
    def _decide_creations(self, sites: list[Site], fresh: frozenset[int]) -> None:
        """Per site, the dtype it takes: that of a tensor its cluster (the sites whose values meet,
        ``position * freq``, or are written into one another) meets, known at its line; where none
        is, the value is followed to where it meets one and cast there (:meth:`_meetings`)."""
        clusters = _clusters(sites)
        met: set[tuple[int, ...]] = set()
        for index, site in enumerate(sites):
            members = [sites[i] for i in clusters[index]]
            partners = [meet for member in members for meet in member.flow.meets if not meet.fresh]
            if not partners and not site.flow.escapes:
                continue  # only ends: an integer, a boolean, a host value
            # in an optimizer's step a value stored in its state meets the parameters (:meth:`_device_hint`)
            carrier = self._carrier(site, partners, fresh) if partners or site.optimizer else None
            if carrier is not None:
                self.result.follows.append((site, carrier))
                continue
            cluster = tuple(sorted(clusters[index]))
            if cluster in met:
                continue  # its casts are its cluster's, written once
            met.add(cluster)
            self._meetings(site, members, fresh)

    def _meetings(self, site: Site, members: list[Site], fresh: frozenset[int]) -> None:
        """The cluster of ``site`` cannot take a dtype where it is made: its values are followed
        across the file (:class:`~.meet.ValueReach`) and cast where they meet a tensor whose dtype
        is known there (BFM087). Where they leave what can be followed, meet a tensor of a dtype
        known nowhere, or meet one another in a matmul (an f32 matmul), BFM081 names the line."""
        found = self.reach.follow([member.node for member in members], False, fresh)
        exclude = fresh | frozenset(found.visited)
        casts: list[Cast] = []
        lost: tuple[cst.CSTNode, str | None] | None = None
        lost_in_a_module = False
        for meet in found.meets:
            if meet.fresh:
                if meet.kind == "matmul" and lost is None:
                    lost = (meet.at, None)
                continue
            if meet.other is not None and self.flows.maybe_number(meet.other) and not self._a_gradient(meet.other):
                continue  # a Python number decides no dtype and promotes nothing
            if meet.other is not None and self._upcast_to_f32(meet.other):
                continue  # f32 the code asks for (`grad_out.float()`): the f32 it is made in is that dtype
            carrier = self._carrier(site, [meet], exclude, anchor=meet.at) if meet.via is not None else None
            if carrier is not None:
                assert meet.via is not None, "a carrier is looked for only where a cast can go"
                casts.append(Cast(meet.via, carrier, meet.at))
            elif meet.kind != "into" and lost is None:
                lost = (meet.at, meet.weight or short_code(self.ctx, meet.other or meet.at))
                lost_in_a_module = meet.kind == "module"
        escaped = [*found.lost, *found.exits]
        if lost is None and escaped:
            lost = (escaped[0], None)
        if lost is None:
            if casts:
                self.result.meetings.append((site, casts))
            return
        stored = site.kind == "explicit" and site.unsure  # a dtype its class stores: bf16_on_xla keeps integers
        if site.unsure and not stored and _factory_short(self.ctx, site.node) != "tensor" and lost[1] is None:
            return  # may be an integer: what it meets decides nothing
        if not lost_in_a_module and self._made_on_xla_at_run_time(members):
            self.result.on_xla += [member for member in members if not any(member is k for k in self.result.on_xla)]
            return
        node, other = lost
        if other is None:
            self._block(site, "BFM081", "escapes", where=short_code(self.ctx, node), line=self.ctx.pos(node)[0])
        else:
            self._block(site, "BFM081", None, other=other, line=self.ctx.pos(node)[0])

    def _made_on_xla_at_run_time(self, members: list[Site]) -> bool:
        """Whether the cluster ``members``, whose values meet no tensor whose dtype is known, can take the
        switch's own rule at run time instead (``bf16_on_xla``: a floating tensor on the XLA device bf16, one on
        another device as it is): each is made fresh from what is not a floating tensor of the model (a
        factory, a promotion of an integer tensor, an upcast of an integer or fresh one), none names float64
        where the switch kept it float32 (XLA_DOWNCAST_BF16), and no value of them is moved to another device
        afterwards (made on the host, moved later: the cast where it is made would see the host)."""
        if casts_an_attribute_to_full_precision(self.ctx) or self._float64_modules_downcast():
            return False  # a module kept f32 on purpose may be what a bf16 value would meet: it would raise
        for member in members:
            if member.kind not in ("factory", "explicit", "promoted", "upcast"):
                return False
            if member.dtype_arg is not None and not (
                self._is_low(member.dtype_arg.value) or self._stored_dtype(member.dtype_arg.value)
            ):
                return False
            if member.flow.visited & self._device_moves():
                return False
        return True

    def _float64_modules_downcast(self) -> bool:
        """Whether the switch made float64 float32 on the device (XLA_DOWNCAST_BF16: ``"f64"`` not low) and a
        class of the file builds a module or tensor in float64 (``nn.Linear(h, c, dtype=torch.float64)``,
        ``.double()``): that module is float32 after the migration (the switch's rule, ``downcast_bf16``), and a
        bf16 value it is handed would raise."""
        if "f64" in self.low:
            return False
        ctx, f64 = self.ctx, self.rules.f64_dtypes

        def named() -> bool:
            for call in ctx.nodes(cst.Call):
                if ctx.enclosing(call, cst.ClassDef) is None:
                    continue
                if isinstance(call.func, cst.Attribute) and call.func.attr.value == "double" and not call.args:
                    return True
                dtype = _keyword(call, "dtype")
                if dtype is not None and dtype_names(ctx, dtype.value) & f64:
                    return True
            return False

        return bool(ctx.memo(("float64 in the classes",), named))

    def _device_moves(self) -> frozenset[int]:
        """The ids of the file's calls that may move a tensor to another device (:func:`_a_device_move`)."""
        ctx = self.ctx
        return ctx.memo(("device moves",), lambda: frozenset(id(c) for c in ctx.nodes(cst.Call) if _a_device_move(c)))

    def _decide_island(self, site: Site, decision: deliberate_f32.Decision) -> None:
        """Record what becomes of an upcast of the model's own tensors (:mod:`.deliberate_f32`)."""
        verdict = decision.verdict
        if verdict is Verdict.KEPT:
            if decision.casts_back and decision.where is not Where.OPTIMIZER:
                if not site.flow.casts_back:
                    site.flow.casts_back = list(decision.casts_back)
                self.result.islands.append(site)
            elif decision.computes:
                self.result.kept.append((site, decision.where))
        elif verdict is Verdict.CASTS:
            self.result.casts_back.append((site, decision.casts))
        elif verdict is Verdict.MATMUL:
            assert decision.at is not None, "a matmul verdict names its matmul"
            at = decision.at
            self._block(site, "BFM084", None, matmul=short_code(self.ctx, at), line=self.ctx.pos(at)[0])
        else:
            assert decision.at is not None, "a lost verdict names where"
            at = decision.at
            self._block(site, "BFM083", None, where=short_code(self.ctx, at), line=self.ctx.pos(at)[0])

    def _loss_state(self) -> None:
        """A class the step's loss alone reaches (a criterion) keeps parameters, buffers or layers
        of its own: ``model.to`` does not cast them, so they are f32 where the switch made them
        bf16, and what they meet computes in f32 (or fails, a bf16 input meeting an f32 weight):
        BFM086, the switch is kept."""
        for cls in self.reached.loss_classes:
            for node in loss_state(self.ctx, cls):
                self._block(Site(node, "state", Flow(node)), "BFM086", None, cls=cls.name.value)

    def _block(self, site: Site, code: str, variant: str | None, **fields: object) -> None:
        fields = {"code": short_code(self.ctx, site.node), "inside": inside(self.ctx, site.node), **fields}
        self.result.blocked.append(Blocked(site, code, variant, fields))

    # -- the tensor whose dtype a site takes ---------------------------------------------------
    def _carrier(
        self, site: Site, partners: list[Meet], fresh: frozenset[int], anchor: cst.CSTNode | None = None
    ) -> str | None:
        """The code of a tensor known at the site's line whose dtype is the dtype of what it
        meets: the tensor met itself, or what it was computed from (the operands of the
        arithmetic that made it, the weight of the layer that made it); in an optimizer's step,
        the parameters (the device the site is made on, or the first parameter). A value made by
        the audited code itself (``fresh``) is none: its own dtype is being decided. ``anchor``: the
        line at which the tensor must be known (the site's own, by default; where it meets one, for a
        cast written there)."""
        at = site.node if anchor is None else anchor
        queue: list[tuple[cst.BaseExpression | str, int]] = []
        for meet in partners:
            queue.extend((start, 0) for start in _carrier_starts(meet))
        seen: set[int | str] = set()
        while queue:
            candidate, depth = queue.pop(0)
            key = candidate if isinstance(candidate, str) else id(candidate)
            if key in seen or key in fresh:
                continue
            seen.add(key)
            if isinstance(candidate, str):
                if self._self_known(at) and not self.reached.uncast(self.ctx.enclosing(at, cst.ClassDef)):
                    return candidate  # a layer's weight: cast by `model.to`, unless the class is a loss's
                continue
            if self._known_tensor(candidate, at):
                return self.ctx.code(candidate)
            if depth < _MAX_TRACE:
                queue.extend((c, depth + 1) for c in self._computed_from(candidate))
        return self._device_hint(site)

    def _self_known(self, node: cst.CSTNode) -> bool:
        func = self.ctx.enclosing(node, cst.FunctionDef)
        params = list(func.params.params) if func is not None else []
        return bool(params) and params[0].name.value == "self"

    def _known_tensor(self, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """Whether ``expr`` is a reference (a name, attributes, literal indices) known at the
        site's line to be a floating tensor of the model: a parameter of the step function
        (not an integer), a name bound before the site to a tensor, ``self.<p>`` a parameter or
        buffer, a parameter of an optimizer."""
        root = _reference_root(expr)
        if root is None:
            return False
        if root.value == "self":
            return self._self_known(at) and self._self_tensor(expr)
        if not self._bound_before(root, at):
            return False
        if expr is root and self._a_gradient(root):
            return True  # the gradient `backward` is handed: the forward output's dtype, never a number
        if self.dtypes.infer(expr) == INT or self.flows.maybe_scalar(root) or self.flows.maybe_number(root):
            return False
        return self._name_is_tensor(root) and (expr is root or _transparent_chain(expr))

    def _self_tensor(self, expr: cst.BaseExpression) -> bool:
        code = self.ctx.code(expr)
        if code.startswith(_PARAMETER_ROOT):
            return True
        if not (isinstance(expr, cst.Attribute) and m.matches(expr.value, m.Name("self"))):
            return False
        cls = self.ctx.enclosing(expr, cst.ClassDef)
        if cls is None or self.reached.uncast(cls):  # a loss's own parameters and buffers stay f32
            return False
        attr = expr.attr.value
        if self._set_in_step(cls, attr):
            return False  # registered or assigned while the step runs, after `model.to`: its own dtype
        if "f64" not in self.low and attr in float64_state_attributes(self.ctx, cls):
            return False  # float64 state under XLA_DOWNCAST_BF16: float32 after `downcast_bf16`, not the stream's
        values = self_assigned(self.ctx, cls, attr)
        return _registered_buffer(cls, attr) or (
            bool(values)
            and all(isinstance(v, cst.Call) and self.ctx.qualified_names(v.func) & self.rules.registers for v in values)
        )

    def _set_in_step(self, cls: cst.ClassDef, attr: str) -> bool:
        """Whether the code a step runs registers ``self.<attr>`` as a buffer or assigns it: a
        buffer registered after ``model.to(torch.bfloat16)`` (a cache grown in ``forward``) has the
        dtype of the tensor registered, which the cast never saw."""
        for func in self.reached.runtime:
            if self.ctx.enclosing(func, cst.ClassDef) is not cls:
                continue
            for call in findall(
                func.body,
                m.Call(func=m.Attribute(value=m.Name("self"), attr=m.Name("register_buffer"))),
                self.ctx.index,
            ):
                first = call.args[0].value if call.args else None
                if isinstance(first, cst.SimpleString) and first.evaluated_value == attr:
                    return True
            pattern = m.Assign(
                targets=[
                    m.ZeroOrMore(),
                    m.AssignTarget(m.Attribute(value=m.Name("self"), attr=m.Name(attr))),
                    m.ZeroOrMore(),
                ]
            )
            if findall(func.body, pattern, self.ctx.index):
                return True
        return False

    def _bound_before(self, name: cst.Name, node: cst.CSTNode) -> bool:
        """Whether ``name`` is a parameter of the function holding ``node``, or bound in it (in the
        module, for a step at module level) by a statement before ``node``'s statement in a block
        that holds ``node``."""
        func = self.ctx.enclosing(node, cst.FunctionDef)
        params = (
            list(func.params.posonly_params) + list(func.params.params) + list(func.params.kwonly_params)
            if func is not None
            else []
        )
        if any(p.name.value == name.value for p in params):
            return True
        statement = self.ctx.statement_of(node)
        blocks = {id(a) for a in self.ctx.ancestors(statement) if isinstance(a, cst.IndentedBlock)}
        scope = self.ctx.scopes.get(node)
        if scope is None or statement is None:
            return False
        for a in scope[name.value]:
            if not isinstance(a, Assignment) or self.ctx.enclosing(a.node, cst.FunctionDef) is not func:
                continue
            bound_at = self.ctx.statement_of(a.node)
            if (
                bound_at is not None
                and self.ctx.pos(bound_at) < self.ctx.pos(statement)
                and id(self.ctx.parent(bound_at)) in blocks
            ):
                return True
        return False

    def _name_is_tensor(self, name: cst.Name) -> bool:
        """A parameter of a step function that may be a tensor, or a name bound to a tensor."""
        scope = self.ctx.scopes.get(name)
        if scope is None:
            return False
        bindings = [a for a in scope[name.value] if isinstance(a, Assignment)]
        return bool(bindings) and all(self._binding_is_tensor(a.node) for a in bindings)

    def _binding_is_tensor(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Param):
            if self._autograd_context(node):
                return False
            return self.flows.tensor_like(node.name) or self._gradient(node)
        if self._saved_tensor(node):
            return True
        target = self.ctx.parent(node)
        assign = self.ctx.parent(target)
        if isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign):
            value = assign.value
            if self.ctx.code(value).startswith(_PARAMETER_ROOT):
                return True
            return isinstance(value, (cst.Call, cst.BinaryOperation, cst.Subscript)) and self.flows.tensor_like(value)
        return False

    def _gradient(self, param: cst.Param) -> bool:
        """A gradient a ``torch.autograd.Function``'s ``backward`` is handed (a parameter after
        ``ctx``): the dtype of the forward's output it is the gradient of (torch docs, "Extending
        torch.autograd"), the model's."""
        func = self.ctx.enclosing(param, cst.FunctionDef)
        if func is None or func.name.value != "backward" or param is func.params.params[0]:
            return False
        return self._autograd_function(self.ctx.enclosing(func, cst.ClassDef))

    def _autograd_context(self, param: cst.Param) -> bool:
        """``ctx``, the first parameter of a ``torch.autograd.Function``'s ``forward``, ``backward`` or
        ``setup_context``: a context object, no tensor (``dtype=ctx.dtype`` raised AttributeError, written
        where ``ctx.save_for_backward(noise)`` was read as a meet: bench/unseen/hunt22 autograd_fn_ctx_dtype)."""
        func = self.ctx.enclosing(param, cst.FunctionDef)
        if func is None or func.name.value not in ("forward", "backward", "setup_context"):
            return False
        if not func.params.params or param is not func.params.params[0]:
            return False
        return self._autograd_function(self.ctx.enclosing(func, cst.ClassDef))

    def _a_gradient(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` names a gradient a ``torch.autograd.Function``'s ``backward`` is handed
        (:meth:`_gradient`): a tensor of the model's dtype, never a Python number."""
        if not isinstance(expr, cst.Name):
            return False
        scope = self.ctx.scopes.get(expr)
        if scope is None:
            return False
        return any(isinstance(a.node, cst.Param) and self._gradient(a.node) for a in scope[expr.value])

    def _saved_tensor(self, name: cst.CSTNode) -> bool:
        """A name unpacked from ``ctx.saved_tensors`` in a ``torch.autograd.Function``'s ``backward``:
        a tensor its forward saved, of the model's code."""
        element = self.ctx.parent(name)
        targets = self.ctx.parent(element) if isinstance(element, cst.Element) else None
        target = self.ctx.parent(targets) if isinstance(targets, (cst.Tuple, cst.List)) else None
        assign = self.ctx.parent(target) if isinstance(target, cst.AssignTarget) else None
        if not (isinstance(assign, cst.Assign) and m.matches(assign.value, m.Attribute(attr=m.Name("saved_tensors")))):
            return False
        return self._autograd_function(self.ctx.enclosing(assign, cst.ClassDef))

    def _autograd_function(self, cls: cst.ClassDef | None) -> bool:
        return cls is not None and any(
            "torch.autograd.Function" in self.ctx.qualified_names(base.value) for base in cls.bases
        )

    def _computed_from(self, expr: cst.BaseExpression) -> list[cst.BaseExpression | str]:
        """What ``expr`` is computed from, with its dtype: the values a name is bound to, the
        operands of arithmetic, the receiver of a method, the first tensor argument of a torch
        function, the weight of a layer."""
        if isinstance(expr, cst.Name):
            return list(_values_of(self.ctx, expr))
        if isinstance(expr, cst.Attribute):
            return [expr.value] if expr.attr.value in ("grad", "data", "T", "mT") else []
        if isinstance(expr, cst.Subscript):
            # a slice has its tensor's dtype; an item taken by a literal key or index is judged itself (the
            # container, a dict or tuple the model returns, has no dtype: `.to(out.dtype)` raised)
            return [] if _literal_item(expr) else [expr.value]
        if isinstance(expr, cst.UnaryOperation):
            return [expr.expression]
        if isinstance(expr, cst.BinaryOperation):
            return [e for e in (expr.left, expr.right) if self.flows.tensor_like(e)]
        if isinstance(expr, cst.Call):
            return self._call_computed_from(expr)
        return []

    def _call_computed_from(self, call: cst.Call) -> list[cst.BaseExpression | str]:
        layer = self.flows.layer(call.func)
        if layer is not None:
            return [layer[0]]  # a layer's output has its weight's dtype
        if any(n.startswith("torch.") for n in self.ctx.qualified_names(call.func)):  # `F.log_softmax(x, -1)`
            args = [a.value for a in call.args if a.keyword is None and self.flows.tensor_like(a.value)]
            return list[cst.BaseExpression | str](args[:2])
        if isinstance(call.func, cst.Attribute) and not m.matches(call.func.value, m.Name("self")):
            method = call.func.attr.value
            api = self.ctx.rules.torch_api
            keeps = method in self.rules.dtype_methods or method in api.same_dtype_methods
            return [call.func.value] if keeps else []
        funcs = [d for d in definitions(self.ctx, call.func) if isinstance(d, cst.FunctionDef)]
        if funcs and not any(self._casts_or_moves(func) for func in funcs):  # `rotate_half(q)`
            args = [a.value for a in call.args if a.keyword is None and self.flows.tensor_like(a.value)]
            return list[cst.BaseExpression | str](args[:1])
        return []

    def _casts_or_moves(self, func: cst.FunctionDef) -> bool:
        """Whether a function of the file casts or moves a tensor (``.float()``, ``.to(...)``, ``.type(...)``,
        ``.cpu()``): its result need not have its argument's dtype (a hunt's DDPM ``extract(table, t, shape)``
        gathers from a float64 table on the host and returns a float32 tensor on the device; taken to carry
        the table's dtype, a sampler's noise was made float64 on the device)."""
        methods = {*self.rules.upcast_methods, "to", "type", "cpu", "cuda"}
        return any(
            isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value in methods
            for call in findall(func.body, m.Call(func=m.Attribute()), self.ctx.index)
        )

    def _device_hint(self, site: Site) -> str | None:
        """In an optimizer's step: the tensor whose device the site is made on, when it is a
        parameter (``device = first.device`` with ``first = self.param_groups[0]["params"][0]``),
        else the first parameter; the parameters are what a step's tensors meet."""
        if not site.optimizer or not self._self_known(site.node):
            return None
        device = _keyword(site.node, "device") if isinstance(site.node, cst.Call) else None
        source = _device_source(self.ctx, device.value) if device is not None else None
        if source is not None and self._bound_before_or_self(source, site.node) and self._parameter(source):
            return self.ctx.code(source)
        return _FIRST_PARAMETER

    def _bound_before_or_self(self, expr: cst.BaseExpression, node: cst.CSTNode) -> bool:
        root = _reference_root(expr)
        return root is not None and (root.value == "self" or self._bound_before(root, node))

    def _parameter(self, expr: cst.BaseExpression) -> bool:
        """An optimizer's parameter: ``self.param_groups[...]...`` or a name bound only to one."""
        if self.ctx.code(expr).startswith(_PARAMETER_ROOT):
            return True
        if isinstance(expr, cst.Name):
            if _loop_target_over(self.ctx, expr, _params_of_a_group):
                return True  # `for group in self.param_groups: for p in group["params"]:`, torch.optim's own loop
            values = list(_values_of(self.ctx, expr))
            return bool(values) and all(self.ctx.code(v).startswith(_PARAMETER_ROOT) for v in values)
        return False


def _carrier_starts(meet: Meet) -> list[cst.BaseExpression | str]:
    """Where the search for a site's dtype starts from one tensor it meets: a layer's weight, the
    operand met, or, handed to a submodule (an RNN's initial state: :mod:`.submodule_inputs`), the
    plain-name input beside it, then the submodule's parameters (the input, when it is not known as
    a tensor at the site's line, is traced after them: an expression is not hoisted)."""
    if meet.kind == "module":
        starts: list[cst.BaseExpression | str] = [meet.other] if meet.other is not None else []
        return starts + [meet.weight] if meet.weight is not None else starts
    if meet.weight is not None:
        return [meet.weight]
    return [meet.other] if meet.other is not None else []


def _clusters(sites: list[Site]) -> list[list[int]]:
    """For each site, the indices of the sites in its cluster: sites whose flows reach a common
    node or meet each other's values."""
    parent = list(range(len(sites)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[int, int] = {}
    for index, site in enumerate(sites):
        for node in site.flow.visited:
            if node in owner:
                parent[find(index)] = find(owner[node])
            else:
                owner[node] = index
    for index, site in enumerate(sites):
        for meet in site.flow.meets:
            if meet.fresh and meet.other is not None and id(meet.other) in owner:
                parent[find(index)] = find(owner[id(meet.other)])
    groups: dict[int, list[int]] = {}
    for index in range(len(sites)):
        groups.setdefault(find(index), []).append(index)
    return [groups[find(index)] for index in range(len(sites))]


def _factory_short(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """``"tensor"`` for ``torch.tensor(...)``: the short name of the torch factory ``node`` calls."""
    if not isinstance(node, cst.Call):
        return None
    names = [n for n in ctx.qualified_names(node.func) if n.startswith("torch.") and n.count(".") == 1]
    return names[0][6:] if names else None


def _registered_buffer(cls: cst.ClassDef, attr: str) -> bool:
    """Whether ``cls`` registers a buffer named ``attr`` (``self.register_buffer("attr", ...)``)."""
    for call in findall(cls, m.Call(func=m.Attribute(attr=m.Name("register_buffer")))):
        first = call.args[0].value if call.args else None
        if isinstance(first, cst.SimpleString) and first.evaluated_value == attr:
            return True
    return False


def _is_fresh(meet: Meet, fresh: set[int]) -> bool:
    """Whether the operand met is itself made in the audited code (then it is no partner: the
    two are decided together)."""
    return meet.other is not None and id(meet.other) in fresh


def _keyword(call: cst.CSTNode, name: str) -> cst.Arg | None:
    if not isinstance(call, cst.Call):
        return None
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _reference_root(expr: cst.BaseExpression) -> cst.Name | None:
    """The name a reference starts from (``self`` for ``self.qkv.weight``, ``first`` for
    ``first``; ``self`` for ``self.param_groups[0]["params"][0]``), or None when ``expr`` is not a
    chain of attributes and literal indices over a name."""
    while True:
        if isinstance(expr, cst.Name):
            return expr
        if isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Subscript) and all(
            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.Integer, cst.SimpleString))
            for e in expr.slice
        ):
            expr = expr.value
        else:
            return None


def _transparent_chain(expr: cst.BaseExpression) -> bool:
    """``p.grad``, ``x.data``: attributes with the dtype of what they are taken from; and items taken
    by a literal key or index (``out["logits"]``, ``outs[0]``), whose ``.dtype`` is the item's own
    (a dict or tuple the model returns has none)."""
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Attribute) and expr.attr.value not in ("grad", "data", "T", "mT"):
            return False
        if isinstance(expr, cst.Subscript) and not _literal_item(expr):
            return False
        expr = expr.value
    return isinstance(expr, cst.Name)


def _literal_item(expr: cst.Subscript) -> bool:
    """``out["logits"]``, ``outs[0]``: an item taken by literal keys or indices (no slice)."""
    return all(
        isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.Integer, cst.SimpleString))
        for e in expr.slice
    )


def _values_of(ctx: FileContext, name: cst.Name) -> Iterable[cst.BaseExpression]:
    """The values ``name`` is bound to by assignments (a tuple target gives the whole value)."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return []
    values = []
    for a in scope[name.value]:
        if not isinstance(a, Assignment) or not isinstance(a.node, cst.Name):
            continue
        node: cst.CSTNode | None = ctx.parent(a.node)
        while isinstance(node, (cst.Element, cst.Tuple, cst.List)):
            node = ctx.parent(node)
        assign = ctx.parent(node)
        if isinstance(node, cst.AssignTarget) and isinstance(assign, cst.Assign):
            values.append(assign.value)
    return values


def _loop_target_over(ctx: FileContext, name: cst.Name, what) -> bool:
    """Whether ``name`` is bound once, as the whole target of a ``for`` whose iterable ``what(ctx, iter)`` accepts."""
    scope = ctx.scopes.get(name)
    bindings = [a for a in scope[name.value] if isinstance(a, Assignment)] if scope is not None else []
    if len(bindings) != 1:
        return False
    loop = ctx.parent(bindings[0].node)
    return isinstance(loop, cst.For) and loop.target is bindings[0].node and what(ctx, loop.iter)


def _params_of_a_group(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """``self.param_groups[i]["params"]``, or ``group["params"]`` with ``group`` a loop target over
    ``self.param_groups`` (torch/optim/optimizer.py: a group's tensors are under ``"params"``)."""
    if ctx.code(expr).startswith(_PARAMETER_ROOT):
        return True
    if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name) and len(expr.slice) == 1):
        return False
    index = expr.slice[0].slice
    if not (isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString)):
        return False
    return index.value.evaluated_value == "params" and _loop_target_over(
        ctx, expr.value, lambda c, it: c.code(it) == _PARAMETER_ROOT
    )


def _device_source(ctx: FileContext, device: cst.BaseExpression) -> cst.BaseExpression | None:
    """``Y`` for ``device=Y.device`` or ``device=d`` with ``d = Y.device``."""
    if isinstance(device, cst.Attribute) and device.attr.value == "device":
        return device.value
    if isinstance(device, cst.Name):
        values = list(_values_of(ctx, device))
        if len(values) == 1:
            return _device_source(ctx, values[0])
    return None


def _from_numpy(ctx: FileContext, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Whether ``expr`` is a host tensor made from NumPy (``torch.from_numpy(a)``, through indexing and
    methods that keep it where it is, or returned by a function of the file every ``return`` of which is
    one: ``batch(16, rng).float().to(device)``, a hunt's, was refused as a device upcast, BFM083): its upcast
    ran on the host under the switch too, and the device copy made of it later was bf16 (the input casts'
    business, not deliberate f32 on the device)."""
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Call):
            func = expr.func
            if "torch.from_numpy" in ctx.qualified_names(func):
                return True
            if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda", "xla"):
                return False  # moved somewhere
            if isinstance(func, cst.Name) and depth < 3:
                made = [d for d in definitions(ctx, func) if isinstance(d, cst.FunctionDef)]
                returns = [r for d in made for r in findall(d, m.Return(), ctx.index)]
                values = [r.value for r in returns if isinstance(r, cst.Return)]
                if (
                    made
                    and len(values) == len(returns)
                    and all(value is not None and _from_numpy(ctx, value, depth + 1) for value in values)
                ):
                    return True
            expr = func
        else:
            expr = expr.value
    return False
