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
from pathlib import Path

from ..diagnostics import Diagnostic, cited, headline, report
from ..helpers_module import usable_for
from ..migrations import Call, Migrations
from ..python import LAUNCH_REFUSALS, ParseError, Refusal
from ..python.inline_code import as_script
from ..python.snippets import HELPER_SOURCES
from ..rules import Mode, load_rules
from ..shebang import shebang_kind
from . import for_kind
from .delegate import delegated_module
from .link_decide import Decider
from .link_decide import passes_flag as passes_flag  # re-exported: read by tests/test_launch_lines.py
from .model import CarrierFile, FileResult, Launch, Resolution, Resolved, Target
from .python_loaders import PythonLoader
from .resolve import resolve_module, resolve_script, uses_torch


def is_python(path: Path) -> bool:
    """Whether ``path`` is a Python file as the scan kinds it (:func:`bf16_migrate.scan.kind_of`):
    a ``.py``/``.pyi`` name, or no extension and a ``#!`` line naming Python."""
    return path.suffix in (".py", ".pyi") or (not path.suffix and shebang_kind(path) == "python")


_ReachMap = dict[tuple[int, int], dict[tuple[int, int], bool]]
"""What reaches each launch: (carrier, launch) -> {(carrier, entry): in force on every path}."""


class LinkPlanner:
    """Plan and carry out the migration of carriers and the Python scripts they launch.

    ``read_python(path) -> (text, encoding)`` reads a launched script (raising
    :class:`~bf16_migrate.write.ReadError`); ``load_carrier(path) -> CarrierFile | None`` loads a
    shell script or env file met through a launch or an include; ``find_includers(path)``
    returns the carriers of the tree that may load ``path``. ``launched_with`` maps Python
    scripts to legacy settings they run under from outside the tree (``--legacy-env``): they get
    the mode's code change as if a launcher of the tree set them. ``left_out(path)`` says why a
    file found in the tree must be neither read nor rewritten (a symlink leading out of the paths
    given, an exclude pattern, ``.gitignore``), or None: a launch of such a script cannot be
    resolved (its setting is kept), an include of such a file is not followed."""

    def __init__(
        self,
        mode: Mode,
        read_python: Callable,
        load_carrier: Callable,
        find_includers: Callable,
        fp32_optimizer_state: bool = False,
        launched_with: dict[Path, dict[str, str]] | None = None,
        helpers_module: str | None = None,
        migrations: Migrations | None = None,
        tree_facts: Callable[[Path, str], object] | None = None,
        left_out: Callable[[Path], str | None] | None = None,
        find_python_loaders: Callable[[Path, Path], list[PythonLoader]] | None = None,
    ) -> None:
        self.mode = mode
        # the Python files that read a carrier file themselves (.carriers.python_loaders): named in BFM110
        self.find_python_loaders = find_python_loaders or (lambda path, root: [])
        # what the modules of a script's tree offer its codemod (bf16_migrate.tree_modules.TreeFactsReader)
        self.tree_facts = tree_facts or (lambda path, text: None)
        self.left_out = left_out or (lambda path: None)
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
        self.migrations = migrations or Migrations()  # each migrate_source call once; a batch across cores (Decider)

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
        the scripts launched. Returns one :class:`FileResult` per file looked at.

        In order: the carriers are followed (:meth:`_follow`), the included files' settings reach
        the includers' launches (:meth:`_reach_through_includes`), what reaches a launched shell
        script reaches its launches (:meth:`_reach_through_shell_scripts`), then the decisions
        (:meth:`_decide`)."""
        reach: _ReachMap = {}
        res: dict[tuple[int, int], Resolved] = {}
        self._follow(reach, res)
        self._reach_through_includes(reach)
        self._reach_through_shell_scripts(reach, res)
        return self._decide(reach, res, python_files)

    def _follow(self, reach: _ReachMap, res: dict[tuple[int, int], Resolved]) -> None:
        """Each carrier of the plan in turn, the list growing as its launches
        (:meth:`_follow_launches`), includes (:meth:`_follow_includes`) and includers
        (:meth:`_add_includers`) are followed; fills ``reach`` and ``res`` by (carrier, launch)."""
        done_includers: set[Path] = set()
        ci = 0
        while ci < len(self.carriers):  # the list grows as launches and includes are followed
            carrier = self.carriers[ci]
            self._follow_launches(ci, carrier, reach, res)
            self._follow_includes(carrier)
            self._add_includers(carrier, done_includers)
            ci += 1

    def _follow_launches(
        self, ci: int, carrier: CarrierFile, reach: _ReachMap, res: dict[tuple[int, int], Resolved]
    ) -> None:
        """The entries that reach each launch of ``carrier`` (index ``ci``) and what it launches
        (:meth:`_resolve`); a launched shell script of the tree is added to the plan."""
        for li, launch in enumerate(carrier.analysis.launches):
            reach[(ci, li)] = {(ci, e): sure for e, sure in launch.reached_by.items()}
            res[(ci, li)] = resolved = self._resolve(carrier, launch)
            if resolved.kind == Resolution.SHELL:
                assert resolved.path is not None, "a resolved shell launch has its script"
                if self._carrier_at(resolved.path) is None:  # what it starts cannot be told: never passed over
                    res[(ci, li)] = Resolved(
                        Resolution.NONE,
                        problem=f"the script it starts, {resolved.path}, cannot be read or parsed as a shell script",
                    )

    def _follow_includes(self, carrier: CarrierFile) -> None:
        """Each file ``carrier`` includes, found in the tree and not left out, is added to the
        plan and its index set on the include (:attr:`.model.Include.resolved`)."""
        for inc in carrier.analysis.includes:
            if inc.local:
                continue
            target, _ = resolve_script(inc.path, carrier.path, carrier.root)
            if target is not None and self.left_out(target) is None:
                tj = self._carrier_at(target)
                if tj is not None:
                    inc.resolved = tj

    def _add_includers(self, carrier: CarrierFile, done_includers: set[Path]) -> None:
        """The carriers that may load ``carrier`` are added to the plan (once per file, for a
        carrier to be rendered) when its settings reach no launch of its own: a kind that is only
        included (an env file), or a carrier with entries none of whose launches they reach."""
        needs_includers = for_kind(carrier.analysis.kind).INCLUDED_ONLY or (
            carrier.analysis.entries and not any(launch.reached_by for launch in carrier.analysis.launches)
        )
        if needs_includers and carrier.render and carrier.path.resolve() not in done_includers:
            done_includers.add(carrier.path.resolve())
            for includer in self.find_includers(carrier.path, carrier.root):
                self.add(includer)

    def _reach_through_includes(self, reach: _ReachMap) -> None:
        """An included file's entries reach the includer's launches listed on the include
        (:attr:`.model.Include.launches`), as in force on every path unless already known."""
        for ci, carrier in enumerate(self.carriers):
            for inc in carrier.analysis.includes:
                tj = inc.resolved
                if tj is None:
                    continue
                for li in inc.launches:
                    for entry in self.carriers[tj].analysis.entries:
                        reach.setdefault((ci, li), {}).setdefault((tj, entry.id), True)

    def _reach_through_shell_scripts(self, reach: _ReachMap, res: dict[tuple[int, int], Resolved]) -> None:
        """A launched shell script: what reaches the launch reaches every launch of that script,
        surely where it surely reaches the launch (not a Slurm batch script submitted by sbatch
        whose directives export none of the submitter's environment); repeated until nothing
        more is learnt (a script launching a script)."""
        changed = True
        while changed:
            changed = False
            for key, r in res.items():
                if r.kind != Resolution.SHELL or not reach.get(key):
                    continue
                assert r.path is not None, "a resolved shell launch has its script"
                tj = self.by_path.get(r.path.resolve())
                if tj is None:
                    continue
                if self.carriers[key[0]].analysis.launches[key[1]].batch and self.carriers[tj].analysis.batch_isolated:
                    continue  # `sbatch job.sh` where job.sh says `#SBATCH --export=NONE`: nothing of the submitter's
                changed = self._reach_launches_of(tj, reach[key], reach) or changed

    def _reach_launches_of(self, tj: int, reaching: dict[tuple[int, int], bool], reach: _ReachMap) -> bool:
        """``reaching`` (entries, surely or not) reaches every launch of the carrier ``tj``;
        whether that taught ``reach`` anything."""
        changed = False
        for lj in range(len(self.carriers[tj].analysis.launches)):
            reached = reach.setdefault((tj, lj), {})
            for g, sure in reaching.items():
                if g not in reached or (sure and not reached[g]):
                    reached[g] = sure
                    changed = True
        return changed

    def _resolve(self, carrier: CarrierFile, launch: Launch) -> Resolved:
        if launch.target is None:
            return Resolved(Resolution.NONE, problem=launch.problem) if launch.problem else Resolved(Resolution.IGNORED)
        kind, word = launch.target
        if kind == Target.KERNEL:
            return Resolved(Resolution.KERNEL, carrier.path)
        if launch.problem:
            return Resolved(Resolution.NONE, problem=launch.problem)
        if kind == Target.INLINE:
            handed = delegated_module(carrier.path, word, carrier.root)  # `python -c "import t; t.main()"`
            if handed is not None and self.left_out(handed) is None:
                return Resolved(Resolution.PY, handed)
            if "torch" not in word:  # it imports no module of the tree that trains: the variable does nothing
                return Resolved(Resolution.IGNORED)
            return Resolved(Resolution.INLINE, carrier.path)
        if kind == Target.MODULE:
            path, problem = resolve_module(word, carrier.path, carrier.root)
        else:
            path, problem = resolve_script(word, carrier.path, carrier.root)
        if path is None:
            if kind == Target.SHELL or launch.captured:
                return Resolved(
                    Resolution.IGNORED
                )  # a shell script, or a `$(helper.py)`, outside the tree: nothing of ours
            return Resolved(Resolution.NONE, problem=problem)
        why = self.left_out(path)
        if why is not None:
            return Resolved(Resolution.NONE, problem=f"{why}: not read, not rewritten")
        if (kind == Target.SHELL or path.suffix in (".sh", ".bash")) and not is_python(path):
            return Resolved(Resolution.SHELL, path)  # (a Slurm batch script may be Python: sbatch runs its #!)
        if not uses_torch(path, carrier.root):
            return Resolved(Resolution.IGNORED, path)
        return Resolved(Resolution.PY, self._handed_to(path, carrier.root))

    def _handed_to(self, path: Path, root: Path) -> Path:
        """``path``, or the module of the tree the thin entry script ``path`` hands its training to
        (:func:`.delegate.delegated_module`): the launch's settings are migrated with that module."""
        try:
            text = self.read_python(path)[0]
        except Exception:  # its own run reports what cannot be read
            return path
        handed = delegated_module(path, text, root)
        return handed if handed is not None and self.left_out(handed) is None else path

    # -- decisions -------------------------------------------------------------------------------
    def _decide(
        self, reach: dict, res: dict[tuple[int, int], Resolved], python_files: dict[Path, tuple[str, str]]
    ) -> list[FileResult]:
        """The plan's decisions from what reaches each launch (:class:`.link_decide.Decider`).
        The one step after following the files: a subclass that only wants ``reach`` and
        ``res`` overrides it (``bf16_migrate.verify.launchers``)."""
        return Decider(self, reach, res, python_files).run()

    def trial_call(self, node, path: Path, kci, launched: dict[str, str], python_files) -> Call | str:
        """The ``migrate_source`` call of :meth:`trial` (:data:`bf16_migrate.migrations.Call`),
        or why it cannot be made (the script cannot be read)."""
        if node[0] == Resolution.KERNEL:
            carrier = self.carriers[kci]
            assert carrier.analysis.python is not None, "a kernel node is a notebook's Python"
            source = carrier.analysis.python.source
            label = str(carrier.path)
        elif node[0] == Resolution.INLINE:
            source, label = as_script(self.inline_source(node)), str(path)
        else:
            found = python_files.get(path) or next(
                (v for k, v in python_files.items() if k.resolve() == path.resolve()), None
            )
            if found is None:
                try:
                    found = self.read_python(path)
                except Exception as exc:
                    return f"{path} cannot be read ({exc})"
            source, label = found[0], str(path)
            launched = self._with_external(path, launched)
            return (
                source,
                self.mode,
                label,
                {
                    "launched_with": launched,
                    "fp32_optimizer_state": self.fp32_optimizer_state,
                    "tree": self.tree_facts(path, source),
                },
            )
        return source, self.mode, label, {"launched_with": launched, "fp32_optimizer_state": self.fp32_optimizer_state}

    def inline_launch(self, node) -> Launch:
        """The ``python -c`` launch of an inline node ``("inline", (carrier, launch))``."""
        ci, li = node[1]
        return self.carriers[ci].analysis.launches[li]

    def inline_source(self, node) -> str:
        """The code an inline node runs (its launch's target word)."""
        target = self.inline_launch(node).target
        assert target is not None and target[0] == Target.INLINE, "an inline node is a `python -c` launch"
        return target[1]

    def trial(self, node, path: Path, kci, launched: dict[str, str], python_files) -> tuple[object, str | None]:
        call = self.trial_call(node, path, kci, launched, python_files)
        if isinstance(call, str):
            return None, call
        source, mode, label, options = call
        try:
            result = self.migrations(source, mode, label, **options)
        except ParseError as exc:
            return None, f"{path} cannot be migrated ({exc})"
        # accepted: the codemod gives the script the change (BFM001), or the script already
        # carries it, always on (BFM013: own_precision.existing_precision read its
        # autocast region or model cast, in whatever order the files were migrated)
        refused = result.outcome.refused(frozenset({Refusal.NO_OPTIMIZER, Refusal.MODEL_UNKNOWN}))
        if refused or not (result.outcome.took or result.outcome.no_effect):
            # the script's own reason first: its precision code is on under a flag only (BFM032:
            # removing the setting would leave the other paths in fp32), a forward pass cannot
            # go under autocast (BFM033), its precision code is another mode's (BFM015), an optimizer
            # cannot keep the FP32 master weights of gpu-compatible mode (BFM017), it is a test module
            # (BFM052), a wrapper owns its precision (BFM056, torch-xla's FSDP), or its model's code
            # would compute in f32 without the switch (BFM081, BFM083-BFM085)
            own = result.outcome.refused(
                frozenset(
                    {
                        Refusal.OWN_PRECISION,
                        Refusal.MASTER_WEIGHTS,
                        Refusal.TEST,
                        Refusal.WRAPPER,
                        Refusal.MODEL_CODE_F32,
                        Refusal.UNREAD_IMPORT,
                    }
                )
            )
            # any other refusal of the script is its reason too (BFM155: an op without a bf16 kernel on the
            # device; a hunt's Dockerfile said "the codemod made no change" and printed none of it)
            other = own or result.outcome.refused()
            if refused:
                reason = headline(refused[0][1])
            elif other:
                reason = cited(other[0][1])
            else:
                reason = "the codemod made no change"
            what = (
                path
                if node[0] != Resolution.INLINE
                else f"the `python -c` code at line {self.inline_launch(node).line}"
            )
            return (
                result,
                f"{what} cannot receive the change for --mode {self.mode} ({reason}); migrate it by hand (see its "
                "diagnostics), then remove this setting",
            )
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

    def python_call(self, path: Path, text: str, launched, launches_migrated=None) -> Call:
        """The ``migrate_source`` call of :meth:`python_result` (:data:`bf16_migrate.migrations.Call`)."""
        module, _ = self._helpers_for(path)
        return (
            text,
            self.mode,
            str(path),
            {
                "launched_with": self._with_external(path, launched),
                "fp32_optimizer_state": self.fp32_optimizer_state,
                "helpers_module": module,
                "tree": self.tree_facts(path, text),
                "launches_migrated": launches_migrated,
            },
        )

    def python_result(
        self, path: Path, text: str, encoding: str, launched, trial, launches_migrated=None
    ) -> FileResult:
        """``path`` migrated (under the settings ``launched`` of its launchers, ``trial`` the migration
        that tried them); ``launches_migrated``: the scripts it starts with legacy settings that took
        the change (``migrate_source``'s)."""
        _, inline_reason = self._helpers_for(path)
        source, mode, label, options = self.python_call(path, text, launched, launches_migrated)
        try:
            result = self.migrations(source, mode, label, **options)
        except ParseError as exc:
            self.errors.append(str(exc))
            return FileResult(path, text, text, encoding, [])
        diags = list(result.diagnostics)
        outside = self.external.get(path.resolve())
        if result.launch_flag and outside:
            # amp through the script's own flag, but the setting is made outside the tree: no
            # launcher of ours can pass the flag, so nothing changes (the switch stays in force
            # there, with what the legacy run needed) and the user is told which flag to pass
            told = [
                report("BFM034", d.path, d.line, d.col, False, "outside", variable=name, flag=result.launch_flag)
                for d in result.outcome.through_flag
                for name in outside
            ]
            unfixed = [d for d in diags if not d.fixed]
            return FileResult(
                path, text, text, encoding, sorted([*told, *unfixed], key=lambda d: (d.line, d.col, d.code))
            )
        if inline_reason and any(
            f"def {name}(" in result.code and f"def {name}(" not in text for name in HELPER_SOURCES
        ):
            diags.append(report("BFM065", str(path), 1, 1, True, module=self.helpers_module, reason=inline_reason))
        if launched is None and trial is not None:
            for _, d in trial.outcome.refused(LAUNCH_REFUSALS):  # why the launcher's setting was kept
                if d not in diags:
                    diags.append(d)
        return FileResult(
            path,
            text,
            result.code,
            encoding,
            diags,
            dict(result.legacy_env),
            list(result.helpers),
            list(result.factory_changes),
            dict(result.switched),
            list(result.loss_code),
            [
                f"{path}:{item.line}: {item.what}" if item.line else f"{path}: {item.what}"
                for item in result.outcome.unexamined()
            ],
            list(result.outcome.f32_islands),
            handoffs=list(result.handoffs),
            sets_on_import=dict(result.outcome.sets_on_import),
            sets_on_call=tuple(result.outcome.sets_on_call),
            launches=tuple(result.outcome.launches),
        )

    def migrate_embedded_python(
        self, carrier: CarrierFile, launched
    ) -> tuple[str | None, list[Diagnostic], dict[str, str], dict[str, str]]:
        """The carrier's own Python (a notebook's code cells) migrated as one module: its new
        source, diagnostics mapped back to the file, and the settings it ran under
        (``MigrationResult.legacy_env``, ``switched``: the modules of the tree it imports ran under
        them too, :mod:`bf16_migrate.tree_modules`); ``(None, [], {}, {})`` when it does not parse."""
        nb = carrier.analysis.python
        assert nb is not None, "called for a carrier with Python of its own"
        try:
            result = self.migrations(
                nb.source,
                self.mode,
                str(carrier.path),
                launched_with=launched,
                fp32_optimizer_state=self.fp32_optimizer_state,
            )
        except ParseError as exc:
            self.errors.append(str(exc))
            return None, [], {}, {}
        diagnostics = [nb.map_diagnostic(d) for d in result.diagnostics]
        return result.code, diagnostics, dict(result.legacy_env), dict(result.switched)
