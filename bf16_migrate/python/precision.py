"""Plan the edits of one file for a mode: collect facts, decide, report.

What each mode emits comes from ``rules/XLA_*.toml`` (``[modes.<mode>] emit``); the meaning of
each emitted change:

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
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
import libcst.matchers as m

from ..rules import STOCHASTIC_ROUNDING_VAR, is_truthy
from . import snippets
from .apply import EditPlan
from .context import FileContext, findall
from .dtype_flow import DtypeFlow
from .env_writes import (
    Condition,
    LegacyWrite,
    branches_cover,
    collect_writes,
    guard_of,
    in_force_verdict,
    off_path,
    sets_stochastic_rounding,
    value_state,
)
from .in_tests import in_test as in_test_code
from .in_tests import is_test_file, is_test_function
from .inputs import InputCasts
from .model_site import cast_anchor, find_optimizers, loss_accumulators, model_calls, same_model

REFERENCE = "reference"
"""Internal mode used by ``verify``: remove the legacy writes, add nothing (an FP32 run)."""

_ENABLED_CONSTANT = "BF16_ENABLED"
_DEVICE_FUNCTIONS = {"torch_xla.device", "torch_xla.core.xla_model.xla_device"}

_MODE_SUMMARY = {
    "stochastic": "model cast to torch.bfloat16, floating inputs cast, NEURON_RT_STOCHASTIC_ROUNDING_EN=1",
    "gpu-compatible": "model cast to torch.bfloat16 with FP32 master weights in the optimizer, floating inputs cast",
    "amp": "model kept in FP32, forward and loss under torch.autocast(\"xla\", dtype=torch.bfloat16)",
    REFERENCE: "removed (FP32 reference run)",
}


class Planner:
    """Builds the :class:`EditPlan` of one file for one mode, reporting into ``ctx``."""

    def __init__(self, ctx: FileContext, mode: str, launched_with: Mapping[str, str] | None = None, fp32_optimizer_state: bool = False, imported_under: Mapping[str, str] | None = None) -> None:
        self.ctx = ctx
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
        self.framework = None
        self.own_gate: str | None = None
        self.flow = DtypeFlow(ctx)
        self.guard: cst.BaseExpression | None = None

    # -- top level --------------------------------------------------------------------------
    def run(self) -> EditPlan:
        ctx = self.ctx
        writes, mentions = collect_writes(ctx, set(ctx.rules.variables))
        self.constant_keys: dict[str, list[LegacyWrite]] = {}
        for w in writes:
            if isinstance(w.key, cst.Name) and w.form != "update-kwarg":
                self.constant_keys.setdefault(w.key.value, []).append(w)
        tests_only, handled = self._in_tests(writes, mentions)
        mentions = [mention for mention in mentions if id(mention.node) not in handled]
        constants = [mention for mention in mentions if self._constant_target(mention) is not None]
        mentions = [mention for mention in mentions if self._constant_target(mention) is None]
        reads = [mention for mention in mentions if mention.is_read]
        for mention in mentions:
            if not mention.is_read:
                ctx.report("BFM042", mention.node, fixed=False, variable=mention.variable, mode=self.mode)
        if tests_only:
            for mention in reads:
                ctx.report("BFM052", mention.node, fixed=False, variant="reads", variable=mention.variable)
            return self.plan
        framework = self._framework()
        if framework is not None and writes:
            rule, call = framework
            for w in writes:
                hack = self._framework_flag_hack(w) if rule.key == "hf-trainer" else None
                if hack is not None:
                    self.plan.remove.add(id(hack))
                    ctx.report("BFM055", w.key, fixed=True, variant="trade_undone", variable=w.variable, framework=rule.name, flag=ctx.code(hack.test), advice=rule.advice)
                else:
                    ctx.report("BFM055", w.key, fixed=False, variable=w.variable, framework=rule.name, call=ctx.code(call.func), line=ctx.pos(call)[0], setting=rule.setting, advice=rule.advice)
            return self.plan
        if framework is not None and not writes and self.external:
            self._framework_launched(*framework)
            return self.plan
        if self.imported_under and not writes and not self.external:
            self._imported_module(reads)
            return self.plan
        triaged = [(w, self._triage(w)) for w in writes]
        on_writes = [w for w, conditions in triaged if conditions is not None]
        if on_writes or self.external:
            guards = [conditions for w, conditions in triaged if conditions is not None]
            if self.external or any(not g for g in guards) or branches_cover(ctx, on_writes):
                self.guard = None
            else:
                # bf16 is on when any of the writes switches it on: the union of their guards
                # (XLA_USE_BF16 and XLA_DOWNCAST_BF16 differ only for f64, handled by BFM048)
                distinct = list(dict.fromkeys(_render(g) for g in guards))
                code = distinct[0] if len(distinct) == 1 else " or ".join(f"({c})" if " " in c else c for c in distinct)
                self.guard = cst.parse_expression(code)
            if self.guard is not None and not self._guard_travels(on_writes):
                self._report_reads(reads)
                return self.plan
            # what the legacy run saw when the switch itself was unconditional: "1" for the
            # file's own writes, the launcher's value (the script's own flags may still put the
            # migrated cast under a condition: the modules it imports ran under the switch anyway)
            in_force = {} if self.guard is not None else {w.variable: "1" for w in on_writes}
            if self.guard is None:
                in_force.update({v: self.launched_values[v] for v in self.external})
            if self._migrate(on_writes) and not self.already_migrated:
                self.in_force = in_force
                reads = self._remove_patches(reads, {w.variable for w in on_writes} | set(self.external))
                if self.guard is None and self.mode in ("stochastic", "gpu-compatible"):
                    reads = self._replace_reads(reads, in_force)
        self._report_reads(reads)
        self._constants(constants)
        return self.plan

    def _constant_target(self, mention) -> str | None:
        """The constant's name when the mention is ``NAME = "XLA_..."`` and NAME keys a write."""
        assign = self.ctx.parent(mention.node)
        if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name):
            name = assign.targets[0].target.value
            return name if name in self.constant_keys else None
        return None

    def _constants(self, constants) -> None:
        """A constant naming a legacy variable goes when every use of it was a write this run
        removed or renamed; otherwise it is reported (BFM043)."""
        ctx = self.ctx
        for mention in constants:
            name = self._constant_target(mention)
            by_key = {id(w.key): w for w in self.constant_keys[name]}
            uses = [n for n in ctx.nodes(cst.Name) if n.value == name and not isinstance(ctx.parent(n), cst.AssignTarget)]
            done = all(
                id(u) in by_key and (id(u) in self.plan.replace or id(by_key[id(u)].statement) in self.plan.remove)
                for u in uses
            )
            statement = ctx.statement_of(mention.node)
            if done and isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
                self.plan.remove.add(id(statement))
                ctx.report("BFM043", mention.node, fixed=True, name=name, variable=mention.variable)
            else:
                ctx.report("BFM043", mention.node, fixed=False, variant="still_used", name=name, variable=mention.variable)

    def _in_tests(self, writes, mentions) -> tuple[bool, set[int]]:
        """Tests set the variable to exercise the legacy path (``monkeypatch.setenv``,
        ``mock.patch.dict(os.environ, ...)``, ``setUp``, ``test_*`` functions, ``test_*.py``
        files) and read it to choose what to expect (``os.getenv(X)``, a helper such as
        ``check_env_flag(X)``, ``print(os.getenv(X))``): report, never rewrite. In a
        test, a keyword argument named like a legacy variable (``self._set_env(XLA_USE_BF16="1")``,
        ``mock.patch.dict(os.environ, XLA_USE_BF16="1")``) sets it too. Returns whether the file
        is only tests' business (a test file, or every write is a test's: the file is then left
        alone) and the ids of the mentions reported here."""
        ctx = self.ctx
        test_file = is_test_file(ctx.path)
        test_function = is_test_function

        def in_test(node) -> bool:
            return in_test_code(ctx, node)

        found, handled = False, set()
        for w in writes:
            if test_file or test_function(ctx.enclosing(w.statement, cst.FunctionDef)):
                ctx.report("BFM052", w.key, fixed=False, variable=w.variable)
                found = True
        for mention in mentions:
            call = ctx.enclosing(mention.node, cst.Call)
            if call is not None and (m.matches(call.func, m.Attribute(attr=m.Name("setenv") | m.Name("delenv"))) or ctx.code(call.func).endswith("patch.dict")):
                ctx.report("BFM052", mention.node, fixed=False, variant="sets_through", variable=mention.variable, callee=ctx.code(call.func))
                handled.add(id(mention.node))
                found = True
        # reads and other names of the variable in a test (a test file: they alone make the
        # file a test's business, so nothing of it is migrated; elsewhere they are reported
        # here and the rest of the file is migrated as usual)
        for mention in mentions:
            if id(mention.node) in handled or not in_test(mention.node):
                continue
            parent = ctx.parent(mention.node)
            helper = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
            if mention.is_read:
                ctx.report("BFM052", mention.node, fixed=False, variant="reads", variable=mention.variable)
            elif isinstance(helper, cst.Call):
                callee = ctx.code(helper.func)
                verb = callee.rsplit(".", 1)[-1].lower()
                if any(word in verb for word in ("set", "put", "patch")) and "get" not in verb:
                    ctx.report("BFM052", mention.node, fixed=False, variant="sets_through", variable=mention.variable, callee=callee)
                else:
                    ctx.report("BFM052", mention.node, fixed=False, variant="reads_through", variable=mention.variable, callee=callee)
            else:
                ctx.report("BFM052", mention.node, fixed=False, variant="names", variable=mention.variable)
            handled.add(id(mention.node))
            found = found or test_file
        keys = {id(w.key) for w in writes}
        for call in ctx.nodes(cst.Call):
            for arg in call.args:
                keyword = arg.keyword
                if keyword is None or keyword.value not in ctx.rules.variables or id(keyword) in keys or not in_test(call):
                    continue
                ctx.report("BFM052", keyword, fixed=False, variant="sets_through", variable=keyword.value, callee=f"{ctx.code(call.func)}({keyword.value}=...)")
                found = found or test_file
        tests_only = found and (test_file or not writes or all(test_function(ctx.enclosing(w.statement, cst.FunctionDef)) for w in writes))
        return tests_only, handled

    def _framework_flag_hack(self, w: LegacyWrite) -> cst.If | None:
        """``if args.bf16: args.bf16 = False; os.environ[...] = "1"``: the framework's bf16
        flag traded for the legacy variable (seen in the Neuron HF examples of aws-neuron-samples). Undoing the
        trade is safe: the block only moves the setting. Returns the ``if`` to remove."""
        block = self.ctx.parent(w.statement)
        owner = self.ctx.parent(block)
        if not (isinstance(owner, cst.If) and owner.orelse is None and isinstance(owner.test, cst.Attribute)):
            return None
        flag = self.ctx.code(owner.test)
        others = [st for st in block.body if st is not w.statement]
        for st in others:
            assign = st.body[0] if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 else None
            if not (
                isinstance(assign, cst.Assign)
                and len(assign.targets) == 1
                and self.ctx.code(assign.targets[0].target) == flag
                and m.matches(assign.value, m.Name("False"))
            ):
                return None
        return owner if others and isinstance(self.ctx.parent(owner), (cst.IndentedBlock, cst.Module)) else None

    def _framework(self):
        """The first use of a framework object that owns precision, with its rule: a
        construction (``TrainingArguments(...)``) or the class handed over to be built
        (``HfArgumentParser((ModelArguments, TrainingArguments))``, the shape of the Hugging
        Face example scripts)."""
        for call in self.ctx.nodes(cst.Call):
            names = self.ctx.qualified_names(call.func)
            for rule in self.ctx.rules.frameworks:
                if names & rule.qualified and (rule.owns_with is None or any(a.keyword is not None and a.keyword.value == rule.owns_with for a in call.args)):
                    return rule, call
        for call in self.ctx.nodes(cst.Call):
            for arg in call.args:
                values = arg.value.elements if isinstance(arg.value, (cst.Tuple, cst.List)) else [arg.value]
                for v in values:
                    v = v.value if isinstance(v, cst.BaseElement) else v
                    if not isinstance(v, (cst.Name, cst.Attribute)):
                        continue
                    names = self.ctx.qualified_names(v)
                    for rule in self.ctx.rules.frameworks:
                        if names & rule.qualified and rule.owns_with is None:
                            return rule, call
        return None

    def _framework_launched(self, rule, call) -> None:
        """A launcher sets the variable for a script whose precision a framework owns: the
        switch must become the framework's setting, not a model cast (Neuron's migration guide
        leaves precision to the framework's own flag; optimum-neuron's tutorials pass
        ``--bf16``). Reported; the launcher keeps the switch unless it passes the flag."""
        variables = ", ".join(self.external)
        flag = f" (on the command line: `{rule.launch_flag}`)" if rule.launch_flag else ""
        self.framework = rule
        self.ctx.report("BFM055", call, fixed=False, variant="launcher", variables=variables, framework=rule.name, call=self.ctx.code(call.func), line=self.ctx.pos(call)[0], setting=rule.setting, flag=flag, advice=rule.advice)

    def _report_reads(self, reads) -> None:
        for mention in reads:
            self.ctx.report("BFM050", mention.node, fixed=False, variable=mention.variable)

    def _imported_module(self, reads) -> None:
        """A module of the tree imported by a script that runs under ``imported_under`` (found
        by the project: ``from adamw_fp32 import AdamWFP32`` in a launched script). It has no
        model of its own, but the legacy switch was in force for its code too: in bf16 modes its
        reads of the variables resolve to what the legacy run saw (an optimizer that switched
        FP32 state on ``os.environ.get("XLA_DOWNCAST_BF16") == "1"`` keeps doing so), workaround
        patches go, under XLA_DOWNCAST_BF16 the ``.double()`` idiom becomes ``.float()``, and
        ``--fp32-optimizer-state`` applies to its optimizer classes."""
        variables = list(self.imported_under)
        reads = self._remove_patches(reads, set(variables))
        if self.mode in ("stochastic", "gpu-compatible"):
            reads = self._replace_reads(reads, self.imported_under)
        self._report_reads(reads)
        if any(self.ctx.rules.variables[v].f64_becomes == "f32" for v in variables):
            self._double_meant_fp32()
        if self.fp32_state and self.mode in ("stochastic", "gpu-compatible"):
            self.fp32_optimizer_state()

    def _replace_reads(self, reads, values: Mapping[str, str]) -> list:
        """In bf16 modes, with the switch migrated unconditionally, a read of a variable that
        was in force (``values``: variable -> the value the legacy run saw) now has one answer.
        Value reads become the constant ``BF16_ENABLED`` (declared once, with a comment) and
        membership tests ``True``; an ``if`` on such reads that patches ``torch.finfo`` or HF's
        ``get_parameter_dtype`` (a workaround for the switch's side effects: under it
        ``torch.finfo(torch.float32).min`` became -inf on the device) is removed whole. Returns the reads left to report."""
        ctx = self.ctx
        migrated = set(values)
        constant = next(iter(set(values.values()))) if len(set(values.values())) == 1 else None
        left, replaced = [], False
        for mention in reads:
            expr = _read_expression(ctx, mention.node)
            if mention.variable not in migrated or expr is None or (constant is None and not isinstance(expr, cst.Comparison)):
                left.append(mention)
                continue
            if isinstance(expr, cst.Comparison):
                negated = isinstance(expr.comparisons[0].operator, cst.NotIn)
                value = "False" if negated else "True"
                self.plan.replace[id(expr)] = lambda node, value=value: cst.Name(value).with_changes(lpar=node.lpar, rpar=node.rpar)
            else:
                self.plan.replace[id(expr)] = lambda node: cst.Name(_ENABLED_CONSTANT).with_changes(lpar=node.lpar, rpar=node.rpar)
                replaced = True
            ctx.report("BFM050", mention.node, fixed=True, variant="replaced", variable=mention.variable)
        if replaced:
            self.plan.prelude.append(
                cst.parse_statement(
                    f'{_ENABLED_CONSTANT} = {constant!r}  # bf16-migrate: what the legacy bf16 variable read as; the model now runs in bf16 explicitly ({self.mode} mode)\n'.replace("'", '"', 2)
                ).with_changes(leading_lines=[cst.EmptyLine()])
            )

        return left

    def _remove_patches(self, reads, migrated: set[str]) -> list:
        """An ``if`` on reads of the variables that patches ``torch.finfo`` or HF's
        ``get_parameter_dtype`` was a workaround for the switch's side effects (under it
        ``torch.finfo(torch.float32).min`` became -inf on the device; optimum-neuron's
        ``accelerator.py`` removed its own patch when it migrated): once the switch is
        migrated (any of ``migrated``), in any mode, the patch is dead weight and goes, with
        every read in its test. Returns the reads left."""
        ctx = self.ctx
        patches: list[cst.If] = []
        for mention in reads:
            expr = _read_expression(ctx, mention.node)
            patch = self._workaround_patch(expr) if expr is not None else None
            if patch is not None and mention.variable in migrated and patch not in patches:
                patches.append(patch)
                self.plan.remove.add(id(patch))
        left = []
        for mention in reads:
            patch = next((p for p in patches if any(mention.node is n for n in findall(p.test, m.SimpleString()))), None)
            if patch is None:
                left.append(mention)
            else:
                ctx.report("BFM051", mention.node, fixed=True, variable=mention.variable)
        return left

    def _workaround_patch(self, read: cst.CSTNode) -> cst.If | None:
        stmt = self.ctx.enclosing(read, cst.If)
        if stmt is None or stmt.orelse is not None or not any(read is n for n in findall(stmt.test, m.Call() | m.Subscript() | m.Comparison())):
            return None
        for target in findall(stmt.body, m.AssignTarget()):
            code = cst.Module(body=[]).code_for_node(target.target)
            if code.endswith("finfo") or code.endswith("get_parameter_dtype"):
                return stmt
        return None

    def _triage(self, w: LegacyWrite) -> list[Condition] | None:
        """Report and plan one write. Returns the conditions under which it switches bf16 on
        (``[]``: unconditionally) when it is to be migrated, None when it was handled here."""
        ctx, rule = self.ctx, self.ctx.rules.variables[w.variable]
        if not rule.effective:
            self._remove_write(w)
            ctx.report("BFM003", w.key, fixed=True, variable=w.variable, since=rule.deprecated_since)
            return None
        if len(w.statement.body) != 1:
            ctx.report("BFM042", w.key, fixed=False, variant="one_line", variable=w.variable)
            return None
        if w.form == "system-export":
            self._remove_write(w)
            ctx.report("BFM045", w.key, fixed=True, variable=w.variable)
            return None
        verdict = in_force_verdict(ctx, w, self.mode)
        if verdict is not None:  # BFM049: a write that never took effect, or may not have
            variant, fields, removed = verdict
            if removed:
                self._remove_write(w)
            ctx.report("BFM049", w.key, fixed=removed, variant=variant, **fields)
            return None
        if w.unsets:
            self._remove_write(w)
            ctx.report("BFM044", w.key, fixed=True, variable=w.variable)
            return None
        state, value_condition = value_state(w.value)
        if state == "not-a-string":
            ctx.report("BFM046", w.key, fixed=False, variable=w.variable, value=ctx.code(w.value), mode=self.mode)
            return None
        if state == "unknown":
            ctx.report("BFM040", w.key, fixed=False, variable=w.variable, value=ctx.code(w.value), mode=self.mode)
            return None
        if state == "off":
            self._remove_write(w)
            ctx.report("BFM002", w.key, fixed=True, variable=w.variable, value=ctx.code(w.value))
            return None
        conditions, blocker = guard_of(ctx, w)
        if blocker is not None:
            ctx.report("BFM041", w.key, fixed=False, variable=w.variable, construct=type(blocker).__name__.lower(), line=ctx.pos(blocker)[0], mode=self.mode)
            return None
        late = self._device_used_before(w)
        if late is not None:
            self._remove_write(w)
            ctx.report("BFM047", w.key, fixed=True, variable=w.variable, line=ctx.pos(late)[0])
            return None
        return conditions + ([value_condition] if value_condition is not None else [])

    def _guard_travels(self, writes: list[LegacyWrite]) -> bool:
        """The guard is re-evaluated where the changes go: they must all be in the function (or
        module level) of the writes, after them, with the guard's names not rebound there."""
        ctx = self.ctx
        scope_node = ctx.enclosing(writes[0].statement, cst.FunctionDef) or ctx.module
        last_write = max(ctx.pos(w.statement)[0] for w in writes)
        names = {n.value for n in findall(self.guard, m.Name())}
        problem = None
        for site in find_optimizers(ctx):
            if (ctx.enclosing(site.call, cst.FunctionDef) or ctx.module) is not scope_node or ctx.pos(site.call)[0] < last_write:
                problem = site.call
        for name in names:
            for assign in ctx.nodes(cst.Name):
                if assign.value != name or not isinstance(ctx.parent(assign), cst.AssignTarget):
                    continue
                if (ctx.enclosing(assign, cst.FunctionDef) or ctx.module) is scope_node and ctx.pos(assign)[0] > last_write:
                    problem = assign
        if problem is None:
            return True
        for w in writes:
            ctx.report("BFM041", w.key, fixed=False, variant="condition", variable=w.variable, condition=ctx.code(self.guard), line=ctx.pos(problem)[0], mode=self.mode)
        return False

    def _device_used_before(self, w: LegacyWrite) -> cst.CSTNode | None:
        """A statement before the write (in its function or at module level) that puts a tensor
        on the XLA device (``.to(device)``, ``device=device``, ``xm.send_cpu_data_to_device``)
        where ``device`` comes from ``torch_xla.device()`` / ``xm.xla_device()``:
        torch-xla reads the variables once, at the first device tensor (torch-xla `torch_xla/csrc/runtime/sys_util.cc` reads them through static initialisers)."""
        ctx = self.ctx
        scope_node = ctx.enclosing(w.statement, cst.FunctionDef) or ctx.module
        line = ctx.pos(w.statement)[0]
        device_names = {
            n.value
            for call in ctx.nodes(cst.Call)
            if ctx.qualified_names(call.func) & _DEVICE_FUNCTIONS
            and isinstance(ctx.parent(call), cst.Assign)
            for t in ctx.parent(call).targets
            for n in findall(t.target, m.Name())
        }
        for call in ctx.nodes(cst.Call):
            if ctx.pos(call)[0] >= line or (ctx.enclosing(call, cst.FunctionDef) or ctx.module) is not scope_node or off_path(ctx, call, w.statement):
                continue
            args = [a for a in call.args if (a.keyword is None and m.matches(call.func, m.Attribute(attr=m.Name("to")))) or (a.keyword is not None and a.keyword.value == "device")]
            for arg in args:
                value = arg.value
                if (isinstance(value, cst.Name) and value.value in device_names) or (
                    isinstance(value, cst.Call) and ctx.qualified_names(value.func) & _DEVICE_FUNCTIONS
                ):
                    return call
        return None

    def _migrate(self, writes: list[LegacyWrite]) -> bool:
        """Plan the mode's changes; False when the model cannot be found (nothing changed)."""
        ctx = self.ctx
        if self.mode == REFERENCE:
            for w in writes:
                self._remove_write(w)
                ctx.report("BFM001", w.key, fixed=True, variant="reference", variable=w.variable)
            return True
        variables = [w.variable for w in writes] + self.external
        emits = set().union(*(ctx.rules.variables[v].emit[self.mode] for v in variables))
        sites = find_optimizers(ctx)
        models = self._unique_models(sites)
        if not sites or not models:
            anchors = [(w.variable, w.key) for w in writes] or [(v, ctx.module) for v in self.external]
            for variable, anchor in anchors:
                if not sites:
                    ctx.report("BFM010", anchor, fixed=False, variable=variable, by_hand="autocast the forward pass" if self.mode == "amp" else "model.to(torch.bfloat16) before the optimizer is built")
                else:
                    ctx.report("BFM011", sites[0].call, fixed=False)
            return False
        cast_anchors = [
            cast_anchor(ctx, model, [s for s in sites if s.model is not None and same_model(ctx, s.model, model)])
            for model in models
        ]
        if "model-cast" in emits and any(a is None for a in cast_anchors):
            site = next(s for s, a in zip(models, cast_anchors) if a is None)
            for variable, anchor in [(w.variable, w.key) for w in writes] or [(v, ctx.module) for v in self.external]:
                ctx.report("BFM011", anchor, fixed=False, variant="header", variable=variable, model=ctx.code(site))
            return False
        existing = self._existing_precision(models)
        if existing is not None:
            node, condition = existing
            if condition is None:
                if writes:
                    ctx.report("BFM013", node, fixed=False, variant="own_switch", code=ctx.code(node))
                    return False
                # a launcher's setting, and the script already carries the change: nothing twice,
                # unless what it carries is another mode's change (a script migrated in stochastic
                # mode, then its launcher in gpu-compatible mode: no master weights)
                missing = self._other_modes_change(node, sites)
                if missing is not None:
                    for variable in self.external:
                        ctx.report("BFM015", node, fixed=False, variable=variable, code=ctx.code(node), mode=self.mode, missing=missing)
                    return False
                self.already_migrated = True
                for variable in self.external:
                    ctx.report("BFM013", node, fixed=True, variable=variable, code=ctx.code(node))
                return True
            if self.mode == "amp":
                for variable, anchor in [(w.variable, w.key) for w in writes] or [(v, ctx.module) for v in self.external]:
                    ctx.report("BFM032", anchor, fixed=False, variant="amp", variable=variable, condition=ctx.code(condition), line=ctx.pos(node)[0])
                return False
            if not all(_evaluable_at(ctx, condition, anchor) for anchors in cast_anchors for anchor in anchors):
                for variable, anchor in [(w.variable, w.key) for w in writes] or [(v, ctx.module) for v in self.external]:
                    ctx.report("BFM032", anchor, fixed=False, variant="not_evaluable", variable=variable, condition=ctx.code(condition), line=ctx.pos(node)[0])
                return False
            complement = _negate(ctx.code(condition))
            self.guard = cst.parse_expression(complement if self.guard is None else f"({ctx.code(self.guard)}) and {complement}")
            self.own_gate = complement
            ctx.report("BFM032", node, fixed=True, code=ctx.code(node), condition=ctx.code(condition), complement=complement)
        calls = {id(model): model_calls(ctx, model) for model in models}
        regions: list = []
        if "autocast" in emits:
            # autocast is the whole replacement in amp: if a forward pass cannot be put under it,
            # removing the switch would leave that pass in FP32, so nothing is changed
            problems = []
            for model in models:
                found, failed = self._autocast_regions(model, calls[id(model)])
                regions += found
                problems += failed
            if problems:
                for code, node, variant, fields in problems:
                    ctx.report(code, node, fixed=False, variant=variant, **fields)
                for variable, anchor in [(w.variable, w.key) for w in writes] or [(v, ctx.module) for v in self.external]:
                    ctx.report("BFM033", anchor, fixed=False, variable=variable, count=len(problems), first_code=problems[0][0], first_line=ctx.pos(problems[0][1])[0])
                return False
        for variable in self.external:
            ctx.report("BFM001", ctx.module, fixed=True, variant="launcher", variable=variable, summary=_MODE_SUMMARY[self.mode].replace(f", {STOCHASTIC_ROUNDING_VAR}=1", ""))
        for site in sites:
            if site.model is None:
                ctx.report("BFM011", site.call, fixed=False, variant="other_optimizer")
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
                after = inputs.plan_model(model, calls[id(model)]) if "input-cast" in emits else []
                for anchor in anchors:
                    cast = snippets.model_cast_statement(model)
                    self.plan.insert_before.setdefault(id(anchor), []).extend(snippets.guarded([cast, *after], self.guard))
        if "bf16-attention-math" in emits:
            self._attention_math(sites)
        if "fp32-loss-accumulator" in emits:
            names = {n for cs in calls.values() for c in cs for n in c.loss_names}
            for factory in loss_accumulators(ctx, names):
                self.plan.replace[id(factory)] = _add_float32_dtype
        if "fp32-master-weights" in emits:
            self._master_weights(sites)
        if "fp32-grad-norm" in emits:
            self._fp32_grad_norm()
        if "autocast" in emits:
            self.plan.wrap_guard = self.guard
            self._autocast(regions)
        self._switch_writes(writes, "stochastic-rounding" in emits)
        if self.fp32_state and self.mode in ("stochastic", "gpu-compatible"):
            self.fp32_optimizer_state()
        if any(ctx.rules.variables[v].f64_becomes == "f32" for v in variables):
            self._double_meant_fp32()
        return True

    def _double_meant_fp32(self) -> None:
        """``torch.double``/``torch.float64``/``.double()`` -> ``torch.float32``/``.float()`` in a
        file that used XLA_DOWNCAST_BF16 (f64 on the device was f32 there: torch-xla `torch_xla/csrc/dtype.cpp`), except
        on the CPU side of ``.cpu()`` / ``.numpy()`` / ``.item()``, which were real f64."""
        ctx = self.ctx
        for attr in ctx.nodes(cst.Attribute):
            if ctx.qualified_names(attr) & {"torch.double", "torch.float64"} and not _on_cpu_side(ctx, attr):
                self.plan.replace[id(attr)] = lambda node: cst.parse_expression("torch.float32").with_changes(lpar=node.lpar, rpar=node.rpar)
                ctx.report("BFM048", attr, fixed=True, dtype=ctx.code(attr))
        for call in ctx.nodes(cst.Call):
            if m.matches(call, m.Call(func=m.Attribute(attr=m.Name("double")), args=[])) and not _on_cpu_side(ctx, call):
                self.plan.replace[id(call.func.attr)] = lambda node: node.with_changes(value="float")
                ctx.report("BFM048", call.func.attr, fixed=True, variant="double")

    # -- helpers ----------------------------------------------------------------------------
    def _unique_models(self, sites):
        models: list[cst.BaseExpression] = []
        for site in sites:
            if site.model is not None and not any(same_model(self.ctx, site.model, known) for known in models):
                models.append(site.model)
        return models

    def _remove_write(self, w: LegacyWrite) -> None:
        if w.siblings == 0:
            self.plan.remove.add(id(w.statement))
            self._drop_emptied_if(w.statement)
            return
        self.plan.drop_elements.add(id(w.element))
        # an update() whose keys are all dropped goes away as a whole
        container = self.ctx.parent(w.element)
        items = container.elements if isinstance(container, cst.Dict) else container.args
        if all(id(item) in self.plan.drop_elements for item in items):
            for item in items:
                self.plan.drop_elements.discard(id(item))
            self.plan.remove.add(id(w.statement))

    def _drop_emptied_if(self, statement: cst.BaseStatement) -> None:
        """An ``if`` (with its ``elif``/``else``) whose every branch is now empty goes too,
        instead of being left as ``if flag: pass`` (its test only reads flags)."""
        block = self.ctx.parent(statement)
        owner = self.ctx.parent(block)
        if isinstance(owner, cst.Else):
            owner = self.ctx.parent(owner)
        if not isinstance(owner, cst.If):
            return
        root = owner
        while isinstance(self.ctx.parent(root), cst.If) and self.ctx.parent(root).orelse is root:
            root = self.ctx.parent(root)
        node, blocks = root, []
        while isinstance(node, cst.If):
            blocks.append(node.body)
            if isinstance(node.orelse, cst.Else):
                blocks.append(node.orelse.body)
            node = node.orelse
        if all(isinstance(b, cst.IndentedBlock) and all(id(st) in self.plan.remove for st in b.body) for b in blocks):
            if isinstance(self.ctx.parent(root), (cst.IndentedBlock, cst.Module)) and not _has_calls(root.test):
                self.plan.remove.add(id(root))

    def _switch_writes(self, writes: list[LegacyWrite], stochastic: bool) -> None:
        ctx = self.ctx
        keep_sr = sets_stochastic_rounding(ctx)
        chooser = len(writes) > 1 and branches_cover(ctx, writes)
        for index, w in enumerate(writes):
            summary = _MODE_SUMMARY[self.mode]
            if stochastic and (index == 0 or chooser) and not keep_sr:
                self._rename_to_stochastic_rounding(w)
                if self.guard is not None and len(writes) > 1 and not chooser:
                    # several writes under different conditions: stochastic rounding follows
                    # their union, the condition every other change carries
                    guard = self.guard
                    self.plan.replace[id(w.value)] = lambda node, guard=guard: cst.IfExp(
                        test=guard.deep_clone(), body=cst.SimpleString('"1"'), orelse=cst.SimpleString('"0"')
                    )
            else:
                self._remove_write(w)
                if stochastic and keep_sr:
                    summary = summary.replace(f", {STOCHASTIC_ROUNDING_VAR}=1", f"; the script's own {STOCHASTIC_ROUNDING_VAR} setting is kept as it is")
            if self.guard is not None:
                summary += f", all under the script's condition `{cst.Module(body=[]).code_for_node(self.guard)}`"
            ctx.report("BFM001", w.key, fixed=True, variable=w.variable, summary=summary)

    def _rename_to_stochastic_rounding(self, w: LegacyWrite) -> None:
        if isinstance(w.key, cst.SimpleString):
            self.plan.replace[id(w.key)] = lambda node: node.with_changes(
                value=f"{node.prefix}{node.quote}{STOCHASTIC_ROUNDING_VAR}{node.quote}"
            )
        elif w.form == "update-kwarg":  # update(XLA_USE_BF16="1")
            self.plan.replace[id(w.key)] = lambda node: node.with_changes(value=STOCHASTIC_ROUNDING_VAR)
        else:  # a constant holding the name: write the new variable's name as a literal
            self.plan.replace[id(w.key)] = lambda node: cst.SimpleString(f'"{STOCHASTIC_ROUNDING_VAR}"')
        if w.literal != "1" and isinstance(w.value, cst.SimpleString):
            self.plan.replace[id(w.value)] = lambda node: node.with_changes(
                value=f"{node.prefix}{node.quote}1{node.quote}"
            )

    def _master_weights(self, sites) -> None:
        """gpu-compatible mode's FP32 master weights, per optimizer built in the file: a stock
        optimizer (or an ``Optimizer`` subclass defined here) is built through
        ``with_fp32_master_weights`` (``snippets.MASTER_WEIGHTS_SOURCE``); torch-xla's ZeRO-1
        gets its own setting (:meth:`_zero1_master_weights`); a wrapper that owns the optimizer
        (``rules/torch_api.toml`` ``[optimizer_owners]``: NxD, FSDP) and any other optimizer are
        reported (BFM060), the former with the wrapper's own setting named."""
        ctx, api = self.ctx, self.ctx.rules.torch_api
        wrapped = False
        local = self._local_optimizer_classes()
        for site in sites:
            if site.qualified & api.zero_redundancy_optimizers:
                self._zero1_master_weights(site)
            elif site.qualified & api.stock_optimizers or (
                isinstance(site.call.func, cst.Name) and site.call.func.value in local
            ):
                guard = self.guard
                self.plan.replace[id(site.call.func)] = lambda node, guard=guard: _wrap_master_weights(node, guard)
                wrapped = True
            elif not site.qualified & api.optimizer_owners.keys():
                ctx.report("BFM060", site.call, fixed=False, optimizer=ctx.code(site.call.func))
        for call in ctx.nodes(cst.Call):
            owner = sorted(ctx.qualified_names(call.func) & api.optimizer_owners.keys())
            if owner:
                ctx.report("BFM060", call, fixed=False, variant="owner", owner=ctx.code(call.func), setting=api.optimizer_owners[owner[0]])
        if wrapped:
            self.plan.prelude.append(snippets.master_weights_helper())

    def _zero1_master_weights(self, site) -> None:
        """torch-xla's ``ZeroRedundancyOptimizer`` keeps its sharded master weights and state in
        ``optimizer_dtype`` (default: the parameters' dtype, bf16 after the model cast), and puts
        them in its ``state_dict`` only with ``save_master_weights=True``
        (torch_xla/distributed/zero_redundancy_optimizer.py): ``optimizer_dtype=torch.float32``
        is added, and ``save_master_weights=True`` where the file takes the optimizer's
        ``state_dict()``. A value the script already passes is kept and reported."""
        ctx, call = self.ctx, site.call
        keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
        name = ctx.code(call.func)
        added = []
        if "optimizer_dtype" in keywords:
            ctx.report("BFM063", keywords["optimizer_dtype"], fixed=False, variant="kept", optimizer=name, value=ctx.code(keywords["optimizer_dtype"].value))
        else:
            added.append(("optimizer_dtype", "torch.float32", "None"))
        if "save_master_weights" not in keywords and self._checkpoints(site):
            added.append(("save_master_weights", "True", "False"))
        if not added:
            return
        guard = self.guard
        self.plan.replace[id(call)] = lambda node: _add_keywords(node, added, guard)
        text = " and ".join(f"`{k}={v}`" for k, v, _ in added)
        ctx.report("BFM063", call, fixed=True, optimizer=name, added=text)

    def _checkpoints(self, site) -> bool:
        """Whether the file checkpoints the optimizer: calls one of ``checkpoint_methods``
        (``rules/torch_api.toml``: ``state_dict()``, ``save_sharded_state_dict(...)``...) on a
        name the optimizer is assigned to."""
        ctx = self.ctx
        assign = ctx.parent(site.call)
        if not isinstance(assign, cst.Assign):
            return False
        targets = {ctx.code(t.target) for t in assign.targets}
        methods = ctx.rules.torch_api.checkpoint_methods
        return any(
            isinstance(c.func, cst.Attribute) and c.func.attr.value in methods and ctx.code(c.func.value) in targets
            for c in ctx.nodes(cst.Call)
        )

    def _fp32_grad_norm(self) -> None:
        """gpu-compatible mode: ``torch.nn.utils.clip_grad_norm_`` (``rules/torch_api.toml``
        ``grad_norm_clipping``) becomes ``clip_grad_norm_fp32_`` (``snippets.FP32_GRAD_NORM_SOURCE``),
        the same clipping with the norm of the bf16 gradients computed in FP32."""
        ctx, api = self.ctx, self.ctx.rules.torch_api
        calls = [c for c in ctx.nodes(cst.Call) if ctx.qualified_names(c.func) & api.grad_norm_clipping]
        guard = self.guard
        for call in calls:
            self.plan.replace[id(call.func)] = lambda node: _choose(cst.Name(snippets.FP32_GRAD_NORM), node, guard)
            ctx.report("BFM064", call, fixed=True, call=ctx.code(call.func), helper=snippets.FP32_GRAD_NORM)
        if calls:
            self.plan.prelude.append(snippets.fp32_grad_norm_helper())

    def _attention_math(self, sites) -> None:
        """Files that use attention get the flag that keeps torch's math SDPA kernel in bf16
        (``rules/torch_api.toml``: ``attention_flag``), once, before the first optimizer is built,
        under the same guard as the other changes."""
        ctx, api = self.ctx, self.ctx.rules.torch_api
        user = next((c for c in ctx.nodes(cst.Call) if ctx.qualified_names(c.func) & api.attention_users), None)
        first = next((s.statement for s in sites if s.statement is not None), None)
        if user is None or first is None or any(api.attention_flag.split("(")[0] in ctx.code(c) for c in ctx.nodes(cst.Call)):
            return
        self.plan.insert_before.setdefault(id(first), []).insert(0, snippets.statement(api.attention_flag, self.guard))
        ctx.report("BFM062", user, fixed=True, user=ctx.code(user.func), flag=api.attention_flag)

    def _other_modes_change(self, existing: cst.CSTNode, sites) -> str | None:
        """What ``--mode``'s change lacks in a script whose own, always-on precision code is
        ``existing`` (:meth:`_existing_precision`), or None when that code is this mode's: amp
        wants a ``torch.autocast`` region over an FP32 model (Neuron's migration guide: "the model
        stays in FP32"), not a bf16 cast; stochastic and gpu-compatible want the bf16 cast, not
        autocast; gpu-compatible also wants FP32 master weights on every stock optimizer
        (``with_fp32_master_weights``, as this codemod writes it)."""
        ctx = self.ctx
        autocast = isinstance(existing, cst.Call) and bool(ctx.qualified_names(existing.func) & ctx.rules.torch_api.autocast)
        if self.mode == "amp":
            return None if autocast else "the model is cast to bf16, where amp keeps it in FP32 under torch.autocast"
        if autocast:
            return "it runs under torch.autocast (amp), where this mode casts the model to bf16"
        if self.mode != "gpu-compatible":
            return None
        api = ctx.rules.torch_api
        local = self._local_optimizer_classes()
        stock = [s for s in sites if s.qualified & api.stock_optimizers or (isinstance(s.call.func, cst.Name) and s.call.func.value in local)]
        factory = snippets.MASTER_WEIGHTS_FACTORY
        wrapped = any(
            (isinstance(c.func, cst.Name) and c.func.value == factory) or any(q.rsplit(".", 1)[-1] == factory for q in ctx.qualified_names(c.func))
            for c in ctx.nodes(cst.Call)
        )
        if stock and not wrapped:
            return f"its optimizer `{ctx.code(stock[0].call.func)}` keeps no FP32 master weights (`{factory}`)"
        return None

    def _existing_precision(self, models) -> tuple[cst.CSTNode, cst.BaseExpression | None] | None:
        """The script's own precision code, read rather than taken as done: a
        ``torch.autocast(...)`` region (``rules/torch_api.toml`` ``autocast``) or a
        ``<model>.to(torch.bfloat16)`` of one of its models. Returns (the code, None) when it is
        always on, (the code, its condition) when it is switched by a flag
        (``autocast(enabled=flags.x)``, ``if args.bf16: model.to(torch.bfloat16)``), or None.
        The legacy switch was the precision whenever that code was off, so the migrated changes
        go under the complementary condition (as aws-neuron-samples' BERT migration did:
        ``if not flags.enable_fp32 and not flags.enable_pt_autocast: model.to(torch.bfloat16)``)."""
        ctx = self.ctx
        flags: list[tuple[cst.CSTNode, cst.BaseExpression]] = []  # code on under a condition
        for call in ctx.nodes(cst.Call):
            if ctx.qualified_names(call.func) & ctx.rules.torch_api.autocast:
                enabled = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "enabled"), None)
                if enabled is None or m.matches(enabled, m.Name("True")):
                    return call, None
                if not m.matches(enabled, m.Name("False")):
                    flags.append((call, enabled))
            elif m.matches(call.func, m.Attribute(attr=m.Name("to"))) and any(
                ctx.qualified_names(a.value) & {"torch.bfloat16"} for a in call.args
            ) and any(same_model(ctx, call.func.value, model) for model in models):
                branch = ctx.enclosing(call, cst.If)
                if branch is None or ctx.enclosing(call, cst.Else) is not None:
                    return call, None
                flags.append((call, branch.test))
        # code on under a condition and code on under its complement: always on (a second run
        # over `if not flags.x: model.to(torch.bfloat16)` next to `autocast(enabled=flags.x)`)
        conditions = {ctx.code(c) for _, c in flags}
        for node, condition in flags:
            if _negate(ctx.code(condition)) in conditions:
                return node, None
        return flags[0] if flags else None

    def _local_optimizer_classes(self) -> set[str]:
        """Classes defined in this file that subclass ``torch.optim.Optimizer`` (or a stock
        optimizer): the master-weights subclass wraps their ``step`` as it does a stock one's."""
        ctx, names = self.ctx, set()
        bases_ok = ctx.rules.torch_api.stock_optimizers | {"torch.optim.Optimizer", "torch.optim.optimizer.Optimizer"}
        for cls in ctx.nodes(cst.ClassDef):
            if any(ctx.qualified_names(b.value) & bases_ok for b in cls.bases):
                names.add(cls.name.value)
        return names

    def fp32_optimizer_state(self) -> None:
        """``--fp32-optimizer-state`` (Neuron's migration guide from XLA_DOWNCAST_BF16: "if the optimizer states are to
        be kept in FP32, convert the gradients to FP32 before optimizer computations"): in the
        ``step`` of optimizer classes defined in the file, ``p.grad`` / ``p.grad.data`` read
        into a local become ``.float()``, and ``torch.zeros_like(p...)`` states get
        ``dtype=torch.float32``. Stock optimizers keep state in the parameter dtype: reported."""
        ctx = self.ctx
        local = self._local_optimizer_classes()
        for cls in ctx.nodes(cst.ClassDef):
            if cls.name.value not in local:
                continue
            for func in findall(cls.body, m.FunctionDef(name=m.Name("step"))):
                for assign in findall(func.body, m.Assign(value=m.Attribute(attr=m.Name("grad")) | m.Attribute(value=m.Attribute(attr=m.Name("grad")), attr=m.Name("data")))):
                    self.plan.replace[id(assign.value)] = lambda node: cst.Call(func=cst.Attribute(value=node, attr=cst.Name("float")))
                    ctx.report("BFM061", assign.value, fixed=True, optimizer=cls.name.value)
                for call in findall(func.body, m.Call(func=m.Attribute(value=m.Name("torch"), attr=m.Name("zeros_like") | m.Name("ones_like") | m.Name("empty_like")))):
                    if not any(a.keyword is not None and a.keyword.value == "dtype" for a in call.args):
                        self.plan.replace[id(call)] = _add_float32_dtype
                        ctx.report("BFM061", call, fixed=True, variant="state", optimizer=cls.name.value)
        for site in find_optimizers(ctx):
            if site.qualified & ctx.rules.torch_api.stock_optimizers and self.mode == "stochastic":
                ctx.report("BFM061", site.call, fixed=False, variant="stock", optimizer=ctx.code(site.call.func))

    def _autocast_regions(self, model, calls) -> tuple[list, list]:
        """Where ``model``'s forward pass and loss can go under autocast: ``(regions, problems)``,
        regions as ``(block, first, last)`` statements to wrap, problems as ``(code, node,
        variant, fields)`` of the findings for the calls that cannot be wrapped (planned nothing
        yet; the messages are the catalogue's templates)."""
        ctx = self.ctx
        if not calls:
            return [], [("BFM021", model, None, {"model": ctx.code(model)})]
        regions, problems = [], []
        for call in calls:
            first = call.statement
            block = ctx.block_of(first) if first is not None else None
            if block is None:
                problems.append(("BFM030", call.call, None, {}))
                continue
            body = list(block.body)
            last = first
            for stmt in call.loss_statements:
                if ctx.block_of(stmt) is block and ctx.index_in_block(block, stmt) > ctx.index_in_block(block, last):
                    last = stmt
            region = body[ctx.index_in_block(block, first) : ctx.index_in_block(block, last) + 1]
            if any(_steps_or_backward(s) for s in region):
                problems.append(("BFM030", call.call, "step_between", {}))
                continue
            regions.append((block, first, last))
        return regions, problems

    def _autocast(self, regions) -> None:
        starts: dict[int, set[int]] = {}  # per block, the first statements wrapped (a block may hold thousands)
        for block, first, last in regions:
            ranges = self.plan.wraps.setdefault(id(block), [])
            wrapped = starts.get(id(block))
            if wrapped is None:
                wrapped = starts[id(block)] = {id(a) for a, _ in ranges}
            if id(first) not in wrapped:
                wrapped.add(id(first))
                ranges.append((first, last))


def _render(conditions: list[Condition]) -> str:
    return _guard_code(conditions)


def _guard_code(conditions: list[Condition]) -> str:
    """``a and not (b)``: the conjunction of the conditions, as source."""
    module = cst.Module(body=[])
    parts = []
    for c in conditions:
        code = module.code_for_node(c.expr)
        atomic = isinstance(c.expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript))
        if c.negated:
            parts.append(f"not {code}" if atomic else f"not ({code})")
        else:
            parts.append(code if atomic or len(conditions) == 1 else f"({code})")
    return " and ".join(parts)


def _read_expression(ctx: FileContext, string: cst.SimpleString) -> cst.BaseExpression | None:
    """The whole read a variable-name literal belongs to: ``os.environ.get(X, ...)``,
    ``os.getenv(X)``, ``os.environ[X]``, or a one-operator ``X in os.environ``."""
    parent = ctx.parent(string)
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        return call if isinstance(call, cst.Call) and call.args[0] is parent else None
    if isinstance(parent, cst.Comparison):
        return parent if len(parent.comparisons) == 1 and parent.left is string else None
    if isinstance(parent, cst.Index):
        subscript = ctx.parent(ctx.parent(parent))
        return subscript if isinstance(subscript, cst.Subscript) else None
    return None


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
        if ctx.qualified_names(func) & {"numpy", "np"} or any(q.startswith("numpy.") for q in ctx.qualified_names(func)):
            return True
        expr = func.value if isinstance(func, cst.Attribute) else getattr(expr, "value", None)
    return False


def _negate(code: str) -> str:
    """``not x`` / ``not (a and b)``: the complement of the condition ``code``, as source."""
    atomic = cst.parse_expression(code)
    if isinstance(atomic, cst.UnaryOperation) and isinstance(atomic.operator, cst.Not):
        return cst.Module(body=[]).code_for_node(atomic.expression)
    if isinstance(atomic, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
        return f"not {code}"
    return f"not ({code})"


def _evaluable_at(ctx: FileContext, condition: cst.BaseExpression, where: cst.CSTNode) -> bool:
    """Whether every name ``condition`` reads denotes the same binding at ``where`` (libcst
    ScopeProvider), so the condition can be evaluated there."""
    for name in findall(condition, m.Name()):
        parent = ctx.parent(name)
        if isinstance(parent, cst.Attribute) and parent.attr is name:
            continue
        here, there = ctx.scopes.get(name), ctx.scopes.get(where)
        if here is None or there is None:
            return False
        ours = {id(a) for a in here[name.value]}
        if not ours or ours != {id(a) for a in there[name.value]}:
            return False
    return True


def _has_calls(expr: cst.BaseExpression) -> bool:
    return bool(findall(expr, m.Call()))


def _module_binds(ctx: FileContext, name: str) -> bool:
    """Whether ``name`` is bound at module level (``import torch`` anywhere at the top level)."""
    scope = ctx.scopes.get(ctx.module)
    return scope is not None and any(a.scope is scope for a in scope.assignments[name])


def _steps_or_backward(stmt: cst.CSTNode) -> bool:
    return bool(
        findall(stmt, m.Call(func=m.Attribute(attr=m.Name("backward") | m.Name("step") | m.Name("optimizer_step"))))
    )


def _add_float32_dtype(call: cst.Call) -> cst.Call:
    return _append_keyword(call, "dtype", snippets.attr("torch.float32"))


def _append_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with ``keyword=value`` as its last argument. After an explicit trailing comma
    (a call written one argument per line) the new argument takes that comma and the one before
    it the separator of the line above, so it lands on a line of its own, indented alike."""
    args = list(call.args)
    new = cst.Arg(value=value, keyword=cst.Name(keyword), equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    elif args:
        trailing = args[-1].comma
        separator = args[-2].comma if len(args) > 1 else cst.MaybeSentinel.DEFAULT
        if not isinstance(separator, cst.Comma):
            separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        elif isinstance(separator.whitespace_after, cst.ParenthesizedWhitespace):  # the line break and indent, not a comment
            ws = separator.whitespace_after
            separator = separator.with_changes(whitespace_after=ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[]))
        args[-1] = args[-1].with_changes(comma=separator)
        new = new.with_changes(comma=trailing)
    args.append(new)
    return call.with_changes(args=args)


def _wrap_master_weights(func: cst.BaseExpression, guard: cst.BaseExpression | None) -> cst.BaseExpression:
    return _choose(cst.Call(func=cst.Name(snippets.MASTER_WEIGHTS_FACTORY), args=[cst.Arg(func)]), func, guard)


def _choose(new: cst.BaseExpression, old: cst.BaseExpression, guard: cst.BaseExpression | None) -> cst.BaseExpression:
    """``new``, or ``(new if guard else old)`` when the migration is under the script's condition."""
    if guard is None:
        return new
    choice = cst.IfExp(test=guard.deep_clone(), body=new, orelse=old.deep_clone())
    return choice.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _add_keywords(call: cst.Call, added, guard: cst.BaseExpression | None) -> cst.Call:
    """``call`` with ``keyword=value`` arguments appended (``added``: (keyword, value, value
    when the guard is false) source triples), as :func:`_add_float32_dtype` appends its own."""
    for keyword, value, otherwise in added:
        expr = _choose(cst.parse_expression(value), cst.parse_expression(otherwise), guard)
        call = _append_keyword(call, keyword, expr)
    return call
