"""bf16-attention-math: files that use attention get the flag that keeps torch's math SDPA kernel in
bf16 (``rules/torch_api.toml``: ``attention_flag``; since torch 2.5 the math kernel upcasts bf16 q/k/v to
f32, where under the legacy switch attention computed in bf16), once, before the first optimizer is built
(without one, before the first other module's cast: :mod:`..device_modules`), under the guard."""

from __future__ import annotations

import libcst as cst

from ...rules import Emit
from .. import snippets
from .migration import Migration, Planned

EMIT = Emit.BF16_ATTENTION_MATH


def plan(m: Migration, planned: Planned) -> Planned:
    """The flag before the first optimizer (or after the first other module's cast), reported at
    the first call that uses attention (BFM062); nothing where the file names the flag already."""
    ctx, api = m.ctx, m.ctx.rules.torch_api
    user = next((c for c in ctx.nodes(cst.Call) if ctx.qualified_names(c.func) & api.attention_users), None)
    first = next((s.statement for s in m.sites if s.statement is not None), None)
    after = next((d.anchor for d in m.on_device.modules if d.cast), None)
    name = api.attention_flag.split("(")[0]
    if (
        user is None
        or (first is None and after is None)
        # the file's text first: a call's code is part of it (rendering each call was most of
        # a small file's time)
        or (name in ctx.text() and any(name in ctx.code(c) for c in ctx.nodes(cst.Call)))
    ):
        return planned
    flag = snippets.statement(api.attention_flag, m.guard)
    if first is not None:
        m.plan.insert_before.setdefault(id(first), []).insert(0, flag)
    else:
        assert after is not None, "checked above"
        m.plan.insert_after.setdefault(id(after), []).insert(0, flag)
    ctx.report("BFM062", user, fixed=True, user=ctx.code(user.func), flag=api.attention_flag)
    return planned
