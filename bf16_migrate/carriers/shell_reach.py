"""Which settings of a shell fragment are in force at which launch: execution order, the
branches an ``export`` sits in and the subshells that hold it (bash(1), "COMMAND EXECUTION
ENVIRONMENT": a subshell, a pipeline element and ``$(...)`` get a copy of the environment).

Each node gets a :class:`Ctx`: an order key (a function's body runs where the function is first
called), its guard path (the ``if``/``case``/``&&`` branches that must be taken) and its
containers (subshells, pipeline elements). :func:`link` then fills every launch's
``reached_by``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Protocol

import tree_sitter

from .model import SET, UNSET, Analysis, Blocker, Include
from .shell_dead import dead_branch
from .shell_render import EntryData

CONDITIONAL = {
    "if_statement",
    "elif_clause",
    "else_clause",
    "case_item",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "list",
}
SUBSHELLS = {"subshell", "command_substitution", "process_substitution"}


@dataclass
class Ctx:
    """Where a node runs: ``key`` orders nodes in execution order, ``guard`` the branches
    ``(node id, tag)`` it needs, ``containers`` the subshells and pipeline elements around it."""

    key: tuple
    guard: tuple
    containers: tuple
    dead: tuple[Blocker, str] | None = None
    """Why the node never runs, or may not (:mod:`.shell_dead`: a function nothing calls, a
    constant condition): why a setting there is kept (:attr:`Blocker.NEVER_IN_FORCE`: never
    runs; :attr:`Blocker.UNREWRITTEN_FORM`: when it runs cannot be told) and the reason, worded
    for a message; None when it runs as its place says."""


@dataclass
class Event:
    """Entry ``entry`` sets or unsets ``variable`` (``action``) at ``ctx``."""

    entry: int
    variable: str
    action: str
    ctx: Ctx


class ReachedFragment(Protocol):
    """What this module reads of a :class:`~.shell_fragment.ShellFragment`: its functions and
    their first calls, its entries, events, launches, includes and env-file heredocs, and the
    cache of :func:`context`."""

    @property
    def analysis(self) -> Analysis: ...
    @property
    def calls(self) -> Mapping[str, tree_sitter.Node]: ...
    @property
    def dead_functions(self) -> Mapping[str, tuple[Blocker, str]]: ...
    @property
    def data(self) -> bytes: ...
    @property
    def ctx_cache(self) -> dict[int, Ctx]: ...
    @property
    def entry_data(self) -> Mapping[int, EntryData]: ...
    @property
    def events(self) -> list[Event]: ...
    @property
    def heredocs(self) -> list[tuple[str, list[int], Ctx]]: ...
    @property
    def include_ctx(self) -> list[tuple[Include, Ctx]]: ...
    @property
    def launch_ctx(self) -> Mapping[int, Ctx]: ...
    @property
    def my_launches(self) -> list[int]: ...
    @property
    def sr_scopes(self) -> list[tuple]: ...
    def t(self, node_or_span) -> str: ...


def context(frag: ReachedFragment, node) -> Ctx:
    """Order key, guard path and subshell containers of ``node`` (functions inlined at their
    first call)."""
    cached = frag.ctx_cache.get(node.id)
    if cached is not None:
        return cached
    guard: list = []
    containers: list = []
    child = node
    anc = node.parent
    outer: Ctx | None = None
    dead: tuple[Blocker, str] | None = None
    while anc is not None:
        if anc.type == "function_definition":
            name = anc.child_by_field_name("name")
            call = frag.calls.get(frag.t(name)) if name is not None else None
            if call is not None:
                outer = context(frag, call)
                body = anc.child_by_field_name("body")
                if body is not None and body.type == "subshell":
                    containers.insert(0, body.id)
                break
            if name is not None and dead is None:
                dead = frag.dead_functions.get(frag.t(name))
        if dead is None and anc.type in ("program", "if_statement", "list", "while_statement", "case_statement"):
            branch = dead_branch(anc, child, frag.data)
            dead = (Blocker.NEVER_IN_FORCE, branch) if branch is not None else None
        following = _next_sibling(anc, child)
        if following is not None and following.type == "&":  # `cmd &`: run in a subshell of its own
            containers.insert(0, ("background", child.id))
        if anc.type in SUBSHELLS:
            containers.insert(0, anc.id)
        if anc.type == "pipeline" and anc.named_child_count > 1:
            containers.insert(0, (anc.id, child.id))
        if anc.type in CONDITIONAL:
            tag = _branch_tag(anc, child)
            if tag is not None:
                guard.insert(0, (anc.id, tag))
        child = anc
        anc = anc.parent
    key = (node.start_byte,)
    if outer is not None:
        dead = dead or outer.dead
        result = Ctx(outer.key + key, outer.guard + tuple(guard), outer.containers + tuple(containers), dead)
    else:
        result = Ctx(key, tuple(guard), tuple(containers), dead)
    frag.ctx_cache[node.id] = result
    return result


def _next_sibling(anc, child):
    found = False
    for c in anc.children:
        if found:
            return c
        found = c.id == child.id
    return None


def _branch_tag(anc, child) -> str | None:
    if anc.type == "list":
        return None if anc.children and anc.children[0].id == child.id else "rhs"
    if anc.type in ("if_statement", "elif_clause"):
        seg = 0
        for c in anc.children:
            if c.id == child.id:
                break
            if c.type == "then":
                seg = 1
        if child.type in ("elif_clause", "else_clause"):
            return None  # the clause node carries its own tag
        return "then" if seg else None  # the condition runs whenever the statement does
    if anc.type == "else_clause":
        return "else"
    if anc.type == "case_item":
        return "item"
    if anc.type in ("while_statement", "for_statement", "c_style_for_statement"):
        return "body" if child.type == "do_group" else None
    return None


def link(frag: ReachedFragment) -> None:  # noqa: C901
    """Fill ``reached_by`` of ``frag``'s launches from its events (a launch is reached surely
    when the last setting before it in execution order is on its guard path, partially when on
    some branch only), and the launches of its includes and env-file heredocs."""
    launches = frag.analysis.launches
    by_var: dict[str, list[Event]] = {}
    for ev in frag.events:
        if ev.ctx.dead is not None:  # never runs: never in force (BFM092), kept as it is
            entry = frag.analysis.entries[ev.entry]
            blocker, why = ev.ctx.dead
            if entry.problem is None:
                never = blocker is Blocker.NEVER_IN_FORCE
                entry.problem, entry.blocker = (f"{why}: it never takes effect" if never else why), blocker
            continue
        by_var.setdefault(ev.variable, []).append(ev)
    for events in by_var.values():
        events.sort(key=lambda e: e.ctx.key)
        for idx in frag.my_launches:
            lc = frag.launch_ctx[idx]
            if lc.dead is not None:
                continue  # a launch that never runs is reached by nothing
            if launches[idx].isolated:
                continue  # `env -i`: only its own command line's settings (added with the launch)
            state, on = "off", []
            for ev in events:
                if not (ev.ctx.key < lc.key or ev.ctx.key == lc.key):
                    break
                if lc.containers[: len(ev.ctx.containers)] != ev.ctx.containers:
                    continue  # exported inside a subshell the launch is not in
                sure = lc.guard[: len(ev.ctx.guard)] == ev.ctx.guard
                is_cmd_local = frag.entry_data[ev.entry].kind == "envword" and ev.action == UNSET
                if is_cmd_local and ev.ctx.key != lc.key:
                    continue
                if ev.action == SET:
                    if sure:
                        state, on = "on", [(ev.entry, True)]
                    else:
                        state = "on" if state == "on" else "maybe"
                        on.append((ev.entry, False))
                else:
                    if sure:
                        state, on = "off", []
                    elif state != "off":
                        state = "maybe"
                        on = [(e, False) for e, _ in on]
            if on:
                for eid, sure in on:
                    prev = launches[idx].reached_by.get(eid)
                    launches[idx].reached_by[eid] = sure if prev is None else (prev or sure)
    # `X=1; export X`: the bare export travels with the assignment
    # env-file heredocs reach the launches of the includes that load that file
    for target, ids, _hctx in frag.heredocs:
        norm = _norm(target)
        for inc, ictx in frag.include_ctx:
            if _norm(inc.path) == norm:
                inc.local = True
                reach = (
                    list(inc.launches)
                    if getattr(inc, "node", None) is not None
                    else [idx for idx in frag.my_launches if frag.launch_ctx[idx].key > ictx.key]
                )
                for idx in reach:
                    for eid in ids:
                        launches[idx].reached_by.setdefault(eid, True)
    for inc, ictx in frag.include_ctx:
        if getattr(inc, "node", None) is None:
            inc.launches.extend(
                idx for idx in frag.my_launches if frag.launch_ctx[idx].key > ictx.key and idx not in inc.launches
            )


def sr_covered(frag: ReachedFragment, scope: Hashable) -> bool:
    """True when a ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` setting of ``frag`` is in force
    wherever ``scope`` is (its branch and subshell enclose ``scope``'s). A shell scope is
    ``(guard, containers, command id or None)`` or ``("heredoc", node id)``; anything else
    (``None``: no scope) is covered by nothing."""
    if not isinstance(scope, tuple):
        return False
    for present in frag.sr_scopes:
        if present[0] == "heredoc" or scope[0] == "heredoc":
            if present == scope:
                return True
            continue
        g, c, cmd = present
        if scope[0][: len(g)] == g and scope[1][: len(c)] == c and (cmd is None or cmd == scope[2]):
            return True
    return False


def _norm(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return path
