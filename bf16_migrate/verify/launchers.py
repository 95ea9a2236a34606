"""The legacy settings a tree's launchers put in force for each Python script they start.

This is the codemod's own analysis, read only: every carrier of the tree that names a legacy
variable (shell scripts, Dockerfiles, YAML job specs, ``.env`` files; found by
:func:`bf16_migrate.scan.scan`) is parsed by its carrier (:func:`bf16_migrate.carriers.analyze`)
and given to the cross-file planner (:class:`bf16_migrate.carriers.link.LinkPlanner`), which follows
launches, includes (``source env.sh``, ``--env-file``) and launched shell scripts, and resolves
each Python launch to a file of the tree. Its plan stops there: instead of deciding what to
rewrite, :class:`_Reach` keeps, for every launch, which entries reach it, and
:func:`launch_settings` turns that into one :class:`LaunchSetting` per launch of a Python
script: the variables set, the launcher and line, the script's arguments.

``verify --against REV`` calls it on the checkout of REV (:class:`.gitrev.Checkout`): the
environment the legacy script really ran under, without ``--legacy-env``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..carriers import REGISTRY
from ..rules import Mode, all_modes, is_truthy
from ..scan import scan
from .runner import LEGACY_VARIABLES

__all__ = ["LaunchSetting", "launch_settings", "launched_with", "settings_for", "tree_root"]


@dataclass
class LaunchSetting:
    """One launch of a Python script by a carrier.

    ``script``: the launched file (resolved, absolute). ``env``: the legacy variables in force
    for it (name -> value; empty for a launch that sets none: it ran in fp32 unless the script
    sets one itself). ``launcher``: the carrier's path (absolute); ``line``: 1-based line of the
    launch; ``text``: the launch line as written. ``args``: the words passed to the script
    (``None`` where computed). ``sure``: False when a setting reaches the launch on some paths
    only (a guarded ``export``). ``computed``: variables set to a value only known when the
    launcher runs (``$FLAG``), left out of ``env``."""

    script: Path
    env: dict[str, str]
    launcher: Path
    line: int
    text: str
    args: list[str | None] = field(default_factory=list)
    sure: bool = True
    computed: list[str] = field(default_factory=list)
    forwards: list[int] = field(default_factory=list)
    """Indices into ``args`` of the launcher's own arguments (``"$@"``), see
    :attr:`bf16_migrate.carriers.model.Launch.forwards`."""
    resolve: Callable | None = field(default=None, compare=False, repr=False)
    """``resolve(environ, argv)``: ``args`` as the shell would expand them with that environment
    and the launcher's own arguments (:attr:`bf16_migrate.carriers.model.Launch.resolve_args`);
    None when the launch line cannot say."""

    def where(self, root: Path | None = None) -> str:
        """``launcher:line`` with the launcher relative to ``root`` when it lies under it."""
        path = self.launcher
        if root is not None:
            try:
                path = self.launcher.relative_to(Path(root).resolve())
            except ValueError:
                pass
        return f"{path.as_posix()}:{self.line}"


def _planner_class():
    from ..carriers.link import LinkPlanner

    class _Reach(LinkPlanner):
        """The planner up to its decisions: :meth:`run` follows launches, includes and
        launched shell scripts, then hands what reaches each launch to ``_decide``, which here
        only keeps it (nothing is migrated, nothing written)."""

        def _decide(self, reach, res, python_files):
            self.reach, self.res = reach, res
            return []

    return _Reach


def launch_settings(
    root: Path, mode: Mode | None = None, extra: tuple[Path, ...] = (), only: tuple[Path, ...] | None = None
) -> list[LaunchSetting]:
    """Every launch of a Python script (of the tree, that uses torch) by a carrier under
    ``root``, with the legacy settings in force for it. Carriers that cannot be read or parsed
    are left out (the codemod reports them). ``extra``: carriers to analyse although they name
    no legacy variable (a launcher given to ``verify``). ``only``: analyse these carriers (and
    what they follow) instead of scanning the whole tree. ``mode`` (None: the first of the
    rules) only matters to the planner's bookkeeping, not to what reaches a launch."""
    from ..project import TreeReader

    root = Path(root).resolve()
    tree = TreeReader([root], (), None)
    load = tree.load
    planner = _planner_class()(mode or all_modes()[0], tree.read_python, tree.load, tree.includers)
    for candidate in [] if only is not None else scan([root]):
        if candidate.problem is not None or candidate.kind not in REGISTRY:
            continue
        if not _inside(candidate.path, root):
            continue  # a link out of the tree (an untracked file linked into a checkout): not the tree's
        loaded = load(candidate.path, candidate.kind)
        if loaded is not None:
            loaded.render = True
            planner.add(loaded)
    for path in (*extra, *(only or ())):
        loaded = load(Path(path))
        if loaded is not None:
            loaded.render = True
            planner.add(loaded)
    planner.run({})
    groups_on = _group_values(planner)
    return [
        _setting(planner, ci, li, res.path, groups_on)
        for (ci, li), res in sorted(planner.res.items())
        if res.kind == "py" and res.path is not None
    ]


def _setting(planner, ci: int, li: int, script, groups_on: dict) -> LaunchSetting:
    """The legacy settings that reach launch ``li`` of carrier ``ci`` (the planner's ``reach``:
    set, unset, or passed on with the value a setting group gives it), as a LaunchSetting."""
    carrier = planner.carriers[ci]
    launch = carrier.analysis.launches[li]
    env: dict[str, str] = {}
    computed: list[str] = []
    sure = True
    for (cj, ej), always in sorted(planner.reach.get((ci, li), {}).items()):
        entry = planner.carriers[cj].analysis.entries[ej]
        if entry.variable not in LEGACY_VARIABLES or entry.noop:
            continue
        if entry.action == "set":
            if entry.value is None:
                computed.append(entry.variable)
                continue
            env[entry.variable] = entry.value
        elif entry.action == "unset":
            env.pop(entry.variable, None)
        elif entry.action == "pass" and entry.group in groups_on:
            env.setdefault(entry.variable, groups_on[entry.group])
        if not always:
            sure = False
    return LaunchSetting(
        script=Path(script).resolve(),
        env=env,
        launcher=Path(carrier.path).resolve(),
        line=launch.line,
        text=launch.text,
        args=list(launch.args),
        sure=sure,
        computed=computed,
        forwards=list(launch.forwards),
        resolve=launch.resolve_args,
    )


def _inside(path: Path, root: Path) -> bool:
    resolved = Path(path).resolve()
    return resolved == root or root in resolved.parents


def _group_values(planner) -> dict:
    """Entry group -> the value a ``docker run -e X``-style pass-through forwards: the static
    value another entry of the same group sets (``export X=1`` before ``docker run -e X``)."""
    values: dict = {}
    for carrier in planner.carriers:
        for entry in carrier.analysis.entries:
            if entry.group is not None and entry.action == "set" and entry.value is not None:
                values.setdefault(entry.group, entry.value)
    return values


def settings_for(script: Path, settings: list[LaunchSetting]) -> list[LaunchSetting]:
    """The launches of ``script`` among ``settings``."""
    key = Path(script).resolve()
    return [s for s in settings if s.script == key]


def tree_root(path: Path) -> Path:
    """The root of the git work tree ``path`` lies in (``git rev-parse --show-toplevel``), or ``path``'s folder
    when it lies in none (or git cannot say within 60 s)."""
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"],
            cwd=str(path.parent),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return path.parent
    return Path(top.stdout.decode().strip()).resolve() if top.returncode == 0 else path.parent


def launched_with(script: Path) -> tuple[dict[str, str], list[LaunchSetting]]:
    """The legacy settings the launchers of ``script``'s tree (:func:`tree_root`) put in force for it, when every
    launch of it that switches one on does so on every path and with the same settings (``export XLA_USE_BF16=1``
    before ``python train.py`` in a shell script, a Dockerfile's ``ENV``), and those launches; ``({}, launches)``
    when they differ or one is guarded (the launches named, for the caller to say so), ``({}, [])`` when none
    switches one on."""
    root = tree_root(script)
    mine = [s for s in settings_for(script, launch_settings(root)) if _switched_on(s.env)]
    distinct = {tuple(sorted(_switched_on(s.env).items())) for s in mine}
    if len(distinct) == 1 and all(s.sure for s in mine):
        return dict(distinct.pop()), mine
    return {}, mine


def _switched_on(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k in LEGACY_VARIABLES and is_truthy(v)}
