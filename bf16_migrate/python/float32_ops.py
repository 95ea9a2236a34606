"""The ops the code runs on the device that have no bf16 kernel there (``rules/model_code.toml``
``[flow.float32_ops]``: ``torch.linalg.cholesky``, ``torch.linalg.solve``, ``torch.logdet``...).

Under the legacy switch their operands said float32, so torch-xla's CPU fallback computed them in
f32 and their backward's matmuls ran in bf16 on the device; after ``model.to(torch.bfloat16)`` an
operand is real bf16 and the fallback raises (measured with torch-xla 2.9 on the XLA CPU device:
``"cholesky_cpu" not implemented for 'BFloat16'``). Run on float32 operands and cast back
(``torch.linalg.cholesky(K.float()).to(K.dtype)``), the op no longer raises, but its backward
computes in f32 on the device (3 of 13 matmuls of ``fixtures/contract/kernel_regression``'s step
graph, 0 in the legacy run; verify's precision part FAILs it). Neither is the legacy run's
computation, so the switch is kept and each such op named.

An op that runs in bf16 given a keyword (``[flow.float32_ops.by_keyword]``: ``torch.cdist``'s
euclidean distance by matrix multiplication) gets it instead (:func:`keyword_path`, BFM156).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

import libcst as cst
from libcst.metadata import Assignment, ImportAssignment

from ..rules import KeywordPath
from .apply import EditPlan
from .context import FileContext
from .optimizers import append_keyword


def candidates(ctx: FileContext) -> list[cst.Call]:
    """The file's calls whose last name is one of ``[flow.float32_ops]``'s or ``cast_to``'s (a check by
    name before any qualified name is read)."""
    rules = ctx.rules.model_code
    names = (*rules.float32_ops, *rules.float32_ops_when, *rules.float32_ops_cast_to, *rules.float32_parametrizations)
    short = {name.rsplit(".", 1)[-1] for name in names} | rules.float32_op_methods
    return [
        call
        for call in ctx.nodes(cst.Call)
        if (call.func.attr.value if isinstance(call.func, cst.Attribute) else getattr(call.func, "value", None))
        in short
    ]


def is_float32_op(ctx: FileContext, call: cst.Call) -> bool:
    """Whether ``call`` runs one of ``[flow.float32_ops]``: its function (``torch.stft(x, ...)``), as a
    Tensor method one of ``methods`` (``x.stft(...)``), or one of ``when`` given an argument value it has no
    bf16 kernel for (``torch.linalg.matrix_norm(w, ord=2)``)."""
    names = ctx.qualified_names(call.func)
    if names & ctx.rules.model_code.float32_ops_sampled:
        return _sampled(ctx, call)
    if names & ctx.rules.model_code.float32_ops or _a_tensor_method(ctx, call):
        return True
    when = ctx.rules.model_code.float32_ops_when
    given = [(a.keyword.value if a.keyword is not None else None, ctx.code(a.value)) for a in call.args if not a.star]
    return any(when[name].given(given) for name in names & when.keys())


_NOT_SAMPLING = frozenset(
    {"log_prob", "entropy", "cdf", "icdf", "mean", "mode", "variance", "stddev", "perplexity", "support", "batch_shape"}
    | {"event_shape", "concentration", "concentration0", "concentration1", "rate", "df", "loc", "scale", "total_count"}
    | {"probs", "logits", "has_rsample"}
)
"""What a distribution gives without its sampler (torch 2.9 docs, "torch.distributions"): its scores and moments."""


def _sampled(ctx: FileContext, call: cst.Call) -> bool:
    """Whether the distribution ``call`` builds (one of ``[flow.float32_ops] sampled``) may be sampled: an instance
    used inline or through the names it is bound to for anything but :data:`_NOT_SAMPLING` (``.rsample()``, or
    handed on, returned, kept: where it goes cannot be followed)."""
    parent = ctx.parent(call)
    if isinstance(parent, cst.Attribute) and parent.value is call:
        return parent.attr.value not in _NOT_SAMPLING
    assign = ctx.parent(parent) if isinstance(parent, cst.AssignTarget) else parent
    if not (isinstance(assign, cst.Assign) and assign.value is call and len(assign.targets) == 1):
        return True
    name = assign.targets[0].target
    scope = ctx.scopes.get(name) if isinstance(name, cst.Name) else None
    if scope is None or not isinstance(name, cst.Name):
        return True
    bindings = [b for b in scope[name.value] if getattr(b, "node", None) is name]
    if not bindings or any(not isinstance(b, Assignment) for b in bindings):
        return True
    for access in (ref for b in bindings for ref in b.references):
        used = ctx.parent(access.node)
        if not (isinstance(used, cst.Attribute) and used.value is access.node and used.attr.value in _NOT_SAMPLING):
            return True
    return False


def _a_tensor_method(ctx: FileContext, call: cst.Call) -> bool:
    """Whether ``call`` is one of ``[flow.float32_ops] methods`` called on a value, not a module's function of
    that name (``np.quantile``, ``torch.stft``: the receiver resolves to an import)."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in ctx.rules.model_code.float32_op_methods):
        return False
    receiver = func.value
    while isinstance(receiver, cst.Attribute):
        receiver = receiver.value
    if not isinstance(receiver, cst.Name):
        return True  # `(x - y).quantile(0.9)`, `model(x).stft(...)`
    scope = ctx.scopes.get(receiver)
    bindings = list(scope[receiver.value]) if scope is not None else []
    return bool(bindings) and not any(isinstance(b, ImportAssignment) for b in bindings)


def keyword_path(ctx: FileContext, call: cst.Call) -> KeywordPath | None:
    """The keyword that makes ``call`` run in bf16 on the device (``[flow.float32_ops.by_keyword]``:
    ``torch.cdist(a, b)`` by matrix multiplication, ``compute_mode="use_mm_for_euclid_dist"``), when
    its function has one, the call does not pass that keyword yet, and its guarded argument is absent
    or one of the values it allows (``p=2``); else None."""
    paths = ctx.rules.model_code.float32_ops_by_keyword
    for name in ctx.qualified_names(call.func) & paths.keys():
        found = paths[name]
        keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
        if found.keyword in keywords:
            return None
        positional = [a for a in call.args if a.keyword is None and not a.star]
        given = keywords.get(found.argument) or (positional[found.at] if len(positional) > found.at else None)
        if given is None or ctx.code(given.value) in found.values:
            return found
    return None


def plan_keyword_ops(ctx: FileContext, plan: EditPlan) -> None:
    """A module of the tree a legacy script imports, in a mode that casts the model: each op of its code that runs
    in bf16 given a keyword (:func:`keyword_path`: ``torch.cdist(a, b)``) gets it (BFM156), as the script's own do.
    The script's model and batches reach that code bf16 after the migration, where the switch's f32-labelled
    operands took the CPU fallback (measured, torch-xla 2.9 on the XLA CPU device: a Chamfer loss's
    ``torch.cdist`` of another file raised ``"cdist_backward" not implemented for 'BFloat16'``, a hunt's); the
    keyword changes only the algorithm, so it is written wherever the operands live."""
    for call in candidates(ctx):
        path = keyword_path(ctx, call)
        if path is None or id(call) in plan.replace:
            continue
        plan.replace[id(call)] = functools.partial(with_keyword, keyword=path.keyword, value=path.value)
        ctx.report("BFM156", call, fixed=True, op=ctx.code(call.func), keyword=f"{path.keyword}={path.value}")


def with_keyword(node: cst.CSTNode, keyword: str, value: str) -> cst.CSTNode:
    """``node`` (an op's call) with ``keyword=value`` appended."""
    assert isinstance(node, cst.Call), "an op is a call"
    return append_keyword(node, keyword, cst.parse_expression(value))


def cast_back_operand(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    """The operand whose dtype the result of ``call`` is cast back to (``[flow.float32_ops.cast_to]``:
    ``weights`` of ``torch.bincount(ids, weights=w)``, whose bf16 weights give float64 on the device),
    when the call passes it by keyword and its result is not already cast (``.to(...)``); else None."""
    table = ctx.rules.model_code.float32_ops_cast_to
    names = ctx.qualified_names(call.func) & table.keys()
    if not names:
        return None
    keyword = table[next(iter(names))]
    operand = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
    parent = ctx.parent(call)
    if isinstance(parent, cst.Attribute) and parent.attr.value in ("to", "float", "type"):
        return None
    return operand


def runs_by_keyword(ctx: FileContext, call: cst.Call) -> bool:
    """Whether ``call`` already passes the keyword that makes it run in bf16, with its value."""
    paths = ctx.rules.model_code.float32_ops_by_keyword
    for name in ctx.qualified_names(call.func) & paths.keys():
        found = paths[name]
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == found.keyword:
                return ctx.code(arg.value) == found.value
    return False


def find_float32_ops(
    ctx: FileContext, scopes: Iterable[cst.CSTNode], path: frozenset[int], inits: Iterable[cst.CSTNode] = ()
) -> list[cst.Call]:
    """The calls of ``[flow.float32_ops]``'s functions inside ``scopes`` (the code that runs on
    the device: the model's and its loss's) or on a step's loss ``path`` (ids of the nodes from
    the model's output to the loss, :attr:`.loss_reach.LossCode.path`), and of
    ``[flow.float32_parametrizations]``' inside ``inits`` (the models' ``__init__``: the map they
    register runs in every forward), in the file's order. A call elsewhere in a step may run on the
    host (a float64 computation): it is left alone."""
    holders = {id(scope) for scope in scopes}
    builders = {id(scope) for scope in inits}
    rules = ctx.rules.model_code
    found = []
    for call in candidates(ctx):
        names = ctx.qualified_names(call.func)
        if is_float32_op(ctx, call):
            if (id(call) in path or any(id(a) in holders for a in ctx.ancestors(call))) and not runs_by_keyword(
                ctx, call
            ):
                found.append(call)
        elif names & rules.float32_parametrizations and any(id(a) in builders for a in ctx.ancestors(call)):
            found.append(call)
    return found
