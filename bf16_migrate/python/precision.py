"""Plan the edits of one file for a mode: collect facts, decide, report.

What each mode emits comes from ``rules/modes.toml`` (``emit``, :class:`~bf16_migrate.rules.Mode`);
each emitted change is a unit of :mod:`.changes` (a module named after its emit word, which says
what it writes and where the rule comes from), planned in the order of :data:`.changes.REGISTRY`.

If the model cannot be found, nothing is changed for the on-switch and the write is reported
unfixed: a migration that removed the switch without casting would silently train in fp32.

:class:`Planner` decides: the writes triaged, the guard, and the phases of :meth:`Planner._migrate`
that may stop the migration (the models, FSDP, where each is cast, the script's own precision code,
the modules on the device, master weights, amp's regions, the model's own code, the script's own
device tensors); then it runs the units (:meth:`Planner._plan_changes`) on the
:class:`~.changes.Migration` it decided. The parts it delegates live in their own modules: the
writes' own edits (:mod:`.write_edits`), the guard as source (:mod:`.conditions`), the reads of the
variables (:mod:`.env_reads`), tests (:mod:`.in_tests`), frameworks (:mod:`.frameworks`), the
script's own precision code (:mod:`.own_precision`), amp's regions (:mod:`.autocast`) and the
optimizer side (:mod:`.optimizers`).
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
import libcst.matchers as m

from ..rules import STOCHASTIC_ROUNDING_VAR, Emit, FrameworkRule, Mode, is_truthy
from .apply import EditPlan
from .autocast import plan_autocast
from .autocast_operands import plan_module_source_operands
from .bindings import assigned_values, passed_by_name
from .changes import Migration, check_changes, plan_changes
from .changes.float32_inputs import plan_float32_inputs, plan_float64_state
from .conditions import evaluable_at, evaluable_like, guard_code, mutated_after, negate
from .context import FileContext, findall
from .default_dtype import refuse_default_f64
from .device_modules import OnDevice, find_device_modules, passed_out, refuse_unplaced
from .device_tensors import (
    find_device_tensors,
    plan_device_tensors,
)
from .device_use import direct_device_use_before
from .double_idiom import plan_double_meant_fp32
from .dtype_flow import DtypeFlow
from .env_reads import constant_target, plan_constants, remove_patches, replace_reads, report_reads
from .env_writes import Condition, LegacyWrite, Mention, collect_writes, value_state
from .float32_ops import plan_keyword_ops
from .frameworks import find_framework, report_framework_launched, report_framework_writes
from .handoffs import handoff_regions
from .host_exits import plan_host_exits
from .in_force import in_force_verdict
from .in_tests import report_tests
from .launch_env import launch_holding, launch_of, plan_launches
from .loss_reach import module_loss_code
from .model_code import audit_model_code, low_precision_dtypes, plan_model_code, report_blocked
from .model_reach import module_classes, reach_from
from .model_site import (
    OptimizerSite,
    cast_anchor,
    comprehension_variable,
    dtype_reads,
    find_optimizers,
    model_calls,
    model_key,
    same_model,
)
from .no_tensor import plan_no_tensor
from .optimizers import fp32_optimizer_state
from .outcome import Refusal
from .own_precision import existing_precision, foreign_autocast_device, launch_flag, other_modes_change
from .tree_facts import FactoryChange, plan_factory_changes
from .tree_types import ModelHandoff
from .unread_imports import refuse_unread_imports
from .wrappers import (
    Wrap,
    aliases,
    find_wraps,
    fsdp_blocker,
    fsdp_wraps,
    module_of,
    unlinked_fsdp,
    unmeasured_wrap,
    wrap_statements,
)
from .write_conditions import branches_cover, guard_of
from .write_edits import remove_write, stochastic_rounding_writes


class Planner:
    """Builds the :class:`EditPlan` of one file for one mode, reporting into ``ctx``."""

    def __init__(
        self,
        ctx: FileContext,
        mode: Mode,
        launched_with: Mapping[str, str] | None = None,
        fp32_optimizer_state: bool = False,
        imported_under: Mapping[str, str] | None = None,
        factory_changes: tuple[FactoryChange, ...] = (),
        audited_under: Mapping[str, str] | None = None,
        loss_code: tuple[str, ...] = (),
        handoffs: tuple[ModelHandoff, ...] = (),
        guard_stuck_at: int | None = None,
        importers_migrated: bool = False,
        launches_migrated: Mapping[str, str] | None = None,
    ) -> None:
        self.ctx = ctx
        # the scripts this launcher starts that took the change under its settings (.launch_env)
        self.launches_migrated = dict(launches_migrated or {})
        self.importers_migrated = importers_migrated  # an env module whose every importer took the change
        self.requests = factory_changes  # what the scripts importing this module ask of its factories
        self.loss_requests = loss_code  # the names scripts importing this module apply as their loss
        self.loss_imports: list[str] = []  # what this script applies as its loss from other modules
        self.handoff_requests = handoffs  # the functions of this module scripts hand a model to (amp wraps them)
        self.handoffs: list[ModelHandoff] = []  # the functions of other modules this script hands its model to
        self.launch_flag: str | None = None  # amp through the script's own flag (_own_precision)
        self.factory_changes: list[FactoryChange] = []  # what this script asks of its tree's factories
        self.script_change: str | None = None  # what the script got, when not the mode's script_change
        self.mode = mode
        self.fp32_state = fp32_optimizer_state
        # a module of the tree imported by a script that runs under these legacy settings
        # (its optimizer classes, its reads of the variables): see _imported_module
        self.imported_under = {
            name: value
            for name, value in (imported_under or {}).items()
            if name in ctx.rules.variables and ctx.rules.variables[name].effective and is_truthy(value)
        }
        self.launched_values = {name: value for name, value in (launched_with or {}).items()}
        self.in_force: dict[str, str] = {}
        self.switched: dict[str, str] = {}  # the settings whose change was taken, under a condition or not
        # a module of the tree imported by a script that took the change under a condition: the
        # audit of its model code only (see _audit_module)
        self.audited_under = {
            name: value
            for name, value in (audited_under or {}).items()
            if name in ctx.rules.variables and ctx.rules.variables[name].effective and is_truthy(value)
        }
        self.already_migrated = False  # a launcher's setting on a script that carries the change
        # legacy variables a launcher sets for this script (shell, --legacy-env): the script
        # then needs the mode's code change even though it never names the variable
        self.external = [
            name
            for name, value in (launched_with or {}).items()
            if name in ctx.rules.variables and ctx.rules.variables[name].effective and is_truthy(value)
        ]
        self.plan = EditPlan(parent_of=ctx.parent_of_id)
        self.framework: FrameworkRule | None = None
        self.own_gate: str | None = None
        self.flow = DtypeFlow(ctx)
        self.guard: cst.BaseExpression | None = None
        self.constant_keys: dict[str, list[LegacyWrite]] = {}
        self.off_writes: list[LegacyWrite] = []  # "0" writes: removed at the end, unless a partner stays
        self.unsets: list[LegacyWrite] = []  # `os.environ.pop(X)`: removed at the end, unless a write of X stays
        self.guard_stuck_at = guard_stuck_at  # a line a first plan found the guard cannot reach (BFM041)

    # -- top level --------------------------------------------------------------------------
    def run(self) -> EditPlan:
        """Plan the file: tests and frameworks first (reported, never rewritten), then each
        write triaged (:meth:`_triage`), the mode's changes for those that switch bf16 on
        (:meth:`_migrate`), and the reads and constants left; last the writes of a false value
        (:meth:`_settle_off_writes`). Returns the plan (``self.plan``)."""
        writes, _ = collect_writes(self.ctx, set(self.ctx.rules.variables))
        self._run()
        self._settle_unsets(writes)
        self._settle_off_writes(writes)
        return self.plan

    def _settle_unsets(self, writes: list[LegacyWrite]) -> None:
        """A write that takes a legacy variable out of the environment (BFM044) is removed, dead once nothing sets
        it, unless a write of the file that sets the same variable stays (the switch kept: BFM010, a refusal): a
        framework's plugin that sets the switch while in use and pops it in ``teardown()`` would otherwise leave it
        to every process started after (a hunt on real code, Lightning's XLA precision plugins)."""
        ctx = self.ctx
        for w in self.unsets:
            kept = [
                x
                for x in writes
                if x.variable == w.variable
                and not x.unsets
                and not self._touched(x)
                # a non-string value raises in os.environ (BFM046): that write sets nothing to undo
                and (x.value is None or value_state(x.value)[0] != "not-a-string")
            ]
            if kept:
                line = ctx.pos(kept[0].key)[0]
                ctx.report("BFM044", w.key, fixed=False, variant="kept", variable=w.variable, line=line)
                continue
            remove_write(ctx, self.plan, w)
            ctx.report("BFM044", w.key, fixed=True, variable=w.variable)

    def _settle_off_writes(self, writes: list[LegacyWrite]) -> None:
        """A write of a false value (BFM002) is removed, unless the same block writes the other
        legacy variable and that write stays: accelerate-style state code writes
        ``XLA_USE_BF16=1`` and ``XLA_DOWNCAST_BF16=0`` in one branch so that, whatever the
        environment held, exactly one of them is on; removing only the ``"0"`` would let a value
        set from outside switch the other on too (with both on, f64 becomes bf16, not f32)."""
        ctx = self.ctx
        for w in self.off_writes:
            block = ctx.parent(w.statement)
            kept = [
                x
                for x in writes
                if x.variable != w.variable
                and ctx.parent(x.statement) is block
                and x not in self.off_writes
                and not x.unsets  # an undo sets nothing: the off write's partner is a write that sets the other
                and not self._touched(x)
            ]
            assert w.value is not None, "a write of a false value has its value"
            if kept:
                other = kept[0]
                ctx.report(
                    "BFM002",
                    w.key,
                    fixed=False,
                    variant="kept_with",
                    variable=w.variable,
                    value=ctx.code(w.value),
                    other=f"{other.variable}={ctx.code(other.value) if other.value is not None else ''}",
                    line=ctx.pos(other.key)[0],
                )
                continue
            remove_write(ctx, self.plan, w)
            ctx.report("BFM002", w.key, fixed=True, variable=w.variable, value=ctx.code(w.value))

    def _touched(self, w: LegacyWrite) -> bool:
        """Whether the plan removes or rewrites the write ``w``."""
        plan = self.plan
        return (
            id(w.statement) in plan.remove
            or (w.element is not None and id(w.element) in plan.drop_elements)
            or any(id(node) in plan.replace for node in (w.key, w.value, w.small, w.statement) if node is not None)
        )

    def _run(self) -> None:
        """The file's decisions, in order: the factory changes its importers ask for; the mentions
        sorted (:meth:`_sort_mentions`); a test's settings refused (:meth:`_refuse_in_tests`); a
        framework's setting (:meth:`_framework_decides`); a tree module run under a script's
        settings (:meth:`_under_a_script`); then each write triaged (:meth:`_triage`), the guard
        of those that switch bf16 on (:meth:`_union_guard`, :meth:`_guard_travels`) and the
        change planned (:meth:`_take_change`); last the reads and constants left."""
        ctx = self.ctx
        if self.requests:
            plan_factory_changes(ctx, self.plan, self.requests)
        writes, mentions = collect_writes(ctx, set(ctx.rules.variables))
        self.constant_keys = self._constant_keys(writes)
        tests_only, handled = report_tests(ctx, writes, mentions)
        reads, constants = self._sort_mentions([mention for mention in mentions if id(mention.node) not in handled])
        if tests_only or (ctx.test_module and self.external):
            self._refuse_in_tests(reads)
            return
        if self._framework_decides(writes, reads) or self._under_a_script(writes, reads):
            return
        triaged = [(w, self._triage(w, reads)) for w in writes]
        on_writes = [w for w, conditions in triaged if conditions is not None]
        if plan_no_tensor(ctx, self.plan, on_writes, self.external):
            on_writes = []  # the settings change nothing in a file that makes no tensor: removed (BFM170)
        elif on_writes or self.external:
            self.guard = self._union_guard(
                on_writes, [conditions for _, conditions in triaged if conditions is not None]
            )
            if self.guard is not None and not self._guard_travels(on_writes):
                report_reads(ctx, reads)
                return
            reads = self._take_change(on_writes, reads)
        report_reads(ctx, reads)
        plan_constants(ctx, self.plan, self.constant_keys, constants)

    @staticmethod
    def _constant_keys(writes: list[LegacyWrite]) -> dict[str, list[LegacyWrite]]:
        """The writes whose key is a name (a module constant holding the variable's name, as in
        ``os.environ[KEY] = "1"``), by that name; keyword updates (``os.environ.update(KEY=...)``)
        name the variable itself."""
        constant_keys: dict[str, list[LegacyWrite]] = {}
        for w in writes:
            if isinstance(w.key, cst.Name) and w.form != "update-kwarg":
                constant_keys.setdefault(w.key.value, []).append(w)
        return constant_keys

    def _sort_mentions(self, mentions: list[Mention]) -> tuple[list[Mention], list[Mention]]:
        """The reads of the variables and the mentions that are module constants naming them
        (:func:`.env_reads.constant_target`), from the ``mentions`` the tests left; any other
        mention, neither read nor written, is reported (BFM042)."""
        ctx = self.ctx
        # the settings of the environments handed to the scripts it starts (subprocess.run(..., env=...))
        rewritten = set() if ctx.test_module else plan_launches(ctx, self.plan, self.mode, self.launches_migrated)
        constants = [mention for mention in mentions if constant_target(ctx, self.constant_keys, mention) is not None]
        mentions = [mention for mention in mentions if constant_target(ctx, self.constant_keys, mention) is None]
        reads = [mention for mention in mentions if mention.is_read]
        for mention in mentions:
            if not mention.is_read:
                rule = ctx.rules.variables[mention.variable]
                if not rule.effective:  # an fp16 variable: the removal is the whole change
                    since = rule.deprecated_since
                    ctx.report(
                        "BFM042", mention.node, fixed=False, variant="noop", variable=mention.variable, since=since
                    )
                    continue
                if id(mention.node) in rewritten:
                    continue
                launched = launch_of(ctx, mention.node)
                launch = (launched.call, launched.script) if launched and launched.script else _process_launch(ctx)
                if launch is not None:
                    call, script = launch
                    ctx.report(
                        "BFM042",
                        mention.node,
                        fixed=False,
                        variant="launches",
                        variable=mention.variable,
                        mode=self.mode.name,
                        call=ctx.code(call.func),
                        line=ctx.pos(call)[0],
                        script=script,
                    )
                    continue
                held = launch_holding(ctx, mention.node)
                if held is not None and held.problem is not None:
                    ctx.report(
                        "BFM042",
                        mention.node,
                        fixed=False,
                        variant="unread",
                        variable=mention.variable,
                        mode=self.mode.name,
                        call=ctx.code(held.call.func),
                        line=ctx.pos(held.call)[0],
                        reason=held.problem,
                    )
                    continue
                ctx.report("BFM042", mention.node, fixed=False, variable=mention.variable, mode=self.mode.name)
        return reads, constants

    def _refuse_in_tests(self, reads: list[Mention]) -> None:
        """A test's settings are refused, never migrated (BFM052): each read of a variable, and in a
        test module each variable a launcher sets."""
        ctx = self.ctx
        for mention in reads:
            ctx.outcome.refuse(
                Refusal.TEST,
                ctx.report("BFM052", mention.node, fixed=False, variant="reads", variable=mention.variable),
            )
        for variable in self.external if ctx.test_module else ():
            ctx.outcome.refuse(
                Refusal.TEST,
                ctx.report("BFM052", ctx.module, fixed=False, variant="launched", variable=variable),
            )

    def _framework_decides(self, writes: list[LegacyWrite], reads: list[Mention]) -> bool:
        """Whether a training framework's setting replaces the variables here
        (:func:`.frameworks.find_framework`): the file's writes, or a launcher's setting on a file
        with none, are reported with the framework's setting (never rewritten), and so are the
        reads, which tell nothing once the framework's setting replaces the variable."""
        framework = find_framework(self.ctx)
        if framework is None:
            return False
        if writes:
            report_framework_writes(self.ctx, self.plan, *framework, writes)
        elif self.external:
            self.framework = framework[0]
            report_framework_launched(self.ctx, self.external, *framework)
        else:
            return False
        report_reads(self.ctx, reads)
        return True

    def _under_a_script(self, writes: list[LegacyWrite], reads: list[Mention]) -> bool:
        """Whether the file, with no write and no launcher's setting of its own, is a module of the
        tree run under a script's settings: imported by a script that runs under them
        (:meth:`_imported_module`), or by one that took the change under a condition, whose model
        code is audited (:meth:`_audit_module`)."""
        if writes or self.external:
            return False
        if self.imported_under:
            self._imported_module(reads)
            return True
        if self.audited_under:
            self._audit_module(list(self.audited_under))
            self._host_exits(list(self.audited_under), conditional=True)
            report_reads(self.ctx, reads)
            return True
        return False

    def _host_exits(self, variables: list[str], conditional: bool = False) -> None:
        """The module's exits to the host under ``variables`` (:func:`.host_exits.plan_host_exits`): float32 on the
        host, as the switch made every floating tensor leaving the device. ``conditional``: the scripts importing it
        took the change under a condition, so it also runs without it; the casts are then written only where they
        change nothing in such a run (``host_float32`` makes bf16 float32 and leaves float32 as it is), not under
        XLA_DOWNCAST_BF16, whose float64-to-float32 exits would change a float64 one (a hunt's sibling evaluation
        module under `if args.precision == "bf16":` handed bf16 to `.numpy()`, which raised)."""
        if not any(Emit.HOST_FLOAT32 in self.ctx.rules.variables[v].emits(self.mode) for v in variables):
            return
        downcast = any(self.ctx.rules.variables[v].f64_becomes == "f32" for v in variables)
        if not (conditional and downcast):
            plan_host_exits(self.ctx, self.plan, self.mode, self.flow, [], f64_was_f32=downcast)

    def _union_guard(self, on_writes: list[LegacyWrite], guards: list[list[Condition]]) -> cst.BaseExpression | None:
        """The condition under which the legacy switch was on, from the ``guards`` of the writes
        that switch bf16 on (:meth:`_triage`): None when it was on unconditionally (a launcher's
        setting, a write without a condition, or writes whose branches cover every path)."""
        if self.external or any(not g for g in guards) or branches_cover(self.ctx, on_writes):
            return None
        # bf16 is on when any of the writes switches it on: the union of their guards
        # (XLA_USE_BF16 and XLA_DOWNCAST_BF16 differ only for f64, handled by BFM048)
        distinct = list(dict.fromkeys(guard_code(g) for g in guards if g is not None))
        code = distinct[0] if len(distinct) == 1 else " or ".join(f"({c})" if " " in c else c for c in distinct)
        return cst.parse_expression(code)

    def _take_change(self, on_writes: list[LegacyWrite], reads: list[Mention]) -> list[Mention]:
        """Plan the mode's change for ``on_writes`` and the launcher's settings (:meth:`_migrate`)
        and, when the script takes it and did not carry it already, record what the legacy run saw
        and resolve the reads to it (:func:`.env_reads.remove_patches`,
        :func:`.env_reads.replace_reads`). Returns the reads still to report."""
        ctx = self.ctx
        # what the legacy run saw when the switch itself was unconditional: "1" for the
        # file's own writes, the launcher's value (the script's own flags may still put the
        # migrated cast under a condition: the modules it imports ran under the switch anyway);
        # taken before _migrate, which may narrow the guard to a flag's complement
        in_force = {} if self.guard is not None else {w.variable: "1" for w in on_writes}
        if self.guard is None:
            in_force.update({v: self.launched_values[v] for v in self.external})
        if not self._migrate(on_writes) or self.already_migrated:
            return reads
        self.in_force = in_force
        self.switched = {w.variable: "1" for w in on_writes} | {v: self.launched_values[v] for v in self.external}
        reads = remove_patches(ctx, self.plan, reads, {w.variable for w in on_writes} | set(self.external))
        if self.guard is None and self.mode.casts_model:
            reads = replace_reads(ctx, self.plan, self.mode, reads, in_force)
        return reads

    def _triage(self, w: LegacyWrite, reads: list[Mention]) -> list[Condition] | None:
        """Report and plan one write. Returns the conditions under which it switches bf16 on
        (``[]``: unconditionally) when it is to be migrated, None when it was handled here. A write of
        a variable torch-xla ignores is removed, unless one of ``reads`` reads it: the script's own
        code then decides something on it (Adam's eps), which removing the write would change."""
        ctx, rule = self.ctx, self.ctx.rules.variables[w.variable]
        if not rule.effective:
            read = next((r for r in reads if r.variable == w.variable), None)
            if read is not None:
                line = ctx.pos(read.node)[0]
                value = w.literal or "1"
                ctx.report(
                    "BFM003",
                    w.key,
                    fixed=False,
                    variant="read",
                    variable=w.variable,
                    since=rule.deprecated_since,
                    line=line,
                    value=value,
                )
                return None
            remove_write(ctx, self.plan, w)
            ctx.report("BFM003", w.key, fixed=True, variable=w.variable, since=rule.deprecated_since)
            return None
        if len(w.statement.body) != 1:
            ctx.report("BFM042", w.key, fixed=False, variant="one_line", variable=w.variable)
            return None
        if w.form == "system-export":
            remove_write(ctx, self.plan, w)
            ctx.report("BFM045", w.key, fixed=True, variable=w.variable)
            return None
        verdict = in_force_verdict(ctx, w, self.mode)
        if verdict is not None:  # BFM049: a write that never took effect, or may not have
            variant, fields, removed = verdict
            if removed:
                remove_write(ctx, self.plan, w)
            ctx.report("BFM049", w.key, fixed=removed, variant=variant, **fields)
            return None
        if w.unsets:
            self.unsets.append(w)  # removed, or kept with a write of the variable that stays (_settle_unsets)
            return None
        assert w.value is not None, "only unsets and os.system exports write no value, both handled above"
        state, value_condition = value_state(w.value)
        if state == "not-a-string":
            ctx.report("BFM046", w.key, fixed=False, variable=w.variable, value=ctx.code(w.value), mode=self.mode.name)
            return None
        if state == "unknown":
            ctx.report("BFM040", w.key, fixed=False, variable=w.variable, value=ctx.code(w.value), mode=self.mode.name)
            return None
        if state == "off":
            self.off_writes.append(w)  # removed, or kept with its partner (_settle_off_writes)
            return None
        conditions, blocker = guard_of(ctx, w)
        if blocker is not None:
            ctx.report(
                "BFM041",
                w.key,
                fixed=False,
                variable=w.variable,
                construct=type(blocker).__name__.lower(),
                line=ctx.pos(blocker)[0],
                mode=self.mode.name,
            )
            return None
        late = direct_device_use_before(ctx, w.statement)
        if late is not None:
            remove_write(ctx, self.plan, w)
            ctx.report("BFM047", w.key, fixed=True, variable=w.variable, line=ctx.pos(late)[0])
            return None
        return conditions + ([value_condition] if value_condition is not None else [])

    def _guard_travels(self, writes: list[LegacyWrite]) -> bool:
        """The guard is re-evaluated where the changes go: they must all be in the function (or
        module level) of the writes, after them, with the guard's names not rebound there."""
        ctx = self.ctx
        scope_node = ctx.enclosing(writes[0].statement, cst.FunctionDef) or ctx.module
        last_write = max(ctx.pos(w.statement)[0] for w in writes)
        guard = self.guard
        assert guard is not None, "the planner asks only about a guard it has"
        names = {n.value for n in findall(guard, m.Name())}
        problem: cst.CSTNode | None = None
        for site in find_optimizers(ctx):
            where = ctx.enclosing(site.call, cst.FunctionDef) or ctx.module
            if where is scope_node and ctx.pos(site.call)[0] >= last_write:
                continue
            # a write at module level (`if args.bf16:` after `args = parser.parse_args()`) and the model built
            # in a function (`main()`, `main(args)`), which reads the same values when it runs (a hunt's: refused)
            if not (
                scope_node is ctx.module
                and isinstance(where, cst.FunctionDef)
                and _evaluable_in(ctx, guard, writes[0].statement, site.call, where, last_write)
            ):
                problem = site.call
        for name in names:
            for assign in ctx.nodes(cst.Name):
                if assign.value != name or not isinstance(ctx.parent(assign), cst.AssignTarget):
                    continue
                if (ctx.enclosing(assign, cst.FunctionDef) or ctx.module) is scope_node and ctx.pos(assign)[
                    0
                ] > last_write:
                    problem = assign
        decided = min(ctx.pos(ctx.enclosing(w.statement, cst.If) or w.statement)[0] for w in writes)
        mutated = mutated_after(ctx, guard, decided)
        if mutated is not None:  # `if "--bf16" in sys.argv: sys.argv.remove("--bf16"); ...`: false from there on
            for w in writes:
                ctx.report(
                    "BFM041",
                    w.key,
                    fixed=False,
                    variant="changed",
                    variable=w.variable,
                    condition=ctx.code(guard),
                    line=ctx.pos(mutated)[0],
                    change=ctx.code(mutated),
                    mode=self.mode.name,
                )
            return False
        if problem is None and self.guard_stuck_at is None:
            return True
        for w in writes:
            ctx.report(
                "BFM041",
                w.key,
                fixed=False,
                variant="condition" if problem is not None else "condition_inputs",
                variable=w.variable,
                condition=ctx.code(guard),
                line=ctx.pos(problem)[0] if problem is not None else self.guard_stuck_at,
                mode=self.mode.name,
            )
        return False

    def _migrate(self, writes: list[LegacyWrite]) -> bool:
        """Plan the mode's changes; False when the model cannot be found (nothing changed).

        Phases, each of which may stop the migration with its findings: the imports it cannot
        read, the models the optimizers are built from (:meth:`_models`), FSDP
        (:meth:`_sharded`), where each model is cast (:meth:`_cast_anchors`), the script's own
        precision code (:meth:`_own_precision`), the other modules on the device; then the checks
        of the changes the mode emits (:func:`.changes.check_changes`: master weights, amp's
        regions, the model's own code, the script's own device tensors), and the changes
        themselves (:meth:`_plan_changes`)."""
        ctx = self.ctx
        if self.mode.removes_only:
            for w in writes:
                remove_write(ctx, self.plan, w)
                ctx.report("BFM001", w.key, fixed=True, variant="reference", variable=w.variable)
                ctx.outcome.switch_migrated = True
            if Emit.FLOAT32_INPUTS in self.mode.emit:
                self._reference_inputs(writes)
            return True
        if refuse_unread_imports(ctx, self._anchors(writes)):
            return False
        variables = [w.variable for w in writes] + self.external
        if refuse_default_f64(ctx, variables, self._anchors(writes), autocast=self.mode.autocast):
            return False
        emits: set[Emit] = set().union(*(ctx.rules.variables[v].emits(self.mode) for v in variables))
        sites = find_optimizers(ctx)
        if not sites and self._set_for_importers(writes):
            return True
        on_device = find_device_modules(ctx, self._unique_models(sites))  # the modules beyond the models
        models = self._models(writes, sites, on_device)
        if models is None:
            return False
        sharded = self._sharded(writes, models, emits)
        if sharded is None:
            return False
        cast_anchors = self._cast_anchors(writes, sites, models, emits, sharded)
        if cast_anchors is None:
            return False
        verdict = self._own_precision(writes, sites, [*models, *on_device.exprs(ctx)], cast_anchors)
        if verdict is not None:
            return verdict
        guard_at = [w.statement for w in writes] + [a for anchors in cast_anchors for a in anchors or ()]
        on_device.settle(ctx, models, cast_anchors, self.guard if self.mode.casts_model else None, guard_at)
        if refuse_unplaced(ctx, on_device, self._anchors(writes)):
            return False
        migration = check_changes(
            Migration(
                ctx=ctx,
                plan=self.plan,
                mode=self.mode,
                emits=frozenset(emits),
                variables=tuple(variables),
                writes=tuple(writes),
                external=tuple(self.external),
                guard=self.guard,
                guard_at=tuple(guard_at),
                sites=tuple(sites),
                models=tuple(models),
                cast_anchors=tuple(cast_anchors),
                calls={
                    id(model): model_calls(ctx, model, aliases(ctx, model), through=not self.mode.casts_model)
                    for model in models
                },
                sharded=sharded,
                owned=self._fsdp_owned(sites, models, sharded),
                on_device=on_device,
                flow=self.flow,
                fp32_state=self.fp32_state,
            )
        )
        if migration is None:
            return False
        self.loss_imports = list(migration.loss_imports)
        self.handoffs = list(migration.handoffs)
        self._plan_changes(migration)
        return True

    def _reference_inputs(self, writes: list[LegacyWrite]) -> None:
        """The FP32 reference run's float32 inputs (:func:`.changes.float32_inputs.plan_float32_inputs`):
        a float64 batch the switch made bf16 would stop the FP32 run; what cannot be found is left."""
        ctx = self.ctx
        sites = find_optimizers(ctx)
        models = self._unique_models(sites)
        anchors = self._cast_anchors(writes, sites, models, set(), {})
        if anchors is None:
            return
        on_device = find_device_modules(ctx, models)
        on_device.settle(ctx, models, anchors, None)
        calls = {id(model): model_calls(ctx, model, aliases(ctx, model), through=True) for model in models}
        for model, at in zip(models, anchors):
            plan_float64_state(ctx, self.plan, model, at, None)  # float64 state FP32, as the amp migration's
        plan_float32_inputs(ctx, self.plan, self.flow, list(zip(models, anchors)), calls, None, on_device)

    def _sets_on_import(self, writes: list[LegacyWrite]) -> dict[str, str]:
        """The legacy settings the file makes for whatever imports it: every write unconditional, of
        a value that turns the switch on, at module level (``os.environ.setdefault("XLA_USE_BF16",
        "1")`` in an ``env_setup.py`` a script imports first) or in the body of a module-level
        function (``def setup_env(): os.environ["XLA_USE_BF16"] = "1"``, which the scripts call
        first: its names go to ``ctx.outcome.sets_on_call``); empty when one is not."""
        ctx = self.ctx
        if self.external or self.guard is not None or not writes:
            return {}
        setters = [self._setter(w) for w in writes]
        if not all(s is not None and w.truthy and w.literal for s, w in zip(setters, writes)):
            return {}
        ctx.outcome.sets_on_call = tuple(dict.fromkeys(s.name.value for s in setters if isinstance(s, cst.FunctionDef)))
        return {w.variable: w.literal for w in writes if w.literal is not None}

    def _setter(self, w: LegacyWrite) -> cst.Module | cst.FunctionDef | None:
        """Where ``w`` runs unconditionally for an importer: the module (a module-level write) or the
        module-level function whose body holds it; None for any other place."""
        ctx = self.ctx
        block = ctx.parent(w.statement)
        if block is ctx.module:
            return ctx.module
        owner = ctx.parent(block) if isinstance(block, cst.IndentedBlock) else None
        return owner if isinstance(owner, cst.FunctionDef) and ctx.parent(owner) is ctx.module else None

    def _set_for_importers(self, writes: list[LegacyWrite]) -> bool:
        """A module without a model of its own that sets the legacy switch for the scripts that import
        it (:meth:`_sets_on_import`), migrated here because those scripts were migrated under these
        settings (``imported_under``, bf16_migrate/tree_modules.py): its writes go as a launcher's
        setting goes (stochastic mode: the first becomes ``NEURON_RT_STOCHASTIC_ROUNDING_EN=1``, which
        the switch also turned on on Neuron), reported as BFM001 ``imported``. False (nothing planned)
        for any other file."""
        ctx = self.ctx
        made = self._sets_on_import(writes)
        if not made or not self.importers_migrated or any(name not in self.imported_under for name in made):
            return False
        renamed: frozenset[int] = frozenset()
        if self.mode.stochastic_rounding:
            renamed, _ = stochastic_rounding_writes(ctx, self.plan, None, writes, "")
        for w in writes:
            if id(w.key) not in renamed:
                remove_write(ctx, self.plan, w)
            change = f"replaced by {STOCHASTIC_ROUNDING_VAR}=1" if id(w.key) in renamed else "removed"
            ctx.report("BFM001", w.key, fixed=True, variant="imported", variable=w.variable, change=change)
        ctx.outcome.switch_migrated = True
        return True

    def _anchors(self, writes: list[LegacyWrite]) -> list[tuple[str, cst.CSTNode]]:
        """Where a finding about the whole migration points: each write's key, or the module
        for each variable a launcher sets."""
        return [(w.variable, w.key) for w in writes] or [(v, self.ctx.module) for v in self.external]

    def _models(
        self, writes: list[LegacyWrite], sites: list[OptimizerSite], on_device: OnDevice
    ) -> list[cst.BaseExpression] | None:
        """The models the optimizers are built from, or None (reported: BFM010 without an
        optimizer, BFM011 when no optimizer's model can be told); none, in a script without an
        optimizer whose modules on the device are found (``on_device``: an inference script)."""
        ctx = self.ctx
        models = self._unique_models(sites)
        if sites and models:
            return models
        if (
            not sites
            and (on_device.modules or on_device.unplaced or on_device.as_written)
            and not _trained_elsewhere(ctx, on_device)
        ):
            return []  # an inference script (its modules cast as written count: `.to(device, dtype=torch.bfloat16)`)
        if not sites:
            ctx.outcome.sets_on_import = self._sets_on_import(writes)  # an env module's: the project's to follow
        launch = _python_launch(ctx) if not sites else None
        for variable, anchor in self._anchors(writes):
            if launch is not None:  # a launcher of another script in this interpreter: name it
                call, target = launch
                finding = ctx.report(
                    "BFM010",
                    anchor,
                    fixed=False,
                    variant="runs",
                    variable=variable,
                    target=target,
                    call=ctx.code(call.func),
                    line=ctx.pos(call)[0],
                )
                ctx.outcome.refuse(Refusal.NO_OPTIMIZER, finding)
            elif not sites:
                ctx.outcome.refuse(
                    Refusal.NO_OPTIMIZER,
                    ctx.report(
                        "BFM010",
                        anchor,
                        fixed=False,
                        variable=variable,
                        by_hand=self.mode.by_hand,
                    ),
                )
            else:
                ctx.outcome.refuse(Refusal.MODEL_UNKNOWN, ctx.report("BFM011", sites[0].call, fixed=False))
        return None

    def _sharded(
        self, writes: list[LegacyWrite], models: list[cst.BaseExpression], emits: set[Emit]
    ) -> dict[int, list[Wrap]] | None:
        """The models wrapped in torch-xla's FSDP, by id, with their wraps: they are never cast
        (:mod:`.wrappers`). None when a model-casting mode cannot migrate them (reported: BFM056
        on the writes; the switch is kept): an FSDP wrap tied to no model, a mode without FP32
        master weights (FSDP's shards are FP32, so full bf16 weights cannot be had), or a model
        FSDP's ``compute_dtype=torch.bfloat16`` was not measured to run (:func:`.wrappers.fsdp_blocker`);
        or a wrapper whose run with a bf16-cast model was not measured (BFM057,
        :func:`.wrappers.unmeasured_wrap`)."""
        ctx = self.ctx
        sharded = {id(model): fsdp_wraps(ctx, model) for model in models}
        sharded = {key: wraps for key, wraps in sharded.items() if wraps}
        if Emit.MODEL_CAST not in emits:
            return self._sharded_under_autocast(writes, sharded)
        unmeasured = unmeasured_wrap(ctx)
        if unmeasured is not None:
            for variable, anchor in self._anchors(writes):
                line = ctx.pos(unmeasured.call)[0]
                wrapper = ctx.code(unmeasured.call.func)
                ctx.outcome.refuse(
                    Refusal.WRAPPER,
                    ctx.report("BFM057", anchor, fixed=False, variable=variable, wrapper=wrapper, line=line),
                )
            return None
        stray = unlinked_fsdp(ctx, models)
        problem: tuple[Wrap, str, dict[str, str]] | None = None
        if stray is not None:
            problem = (stray, "unlinked", {})
        for wraps in sharded.values():
            if problem is not None:
                break
            blocker = fsdp_blocker(ctx, wraps, master_weights=Emit.FP32_MASTER_WEIGHTS in emits)
            if blocker is not None:
                problem = (wraps[0], *blocker)
            elif Emit.FP32_MASTER_WEIGHTS not in emits:
                problem = (wraps[0], "full_bf16", {})
        if problem is None:
            return sharded
        wrap, variant, fields = problem
        for variable, anchor in self._anchors(writes):
            ctx.outcome.refuse(
                Refusal.WRAPPER,
                ctx.report(
                    "BFM056",
                    anchor,
                    fixed=False,
                    variant=variant,
                    variable=variable,
                    wrapper=ctx.code(wrap.call.func),
                    line=ctx.pos(wrap.call)[0],
                    **fields,
                ),
            )
        return None

    def _sharded_under_autocast(
        self, writes: list[LegacyWrite], sharded: dict[int, list[Wrap]]
    ) -> dict[int, list[Wrap]] | None:
        """``sharded`` for a mode that leaves the model FP32 (amp), or None when an FSDP model's run
        under autocast was measured not equivalent to the legacy run (``[fsdp_compute_dtype]
        amp_not_equivalent`` in rules/torch_api.toml): reported (BFM056), the switch is kept."""
        ctx = self.ctx
        api = ctx.rules.torch_api.fsdp_compute_dtype
        if not sharded or api is None or api.amp_not_equivalent is None:
            return sharded
        wrap = next(iter(sharded.values()))[0]
        for variable, anchor in self._anchors(writes):
            ctx.outcome.refuse(
                Refusal.WRAPPER,
                ctx.report(
                    "BFM056",
                    anchor,
                    fixed=False,
                    variant="autocast",
                    variable=variable,
                    wrapper=ctx.code(wrap.call.func),
                    line=ctx.pos(wrap.call)[0],
                    measured=api.amp_not_equivalent,
                ),
            )
        return None

    def _cast_anchors(
        self,
        writes: list[LegacyWrite],
        sites: list[OptimizerSite],
        models: list[cst.BaseExpression],
        emits: set[Emit],
        sharded: Mapping[int, list[Wrap]],
    ) -> list[list[cst.BaseStatement] | None] | None:
        """Per model, the statements its cast goes before (:func:`.model_site.cast_anchor`: the
        optimizer, and before it the model's transparent wraps and the reads of its dtype), or
        None when the mode casts the model and one has no such place (reported: BFM011). A
        model in ``sharded`` (FSDP) is not cast: its anchor is None."""
        ctx = self.ctx
        cast_anchors: list[list[cst.BaseStatement] | None] = []
        by_key: dict[object, list[OptimizerSite]] = {}  # same_model needs equal keys (many models, many sites)
        for s in sites:
            for model in s.all_models():
                by_key.setdefault(model_key(ctx, model), []).append(s)
        for model in models:
            if id(model) in sharded:
                cast_anchors.append(None)
                continue
            own = [
                s
                for s in by_key.get(model_key(ctx, model), [])
                if any(same_model(ctx, x, model) for x in s.all_models())
            ]
            module = module_of(ctx, model)
            rebinds = frozenset(id(w.call) for w in find_wraps(ctx))
            before: list[cst.BaseStatement] = [*wrap_statements(ctx, model), *dtype_reads(ctx, model, own, rebinds)]
            if module is not model:
                before += dtype_reads(ctx, module, own, rebinds)
            cast_anchors.append(cast_anchor(ctx, module, own, before, rebinds))
        in_comprehension = [m for m in models if comprehension_variable(ctx, m)]
        if in_comprehension:
            # `{name: Adam(part.parameters()) for name, part in parts.items()}`: no statement can name `part`
            # (to cast it, hook its inputs or find its calls for autocast)
            for variable, anchor in self._anchors(writes):
                ctx.outcome.refuse(
                    Refusal.MODEL_UNKNOWN,
                    ctx.report(
                        "BFM011",
                        anchor,
                        fixed=False,
                        variant="comprehension",
                        variable=variable,
                        model=ctx.code(in_comprehension[0]),
                        line=ctx.pos(in_comprehension[0])[0],
                    ),
                )
            return None
        if Emit.MODEL_CAST in emits and any(a is None and id(m) not in sharded for m, a in zip(models, cast_anchors)):
            site = next(s for s, a in zip(models, cast_anchors) if a is None and id(s) not in sharded)
            for variable, anchor in self._anchors(writes):
                ctx.outcome.refuse(
                    Refusal.MODEL_UNKNOWN,
                    ctx.report(
                        "BFM011", anchor, fixed=False, variant="header", variable=variable, model=ctx.code(site)
                    ),
                )
            return None
        return cast_anchors

    def _own_precision(
        self,
        writes: list[LegacyWrite],
        sites: list[OptimizerSite],
        models: list[cst.BaseExpression],
        cast_anchors: list[list[cst.BaseStatement] | None],
    ) -> bool | None:
        """Weigh the script's own precision code (:func:`.own_precision.existing_precision`).
        Returns what :meth:`_migrate` returns when that code decides it (always on: the changes
        are there or conflict, BFM013/BFM015; behind a flag it cannot carry, BFM032), or None to
        go on, with the guard narrowed to the flag's complement when the code is switched by one."""
        ctx = self.ctx
        existing = existing_precision(ctx, [*models, *(module_of(ctx, model) for model in models)])
        if existing is None:
            return None
        node, condition = existing
        if condition is None:
            if writes:
                # the switch goes by hand; what the script's code then runs is its own code's mode, which
                # may not be the one asked for (its autocast, where stochastic casts the model to bf16)
                missing = other_modes_change(ctx, self.mode, node, sites)
                fields = {"variant": "own_switch", "code": ctx.code(node)}
                if missing is not None:
                    fields.update(variant="own_switch_other_mode", mode=self.mode.name, missing=missing)
                ctx.outcome.refuse(Refusal.ALREADY_ON, ctx.report("BFM013", node, fixed=False, **fields))
                return False
            # a launcher's setting, and the script already carries the change: nothing twice,
            # unless what it carries is another mode's change (a script migrated in stochastic
            # mode, then its launcher in gpu-compatible mode: no master weights)
            missing = other_modes_change(ctx, self.mode, node, sites)
            if missing is not None:
                for variable in self.external:
                    ctx.outcome.refuse(
                        Refusal.OWN_PRECISION,
                        ctx.report(
                            "BFM015",
                            node,
                            fixed=False,
                            variable=variable,
                            code=ctx.code(node),
                            mode=self.mode.name,
                            missing=missing,
                        ),
                    )
                return False
            self.already_migrated = True
            for variable in self.external:
                ctx.report("BFM013", node, fixed=True, variable=variable, code=ctx.code(node))
                ctx.outcome.already_migrated = True
            return True
        if self.mode.autocast:
            return self._own_autocast(writes, node, condition)
        if not all(evaluable_at(ctx, condition, anchor) for anchors in cast_anchors for anchor in anchors or ()):
            return self._refuse_own(writes, node, "not_evaluable", condition=ctx.code(condition))
        complement = negate(ctx.code(condition))
        self.guard = cst.parse_expression(
            complement if self.guard is None else f"({ctx.code(self.guard)}) and {complement}"
        )
        self.own_gate = complement
        ctx.report(
            "BFM032", node, fixed=True, code=ctx.code(node), condition=ctx.code(condition), complement=complement
        )
        return None

    def _own_autocast(self, writes: list[LegacyWrite], node: cst.CSTNode, condition: cst.BaseExpression) -> bool:
        """amp, the script's own precision code ``node`` on under ``condition``: taken as the amp path when a launcher
        sets the variable and the condition is a flag it can pass (BFM034), refused when its autocast is another
        device's (BFM032 ``foreign_device``) or the write is the script's own (BFM032 ``autocast``)."""
        ctx = self.ctx
        foreign = foreign_autocast_device(ctx, node)
        if foreign is not None:
            # taken as amp, every legacy path would run the script's own autocast, which is not the XLA
            # device's: its matmuls in f32 where the legacy run had bf16 (a hunt on real code, the BERT sample)
            return self._refuse_own(writes, node, "foreign_device", device=foreign)
        flag = launch_flag(ctx, condition) if not writes else None
        if flag is not None:
            # amp is the script's own autocast path: its launchers pass the flag where they
            # set the variable (carriers/link_decide.py), nothing changes here
            self.launch_flag = flag
            for variable in self.external:
                told = ctx.report(
                    "BFM034", node, fixed=True, variable=variable, flag=flag, condition=ctx.code(condition)
                )
                ctx.outcome.through_flag.append(told)
            ctx.outcome.switch_migrated = True
            if any(ctx.rules.variables[v].f64_becomes == "f32" for v in self.external):
                plan_double_meant_fp32(self.ctx, self.plan)  # the legacy bf16 path's `.double()` meant FP32
            return True
        return self._refuse_own(writes, node, "autocast", condition=ctx.code(condition))

    def _refuse_own(self, writes: list[LegacyWrite], node: cst.CSTNode, variant: str, **fields: str) -> bool:
        """Keep the switch on each write (BFM032 ``variant``, naming the line of the script's own precision code
        ``node``); returns False, what :meth:`_migrate` returns for a refusal."""
        ctx = self.ctx
        line = ctx.pos(node)[0]
        for variable, anchor in self._anchors(writes):
            finding = ctx.report("BFM032", anchor, fixed=False, variant=variant, variable=variable, line=line, **fields)
            ctx.outcome.refuse(Refusal.OWN_PRECISION, finding)
        return False

    def _plan_changes(self, migration: Migration) -> None:
        """The mode's changes, once every phase of :meth:`_migrate` let them through: each unit of
        :data:`.changes.REGISTRY` in its order (:func:`.changes.plan_changes`), and what they hand
        back (the factory changes the script asks of its tree, what a launcher's finding says it got).
        A cast planned where the guard's names mean something else stops the plan
        (:class:`.changes.GuardDoesNotTravel`, BFM041)."""
        planned = plan_changes(migration)
        self.factory_changes = list(planned.factory_changes)
        if planned.script_change is not None:
            self.script_change = planned.script_change

    def _fsdp_owned(
        self, sites: list[OptimizerSite], models: list[cst.BaseExpression], sharded: Mapping[int, list[Wrap]]
    ) -> frozenset[int]:
        """Ids of the optimizer calls over a model torch-xla's FSDP shards, and of its FSDP wraps:
        the FP32 shards are their master weights already (``compute_dtype``, :mod:`.wrappers`)."""
        ctx = self.ctx
        owned = {
            id(s.call)
            for s in sites
            if s.model is not None and any(same_model(ctx, s.model, m) for m in models if id(m) in sharded)
        }
        owned |= {id(w.call) for wraps in sharded.values() for w in wraps}
        return frozenset(owned)

    def _imported_module(self, reads: list[Mention]) -> None:
        """A module of the tree imported by a script that runs under ``imported_under`` (found
        by the project: ``from adamw_fp32 import AdamWFP32`` in a launched script). It has no
        model of its own, but the legacy switch was in force for its code too: in bf16 modes its
        reads of the variables resolve to what the legacy run saw (an optimizer that switched
        FP32 state on ``os.environ.get("XLA_DOWNCAST_BF16") == "1"`` keeps doing so), workaround
        patches go, under XLA_DOWNCAST_BF16 the ``.double()`` idiom becomes ``.float()``, and
        ``--fp32-optimizer-state`` applies to its optimizer classes."""
        variables = list(self.imported_under)
        reads = remove_patches(self.ctx, self.plan, reads, set(variables))
        if self.mode.casts_model:
            reads = replace_reads(self.ctx, self.plan, self.mode, reads, self.imported_under)
        report_reads(self.ctx, reads)
        if any(self.ctx.rules.variables[v].f64_becomes == "f32" for v in variables):
            plan_double_meant_fp32(self.ctx, self.plan)
        if self.fp32_state and self.mode.casts_model:
            fp32_optimizer_state(self.ctx, self.plan, self.mode)
        if self.mode.casts_model:
            plan_keyword_ops(self.ctx, self.plan)
        self._host_exits(variables)
        self._audit_module(variables)

    def _audit_module(self, variables: list[str]) -> None:
        """The audit of a tree module's model and optimizer classes, which ran under ``variables``
        for a script that imports them (:mod:`.model_code`): every module and optimizer class of the
        file, since which of them the script uses is not known here, and the functions and classes the
        scripts apply as their loss (``loss_code``: :func:`.loss_reach.module_loss_code`; such a
        class is not cast by ``model.to``). What cannot follow the dtype it meets is reported: the
        script's own migration is already made. In amp, the ops of that code whose operands must
        agree (:mod:`.autocast_operands`)."""
        emits: set[Emit] = set().union(*(self.ctx.rules.variables[v].emits(self.mode) for v in variables))
        if Emit.AUTOCAST_OPERANDS in emits:
            plan_module_source_operands(self.ctx, self.plan, self.loss_requests)
        if Emit.AUTOCAST in emits and self.imported_under and self.handoff_requests:
            loss = module_loss_code(self.ctx, self.loss_requests)
            regions, problems = handoff_regions(self.ctx, list(self.handoff_requests), loss.statements)
            for _code, node, _variant, _fields in problems:
                self.ctx.report("BFM030", node, fixed=False)
            plan_autocast(self.ctx, self.plan, regions)
        if Emit.MODEL_CODE_DTYPES not in emits:
            return
        modules, optimizers = module_classes(self.ctx)
        loss = module_loss_code(self.ctx, self.loss_requests)
        modules = [c for c in modules if not any(c is k for k in loss.classes)]  # a criterion: not cast
        reached = reach_from(self.ctx, modules, optimizers, loss)
        low = low_precision_dtypes(self.ctx, variables)
        audit = audit_model_code(self.ctx, reached, low)
        plan_model_code(self.ctx, self.plan, audit)
        report_blocked(self.ctx, audit)
        if Emit.DEVICE_TENSORS in emits and self.imported_under:
            tensors = find_device_tensors(self.ctx, reached, audit.decided, doubles="f64" in low, no_input_casts=True)
            plan_device_tensors(self.ctx, self.plan, tensors)

    # -- helpers ----------------------------------------------------------------------------
    def _unique_models(self, sites: list[OptimizerSite]) -> list[cst.BaseExpression]:
        """The models the optimizers are built from, each once (:func:`.model_site.same_model`)."""
        models: list[cst.BaseExpression] = []
        for site in sites:
            for model in site.all_models():
                if not any(same_model(self.ctx, model, known) for known in models):
                    models.append(model)
        return models


def _trained_elsewhere(ctx: FileContext, on_device: OnDevice) -> bool:
    """Whether the file, with no optimizer of its own, runs a backward pass (``loss.backward()``) and hands a module
    on the device to code of another file (``build_optimizer(model, cfg)``, which the tree's facts did not show a
    factory): its optimizer is built there, unread, so it is no inference script and the switch stays (BFM010): its
    master weights and state cannot be migrated from here."""
    trains = any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward" for c in ctx.nodes(cst.Call))
    return trains and any(passed_out(ctx, module.expr) is not None for module in on_device.modules)


def _evaluable_in(
    ctx: FileContext,
    guard: cst.BaseExpression,
    write: cst.CSTNode,
    at: cst.CSTNode,
    func: cst.FunctionDef,
    last_write: int,
) -> bool:
    """Whether ``guard``, the condition of a write at module level, reads the same values at ``at`` in
    ``func``: each name it reads denotes the module's binding there (``main()`` reading the global
    ``args``), or is a parameter of ``func`` named alike that every call of ``func`` in the file, after the
    writes, hands that same global (``main(args)`` under ``if __name__ == "__main__":``)."""
    attributes = {id(a.attr) for a in findall(guard, m.Attribute()) if isinstance(a, cst.Attribute)}
    names = {n.value for n in findall(guard, m.Name()) if isinstance(n, cst.Name) and id(n) not in attributes}
    params = {p.name.value: p for p in func.params.params}
    for name in names:
        if evaluable_like(ctx, cst.Name(name), write, at):
            continue
        param = params.get(name)
        passed = passed_by_name(ctx, param) if param is not None else None
        if not passed or not all(
            isinstance(v, cst.Name)
            and v.value == name
            and ctx.pos(v)[0] > last_write
            and evaluable_like(ctx, cst.Name(name), write, v)
            for v in passed
        ):
            return False
    return True


def _process_launch(ctx: FileContext) -> tuple[cst.Call, str] | None:
    """The first call that starts another process (``[process_launchers]``: ``subprocess.run(cmd,
    env=env)``) with an environment of its own and one Python script (a string ending in ``.py``) in its
    argument list, or in the list a name it is given is bound to, and that script's name; None when
    the file makes none."""
    launchers = ctx.rules.torch_api.process_launchers
    for call in ctx.nodes(cst.Call):
        if not (call.args and ctx.qualified_names(call.func) & launchers):
            continue
        if not any(a.keyword is not None and a.keyword.value == "env" for a in call.args):
            continue
        first = call.args[0].value
        spelled = [first, *(assigned_values(ctx, first) if isinstance(first, cst.Name) else [])]
        scripts = {
            s.evaluated_value
            for value in spelled
            for s in findall(value, m.SimpleString())
            if isinstance(s, cst.SimpleString)
            and isinstance(s.evaluated_value, str)
            and s.evaluated_value.endswith(".py")
        }
        if len(scripts) == 1:
            return call, scripts.pop()
    return None


def _python_launch(ctx: FileContext) -> tuple[cst.Call, str] | None:
    """The first call that runs another script or module in this interpreter (``[python_launchers]``:
    ``runpy.run_path("train.py", run_name="__main__")``, ``importlib.import_module("probe")``) with its
    target spelled as a string, and that string; None when the file makes none."""
    launchers = ctx.rules.torch_api.python_launchers
    for call in ctx.nodes(cst.Call):
        if call.args and ctx.qualified_names(call.func) & launchers:
            # the string the target is spelled with: the argument itself, or the one string in it
            # (`str(HERE / "es_train.py")`)
            strings = [s for s in findall(call.args[0].value, m.SimpleString()) if isinstance(s, cst.SimpleString)]
            values = [s.evaluated_value for s in strings if isinstance(s.evaluated_value, str)]
            if len(values) == 1:
                return call, values[0]
    return None
