"""The decisions of the cross-file plan (:mod:`.link`): given what reaches each launch, which
entries are removed, replaced or kept, the diagnostics that say so, and the files rendered.

The phases, in order (:meth:`Decider.run`): entries grouped into components (a union-find over
entries and the Python nodes they reach); the reasons to keep a component (the entry's own
form, a launch that cannot be resolved, no launch at all, a launched script the codemod cannot
give the change); the launches that run a migrated script in fp32; then one decision per entry,
and the carriers and Python files rendered.
"""

from __future__ import annotations

import bisect
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..diagnostics import Diagnostic, kept_reason, report
from ..python.inline_code import as_script, one_line
from ..python.outcome import LAUNCH_REFUSALS
from ..rules import STOCHASTIC_ROUNDING_VAR, Mode, Rules, is_truthy
from . import for_kind
from .model import (
    KEEP,
    PASS,
    REMOVE,
    REPLACE,
    SET,
    UNSET,
    Blocker,
    CarrierError,
    CarrierFile,
    Decision,
    Edit,
    Entry,
    FileResult,
    Launch,
    LineIndex,
    PlanNode,
    Resolution,
    Resolved,
)
from .python_loaders import PythonLoader
from .resolve import _rel
from .text import find_mentions

if TYPE_CHECKING:
    from ..migrations import Call, Migrations

PROBLEM_VARIANT: dict[Blocker, str | None] = {
    Blocker.COMPUTED_VALUE: "problem",
    Blocker.UNREWRITTEN_FORM: "kept",
    Blocker.NEVER_IN_FORCE: None,
}
"""The variant of an entry's ``blocker`` that words its own ``problem`` (:attr:`.Entry.problem`)."""


@dataclass(frozen=True)
class Reason:
    """Why a setting is kept: the ``blocker``, the ``variant`` of its finding's template
    (``{lead}: <reason>{also}``) and its ``fields``; ``text`` is the reason as the template words
    it (:func:`bf16_migrate.diagnostics.kept_reason`), and two reasons are the same when their
    blocker and text are."""

    blocker: Blocker
    text: str
    variant: str | None = field(default=None, compare=False)
    fields: tuple[tuple[str, object], ...] = field(default=(), compare=False)

    @property
    def code(self) -> str:
        return self.blocker.code

    @classmethod
    def of(cls, blocker: Blocker, variant: str | None = None, /, **fields: object) -> Reason:
        return cls(blocker, kept_reason(blocker.code, variant, **fields), variant, tuple(fields.items()))


class Planning(Protocol):
    """What the decisions read of the planner (:class:`~.link.LinkPlanner`): the carriers, the
    mode and rules, and the migration of the Python scripts (a trial, the final result, a
    notebook's own Python, and the arguments of the first two, which the decisions hand to
    :meth:`~bf16_migrate.migrations.Migrations.ahead` as one batch), which stays with the planner."""

    @property
    def carriers(self) -> list[CarrierFile]: ...
    @property
    def by_path(self) -> dict[Path, int]: ...
    @property
    def mode(self) -> Mode: ...
    @property
    def rules(self) -> Rules: ...
    @property
    def errors(self) -> list[str]: ...
    @property
    def read_python(self) -> Callable: ...
    @property
    def migrations(self) -> Migrations: ...
    @property
    def find_python_loaders(self) -> Callable[[Path, Path], list[PythonLoader]]: ...
    def trial_call(self, node, path: Path, kci, launched: dict[str, str], python_files) -> Call | str: ...
    def trial(self, node, path: Path, kci, launched: dict[str, str], python_files) -> tuple[object, str | None]: ...
    def inline_launch(self, node) -> Launch: ...
    def python_call(self, path: Path, text: str, launched) -> Call: ...
    def python_result(self, path: Path, text: str, encoding: str, launched, trial) -> FileResult: ...
    def migrate_embedded_python(
        self, carrier: CarrierFile, launched
    ) -> tuple[str | None, list[Diagnostic], dict[str, str], dict[str, str]]: ...


class _UF:
    """Union-find over the plan's members (entries ``(carrier, entry id)`` and Python nodes)."""

    def __init__(self) -> None:
        self.parent: dict = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra


@dataclass
class _Partial:
    """An entry in force on some paths to a launch only (BFM120)."""

    launch: Launch
    where: str
    node: PlanNode


class Decider:
    """One plan's decisions. ``reach`` maps a launch ``(carrier, launch)`` to the entries in
    force for it (-> True when on every path); ``res`` maps it to what it starts (:class:`~.model.Resolved`);
    ``python_files`` are the Python candidates (path -> (text, encoding)). :meth:`run` returns
    one :class:`~.model.FileResult` per file looked at."""

    def __init__(
        self,
        planner: Planning,
        reach: dict,
        res: dict[tuple[int, int], Resolved],
        python_files: dict[Path, tuple[str, str]],
    ) -> None:
        self.p = planner
        self.carriers = planner.carriers
        self.mode = planner.mode
        self.reach = reach
        self.res = res
        self.python_files = python_files
        self.uf = _UF()
        self.why: dict = {}  # component member -> [Reason], every reason found
        self.group_on: dict = {}
        self.env_for: dict[PlanNode, dict[str, str]] = {}
        self.reached_any: set = set()
        self.partial: dict[tuple[int, int], _Partial] = {}
        self.pynodes: dict = {}  # node -> (script path, notebook carrier index or None)
        self.trials: dict = {}
        self.framework_ok: dict = {}  # node -> the framework whose flag every launch passes
        self.fp32_runs: list[tuple[int, Launch, Path]] = []
        self.reasons: dict = {}  # component root -> [Reason], deepest first
        self.member_of: dict = {}  # component root -> the member whose reason leads
        self.decisions: dict[int, dict[int, Decision]] = {ci: {} for ci in range(len(self.carriers))}
        self.diags: dict[int, list[Diagnostic]] = {ci: [] for ci in range(len(self.carriers))}
        self.used_scopes: set = set()
        self.flags: dict = {}  # entry member -> (the script's own flag, the edits passing it)
        self.inline_new: dict = {}  # inline node -> its migrated code, where it changes and can be written back

    def run(self) -> list[FileResult]:
        self._group()
        self._block_entries()
        self._follow_launches()
        self._block_unreached()
        self._try_scripts()
        self._inline_rewrites()
        self._pass_flags()
        self._find_fp32_runs()
        self._order_reasons()
        for ci, carrier in enumerate(self.carriers):
            for entry in sorted(carrier.analysis.entries, key=lambda e: (e.line, e.col)):
                self._decide_entry(ci, entry)
        for ci, launch, path in self.fp32_runs:
            self.diags[ci].append(
                report(
                    "BFM120",
                    f"{self.carriers[ci].path}{launch.where}",
                    launch.line,
                    launch.col,
                    False,
                    "launch_without",
                    launch=launch.text,
                    script=path,
                )
            )
        return self._render_carriers() + self._python_results()

    # -- components and their reasons -----------------------------------------------------------
    def block(self, g, blocker: Blocker, variant: str | None = None, /, **fields: object) -> None:
        """Record why member ``g`` (and so its component) is kept: ``blocker``, worded by its
        finding's template (``variant``) with ``fields``, the message's lead and further reasons
        left to :meth:`_keep` (:class:`Reason`)."""
        reason = Reason.of(blocker, variant, **fields)
        if reason not in self.why.setdefault(g, []):
            self.why[g].append(reason)

    def is_blocked(self, x) -> bool:
        root = self.uf.find(x)
        return any(self.uf.find(m) == root for m in self.why)

    def _group(self) -> None:
        """Every entry a member; entries of one group (``export X=1`` and the ``unset X`` of
        the other branch) in one component, on when any of them switches bf16 on."""
        groups: dict = {}
        for ci, carrier in enumerate(self.carriers):
            for entry in carrier.analysis.entries:
                g = (ci, entry.id)
                self.uf.find(g)
                if entry.group is not None:
                    groups.setdefault(entry.group, []).append(g)
        rules = self.p.rules.variables

        def sets_on(entry: Entry) -> bool:
            return (
                entry.action == SET
                and entry.value is not None
                and rules[entry.variable].effective
                and is_truthy(entry.value)
            )

        for key, members in groups.items():
            for g in members[1:]:
                self.uf.union(members[0], g)
            self.group_on[key] = any(sets_on(self._entry(g)) for g in members)

    def _block_entries(self) -> None:
        """An entry the carrier could not read safely, or set to a computed value, is kept."""
        for ci, carrier in enumerate(self.carriers):
            for entry in carrier.analysis.entries:
                g = (ci, entry.id)
                if entry.noop:
                    continue
                if entry.problem:
                    self.block(g, entry.blocker, PROBLEM_VARIANT[entry.blocker], problem=entry.problem)
                elif entry.action == SET and entry.value is None:
                    self.block(g, Blocker.COMPUTED_VALUE, variable=entry.variable)

    def _follow_launches(self) -> None:
        """Each launch joins the entries switching bf16 on for it with the Python it starts
        (a script, or a notebook's kernel), and collects the environment that script ran under."""
        for key, r in self.res.items():
            ci, li = key
            launch = self.carriers[ci].analysis.launches[li]
            on = [g for g in self.reach.get(key, {}) if self._bf16_on(self._entry(g), self.group_on)]
            if not on or r.kind in (Resolution.IGNORED, Resolution.SHELL):
                if r.kind == Resolution.SHELL:
                    self.reached_any.update(on)
                    self._batch_isolated(launch, r, on)
                continue
            where = f"line {launch.line}" if not launch.where else f"{launch.where[1:]} line {launch.line}"
            if r.kind == Resolution.NONE:
                for g in on:
                    self.block(g, Blocker.LAUNCH_UNRESOLVED, where=where, launch=launch.text, problem=r.problem)
                continue
            assert r.path is not None, "a py, kernel or inline launch has its path"
            node: PlanNode
            if r.kind == Resolution.PY:
                node = (Resolution.PY, r.path.resolve())
            elif r.kind == Resolution.INLINE:
                node = (Resolution.INLINE, (ci, li))  # the code of `python -c`: a script of its own
            else:
                node = (Resolution.KERNEL, ci)
            self.pynodes[node] = (r.path, None if r.kind == Resolution.PY else ci)
            for g in self.reach.get(key, {}):
                entry = self._entry(g)
                if entry.action == SET and entry.value is None and self.p.rules.variables[entry.variable].effective:
                    self.uf.union(g, node)  # bf16 may or may not be on for this launch: decided by hand
            for g in on:
                self.reached_any.add(g)
                self.uf.union(g, node)
                entry = self._entry(g)
                env = self.env_for.setdefault(node, {})
                if entry.action == SET:
                    assert entry.value is not None, "a setting that switches bf16 on has its value (_bf16_on)"
                    env[entry.variable] = entry.value
                else:
                    env.setdefault(entry.variable, "1")
                if not self.reach[key][g]:
                    self.partial.setdefault(g, _Partial(launch, where, node))

    def _batch_isolated(self, launch: Launch, r: Resolved, on: list) -> None:
        """A setting that reaches ``sbatch job.sh`` when ``job.sh`` exports none of the
        submitter's environment (``#SBATCH --export=NONE``): it never reaches the job (BFM092)."""
        assert r.path is not None, "a resolved shell launch has its script"
        tj = self.p.by_path.get(r.path.resolve())
        if not launch.batch or tj is None or not self.carriers[tj].analysis.batch_isolated:
            return
        problem = (
            f"{r.path} is submitted by `{launch.text}` and its #SBATCH --export list holds no ALL, so the job gets "
            "none of this environment: it never takes effect"
        )
        for g in on:
            self.block(g, Blocker.NEVER_IN_FORCE, problem=problem)

    def _block_unreached(self) -> None:
        for ci, carrier in enumerate(self.carriers):
            for entry in carrier.analysis.entries:
                g = (ci, entry.id)
                if (
                    entry.action == SET
                    and not entry.noop
                    and self._bf16_on(entry, self.group_on)
                    and g not in self.reached_any
                    and g not in self.why
                ):
                    loader = self._computed_loader(carrier)
                    python = None if loader is not None else self._python_loader(carrier)
                    if loader is not None:
                        self.block(g, Blocker.NO_LAUNCH, "computed_include", variable=entry.variable, **loader)
                    elif python is not None:
                        value = entry.value if entry.value is not None else "1"
                        self.block(
                            g, Blocker.NO_LAUNCH, "python_loader", variable=entry.variable, value=value, **python
                        )
                    else:
                        self.block(g, Blocker.NO_LAUNCH, variable=entry.variable)

    def _python_loader(self, carrier: CarrierFile) -> dict[str, object] | None:
        """Where a Python script of the tree reads ``carrier``'s file itself (python-dotenv, its
        name in quotes: :mod:`.python_loaders`): the fields of the finding that names the first such
        line, or None."""
        found = self.p.find_python_loaders(carrier.path, carrier.root)
        if not found:
            return None
        first = found[0]
        return {"script": str(first.script), "line": first.line, "code": first.code}

    def _computed_loader(self, carrier: CarrierFile) -> dict[str, object] | None:
        """Where a carrier of the plan loads ``carrier``'s file through a path computed at run time
        (:attr:`.model.Analysis.computed_includes` whose last component is the file's name): the
        fields of the finding that says so, or None."""
        for other in self.carriers:
            for inc in other.analysis.computed_includes:
                if inc.path.strip("\"'").rsplit("/", 1)[-1] == carrier.path.name:
                    return {"includer": str(other.path), "line": inc.line, "path": inc.path, "computed": inc.computed}
        return None

    def _try_scripts(self) -> None:
        """A trial migration of every launched script (even of a component already held back:
        every blocker is reported); a script that cannot take the change, or builds a
        framework that owns precision without its flag on every launch, holds it back."""
        calls = (
            self.p.trial_call(node, path, kci, self.env_for.get(node, {}), self.python_files)
            for node, (path, kci) in self.pynodes.items()
        )
        self.p.migrations.ahead(call for call in calls if not isinstance(call, str))
        for node, (path, kci) in self.pynodes.items():
            result, failure = self.p.trial(node, path, kci, self.env_for.get(node, {}), self.python_files)
            self.trials[node] = result
            rule = getattr(result, "framework", None)
            if rule is not None:
                runs = [
                    self.carriers[k[0]].analysis.launches[k[1]]
                    for k, r in self.res.items()
                    if r.kind == Resolution.PY and r.path is not None and (Resolution.PY, r.path.resolve()) == node
                ]
                if rule.launch_flag and runs and all(passes_flag(run.args, rule.launch_flag) for run in runs):
                    self.framework_ok[node] = rule
                    failure = None
                else:
                    wheres = ", ".join(f"line {run.line}" for run in runs)
                    fix = (
                        f"pass `{rule.launch_flag}` to it ({wheres}) and remove this setting"
                        if rule.launch_flag
                        else f"set {rule.setting} in it and remove this setting"
                    )
                    failure = f"{path} builds {rule.name}, which owns precision (see its diagnostics): {fix}"
            if failure:
                self.block(node, Blocker.SCRIPT_REFUSES, reason=failure)

    def _inline_rewrites(self) -> None:
        """The migrated code of each ``python -c`` launch that takes the change: kept for the
        rendering where it changes and can be written back in its quotes; where it cannot, the
        launch's settings are kept (BFM171)."""
        for node, result in self.trials.items():
            if node[0] != Resolution.INLINE or result is None or self.is_blocked(node):
                continue
            launch = self.p.inline_launch(node)
            code = launch.target[1] if launch.target is not None else ""
            if not (result.outcome.took or result.outcome.no_effect) or result.code in (code, as_script(code)):
                continue
            written = result.code
            if launch.inline is not None and launch.inline.one_line and "\n" in written.strip("\n"):
                written = one_line(written) or written
            why = launch.inline.cannot_write(written) if launch.inline is not None else None
            if why is None and launch.inline is None:
                why = "bf16-migrate does not rewrite code written in this form"
            if why is None:
                self.inline_new[node] = written
                continue
            ci = node[1][0]
            variables = sorted({self._entry(g).variable for k, r in self.reach.items() if k == node[1] for g in r})
            self.diags[ci].append(
                report(
                    "BFM171",
                    f"{self.carriers[ci].path}{launch.where}",
                    launch.line,
                    launch.col,
                    False,
                    reason=why,
                    variable=", ".join(variables) or "the setting",
                )
            )
            self.block(
                node,
                Blocker.SCRIPT_REFUSES,
                reason=f"the `python -c` code at line {launch.line} cannot be written back in its quotes (BFM171)",
            )

    def _inline_findings(self, ci: int) -> list[Diagnostic]:
        """The findings of the ``python -c`` code of carrier ``ci``'s launches, at their lines in
        the carrier: every one where the code takes the change, the unfixed ones (why not) where
        the setting is kept."""
        found: list[Diagnostic] = []
        for node, result in self.trials.items():
            if node[0] != Resolution.INLINE or node[1][0] != ci or result is None:
                continue
            launch = self.p.inline_launch(node)
            blocked = self.is_blocked(node)
            path = f"{self.carriers[ci].path}{launch.where}"
            code = launch.target[1] if launch.target is not None else ""
            split = "\n" not in code and as_script(code) != code  # a one-liner read one statement per line
            for d in result.diagnostics:
                if blocked and d.fixed:
                    continue
                line, col = _inline_position(launch, 1 if split else d.line, 1 if split else d.col)
                found.append(Diagnostic(d.code, path, line, col, d.message, d.fixed and not blocked))
        return found

    def _pass_flags(self) -> None:
        """amp mode, for a launched script that takes the amp path through its own flag
        (``MigrationResult.launch_flag``): each setting in force for one of its launches is
        replaced by that flag on the same paths (the carrier's ``launch_flags``, shell scripts:
        :mod:`.shell.flags`), or kept when the flag cannot be passed there (BFM034)."""
        for key, r in self.res.items():
            if r.kind != Resolution.PY or r.path is None:
                continue
            flag = getattr(self.trials.get((Resolution.PY, r.path.resolve())), "launch_flag", None)
            if not flag:
                continue
            ci, li = key
            launch = self.carriers[ci].analysis.launches[li]
            for g, sure in self.reach.get(key, {}).items():
                entry = self._entry(g)
                if not self._bf16_on(entry, self.group_on):
                    continue
                offer = self.carriers[g[0]].analysis.launch_flags if g[0] == ci else None
                edits: list[Edit] | str
                if offer is not None:
                    edits = offer(entry.id, li, flag, sure)
                elif None not in launch.args and passes_flag(launch.args, flag):
                    edits = []  # every word of the launch is static, and the flag is among them
                else:
                    edits = "the setting and the launch are not in one shell script"
                if isinstance(edits, str):
                    self.block(
                        g, Blocker.FLAG_NOT_PASSED, "kept", script=r.path, flag=flag, line=launch.line, reason=edits
                    )
                    continue
                _, known, lines = self.flags.get(g, (flag, [], []))
                self.flags[g] = (flag, known + edits, [*lines, launch.line])

    def _find_fp32_runs(self) -> None:
        """Launches that run a migrated script without any bf16 setting (an fp32 path)."""
        for key, r in self.res.items():
            if r.kind != Resolution.PY or r.path is None:
                continue
            node = (Resolution.PY, r.path.resolve())
            if node not in self.pynodes or self.is_blocked(node):
                continue
            if getattr(self.trials.get(node), "launch_flag", None):
                continue  # the script is unchanged: a launch without the setting runs as it did
            if any(self._bf16_on(self._entry(g), self.group_on) for g in self.reach.get(key, {})):
                continue
            ci, li = key
            launch = self.carriers[ci].analysis.launches[li]
            if not any(
                c == ci and (l.line, l.col) == (launch.line, launch.col) and p == r.path for c, l, p in self.fp32_runs
            ):
                self.fp32_runs.append((ci, launch, r.path))  # once per call (a function may start it twice)

    def _order_reasons(self) -> None:
        """Each held-back component's reasons, deepest first (:attr:`.Blocker.depth`), and the
        member the first belongs to."""
        for member, found in self.why.items():
            for reason in found:
                if reason not in self.reasons.setdefault(self.uf.find(member), []):
                    self.reasons[self.uf.find(member)].append(reason)
        for root, found in self.reasons.items():
            found.sort(key=lambda r: r.blocker.depth)
            self.member_of[root] = next(m for m in self.why if self.uf.find(m) == root and found[0] in self.why[m])

    # -- one decision per entry -----------------------------------------------------------------
    def _decide_entry(self, ci: int, entry: Entry) -> None:
        g = (ci, entry.id)
        path = f"{self.carriers[ci].path}{entry.where}"
        if self.is_blocked(g):
            self._keep(ci, entry, path)
        elif not self._remove_outright(ci, entry, path):
            self._migrate(ci, entry, path)

    def _say(
        self, ci: int, code: str, path: str, entry: Entry, fixed: bool, variant: str | None = None, /, **fields: object
    ) -> None:
        """The finding ``code`` at ``entry``, worded by the catalogue's template
        (:func:`bf16_migrate.diagnostics.report`)."""
        self.diags[ci].append(report(code, path, entry.line, entry.col, fixed, variant, **fields))

    def _keep(self, ci: int, entry: Entry, path: str) -> None:
        """A held-back entry: kept, with the deepest reason of its component first."""
        g = (ci, entry.id)
        ordered = self.reasons.get(self.uf.find(g)) or [Reason.of(Blocker.LAUNCH_UNRESOLVED, "group")]
        first = ordered[0]
        if first in self.why.get(g, []):
            lead = f"{entry.variable} kept"
        else:
            lead = (
                f"{entry.variable} kept with the settings it goes with "
                f"({self._where(self.member_of.get(self.uf.find(g)))})"
            )
        more = [f"{r.text} ({r.code})" for r in ordered[1:]]
        tail = f"; also: {'; '.join(more)}" if more else ""
        self._say(ci, first.code, path, entry, False, first.variant, lead=lead, also=tail, **dict(first.fields))
        self.decisions[ci][entry.id] = KEEP

    def _remove_outright(self, ci: int, entry: Entry, path: str) -> bool:
        """Entries removed with no code change (True when ``entry`` is one): a setting that
        never took effect (BFM140), a variable that does nothing (BFM003), an unset (BFM102),
        bf16 off (BFM002)."""
        rule = self.p.rules.variables[entry.variable]
        if entry.noop:
            self._say(ci, "BFM140", path, entry, True, variable=entry.variable, noop=entry.noop)
        elif not rule.effective:
            self._say(ci, "BFM003", path, entry, True, variable=entry.variable, since=rule.deprecated_since)
        elif entry.action == UNSET:
            self._say(ci, "BFM102", path, entry, True, variable=entry.variable)
        elif not self._bf16_on(entry, self.group_on):
            partner = self._kept_partner(ci, entry)
            if partner is not None:
                self._say(
                    ci,
                    "BFM002",
                    path,
                    entry,
                    False,
                    "kept_with",
                    variable=entry.variable,
                    value=repr(entry.value),
                    other=f"{partner.variable}={partner.value}",
                    line=partner.line,
                )
                self.decisions[ci][entry.id] = KEEP
                return True
            if entry.action == PASS:
                self._say(ci, "BFM002", path, entry, True, "passed_off", variable=entry.variable)
            else:
                self._say(ci, "BFM002", path, entry, True, variable=entry.variable, value=repr(entry.value))
        else:
            return False
        self.decisions[ci][entry.id] = REMOVE
        return True

    def _kept_partner(self, ci: int, entry: Entry) -> Entry | None:
        """For ``entry``, a setting of a false value (``export XLA_USE_BF16=0``), the setting of another legacy
        variable in its scope that switches bf16 on and is kept (``export XLA_DOWNCAST_BF16=1`` of a script that cannot
        take the change, BFM112), or None. The two keep each other exclusive: removing the ``0`` alone lets a value
        inherited from the caller switch both on, f64 then bf16 rather than float32 (found on real code, a NeMo
        launcher), as the Python writes keep such pairs (BFM002 ``kept_with``)."""
        if entry.action != SET:
            return None
        rules = self.p.rules.variables
        for other in self.carriers[ci].analysis.entries:
            if (
                other.variable != entry.variable
                and other.action == SET
                and other.sr_scope == entry.sr_scope
                and rules[other.variable].effective
                and self._bf16_on(other, self.group_on)
                and self.is_blocked((ci, other.id))
            ):
                return other
        return None

    def _migrate(self, ci: int, entry: Entry, path: str) -> None:
        """A setting migrated with its scripts: replaced (stochastic, first of its scope) or removed."""
        g = (ci, entry.id)
        a = self.carriers[ci].analysis
        root = self.uf.find(g)
        members = [n for n in self.pynodes if self.uf.find(n) == root]
        scripts = sorted({self._script_name(n) for n in members})
        target = ", ".join(scripts) if scripts else "the script it launches"
        if members and all(getattr(getattr(self.trials.get(n), "outcome", None), "no_effect", False) for n in members):
            self.decisions[ci][entry.id] = REMOVE
            self._say(ci, "BFM170", path, entry, True, "carrier", variable=entry.variable, scripts=target)
            return
        change = f"replaced by {STOCHASTIC_ROUNDING_VAR}=1" if self.mode.stochastic_rounding else "removed"
        if self.mode.stochastic_rounding:
            scope = (ci, entry.sr_scope)
            covered = a.sr_covered(entry.sr_scope) if a.sr_covered else False
            if covered:
                self.decisions[ci][entry.id] = REMOVE
                self._say(ci, "BFM070", path, entry, True, variable=entry.variable)
            elif scope in self.used_scopes and entry.action == SET:
                self.decisions[ci][entry.id] = REMOVE
                change = "removed (NEURON_RT_STOCHASTIC_ROUNDING_EN=1 is set just before)"
            else:
                if entry.action == SET:
                    self.used_scopes.add(scope)
                self.decisions[ci][entry.id] = REPLACE
        else:
            self.decisions[ci][entry.id] = REMOVE
        owners = [self.framework_ok[n] for n in self.pynodes if n in self.framework_ok and self.uf.find(n) == root]
        if g in self.flags:
            flag, _, lines = self.flags[g]
            where = " and ".join(f"the launch at line {line}" for line in lines)
            self._say(
                ci,
                "BFM034",
                path,
                entry,
                True,
                "carrier",
                variable=entry.variable,
                change=change,
                where=where,
                flag=flag,
                script=target,
            )
            return  # the script is unchanged: the paths without the setting run as they did
        if owners:
            owner = owners[0]
            self._say(
                ci,
                "BFM055",
                path,
                entry,
                True,
                "launch_flag",
                variable=entry.variable,
                change=change,
                target=target,
                framework=owner.name,
                flag=owner.launch_flag,
                advice=owner.advice,
            )
        elif not (
            self.mode.stochastic_rounding
            and self.decisions[ci][entry.id] == REMOVE
            and a.sr_covered
            and a.sr_covered(entry.sr_scope)
        ):
            # each script's own change where it differs from the mode's (torch-xla's FSDP)
            nodes = [n for n in self.pynodes if self.uf.find(n) == root]
            changes = {getattr(self.trials.get(n), "script_change", None) or self.mode.script_change for n in nodes}
            what = "; ".join(sorted(changes)) or self.mode.script_change
            have = "have" if len(scripts) > 1 else "has"
            self._say(
                ci,
                "BFM001",
                path,
                entry,
                True,
                "carrier",
                variable=entry.variable,
                change=change,
                scripts=target,
                have=have,
                what=what,
                verify=_verify_commands(scripts, entry),
            )
        if g in self.partial:
            part = self.partial[g]
            gate = getattr(self.trials.get(part.node), "own_gate", None)
            if gate:
                consequence = (
                    f"the migrated script's bf16 changes are under `{gate}` (its own precision flag): check that the "
                    "other paths pass that flag, or add one for an fp32 run"
                )
            else:
                consequence = (
                    "the migrated script now computes in bf16 on every path; add a flag to it if you still need an "
                    "fp32 run"
                )
            self._say(
                ci,
                "BFM120",
                path,
                entry,
                False,
                variable=entry.variable,
                where=part.where,
                launch=part.launch.text,
                consequence=consequence,
            )

    # -- helpers --------------------------------------------------------------------------------
    def _script_name(self, node: PlanNode) -> str:
        """How a finding names the Python a node runs: its path, or the `python -c` code's line."""
        if node[0] == Resolution.INLINE:
            return f"the `python -c` code at line {self.p.inline_launch(node).line}"
        return str(self.pynodes[node][0])

    def _entry(self, g: tuple[int, int]) -> Entry:
        """The entry of member ``g`` = (carrier index, entry id)."""
        return self.carriers[g[0]].analysis.entries[g[1]]

    def _bf16_on(self, entry: Entry, group_values: dict) -> bool:
        """Whether ``entry`` switches bf16 on (a pass-through: when its group sets it on)."""
        rule = self.p.rules.variables[entry.variable]
        if not rule.effective:
            return False
        if entry.action == SET:
            return entry.value is not None and is_truthy(entry.value)
        if entry.action == PASS:
            return group_values.get(entry.group, False)
        return False

    def _where(self, member) -> str:
        """Where the cause of a kept component is: ``file:line`` of an entry, or a script."""
        if member is None:
            return "see the other diagnostics"
        if member[0] == Resolution.INLINE:
            launch = self.p.inline_launch(member)
            return f"the `python -c` code at {self.carriers[member[1][0]].path}{launch.where}:{launch.line}"
        if member[0] in (Resolution.PY, Resolution.KERNEL):
            return str(_rel(member[1])) if member[0] == Resolution.PY else str(self.carriers[member[1]].path)
        entry = self._entry(member)
        return f"{self.carriers[member[0]].path}{entry.where}:{entry.line}"

    def _coverage(self, ci: int, diags: list[Diagnostic]) -> None:
        """Report every mention of a legacy variable no entry or note covers."""
        carrier = self.carriers[ci]
        a = carrier.analysis
        if for_kind(a.kind).OWN_COVERAGE or not carrier.render:
            return
        covered = _merged_spans(a.handled)
        starts = [start for start, _ in covered]
        index = None
        for var, off in find_mentions(a.text, self.p.rules.variables):
            at = bisect.bisect_right(starts, off) - 1
            if at >= 0 and off < covered[at][1]:
                continue
            if index is None:
                index = LineIndex(a.text)
            line, col = index.pos(off)
            diags.append(
                report(
                    "BFM131",
                    str(carrier.path),
                    line,
                    col,
                    False,
                    variable=var,
                    where="here in a form bf16-migrate does not rewrite",
                )
            )

    # -- the files ------------------------------------------------------------------------------
    def _render_carriers(self) -> list[FileResult]:
        """Each carrier with its notes and coverage findings, rendered for its decisions (a
        notebook with its Python migrated as one module)."""
        results: list[FileResult] = []
        for ci, carrier in enumerate(self.carriers):
            a = carrier.analysis
            diags = self.diags[ci]
            for note in a.notes:
                diags.append(
                    Diagnostic(note.code, f"{carrier.path}{note.where}", note.line, note.col, note.message, note.fixed)
                )
            self._coverage(ci, diags)
            if not carrier.render and not a.entries:
                continue
            diags.extend(self._inline_findings(ci))
            a.inline_code = {
                node[1][1]: code
                for node, code in self.inline_new.items()
                if node[1][0] == ci and not self.is_blocked(node)
            }
            kernel: PlanNode = (Resolution.KERNEL, ci)
            assert a.render is not None, "every carrier's analysis can render its file"
            new: str | None = None
            ran_under: tuple[dict[str, str], dict[str, str]] = ({}, {})
            if a.python is not None:
                launched = self.env_for.get(kernel) if kernel in self.trials and not self.is_blocked(kernel) else None
                new, pyd, legacy_env, switched = self.p.migrate_embedded_python(carrier, launched)
                ran_under = (legacy_env, switched)
                diags.extend(pyd)
                if new is None:
                    continue
            a.added = [
                edit
                for g, (_, edits, _) in self.flags.items()
                if g[0] == ci and not self.is_blocked(g)
                for edit in edits
            ]
            try:
                text = a.render(self.decisions[ci], new)
            except CarrierError as exc:  # the edited file would not parse: a bug, never written
                self.p.errors.append(str(exc))
                continue
            results.append(
                FileResult(
                    carrier.path,
                    carrier.text,
                    text,
                    carrier.encoding,
                    sorted(diags, key=lambda d: (d.path, d.line, d.col, d.code)),
                    legacy_env=ran_under[0],
                    switched=ran_under[1],
                    with_scripts=self._scripts_with(ci),
                )
            )
        return results

    def _scripts_with(self, ci: int) -> tuple[Path, ...]:
        """The launched scripts decided together with carrier ``ci``'s entries (one component:
        the settings that reach them and the scripts themselves)."""
        roots = {self.uf.find((ci, entry.id)) for entry in self.carriers[ci].analysis.entries}
        return tuple(
            sorted(
                path
                for node, (path, _kci) in self.pynodes.items()
                if node[0] == Resolution.PY and self.uf.find(node) in roots
            )
        )

    def _python_results(self) -> list[FileResult]:
        """The Python candidates, and the launched scripts migrated with their launchers (or,
        held back, their reasons)."""
        results: list[FileResult] = []
        targets = {
            n[1]: (p, self.env_for.get(n))
            for n, (p, kci) in self.pynodes.items()
            if n[0] == Resolution.PY and not self.is_blocked(n) and n not in self.framework_ok
        }
        seen: set = set()
        self.p.migrations.ahead(
            self.p.python_call(path, text, targets.get(path.resolve(), (None, None))[1])
            for path, (text, _) in self.python_files.items()
        )
        for path, (text, encoding) in self.python_files.items():
            key = path.resolve()
            seen.add(key)
            launched = targets.get(key, (None, None))[1]
            results.append(self.p.python_result(path, text, encoding, launched, self.trials.get((Resolution.PY, key))))
        for node, trial in self.trials.items():
            if node[0] != Resolution.PY or node[1] in seen or not self.is_blocked(node) or trial is None:
                continue
            seen.add(node[1])  # a launched script that could not take the change: say why
            path = self.pynodes[node][0]
            refused = [d for _, d in trial.outcome.refused(LAUNCH_REFUSALS)]
            results.append(FileResult(path, "", "", "utf-8", refused))
        for key, (path, launched) in targets.items():
            if key in seen:
                continue
            try:
                text, encoding = self.p.read_python(path)
            except Exception as exc:  # ReadError: named in the message
                self.p.errors.append(str(exc))
                continue
            results.append(self.p.python_result(path, text, encoding, launched, self.trials.get((Resolution.PY, key))))
        return results


def _inline_position(launch: Launch, line: int, col: int) -> tuple[int, int]:
    """Where line ``line``, column ``col`` of a ``python -c`` launch's code is in its carrier."""
    inline = launch.inline
    if inline is None:
        return launch.line, launch.col
    if line <= 1:
        return inline.line, inline.col + max(col, 1) - 1
    return inline.line + line - 1, col


def _merged_spans(spans) -> list[tuple[int, int]]:
    """``spans`` (start, end) sorted and merged where they overlap or touch: disjoint, so that
    which one holds an offset is one binary search (a launcher with thousands of settings
    was quadratic here)."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def passes_flag(args: list[str | None], flag: str) -> bool:
    """Whether the script's ``args`` switch the boolean ``flag`` on: ``--bf16``, ``--bf16 true``,
    ``--bf16=True`` or ``--bf16 1`` (transformers ``hf_argparser.string_to_bool`` reads
    yes/true/t/y/1 as on and no/false/f/n/0 as off; the last occurrence wins, as argparse's)."""
    state = False
    for k, word in enumerate(args):
        if word is None:
            continue
        if word == flag:
            nxt = args[k + 1] if k + 1 < len(args) else None
            state = not (nxt is not None and nxt.lower() in ("no", "false", "f", "n", "0"))
        elif word.startswith(flag + "="):
            state = word.split("=", 1)[1].lower() in ("yes", "true", "t", "y", "1")
    return state


def _verify_commands(scripts: list[str], entry: Entry) -> str:
    """The ``bf16-migrate verify`` that compares each script a migrated setting starts with its
    legacy run (before the rewrite: the setting passed as ``--legacy-env``), named with the
    script's path and the setting's value. A notebook's own code and a `python -c` code are no
    script verify runs: the notebook or the launcher run again is the comparison."""
    setting = f"{entry.variable}={entry.value or '1'}"
    files = [s for s in scripts if not s.startswith("the `python -c` code")]
    named = [s for s in files if not s.endswith(".ipynb")] or ([] if scripts else ["SCRIPT"])
    if not named:
        return "running the notebook again" if files else "running the launcher again"
    return ", ".join(f"`{shlex.join(['bf16-migrate', 'verify', s, '--legacy-env', setting])}`" for s in named)
