"""The cross-file plan: which carrier entries go, and which launched Python scripts receive the
mode's code change in their place.

Rule (the same as the Python codemod's, which leaves a switch in place when it cannot find the
model): **a legacy bf16 setting is removed only together with the code change of every Python
script it is in force for.** Entries, the scripts they reach and the entries grouped with them
(``export X=1`` and the ``unset X`` of the other branch) form connected components; a
component is migrated whole, or kept whole with a diagnostic saying why (a launched script that
cannot be found, a computed value, a script the codemod cannot migrate, a setting that reaches
no script). So nothing ever trains in fp32 silently, and a second run finds the same component
kept again: idempotent.

Entries that need no code change are always removed: a false value (bf16 was off, BFM002), the
FP16 variables (no effect since torch-xla 2.5, BFM003), an ``unset`` of a legacy variable
(BFM102), unless they belong to a kept component.

Stochastic mode: the first legacy setting of a scope becomes ``NEURON_RT_STOCHASTIC_ROUNDING_EN
=1`` in place (rules/XLA_*.toml ``stochastic-rounding``), unless the carrier already sets that
variable there (kept, BFM070); further legacy settings of the scope are removed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

from ..diagnostics import Diagnostic
from ..helpers_module import usable_for
from ..python import ParseError, migrate_source
from ..python.snippets import HELPER_SOURCES
from ..rules import is_truthy, load_rules
from . import for_kind
from .model import KEEP, PASS, REMOVE, REPLACE, SET, UNSET, Analysis, Decision, Entry, Launch
from .resolve import _rel, resolve_module, resolve_script, uses_torch


@dataclass
class CarrierFile:
    """A carrier to plan: its path, the root of the tree it was found in, its decoded text and
    encoding, and its :class:`Analysis`. ``render`` is False for a file loaded only to follow a
    launch or an include (it holds no legacy setting of its own)."""

    path: Path
    root: Path
    text: str
    encoding: str
    analysis: Analysis
    render: bool = True


@dataclass
class FileResult:
    """The outcome for one file: its new text (== ``old`` when unchanged) and diagnostics."""

    path: Path
    old: str
    new: str
    encoding: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    legacy_env: dict[str, str] = field(default_factory=dict)
    """For a migrated Python script, the legacy settings that were in force for it (what the
    modules of the tree it imports ran under; see :mod:`bf16_migrate.tree_modules`)."""
    helpers: list[str] = field(default_factory=list)
    """The helper functions the migrated script imports from ``--helpers-module``."""


_Node: TypeAlias = tuple[str, Path | int]
"""A Python node of the plan: ``("py", resolved script path)`` or ``("kernel", carrier index)``."""


@dataclass
class _Res:
    kind: str  # "py", "kernel", "shell", "none", "ignored"
    path: Path | None = None
    problem: str | None = None


class _UF:
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


class Planner:
    """Plan and carry out the migration of carriers and the Python scripts they launch.

    ``read_python(path) -> (text, encoding)`` reads a launched script (raising
    :class:`~bf16_migrate.write.ReadError`); ``load_carrier(path) -> CarrierFile | None`` loads a
    shell script or env file met through a launch or an include; ``find_includers(path)``
    returns the carriers of the tree that may load ``path``. ``launched_with`` maps Python
    scripts to legacy settings they run under from outside the tree (``--legacy-env``): they get
    the mode's code change as if a launcher of the tree set them."""

    def __init__(self, mode: str, read_python: Callable, load_carrier: Callable, find_includers: Callable, fp32_optimizer_state: bool = False, launched_with: dict[Path, dict[str, str]] | None = None, helpers_module: str | None = None) -> None:
        self.mode = mode
        self.helpers_module = helpers_module  # --helpers-module (:mod:`bf16_migrate.helpers_module`)
        self.external = {path.resolve(): dict(env) for path, env in (launched_with or {}).items()}
        self.fp32_optimizer_state = fp32_optimizer_state
        self.rules = load_rules()
        self.read_python = read_python
        self.load_carrier = load_carrier
        self.find_includers = find_includers
        self.carriers: list[CarrierFile] = []
        self.by_path: dict[Path, int] = {}
        self.errors: list[str] = []

    # -- carriers ---------------------------------------------------------------------------------
    def add(self, carrier: CarrierFile) -> int:
        """Add ``carrier`` to the plan (once per file) and return its index."""
        key = carrier.path.resolve()
        if key in self.by_path:
            ci = self.by_path[key]
            if carrier.render:
                self.carriers[ci].render = True
            return ci
        self.carriers.append(carrier)
        self.by_path[key] = len(self.carriers) - 1
        return len(self.carriers) - 1

    def _carrier_at(self, path: Path) -> int | None:
        key = path.resolve()
        if key in self.by_path:
            return self.by_path[key]
        loaded = self.load_carrier(path)
        if loaded is None:
            return None
        loaded.render = False
        return self.add(loaded)

    # -- the plan --------------------------------------------------------------------------------
    def run(self, python_files: dict[Path, tuple[str, str]]) -> list[FileResult]:
        """Plan every carrier added and migrate ``python_files`` (path -> (text, encoding)) and
        the scripts launched. Returns one :class:`FileResult` per file looked at."""
        reach: dict[tuple[int, int], dict[tuple[int, int], bool]] = {}
        res: dict[tuple[int, int], _Res] = {}
        done_includers: set[Path] = set()
        ci = 0
        while ci < len(self.carriers):  # the list grows as launches and includes are followed
            carrier = self.carriers[ci]
            for li, launch in enumerate(carrier.analysis.launches):
                reach[(ci, li)] = {(ci, e): sure for e, sure in launch.reached_by.items()}
                res[(ci, li)] = resolved = self._resolve(carrier, launch)
                if resolved.kind == "shell":
                    assert resolved.path is not None, "a resolved shell launch has its script"
                    self._carrier_at(resolved.path)
            for inc in carrier.analysis.includes:
                if inc.local:
                    continue
                target, _ = resolve_script(inc.path, carrier.path, carrier.root)
                if target is not None:
                    tj = self._carrier_at(target)
                    if tj is not None:
                        inc.resolved = tj
            needs_includers = for_kind(carrier.analysis.kind).INCLUDED_ONLY or (
                carrier.analysis.entries and not any(launch.reached_by for launch in carrier.analysis.launches)
            )
            if needs_includers and carrier.render and carrier.path.resolve() not in done_includers:
                done_includers.add(carrier.path.resolve())
                for includer in self.find_includers(carrier.path, carrier.root):
                    self.add(includer)
            ci += 1
        # includes: the included file's settings reach the includer's launches
        for ci, carrier in enumerate(self.carriers):
            for inc in carrier.analysis.includes:
                tj = inc.resolved
                if tj is None:
                    continue
                for li in inc.launches:
                    for entry in self.carriers[tj].analysis.entries:
                        reach.setdefault((ci, li), {}).setdefault((tj, entry.id), True)
        # a launched shell script: what reaches the launch reaches every launch of that script
        changed = True
        while changed:
            changed = False
            for key, r in res.items():
                if r.kind != "shell" or not reach.get(key):
                    continue
                assert r.path is not None, "a resolved shell launch has its script"
                tj = self.by_path.get(r.path.resolve())
                if tj is None:
                    continue
                for lj in range(len(self.carriers[tj].analysis.launches)):
                    reached = reach.setdefault((tj, lj), {})
                    for g, sure in reach[key].items():
                        if g not in reached or (sure and not reached[g]):
                            reached[g] = sure
                            changed = True
        return self._decide(reach, res, python_files)

    def _resolve(self, carrier: CarrierFile, launch: Launch) -> _Res:
        if launch.target is None:
            return _Res("none", problem=launch.problem) if launch.problem else _Res("ignored")
        kind, word = launch.target
        if kind == "kernel":
            return _Res("kernel", carrier.path)
        if launch.problem:
            return _Res("none", problem=launch.problem)
        if kind == "module":
            path, problem = resolve_module(word, carrier.path, carrier.root)
        else:
            path, problem = resolve_script(word, carrier.path, carrier.root)
        if path is None:
            if kind == "shell" or launch.captured:
                return _Res("ignored")  # a shell script, or a `$(helper.py)`, outside the tree: nothing of ours
            return _Res("none", problem=problem)
        if kind == "shell" or path.suffix in (".sh", ".bash"):
            return _Res("shell", path)
        if not uses_torch(path, carrier.root):
            return _Res("ignored", path)
        return _Res("py", path)

    # -- decisions -------------------------------------------------------------------------------
    def _entry(self, g: tuple[int, int]) -> Entry:
        return self.carriers[g[0]].analysis.entries[g[1]]

    def _bf16_on(self, entry: Entry, group_values: dict) -> bool:
        rule = self.rules.variables[entry.variable]
        if not rule.effective:
            return False
        if entry.action == SET:
            return entry.value is not None and is_truthy(entry.value)
        if entry.action == PASS:
            return group_values.get(entry.group, False)
        return False

    def _decide(self, reach, res, python_files) -> list[FileResult]:
        uf = _UF()
        why: dict = {}  # component member -> [(code, message)], every reason found
        groups: dict = {}
        for ci, carrier in enumerate(self.carriers):
            for entry in carrier.analysis.entries:
                g = (ci, entry.id)
                uf.find(g)
                if entry.group is not None:
                    groups.setdefault(entry.group, []).append(g)

        def sets_on(entry: Entry) -> bool:
            return entry.action == SET and entry.value is not None and self.rules.variables[entry.variable].effective and is_truthy(entry.value)

        group_on = {}
        for key, members in groups.items():
            for g in members[1:]:
                uf.union(members[0], g)
            group_on[key] = any(sets_on(self._entry(g)) for g in members)

        def block(g, code, message):
            if (code, message) not in why.setdefault(g, []):
                why[g].append((code, message))

        def is_blocked(x) -> bool:
            root = uf.find(x)
            return any(uf.find(m) == root for m in why)

        for ci, carrier in enumerate(self.carriers):
            for entry in carrier.analysis.entries:
                g = (ci, entry.id)
                if entry.noop:
                    continue
                if entry.problem:
                    code = "BFM130" if "computed" in entry.problem else "BFM131"
                    block(g, code, entry.problem)
                elif entry.action == SET and entry.value is None:
                    block(g, "BFM130", f"{entry.variable} is set to a computed value: edit it by hand")
        # launches
        env_for: dict[_Node, dict[str, str]] = {}
        reached_any: set = set()
        partial: dict = {}
        pynodes: dict = {}
        for key, r in res.items():
            ci, li = key
            launch = self.carriers[ci].analysis.launches[li]
            on = [g for g in reach.get(key, {}) if self._bf16_on(self._entry(g), group_on)]
            if not on or r.kind in ("ignored", "shell"):
                if r.kind == "shell":
                    reached_any.update(on)
                continue
            where = f"line {launch.line}" if not launch.where else f"{launch.where[1:]} line {launch.line}"
            if r.kind == "none":
                for g in on:
                    block(g, "BFM111", f"the Python launch at {where} (`{launch.text}`) cannot be resolved: {r.problem}")
                continue
            node = ("py", r.path.resolve()) if r.kind == "py" else ("kernel", ci)
            pynodes[node] = (r.path, ci if r.kind == "kernel" else None)
            for g in reach.get(key, {}):
                entry = self._entry(g)
                if entry.action == SET and entry.value is None and self.rules.variables[entry.variable].effective:
                    uf.union(g, node)  # bf16 may or may not be on for this launch: decided by hand
            for g in on:
                reached_any.add(g)
                uf.union(g, node)
                entry = self._entry(g)
                env = env_for.setdefault(node, {})
                if entry.action == SET:
                    assert entry.value is not None, "a setting that switches bf16 on has its value (_bf16_on)"
                    env[entry.variable] = entry.value
                else:
                    env.setdefault(entry.variable, "1")
                if not reach[key][g]:
                    partial.setdefault(g, (launch, where, node))
        for ci, carrier in enumerate(self.carriers):
            for entry in carrier.analysis.entries:
                g = (ci, entry.id)
                if entry.action == SET and not entry.noop and self._bf16_on(entry, group_on) and g not in reached_any and g not in why:
                    block(g, "BFM110", f"{entry.variable} reaches no Python script of the tree that uses torch (no launch found after it, or the launch is elsewhere)")
        # trial migrations of the launched scripts
        trials: dict = {}
        framework_ok: dict = {}  # node -> the framework whose flag every launch passes
        for node, (path, kci) in pynodes.items():
            # tried even when the component is already held back: every blocker is reported
            trial_env = env_for.get(node, {})
            result, failure = self._trial(node, path, kci, trial_env, python_files)
            trials[node] = result
            rule = getattr(result, "framework", None)
            if rule is not None:
                runs = [self.carriers[k[0]].analysis.launches[k[1]] for k, r in res.items() if r.kind == "py" and ("py", r.path.resolve()) == node]
                if rule.launch_flag and runs and all(passes_flag(run.args, rule.launch_flag) for run in runs):
                    framework_ok[node] = rule
                    failure = None
                else:
                    wheres = ", ".join(f"line {run.line}" for run in runs)
                    fix = f"pass `{rule.launch_flag}` to it ({wheres}) and remove this setting" if rule.launch_flag else f"set {rule.setting} in it and remove this setting"
                    failure = f"{path} builds {rule.name}, which owns precision (see its diagnostics): {fix}"
            if failure:
                block(node, "BFM112", failure)
        # launches that run a migrated script without bf16 (an fp32 path): say so
        fp32_runs: list = []
        for key, r in res.items():
            if r.kind != "py":
                continue
            node = ("py", r.path.resolve())
            if node not in pynodes or is_blocked(node):
                continue
            if any(self._bf16_on(self._entry(g), group_on) for g in reach.get(key, {})):
                continue
            ci, li = key
            launch = self.carriers[ci].analysis.launches[li]
            if not any(c == ci and (l.line, l.col) == (launch.line, launch.col) and p == r.path for c, l, p in fp32_runs):
                fp32_runs.append((ci, launch, r.path))  # once per call (a function may start it twice)
        # decisions
        reasons: dict = {}
        member_of: dict = {}
        for member, found in why.items():
            for reason in found:
                if reason not in reasons.setdefault(uf.find(member), []):
                    reasons[uf.find(member)].append(reason)
        for root, found in reasons.items():
            found.sort(key=lambda r: BLOCKER_DEPTH.index(r[0]) if r[0] in BLOCKER_DEPTH else len(BLOCKER_DEPTH))
            member_of[root] = next(m for m in why if uf.find(m) == root and found[0] in why[m])
        decisions: dict[int, dict[int, Decision]] = {ci: {} for ci in range(len(self.carriers))}
        diags: dict[int, list[Diagnostic]] = {ci: [] for ci in range(len(self.carriers))}
        used_scopes: set = set()
        for ci, carrier in enumerate(self.carriers):
            a = carrier.analysis
            for entry in sorted(a.entries, key=lambda e: (e.line, e.col)):
                g = (ci, entry.id)
                path = f"{carrier.path}{entry.where}"
                if is_blocked(g):
                    found = reasons.get(uf.find(g)) or [("BFM111", "another setting it goes with cannot be migrated")]
                    ordered = found  # deepest first, whoever it belongs to
                    code, message = ordered[0]
                    if ordered[0] in why.get(g, []):
                        lead = f"{entry.variable} kept"
                    else:
                        lead = f"{entry.variable} kept with the settings it goes with ({self._where(member_of.get(uf.find(g)))})"
                    more = [f"{m} ({c})" for c, m in ordered[1:]]
                    tail = f"; also: {'; '.join(more)}" if more else ""
                    diags[ci].append(Diagnostic(code, path, entry.line, entry.col, f"{lead}: {message}{tail}", False))
                    decisions[ci][entry.id] = KEEP
                    continue
                rule = self.rules.variables[entry.variable]
                if entry.noop:
                    decisions[ci][entry.id] = REMOVE
                    diags[ci].append(Diagnostic("BFM140", path, entry.line, entry.col, f"{entry.variable}: {entry.noop}: removed (the cells after it never ran with it)", True))
                    continue
                if not rule.effective:
                    decisions[ci][entry.id] = REMOVE
                    diags[ci].append(Diagnostic("BFM003", path, entry.line, entry.col, f"{entry.variable} has done nothing since torch-xla {rule.deprecated_since} (the script trained in fp32): removed; for fp16 use torch.autocast(\"xla\", dtype=torch.float16) with torch.amp.GradScaler", True))
                    continue
                if entry.action == UNSET:
                    decisions[ci][entry.id] = REMOVE
                    diags[ci].append(Diagnostic("BFM102", path, entry.line, entry.col, f"unset of {entry.variable} removed (the variable is no longer set anywhere)", True))
                    continue
                if not self._bf16_on(entry, group_on):
                    decisions[ci][entry.id] = REMOVE
                    if entry.action == PASS:
                        diags[ci].append(Diagnostic("BFM002", path, entry.line, entry.col, f"{entry.variable} passed on here was off (or is no longer set): removed, nothing added", True))
                    else:
                        diags[ci].append(Diagnostic("BFM002", path, entry.line, entry.col, f"{entry.variable}={entry.value!r} means bf16 was off: removed, nothing added", True))
                    continue
                scripts = sorted({str(pynodes[n][0]) for n in pynodes if uf.find(n) == uf.find(g)})
                target = ", ".join(scripts) if scripts else "the script it launches"
                change = "replaced by NEURON_RT_STOCHASTIC_ROUNDING_EN=1" if self.mode == "stochastic" else "removed"
                if self.mode == "stochastic":
                    scope = (ci, entry.sr_scope)
                    covered = a.sr_covered(entry.sr_scope) if a.sr_covered else False
                    if covered:
                        decisions[ci][entry.id] = REMOVE
                        diags[ci].append(Diagnostic("BFM070", path, entry.line, entry.col, f"{entry.variable} removed; NEURON_RT_STOCHASTIC_ROUNDING_EN is already set here and kept as it is: check its value (1 reproduces the legacy switch on Neuron)", True))
                    elif scope in used_scopes and entry.action == SET:
                        decisions[ci][entry.id] = REMOVE
                        change = "removed (NEURON_RT_STOCHASTIC_ROUNDING_EN=1 is set just before)"
                    else:
                        if entry.action == SET:
                            used_scopes.add(scope)
                        decisions[ci][entry.id] = REPLACE
                else:
                    decisions[ci][entry.id] = REMOVE
                owners = [framework_ok[n] for n in pynodes if n in framework_ok and uf.find(n) == uf.find(g)]
                if owners:
                    diags[ci].append(Diagnostic("BFM055", path, entry.line, entry.col, f"{entry.variable} {change}; {target} builds {owners[0].name}, and the launch passes `{owners[0].launch_flag}`, so the framework applies bf16 itself ({owners[0].advice})", True))
                elif not (self.mode == "stochastic" and decisions[ci][entry.id] == REMOVE and a.sr_covered and a.sr_covered(entry.sr_scope)):
                    what = "the model cast to torch.bfloat16 and its floating inputs cast" if self.mode != "amp" else "forward and loss under torch.autocast"
                    diags[ci].append(Diagnostic("BFM001", path, entry.line, entry.col, f"{entry.variable} {change}; {target} now {'have' if len(scripts) > 1 else 'has'} {what} (review it; `bf16-migrate verify SCRIPT --legacy-env {entry.variable}=1` compares it with the legacy run)", True))
                if g in partial:
                    launch, where, node = partial[g]
                    gate = getattr(trials.get(node), "own_gate", None)
                    if gate:
                        consequence = f"the migrated script's bf16 changes are under `{gate}` (its own precision flag): check that the other paths pass that flag, or add one for an fp32 run"
                    else:
                        consequence = "the migrated script now computes in bf16 on every path; add a flag to it if you still need an fp32 run"
                    diags[ci].append(Diagnostic("BFM120", path, entry.line, entry.col, f"{entry.variable} is set here on some paths only, but the launch at {where} (`{launch.text}`) runs on others too: {consequence}", False))
        for ci, launch, path in fp32_runs:
            diags[ci].append(Diagnostic("BFM120", f"{self.carriers[ci].path}{launch.where}", launch.line, launch.col, f"`{launch.text}` runs {path} without a legacy bf16 setting (in fp32), but other launchers switch it on: the migrated script now computes in bf16 here too; add a flag to it if this run must stay fp32", False))
        # render
        results: list[FileResult] = []
        for ci, carrier in enumerate(self.carriers):
            a = carrier.analysis
            for note in a.notes:
                diags[ci].append(Diagnostic(note.code, f"{carrier.path}{note.where}", note.line, note.col, note.message, note.fixed))
            self._coverage(ci, diags[ci])
            if not carrier.render and not a.entries:
                continue
            kernel: _Node = ("kernel", ci)
            assert a.render is not None, "every carrier's analysis can render its file"
            new: str | None = None
            if a.python is not None:
                launched = env_for.get(kernel) if kernel in trials and not is_blocked(kernel) else None
                new, pyd = self._migrate_embedded_python(carrier, launched)
                diags[ci].extend(pyd)
                if new is None:
                    continue
            text = a.render(decisions[ci], new)
            results.append(FileResult(carrier.path, carrier.text, text, carrier.encoding, sorted(diags[ci], key=lambda d: (d.path, d.line, d.col, d.code))))
        # python files: the candidates, and the launched scripts migrated with their launchers
        targets = {n[1]: (p, env_for.get(n)) for n, (p, kci) in pynodes.items() if n[0] == "py" and not is_blocked(n) and n not in framework_ok}
        seen: set = set()
        for path, (text, encoding) in python_files.items():
            key = path.resolve()
            seen.add(key)
            launched = targets.get(key, (None, None))[1]
            results.append(self._python_result(path, text, encoding, launched, trials.get(("py", key))))
        for node, trial in trials.items():
            if node[0] != "py" or node[1] in seen or not is_blocked(node) or trial is None:
                continue
            seen.add(node[1])  # a launched script that could not take the change: say why
            path = pynodes[node][0]
            refused = [d for d in trial.diagnostics if not d.fixed and d.code in REFUSALS]
            results.append(FileResult(path, "", "", "utf-8", refused))
        for key, (path, launched) in targets.items():
            if key in seen:
                continue
            try:
                text, encoding = self.read_python(path)
            except Exception as exc:  # ReadError: named in the message
                self.errors.append(str(exc))
                continue
            results.append(self._python_result(path, text, encoding, launched, trials.get(("py", key))))
        return results

    def _where(self, member) -> str:
        """Where the cause of a kept component is: ``file:line`` of an entry, or a script."""
        if member is None:
            return "see the other diagnostics"
        if member[0] in ("py", "kernel"):
            return str(_rel(member[1])) if member[0] == "py" else str(self.carriers[member[1]].path)
        entry = self._entry(member)
        return f"{self.carriers[member[0]].path}{entry.where}:{entry.line}"

    def _coverage(self, ci: int, diags: list[Diagnostic]) -> None:
        """Report every mention of a legacy variable no entry or note covers."""
        from .text import find_mentions

        carrier = self.carriers[ci]
        a = carrier.analysis
        if for_kind(a.kind).OWN_COVERAGE or not carrier.render:
            return
        covered = a.handled
        index = None
        for var, off in find_mentions(a.text, self.rules.variables):
            if any(s <= off < e for s, e in covered):
                continue
            if index is None:
                from .model import LineIndex

                index = LineIndex(a.text)
            line, col = index.pos(off)
            diags.append(Diagnostic("BFM131", str(carrier.path), line, col, f"{var} is named here in a form bf16-migrate does not rewrite: edit it by hand", False))

    def _trial(self, node, path: Path, kci, launched: dict[str, str], python_files) -> tuple[object, str | None]:
        if node[0] == "kernel":
            carrier = self.carriers[kci]
            assert carrier.analysis.python is not None, "a kernel node is a notebook's Python"
            source = carrier.analysis.python.source
            label = str(carrier.path)
        else:
            found = python_files.get(path) or next((v for k, v in python_files.items() if k.resolve() == path.resolve()), None)
            if found is None:
                try:
                    found = self.read_python(path)
                except Exception as exc:
                    return None, f"{path} cannot be read ({exc})"
            source, label = found[0], str(path)
            launched = self._with_external(path, launched)
        try:
            result = migrate_source(source, self.mode, label, launched_with=launched, fp32_optimizer_state=self.fp32_optimizer_state)
        except ParseError as exc:
            return None, f"{path} cannot be migrated ({exc})"
        # accepted: the codemod gives the script the change (BFM001), or the script already
        # carries it, always on (BFM013: precision.Planner._existing_precision read its
        # autocast region or model cast, in whatever order the files were migrated)
        refused = [d for d in result.diagnostics if not d.fixed and d.code in ("BFM010", "BFM011")]
        accepted = any(d.fixed and d.code in ("BFM001", "BFM013") for d in result.diagnostics)
        if refused or not accepted:
            # the script's own reason first: its precision code is on under a flag only (BFM032:
            # removing the setting would leave the other paths in fp32), a forward pass cannot
            # go under autocast (BFM033), or its precision code is another mode's (BFM015)
            own = [d for d in result.diagnostics if not d.fixed and d.code in ("BFM015", "BFM032", "BFM033")]
            if refused:
                reason = refused[0].message.split(":")[0]
            elif own:
                reason = f"{own[0].code} at line {own[0].line}: {own[0].message.split(': ', 1)[-1]}"
            else:
                reason = "the codemod made no change"
            return result, f"{path} cannot receive the change for --mode {self.mode} ({reason}); migrate it by hand (see its diagnostics), then remove this setting"
        return result, None

    def _with_external(self, path: Path, launched):
        """The settings a launcher of the tree gives ``path`` together with those it runs
        under from outside the tree (``--legacy-env``); the launcher's value wins for a
        variable both set (its ``export`` overrides the environment it was started in)."""
        outside = self.external.get(path.resolve())
        if not outside:
            return launched
        return {**outside, **(launched or {})}

    def _helpers_for(self, path: Path) -> tuple[str | None, str | None]:
        """(the module ``path`` imports its helpers from, or None; why not, when asked for)."""
        if self.helpers_module is None:
            return None, None
        reason = usable_for(path, self.helpers_module)
        return (None, reason) if reason else (self.helpers_module, None)

    def _python_result(self, path: Path, text: str, encoding: str, launched, trial) -> FileResult:
        module, inline_reason = self._helpers_for(path)
        try:
            result = migrate_source(text, self.mode, str(path), launched_with=self._with_external(path, launched), fp32_optimizer_state=self.fp32_optimizer_state, helpers_module=module)
        except ParseError as exc:
            self.errors.append(str(exc))
            return FileResult(path, text, text, encoding, [])
        diags = list(result.diagnostics)
        if inline_reason and any(f"def {name}(" in result.code and f"def {name}(" not in text for name in HELPER_SOURCES):
            diags.append(Diagnostic("BFM065", str(path), 1, 1, f"the helper functions are written into this script, not imported from {self.helpers_module}.py: {inline_reason}", True))
        if launched is None and trial is not None:
            for d in trial.diagnostics:  # why the launcher's setting was kept
                if not d.fixed and d.code in REFUSALS and d not in diags:
                    diags.append(d)
        return FileResult(path, text, result.code, encoding, diags, dict(result.legacy_env), list(result.helpers))

    def _migrate_embedded_python(self, carrier: CarrierFile, launched) -> tuple[str | None, list[Diagnostic]]:
        """The carrier's own Python (a notebook's code cells) migrated as one module: its new
        source and diagnostics mapped back to the file; ``(None, [])`` when it does not parse."""
        nb = carrier.analysis.python
        assert nb is not None, "called for a carrier with Python of its own"
        try:
            result = migrate_source(nb.source, self.mode, str(carrier.path), launched_with=launched, fp32_optimizer_state=self.fp32_optimizer_state)
        except ParseError as exc:
            self.errors.append(str(exc))
            return None, []
        return result.code, [nb.map_diagnostic(d) for d in result.diagnostics]


REFUSALS = ("BFM010", "BFM011", "BFM055")
"""A launched script's own reasons for not taking the change (shown with the launcher's)."""

BLOCKER_DEPTH = ("BFM112", "BFM111", "BFM110", "BFM130", "BFM131")
"""Why a setting is kept, deepest first: the launched script cannot take the change, the
launch cannot be resolved, no launch at all, then the form of the setting itself. A message
leads with the deepest, so the user starts where the work is."""


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
