"""Plan the edits of one file for a mode: collect facts, decide, report.

What each mode emits comes from ``rules/modes.toml`` (``emit``, :class:`~bf16_migrate.rules.Mode`);
the meaning of each emitted change:

* ``stochastic-rounding``: the legacy write becomes a write of ``NEURON_RT_STOCHASTIC_ROUNDING_EN
  = "1"`` in the same spelling (unless the file already names that variable);
* ``model-cast``: ``<model>.to(torch.bfloat16)`` before each optimizer built from
  ``<model>.parameters()``;
* ``input-cast``: floating tensors fed to the model, and floating targets of the loss, get
  ``.to(torch.bfloat16)``; integer ones are left alone; unknown ones are cast at run time by a
  forward pre-hook (BFM022, :mod:`.inputs`);
* ``fp32-loss-accumulator``: ``dtype=torch.float32`` on the ``torch.zeros``/``torch.tensor``
  that the loss is summed into (Neuron's migration guide: loss accumulators in FP32);
* ``fp32-master-weights``: stock optimizers are built through ``with_fp32_master_weights``
  (emitted into the script, see :mod:`.snippets`);
* ``autocast``: the forward pass and the loss go under ``torch.autocast("xla", ...)``.

If the model cannot be found, nothing is changed for the on-switch and the write is reported
unfixed: a migration that removed the switch without casting would silently train in fp32.

:class:`Planner` decides; the parts it delegates live in their own modules: the writes' own
edits (:mod:`.write_edits`), the guard as source (:mod:`.conditions`), the reads of the
variables (:mod:`.env_reads`), tests (:mod:`.in_tests`), frameworks (:mod:`.frameworks`), the
script's own precision code (:mod:`.own_precision`), amp's regions (:mod:`.autocast`) and the
optimizer side (:mod:`.optimizers`).
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
import libcst.matchers as m

from ..rules import STOCHASTIC_ROUNDING_VAR, FrameworkRule, Mode, is_truthy
from . import snippets
from .apply import EditPlan
from .autocast import Region, autocast_regions, plan_autocast
from .conditions import evaluable_at, guard_code, negate
from .context import FileContext, findall
from .device_use import direct_device_use_before
from .dtype_flow import DtypeFlow
from .env_reads import constant_target, plan_constants, remove_patches, replace_reads, report_reads
from .env_writes import Condition, LegacyWrite, Mention, collect_writes, value_state
from .frameworks import find_framework, report_framework_launched, report_framework_writes
from .in_force import in_force_verdict
from .in_tests import report_tests
from .inputs import InputCasts
from .model_site import (
    ModelCall,
    OptimizerSite,
    cast_anchor,
    find_optimizers,
    loss_accumulators,
    model_calls,
    same_model,
)
from .optimizers import (
    add_float32_dtype,
    fp32_optimizer_state,
    master_weights_blocker,
    plan_fp32_grad_norm,
    plan_master_weights,
)
from .outcome import Refusal
from .own_precision import existing_precision, launch_flag, other_modes_change
from .tree_facts import FactoryChange, plan_factory_changes
from .write_conditions import branches_cover, guard_of
from .write_edits import remove_write, switch_writes


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
    ) -> None:
        self.ctx = ctx
        self.requests = factory_changes  # what the scripts importing this module ask of its factories
        self.launch_flag: str | None = None  # amp through the script's own flag (_own_precision)
        self.factory_changes: list[FactoryChange] = []  # what this script asks of its tree's factories
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

    # -- top level --------------------------------------------------------------------------
    def run(self) -> EditPlan:
        """Plan the file: tests and frameworks first (reported, never rewritten), then each
        write triaged (:meth:`_triage`), the mode's changes for those that switch bf16 on
        (:meth:`_migrate`), and the reads and constants left; last the writes of a false value
        (:meth:`_settle_off_writes`). Returns the plan (``self.plan``)."""
        writes, _ = collect_writes(self.ctx, set(self.ctx.rules.variables))
        self._run()
        self._settle_off_writes(writes)
        return self.plan

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
        ctx = self.ctx
        if self.requests:
            plan_factory_changes(ctx, self.plan, self.requests)
        writes, mentions = collect_writes(ctx, set(ctx.rules.variables))
        self.constant_keys = {}
        for w in writes:
            if isinstance(w.key, cst.Name) and w.form != "update-kwarg":
                self.constant_keys.setdefault(w.key.value, []).append(w)
        tests_only, handled = report_tests(ctx, writes, mentions)
        mentions = [mention for mention in mentions if id(mention.node) not in handled]
        constants = [mention for mention in mentions if constant_target(ctx, self.constant_keys, mention) is not None]
        mentions = [mention for mention in mentions if constant_target(ctx, self.constant_keys, mention) is None]
        reads = [mention for mention in mentions if mention.is_read]
        for mention in mentions:
            if not mention.is_read:
                ctx.report("BFM042", mention.node, fixed=False, variable=mention.variable, mode=self.mode.name)
        if tests_only:
            for mention in reads:
                ctx.outcome.refuse(
                    Refusal.TEST,
                    ctx.report("BFM052", mention.node, fixed=False, variant="reads", variable=mention.variable),
                )
            return
        framework = find_framework(ctx)
        if framework is not None and writes:
            report_framework_writes(ctx, self.plan, *framework, writes)
            report_reads(ctx, reads)  # once the framework's setting replaces the variable, they tell nothing
            return
        if framework is not None and not writes and self.external:
            self.framework = framework[0]
            report_framework_launched(ctx, self.external, *framework)
            report_reads(ctx, reads)
            return
        if self.imported_under and not writes and not self.external:
            self._imported_module(reads)
            return
        triaged = [(w, self._triage(w)) for w in writes]
        on_writes = [w for w, conditions in triaged if conditions is not None]
        if on_writes or self.external:
            guards = [conditions for w, conditions in triaged if conditions is not None]
            if self.external or any(not g for g in guards) or branches_cover(ctx, on_writes):
                self.guard = None
            else:
                # bf16 is on when any of the writes switches it on: the union of their guards
                # (XLA_USE_BF16 and XLA_DOWNCAST_BF16 differ only for f64, handled by BFM048)
                distinct = list(dict.fromkeys(guard_code(g) for g in guards if g is not None))
                code = distinct[0] if len(distinct) == 1 else " or ".join(f"({c})" if " " in c else c for c in distinct)
                self.guard = cst.parse_expression(code)
            if self.guard is not None and not self._guard_travels(on_writes):
                report_reads(ctx, reads)
                return
            # what the legacy run saw when the switch itself was unconditional: "1" for the
            # file's own writes, the launcher's value (the script's own flags may still put the
            # migrated cast under a condition: the modules it imports ran under the switch anyway)
            in_force = {} if self.guard is not None else {w.variable: "1" for w in on_writes}
            if self.guard is None:
                in_force.update({v: self.launched_values[v] for v in self.external})
            if self._migrate(on_writes) and not self.already_migrated:
                self.in_force = in_force
                reads = remove_patches(ctx, self.plan, reads, {w.variable for w in on_writes} | set(self.external))
                if self.guard is None and self.mode.casts_model:
                    reads = replace_reads(ctx, self.plan, self.mode.name, reads, in_force)
        report_reads(ctx, reads)
        plan_constants(ctx, self.plan, self.constant_keys, constants)

    def _triage(self, w: LegacyWrite) -> list[Condition] | None:
        """Report and plan one write. Returns the conditions under which it switches bf16 on
        (``[]``: unconditionally) when it is to be migrated, None when it was handled here."""
        ctx, rule = self.ctx, self.ctx.rules.variables[w.variable]
        if not rule.effective:
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
        verdict = in_force_verdict(ctx, w, self.mode.name)
        if verdict is not None:  # BFM049: a write that never took effect, or may not have
            variant, fields, removed = verdict
            if removed:
                remove_write(ctx, self.plan, w)
            ctx.report("BFM049", w.key, fixed=removed, variant=variant, **fields)
            return None
        if w.unsets:
            remove_write(ctx, self.plan, w)
            ctx.report("BFM044", w.key, fixed=True, variable=w.variable)
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
            if (ctx.enclosing(site.call, cst.FunctionDef) or ctx.module) is not scope_node or ctx.pos(site.call)[
                0
            ] < last_write:
                problem = site.call
        for name in names:
            for assign in ctx.nodes(cst.Name):
                if assign.value != name or not isinstance(ctx.parent(assign), cst.AssignTarget):
                    continue
                if (ctx.enclosing(assign, cst.FunctionDef) or ctx.module) is scope_node and ctx.pos(assign)[
                    0
                ] > last_write:
                    problem = assign
        if problem is None:
            return True
        for w in writes:
            ctx.report(
                "BFM041",
                w.key,
                fixed=False,
                variant="condition",
                variable=w.variable,
                condition=ctx.code(guard),
                line=ctx.pos(problem)[0],
                mode=self.mode.name,
            )
        return False

    def _migrate(self, writes: list[LegacyWrite]) -> bool:
        """Plan the mode's changes; False when the model cannot be found (nothing changed).

        Phases, each of which may stop the migration with its findings: the models the
        optimizers are built from (:meth:`_models`), where each is cast
        (:meth:`_cast_anchors`), the script's own precision code (:meth:`_own_precision`), amp's
        regions (:meth:`_regions`); then the changes themselves (:meth:`_plan_changes`)."""
        ctx = self.ctx
        if self.mode.removes_only:
            for w in writes:
                remove_write(ctx, self.plan, w)
                ctx.report("BFM001", w.key, fixed=True, variant="reference", variable=w.variable)
                ctx.outcome.switch_migrated = True
            return True
        variables = [w.variable for w in writes] + self.external
        emits: set[str] = set().union(*(ctx.rules.variables[v].emits(self.mode) for v in variables))
        sites = find_optimizers(ctx)
        models = self._models(writes, sites)
        if models is None:
            return False
        cast_anchors = self._cast_anchors(writes, sites, models, emits)
        if cast_anchors is None:
            return False
        verdict = self._own_precision(writes, sites, models, cast_anchors)
        if verdict is not None:
            return verdict
        if "fp32-master-weights" in emits and not self._master_weights_possible(writes, sites):
            return False
        calls = {id(model): model_calls(ctx, model) for model in models}
        regions = self._regions(writes, models, calls) if "autocast" in emits else []
        if regions is None:
            return False
        self._plan_changes(writes, variables, emits, sites, models, cast_anchors, calls, regions)
        return True

    def _anchors(self, writes: list[LegacyWrite]) -> list[tuple[str, cst.CSTNode]]:
        """Where a finding about the whole migration points: each write's key, or the module
        for each variable a launcher sets."""
        return [(w.variable, w.key) for w in writes] or [(v, self.ctx.module) for v in self.external]

    def _models(self, writes: list[LegacyWrite], sites: list[OptimizerSite]) -> list[cst.BaseExpression] | None:
        """The models the optimizers are built from, or None (reported: BFM010 without an
        optimizer, BFM011 when no optimizer's model can be told)."""
        ctx = self.ctx
        models = self._unique_models(sites)
        if sites and models:
            return models
        for variable, anchor in self._anchors(writes):
            if not sites:
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

    def _cast_anchors(
        self, writes: list[LegacyWrite], sites: list[OptimizerSite], models: list[cst.BaseExpression], emits: set[str]
    ) -> list[list[cst.BaseStatement] | None] | None:
        """Per model, the statements its cast goes before (:func:`.model_site.cast_anchor`), or
        None when the mode casts the model and one has no such place (reported: BFM011)."""
        ctx = self.ctx
        cast_anchors = [
            cast_anchor(ctx, model, [s for s in sites if s.model is not None and same_model(ctx, s.model, model)])
            for model in models
        ]
        if "model-cast" in emits and any(a is None for a in cast_anchors):
            site = next(s for s, a in zip(models, cast_anchors) if a is None)
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
        existing = existing_precision(ctx, models)
        if existing is None:
            return None
        node, condition = existing
        if condition is None:
            if writes:
                ctx.outcome.refuse(
                    Refusal.ALREADY_ON,
                    ctx.report("BFM013", node, fixed=False, variant="own_switch", code=ctx.code(node)),
                )
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
                    self._double_meant_fp32()  # the legacy bf16 path's `.double()` meant FP32
                return True
            for variable, anchor in self._anchors(writes):
                ctx.outcome.refuse(
                    Refusal.OWN_PRECISION,
                    ctx.report(
                        "BFM032",
                        anchor,
                        fixed=False,
                        variant="amp",
                        variable=variable,
                        condition=ctx.code(condition),
                        line=ctx.pos(node)[0],
                    ),
                )
            return False
        if not all(evaluable_at(ctx, condition, anchor) for anchors in cast_anchors for anchor in anchors or ()):
            for variable, anchor in self._anchors(writes):
                ctx.outcome.refuse(
                    Refusal.OWN_PRECISION,
                    ctx.report(
                        "BFM032",
                        anchor,
                        fixed=False,
                        variant="not_evaluable",
                        variable=variable,
                        condition=ctx.code(condition),
                        line=ctx.pos(node)[0],
                    ),
                )
            return False
        complement = negate(ctx.code(condition))
        self.guard = cst.parse_expression(
            complement if self.guard is None else f"({ctx.code(self.guard)}) and {complement}"
        )
        self.own_gate = complement
        ctx.report(
            "BFM032", node, fixed=True, code=ctx.code(node), condition=ctx.code(condition), complement=complement
        )
        return None

    def _master_weights_possible(self, writes: list[LegacyWrite], sites: list[OptimizerSite]) -> bool:
        """gpu-compatible mode: whether every optimizer can keep FP32 master weights
        (:func:`.optimizers.master_weights_blocker`); if one cannot, the switch is kept and that
        reported (BFM017): removing it would leave bf16 weights updated in bf16, with neither
        stochastic rounding nor an FP32 copy."""
        ctx = self.ctx
        blocked = [(site, why) for site in sites if (why := master_weights_blocker(ctx, site)) is not None]
        for site, (optimizer, function) in blocked:
            line = ctx.pos(site.call)[0]
            for variable, anchor in self._anchors(writes):
                if function is None:
                    finding = ctx.report(
                        "BFM017", anchor, fixed=False, variable=variable, optimizer=optimizer, line=line
                    )
                else:
                    assert site.factory is not None, "a blocker names a function only for a factory of the tree"
                    finding = ctx.report(
                        "BFM017",
                        anchor,
                        fixed=False,
                        variant="factory",
                        variable=variable,
                        optimizer=optimizer,
                        function=function,
                        line=line,
                        module=site.factory[0].path,
                    )
                ctx.outcome.refuse(Refusal.MASTER_WEIGHTS, finding)
        return not blocked

    def _regions(
        self, writes: list[LegacyWrite], models: list[cst.BaseExpression], calls: Mapping[int, list[ModelCall]]
    ) -> list[Region] | None:
        """amp's autocast regions over every model's forward pass and loss, or None when one
        cannot be wrapped (reported, with BFM033 on the writes): autocast is the whole
        replacement in amp, so removing the switch would leave that pass in FP32."""
        ctx = self.ctx
        regions: list[Region] = []
        problems = []
        for model in models:
            found, failed = autocast_regions(ctx, model, calls[id(model)])
            regions += found
            problems += failed
        if not problems:
            return regions
        for code, node, variant, fields in problems:
            ctx.report(code, node, fixed=False, variant=variant, **fields)
        for variable, anchor in self._anchors(writes):
            ctx.outcome.refuse(
                Refusal.OWN_PRECISION,
                ctx.report(
                    "BFM033",
                    anchor,
                    fixed=False,
                    variable=variable,
                    count=len(problems),
                    first_code=problems[0][0],
                    first_line=ctx.pos(problems[0][1])[0],
                ),
            )
        return None

    def _plan_changes(
        self,
        writes: list[LegacyWrite],
        variables: list[str],
        emits: set[str],
        sites: list[OptimizerSite],
        models: list[cst.BaseExpression],
        cast_anchors: list[list[cst.BaseStatement] | None],
        calls: Mapping[int, list[ModelCall]],
        regions: list[Region],
    ) -> None:
        """The mode's changes (``emits``, from the rules of ``variables``), once every phase of
        :meth:`_migrate` let them through, and what becomes of the writes."""
        ctx = self.ctx
        for variable in self.external:
            ctx.report(
                "BFM001",
                ctx.module,
                fixed=True,
                variant="launcher",
                variable=variable,
                summary=self.mode.summary.replace(f", {STOCHASTIC_ROUNDING_VAR}=1", ""),
            )
            ctx.outcome.switch_migrated = True
        for site in sites:
            if site.model is None:
                ctx.outcome.refuse(
                    Refusal.MODEL_UNKNOWN, ctx.report("BFM011", site.call, fixed=False, variant="other_optimizer")
                )
        if not _module_binds(ctx, "torch"):
            # AddImportsVisitor only sees the leading import block, which a legacy write often
            # splits (`import os; os.environ[...]; import torch`): ask the scope instead.
            self.plan.imports.append("torch")
        if "model-cast" in emits:
            # one cast per model, before every optimizer built from it, with whatever the
            # model's inputs need right after it (inputs.py); planned together so a model is
            # never cast without its inputs, nor its inputs cast without the model
            inputs = InputCasts(ctx, self.flow, self.plan, self.guard)
            for model, anchors in zip(models, cast_anchors):
                assert anchors is not None, "_cast_anchors let model-cast through only with an anchor per model"
                after = inputs.plan_model(model, calls[id(model)]) if "input-cast" in emits else []
                for anchor in anchors:
                    cast = snippets.model_cast_statement(model)
                    self.plan.insert_before.setdefault(id(anchor), []).extend(
                        snippets.guarded([cast, *after], self.guard)
                    )
        if "bf16-attention-math" in emits:
            self._attention_math(sites)
        if "fp32-loss-accumulator" in emits:
            names = {n for cs in calls.values() for c in cs for n in c.loss_names}
            for factory in loss_accumulators(ctx, names):
                self.plan.replace[id(factory)] = add_float32_dtype
        if "fp32-master-weights" in emits:
            self.factory_changes = plan_master_weights(ctx, self.plan, self.guard, sites)
        self._report_factories(sites, emits)
        if "fp32-grad-norm" in emits:
            plan_fp32_grad_norm(ctx, self.plan, self.guard)
        if "autocast" in emits:
            self.plan.wrap_guard = self.guard
            plan_autocast(self.plan, regions)
        switch_writes(ctx, self.plan, self.guard, writes, "stochastic-rounding" in emits, self.mode.summary)
        if self.fp32_state and self.mode.casts_model:
            fp32_optimizer_state(ctx, self.plan, self.mode)
        if any(ctx.rules.variables[v].f64_becomes == "f32" for v in variables):
            self._double_meant_fp32()

    def _report_factories(self, sites: list[OptimizerSite], emits: set[str]) -> None:
        """BFM016 at each optimizer factory of the tree the script calls: what became of the
        model it builds the optimizer over, here and in the module."""
        ctx = self.ctx
        for site in sites:
            if site.factory is None or site.model is None:
                continue
            module, factory = site.factory
            if "autocast" in emits:
                change = "its forward pass and loss here go under torch.autocast"
            else:
                change = "it is cast to torch.bfloat16 right before this call"
                if self.guard is not None:
                    change += f" (under `{ctx.code(self.guard)}`)"
                if "fp32-master-weights" in emits:
                    change += f", and {module.path} builds the optimizer with FP32 master weights"
            ctx.report(
                "BFM016",
                site.call,
                fixed=True,
                model=ctx.code(site.model),
                function=factory.name,
                module=module.path,
                change=change,
            )

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
            reads = replace_reads(self.ctx, self.plan, self.mode.name, reads, self.imported_under)
        report_reads(self.ctx, reads)
        if any(self.ctx.rules.variables[v].f64_becomes == "f32" for v in variables):
            self._double_meant_fp32()
        if self.fp32_state and self.mode.casts_model:
            fp32_optimizer_state(self.ctx, self.plan, self.mode)

    def _double_meant_fp32(self) -> None:
        """``torch.double``/``torch.float64``/``.double()`` -> ``torch.float32``/``.float()`` in a
        file that used XLA_DOWNCAST_BF16 (f64 on the device was f32 there: torch-xla `torch_xla/csrc/dtype.cpp`), except
        on the CPU side of ``.cpu()`` / ``.numpy()`` / ``.item()``, which were real f64."""
        ctx = self.ctx
        for attr in ctx.nodes(cst.Attribute):
            if ctx.qualified_names(attr) & {"torch.double", "torch.float64"} and not _on_cpu_side(ctx, attr):
                self.plan.replace[id(attr)] = lambda node: cst.parse_expression("torch.float32").with_changes(
                    lpar=node.lpar, rpar=node.rpar
                )
                ctx.report("BFM048", attr, fixed=True, dtype=ctx.code(attr))
        for call in ctx.nodes(cst.Call):
            if (
                isinstance(call.func, cst.Attribute)
                and m.matches(call, m.Call(func=m.Attribute(attr=m.Name("double")), args=[]))
                and not _on_cpu_side(ctx, call)
            ):
                self.plan.replace[id(call.func.attr)] = lambda node: node.with_changes(value="float")
                ctx.report("BFM048", call.func.attr, fixed=True, variant="double")

    # -- helpers ----------------------------------------------------------------------------
    def _unique_models(self, sites: list[OptimizerSite]) -> list[cst.BaseExpression]:
        """The models the optimizers are built from, each once (:func:`.model_site.same_model`)."""
        models: list[cst.BaseExpression] = []
        for site in sites:
            if site.model is not None and not any(same_model(self.ctx, site.model, known) for known in models):
                models.append(site.model)
        return models

    def _attention_math(self, sites: list[OptimizerSite]) -> None:
        """Files that use attention get the flag that keeps torch's math SDPA kernel in bf16
        (``rules/torch_api.toml``: ``attention_flag``), once, before the first optimizer is built,
        under the same guard as the other changes."""
        ctx, api = self.ctx, self.ctx.rules.torch_api
        user = next((c for c in ctx.nodes(cst.Call) if ctx.qualified_names(c.func) & api.attention_users), None)
        first = next((s.statement for s in sites if s.statement is not None), None)
        if (
            user is None
            or first is None
            or any(api.attention_flag.split("(")[0] in ctx.code(c) for c in ctx.nodes(cst.Call))
        ):
            return
        self.plan.insert_before.setdefault(id(first), []).insert(0, snippets.statement(api.attention_flag, self.guard))
        ctx.report("BFM062", user, fixed=True, user=ctx.code(user.func), flag=api.attention_flag)


def _on_cpu_side(ctx: FileContext, node: cst.CSTNode) -> bool:
    """Whether ``node`` works on a host value: it sits in a method chain that goes through
    ``.cpu()``, ``.numpy()``, ``.item()`` or ``.tolist()`` before it, or in ``np.``/``numpy.``."""
    chain = node if isinstance(node, cst.Call) else ctx.parent(node)
    # walk down the receiver chain of the call this node belongs to
    while isinstance(chain, (cst.Arg, cst.Attribute)) and not isinstance(chain, cst.Call):
        chain = ctx.parent(chain)
    expr = chain
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        func = expr.func if isinstance(expr, cst.Call) else expr
        if isinstance(func, cst.Attribute) and func.attr.value in ("cpu", "numpy", "item", "tolist"):
            return True
        if ctx.qualified_names(func) & {"numpy", "np"} or any(
            q.startswith("numpy.") for q in ctx.qualified_names(func)
        ):
            return True
        expr = func.value if isinstance(func, cst.Attribute) else getattr(expr, "value", None)
    return False


def _module_binds(ctx: FileContext, name: str) -> bool:
    """Whether ``name`` is bound at module level (``import torch`` anywhere at the top level)."""
    scope = ctx.scopes.get(ctx.module)
    return scope is not None and any(a.scope is scope for a in scope.assignments[name])
