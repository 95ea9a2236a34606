"""Which settings of a shell fragment are in force at which launch (bash(1), "COMMAND EXECUTION
ENVIRONMENT": an exported variable is in the environment of every command run after it, a
subshell, a pipeline element and ``$(...)`` get a copy of the environment).

:func:`link` reads the events of a :class:`~.parsed.ParsedFragment` in execution order (each
placed by :mod:`.context`) and returns a :class:`Reach`: the entries in force at each launch
(surely, when the last setting before the launch is on its guard path; partially, when on some
branch only), the settings that never run, and what the fragment's includes and env-file
heredocs reach. :func:`apply_reach` writes it into the host's :class:`~..model.Analysis`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from ..model import SET, UNSET, Analysis, Blocker, Include, Launch
from .parsed import Covering, Ctx, EntryData, Event, IncludeSite, ParsedFragment


@dataclass
class Reach:
    """What :func:`link` found. ``reached``: launch index -> entry id -> True when the entry is
    in force on every path to the launch, False on some only (in execution order of the
    settings). ``through_env_files``: ``(launch, entry)`` for each line of an env file the
    fragment writes and a launch after it loads. ``kept``: ``(entry, problem, blocker)`` for each
    setting made where the code never runs (BFM092). ``local``: the includes of a file the
    fragment writes itself. ``include_launches``: each ``source`` include with the launches
    after it."""

    reached: dict[int, dict[int, bool]] = field(default_factory=dict)
    through_env_files: list[tuple[int, int]] = field(default_factory=list)
    kept: list[tuple[int, str, Blocker]] = field(default_factory=list)
    local: list[Include] = field(default_factory=list)
    include_launches: list[tuple[Include, list[int]]] = field(default_factory=list)


def link(parsed: ParsedFragment, launches: Sequence[Launch]) -> Reach:
    """The :class:`Reach` of ``parsed``'s settings; ``launches`` are the host analysis's
    (indexed by ``parsed.launches``)."""
    reach = Reach()
    by_variable: dict[str, list[Event]] = {}
    for ev in parsed.events:
        if ev.ctx.dead is None:
            by_variable.setdefault(ev.variable, []).append(ev)
        else:  # never runs: never in force (BFM092), kept as it is
            reach.kept.append((ev.entry, *_never_runs(ev.ctx.dead)))
    for events in by_variable.values():
        events.sort(key=lambda e: e.ctx.key)
        for idx in parsed.launches:
            lc = parsed.launch_ctx[idx]
            if lc.dead is not None or launches[idx].isolated:
                continue  # a launch that never runs is reached by nothing; `env -i`: only its own line's settings
            for eid, sure in _in_force(events, lc, parsed.entry_data, parsed.coverings):
                found = reach.reached.setdefault(idx, {})
                prev = found.get(eid)
                found[eid] = sure if prev is None else (prev or sure)
    reach.through_env_files, reach.local = _through_env_files(parsed)
    reach.include_launches = [
        (site.include, _launches_after(parsed, site.ctx, exclude=site.include.launches))
        for site in parsed.includes
        if site.command is None
    ]
    return reach


def _never_runs(dead: tuple[Blocker, str]) -> tuple[str, Blocker]:
    """The problem and blocker of a setting made where the code never runs, or may not."""
    blocker, why = dead
    return (f"{why}: it never takes effect" if blocker is Blocker.NEVER_IN_FORCE else why), blocker


def _in_force(
    events: list[Event], lc: Ctx, entry_data: dict[int, EntryData], coverings: Sequence[Covering] = ()
) -> list[tuple[int, bool]]:
    """The entries of one variable in force at a launch at ``lc``, each with whether surely:
    the events before it in execution order (``events``, sorted) played in order, a setting on
    the launch's guard path replacing what came before, one on another branch adding to it; an
    ``unset`` on the path clears them, one on another branch leaves them partial. The settings of
    a conditional every branch of which sets the variable alike (``coverings``,
    :mod:`.branches`) are, once its last one is played, in force surely: one of them ran on
    every path, whatever came before is gone."""
    on: list[tuple[int, bool]] = []
    for ev in events:
        if ev.ctx.key > lc.key:
            break
        if not _visible(ev, lc, entry_data):
            continue
        sure = lc.guard[: len(ev.ctx.guard)] == ev.ctx.guard
        if ev.action == SET:
            on = [(ev.entry, True)] if sure else [*on, (ev.entry, False)]
            covered = _covered(on, lc, coverings)
            if covered is not None:
                on = [(entry, True) for entry in sorted(covered)]
        else:
            on = [] if sure else [(e, False) for e, _ in on]
    return on


def _covered(on: list[tuple[int, bool]], lc: Ctx, coverings: Sequence[Covering]) -> frozenset[int] | None:
    """The entries of a covering all of whose settings are in ``on``, whose conditional runs
    whenever the launch at ``lc`` does and does not hold it; None when there is none."""
    present = {entry for entry, _ in on}
    for covering in coverings:
        if not covering.entries <= present or lc.guard[: len(covering.guard)] != covering.guard:
            continue
        if len(lc.guard) > len(covering.guard) and lc.guard[len(covering.guard)] in covering.branches:
            continue  # the launch is inside one of the branches: only that branch's setting reaches it
        return covering.entries
    return None


def _visible(ev: Event, lc: Ctx, entry_data: dict[int, EntryData]) -> bool:
    """Whether the event can act at a launch at ``lc``: not made inside a subshell the launch is
    not in, and, for an ``env -u X`` of a command, at that command itself."""
    if lc.containers[: len(ev.ctx.containers)] != ev.ctx.containers:
        return False  # exported inside a subshell the launch is not in
    command_local = entry_data[ev.entry].kind == "envword" and ev.action == UNSET
    return not (command_local and ev.ctx.key != lc.key)


def _through_env_files(parsed: ParsedFragment) -> tuple[list[tuple[int, int]], list[Include]]:
    """The env-file heredocs' lines that reach the launches of the includes loading that file:
    ``(launch, entry)`` pairs, and those includes (local: their file is written here)."""
    reached: list[tuple[int, int]] = []
    local: list[Include] = []
    for heredoc in parsed.heredocs:
        for site in parsed.includes:
            if _norm(site.include.path) != _norm(heredoc.target):
                continue
            local.append(site.include)
            for idx in _include_reach(parsed, site):
                reached.extend((idx, eid) for eid in heredoc.entries)
    return reached, local


def _include_reach(parsed: ParsedFragment, site: IncludeSite) -> list[int]:
    """The launches an include's settings reach: its command's own (``--env-file``), or every
    launch after it (``source``)."""
    if site.command is not None:
        return list(site.include.launches)
    return _launches_after(parsed, site.ctx, exclude=[])


def _launches_after(parsed: ParsedFragment, ctx: Ctx, exclude: list[int]) -> list[int]:
    """The fragment's launches after ``ctx`` in execution order, but those of ``exclude``."""
    return [idx for idx in parsed.launches if parsed.launch_ctx[idx].key > ctx.key and idx not in exclude]


def apply_reach(reach: Reach, analysis: Analysis) -> None:
    """Write ``reach`` into ``analysis``: each launch's ``reached_by`` (merged with what its own
    command line set: surely in force once surely in force on any account), the kept settings'
    problems (where no other problem was found first), and the includes."""
    for idx, found in reach.reached.items():
        reached_by = analysis.launches[idx].reached_by
        for eid, sure in found.items():
            prev = reached_by.get(eid)
            reached_by[eid] = sure if prev is None else (prev or sure)
    for inc in reach.local:
        inc.local = True
    for idx, eid in reach.through_env_files:
        analysis.launches[idx].reached_by.setdefault(eid, True)
    for inc, launches in reach.include_launches:
        inc.launches.extend(launches)
    for eid, problem, blocker in reach.kept:
        entry = analysis.entries[eid]
        if entry.problem is None:
            entry.problem, entry.blocker = problem, blocker


def sr_covered(sr_scopes: list[tuple], scope: Hashable) -> bool:
    """True when a ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` setting made at one of ``sr_scopes``
    (:attr:`~.parsed.ParsedFragment.sr_scopes`) is in force wherever ``scope`` is (its branch
    and subshell enclose ``scope``'s). A shell scope is ``(guard, containers, command id or
    None)`` or ``("heredoc", node id)``; anything else (``None``: no scope) is covered by
    nothing."""
    if not isinstance(scope, tuple):
        return False
    for present in sr_scopes:
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
