"""The Python codemod: one parse per file, then collect facts, plan the edits, apply them.

This package knows nothing of files: it maps source text to source text plus diagnostics.
Every legacy variable named in a string literal gets a diagnostic: the writes and reads the
planner handles (:mod:`.precision`), every other mention (:mod:`.string_mentions`).
It never imports torch (the rewrite path must start fast, e.g. as a pre-commit hook).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import libcst as cst
from libcst.metadata import MetadataWrapper

from ..diagnostics import Diagnostic
from ..rules import DEFAULT_MODE, MODES, REFERENCE, STOCHASTIC_ROUNDING_VAR, Mode, load_rules, mode_named
from . import (
    _matchers,  # noqa: F401  (first: the codemod's modules import libcst.matchers)
    snippets,
)
from .apply import (
    EditPlan,
    apply_plan,
    blank_footer_out,
    form_feeds_out,
    import_where_added,
    restore_untouched_lines,
    source_columns,
)
from .bindings import module_binds
from .changes import GuardDoesNotTravel
from .commented_magics import report_commented_magics
from .context import FileContext, gc_paused
from .guard import CodemodError, ParseError, check_output, check_python, run_deep
from .outcome import LAUNCH_REFUSALS, SCRIPT_REFUSALS, Outcome, Refusal
from .precision import Planner
from .shebang_env import ShebangSetting, rewrite_shebang, shebang_settings
from .string_mentions import report_string_mentions
from .test_or_script import is_test_module
from .tree_facts import module_facts
from .tree_types import FactoryChange, ModelHandoff, TreeFacts, TreeModule

__all__ = [
    "CodemodError",
    "FactoryChange",
    "LAUNCH_REFUSALS",
    "MigrationResult",
    "ModelHandoff",
    "MODES",
    "Outcome",
    "ParseError",
    "REFERENCE",
    "Refusal",
    "SCRIPT_REFUSALS",
    "TreeFacts",
    "migrate_source",
    "module_facts_of",
]


@dataclass
class MigrationResult:
    """The migrated source (``code``, a str; identical to the input when nothing changed) and
    the diagnostics found, in source order."""

    code: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    legacy_env: dict[str, str] = field(default_factory=dict)
    """The legacy settings in force for the script (its own writes, a launcher's), when they
    were migrated unconditionally: what the modules of the tree it imports ran under."""
    own_gate: str | None = None
    """When the script has its own precision code under a flag, the condition the bf16 changes
    were put under (``not flags.enable_pt_autocast``): runs without the legacy setting that take
    the script's own path stay off bf16."""
    framework: object = None
    """For a script launched with a legacy setting whose precision a framework owns, that
    framework's :class:`~bf16_migrate.rules.FrameworkRule` (the launcher must use its flag)."""
    helpers: list[str] = field(default_factory=list)
    """With ``helpers_module``: the helper functions the migrated code imports from that module
    (which must then exist beside the script: :func:`.snippets.helpers_module_source`)."""
    outcome: Outcome = field(default_factory=Outcome)
    """What the migration did (took the change, or why not): what the launcher plan, the
    project and verify act on (:mod:`.outcome`); ``diagnostics`` only tell the user."""
    launch_flag: str | None = None
    """amp mode, for a script launched with a legacy setting whose own autocast is switched by
    a command-line flag (``--enable_pt_autocast``): that flag, which its launchers must pass
    where they set the variable (the script itself is not changed)."""
    factory_changes: list[FactoryChange] = field(default_factory=list)
    """What the migrated script asks of the optimizer factories of its tree (``tree``): the
    modules must be migrated with them (``migrate_source(..., factory_changes=...)``) in the
    same change, or the script's migration is incomplete (:mod:`bf16_migrate.tree_modules`)."""
    switched: dict[str, str] = field(default_factory=dict)
    """The legacy settings whose mode change the script took, under a condition or not
    (``legacy_env`` is the unconditional case): the modules of the tree it imports get the audit
    of their model code for them (``audited_under``), whatever the condition."""
    loss_code: list[str] = field(default_factory=list)
    """The qualified names of the imported functions and classes the script's training step applies
    as its loss (``losses.nt_xent``): the modules of the tree defining them get those audited
    (``migrate_source(..., loss_code=...)``, :mod:`bf16_migrate.tree_modules`)."""
    handoffs: list[ModelHandoff] = field(default_factory=list)
    """amp: the functions of imported modules the script hands its model to (``predict(model, x)``): the modules
    of the tree defining them put those functions' forward passes under autocast (``migrate_source(...,
    handoffs=...)``, :mod:`bf16_migrate.tree_modules`)."""
    script_change: str | None = None
    """What the script got when it is not its mode's ``script_change`` (torch-xla's FSDP given its
    own ``compute_dtype`` instead of a model cast): the words a launcher's finding uses."""

    @property
    def unfixed(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if not d.fixed]


def migrate_source(
    source: str,
    mode: str | Mode = DEFAULT_MODE,
    path: str = "<string>",
    launched_with: Mapping[str, str] | None = None,
    fp32_optimizer_state: bool = False,
    imported_under: Mapping[str, str] | None = None,
    helpers_module: str | None = None,
    tree: TreeFacts | None = None,
    factory_changes: tuple[FactoryChange, ...] | None = None,
    audited_under: Mapping[str, str] | None = None,
    loss_code: tuple[str, ...] | None = None,
    importers_migrated: bool = False,
    launches_migrated: Mapping[str, str] | None = None,
    handoffs: tuple[ModelHandoff, ...] | None = None,
) -> MigrationResult:
    """Migrate one Python source text off the legacy bf16 variables.

    ``mode`` is a :class:`~bf16_migrate.rules.Mode` or the name of one (:data:`MODES`, from
    ``rules/modes.toml``), or :data:`REFERENCE` (remove the legacy writes and add only what an FP32
    run needs to run at all, float64 inputs made float32: the FP32 run ``verify`` compares amp with).
    Raises :class:`ParseError` when ``source`` is not valid Python for CPython (at CPython's line and
    column), :class:`CodemodError` (a ParseError) when it is but cannot be
    migrated (nested beyond what libcst can walk, a bug), ``ValueError`` for an
    unknown mode. The output always re-parses (checked here before it is returned).

    ``launched_with`` names legacy variables a launcher sets for this script (a shell
    ``export``, ``verify --legacy-env``): the script gets the mode's code change (model cast and
    input casts, or autocast) even though it never names them; stochastic rounding is left to
    the launcher's own setting. ``fp32_optimizer_state``: optimizers defined in the file
    upcast their gradients and keep their state in FP32 (Neuron's migration guide).

    ``imported_under`` names legacy settings in force for a script that imports this file as a
    module of the same tree: the file gets what the switch meant for its code (reads of the
    variables resolved to the legacy value, the ``.double()`` idiom under XLA_DOWNCAST_BF16,
    ``--fp32-optimizer-state`` for its optimizer classes) but no model cast of its own.
    ``MigrationResult.legacy_env`` is what was in force for a migrated script (to pass on to the
    modules it imports); empty when nothing was, or only under a condition.

    ``audited_under`` names legacy settings for which a script that imports this file took the
    mode's change under a condition (``if args.bf16: os.environ[...] = "1"``): what the switch
    meant for the file's code depends on that condition, so only the audit of its model and
    optimizer classes applies (their tensors follow the dtype they meet, which is right on either
    branch: :mod:`.model_code`). ``MigrationResult.switched`` is what a migrated script passes on.

    ``helpers_module`` (a dotted module name): the helper functions the mode needs
    (``with_fp32_master_weights``, ``floating_to_bf16``...) are imported from that module
    (``from <helpers_module> import ...``, named in ``MigrationResult.helpers``) instead of
    being written into the script; the caller writes the module.

    ``tree``: what the modules of the script's tree it imports offer (optimizer factories and
    optimizer classes, :func:`.tree_facts.module_facts`): a model whose optimizer a factory
    builds is found and cast before the call, and a tree's optimizer class takes FP32 master
    weights as a stock one. ``MigrationResult.factory_changes`` then says what the modules must
    do; ``factory_changes`` given to the migration of such a module carries it out.

    ``importers_migrated``: with ``imported_under``, every script that imports this module was
    migrated under its settings (:mod:`bf16_migrate.env_modules` checked them all), so its own
    module-level writes of the switch go (:meth:`.precision.Planner._set_for_importers`); without
    it they stay, since a script that imports it unmigrated would lose the switch.

    ``loss_code``: for a module of the tree, the names of its functions and classes that the scripts
    importing it apply as their loss (``MigrationResult.loss_code`` of those scripts, the module's
    name taken off): with ``imported_under`` or ``audited_under`` they are audited as the loss code
    of a step (:mod:`.loss_reach`).

    ``handoffs``: for a module of the tree, its functions the scripts importing it hand their model to
    (``MigrationResult.handoffs`` of those scripts, named here by their own names): with ``imported_under`` in
    amp, their forward passes of it go under autocast (:func:`.autocast.handoff_regions`).

    ``launches_migrated``: the scripts this file starts in a process of its own with legacy settings
    in the environment it hands them (``MigrationResult.outcome.launches``), each as written -> its
    path, that took the change under those settings (:func:`bf16_migrate.env_modules.migrate_launched`):
    the settings that reach only them go (:func:`.launch_env.plan_launches`).
    """
    chosen = mode if isinstance(mode, Mode) else mode_named(mode)
    with gc_paused():  # the collector's scans were a fifth of a large file's time
        check_python(source, path)
        if helpers_module is not None and not all(part.isidentifier() for part in helpers_module.split(".")):
            raise ValueError(f"helpers_module {helpers_module!r} is not a dotted Python module name")
        return run_deep(
            path,
            lambda: _migrate(
                source,
                chosen,
                path,
                launched_with,
                fp32_optimizer_state,
                imported_under,
                helpers_module,
                tree,
                tuple(factory_changes or ()),
                audited_under,
                tuple(loss_code or ()),
                importers_migrated,
                launches_migrated,
                tuple(handoffs or ()),
            ),
        )


def _migrate(
    source,
    mode,
    path,
    launched_with,
    fp32_optimizer_state,
    imported_under,
    helpers_module=None,
    tree=None,
    factory_changes=(),
    audited_under=None,
    loss_code=(),
    importers_migrated=False,
    launches_migrated=None,
    handoffs=(),
) -> MigrationResult:
    parsed = blank_footer_out(
        form_feeds_out(source)
    )  # what libcst can model: no form feed in indentation, no spaces in the footer's blank lines
    try:
        module = cst.parse_module(parsed)
    except cst.ParserSyntaxError as exc:
        # CPython has parsed it (check_python): what fails here is libcst's own tokenizer
        raise CodemodError(_libcst_limit(path, source, exc)) from None
    rules = load_rules()
    shebang = shebang_settings(source, rules)
    if any(setting.on for setting in shebang):  # `#!/usr/bin/env -S XLA_USE_BF16=1 python3`: its own launcher
        own = {setting.variable: setting.value for setting in shebang if setting.on}
        launched_with = {**own, **(launched_with or {})}
    test_module = is_test_module(source, path, launched=bool(launched_with))

    def plan_file(stuck: int | None) -> tuple[FileContext, Planner, EditPlan]:
        ctx = FileContext(
            path,
            MetadataWrapper(module if stuck is None else cst.parse_module(parsed), unsafe_skip_copy=True),
            rules,
            tree=tree,
            test_module=test_module,
            source=parsed,
        )
        planner = Planner(
            ctx,
            mode,
            launched_with,
            fp32_optimizer_state,
            imported_under,
            factory_changes,
            audited_under,
            loss_code,
            handoffs,
            guard_stuck_at=stuck,
            importers_migrated=importers_migrated,
            launches_migrated=launches_migrated,
        )
        return ctx, planner, planner.run()

    try:
        ctx, planner, plan = plan_file(None)
    except GuardDoesNotTravel as stuck:  # rare: planned again from scratch, the guard refused
        ctx, planner, plan = plan_file(stuck.line)
    helpers = _import_helpers(plan, helpers_module) if helpers_module else []
    shebang_changed = bool(shebang) and not ctx.outcome.refusals
    if shebang_changed:
        _report_shebang(ctx, shebang, mode)
    report_string_mentions(ctx)  # after the planner: the literals its diagnostics point into are its own
    report_commented_magics(ctx, parsed)  # a Jupytext notebook's magics are comments to Python
    new = apply_plan(ctx.module, plan)
    if new is not ctx.module and "torch" not in plan.imports and not module_binds(ctx, "torch"):
        new = import_where_added(ctx.module, new, "torch")
    if new is ctx.module:
        # nothing planned: the module as parsed, which libcst renders back byte for byte (its
        # round trip), so restore_untouched_lines would give ``source`` back after rendering
        # the whole module (a tenth of a large file's time)
        code = source
    else:
        code = restore_untouched_lines(source, parsed, new, ctx.module_code)  # what libcst cannot render back
    if shebang_changed:
        code = rewrite_shebang(code, shebang, mode)
    if code != source:
        # CPython's parser judges the output (a CodemodError if it fails). A second libcst parse
        # cost a fifth of a large file's time; that the output parses again with libcst is what
        # idempotence needs, and the property tests migrate every output twice.
        check_output(code, path)
    placed = dict(zip(map(id, ctx.diagnostics), source_columns(source, parsed, ctx.diagnostics)))
    diagnostics = sorted(placed.values(), key=lambda d: (d.line, d.col, d.code))
    refusals = [(why, placed[id(d)]) for why, d in ctx.outcome.refusals]
    # in the order of the findings (the first is the one a launcher's message quotes)
    refusals.sort(key=lambda pair: (pair[1].line, pair[1].col, pair[1].code))
    outcome = replace(
        ctx.outcome,
        refusals=refusals,
        through_flag=[placed[id(d)] for d in ctx.outcome.through_flag],
        factory_changes_made=[placed[id(d)] for d in ctx.outcome.factory_changes_made],
    )
    return MigrationResult(
        code,
        diagnostics,
        dict(planner.in_force),
        planner.own_gate,
        planner.framework,
        helpers,
        outcome,
        launch_flag=planner.launch_flag,
        factory_changes=list(planner.factory_changes),
        switched=planner.switched,
        loss_code=list(planner.loss_imports) if planner.switched else [],
        handoffs=list(planner.handoffs) if planner.switched else [],
        script_change=planner.script_change,
    )


def _report_shebang(ctx: FileContext, shebang: list[ShebangSetting], mode: Mode) -> None:
    """The findings for the legacy settings of the script's ``#!`` line, which
    :func:`.shebang_env.rewrite_shebang` replaces or removes (the change they stood for made)."""
    stochastic = mode.stochastic_rounding and f"{STOCHASTIC_ROUNDING_VAR}=" not in (ctx.source or "").split("\n", 1)[0]
    first_on = next((s for s in shebang if s.on), None)
    for setting in shebang:
        col = setting.start + 1
        if not setting.on:
            ctx.report_at("BFM002", 1, col, fixed=True, variable=setting.variable, value=setting.value)
            continue
        change = f"replaced by {STOCHASTIC_ROUNDING_VAR}=1" if stochastic and setting is first_on else "removed"
        ctx.report_at("BFM001", 1, col, fixed=True, variant="shebang", variable=setting.variable, change=change)


_SPACE_BEFORE_TAB = re.compile(r"^[ \t]* \t", re.M)


def _libcst_limit(path: str, source: str, exc: cst.ParserSyntaxError) -> str:
    """The one-line error for a file CPython parses and libcst does not. The case met in
    practice (found by the property tests): indentation with a space before a tab inside a
    tab-indented block, which libcst's native tokenizer rejects ("no matching outer block for
    dedent"; open upstream as Instagram/LibCST#829 and #951). The line named is the first such
    indentation when there is one, else libcst's own position."""
    mixed = _SPACE_BEFORE_TAB.search(source)
    if mixed is not None:
        line = source.count("\n", 0, mixed.start()) + 1
        return (
            f"{path}:{line}:1: cannot migrate: its indentation mixes spaces and tabs in one line, which Python reads "
            f"but libcst cannot ({exc.message}; Instagram/LibCST#829): re-indent the file with spaces only (or tabs "
            "only), then run again"
        )
    return (
        f"{path}:{exc.raw_line}:{exc.raw_column + 1}: cannot migrate: Python reads this file but libcst cannot "
        f"({exc.message})"
    )


def _import_helpers(plan, module: str) -> list[str]:
    """Replace the helper definitions of ``plan.prelude`` by one ``from <module> import ...``;
    returns the names imported."""
    names = [
        st.name.value
        for st in plan.prelude
        if isinstance(st, cst.FunctionDef) and st.name.value in snippets.HELPER_SOURCES
    ]
    if names:
        rest = [st for st in plan.prelude if not (isinstance(st, cst.FunctionDef) and st.name.value in names)]
        plan.prelude[:] = [snippets.import_helpers(module, names), *rest]
    return names


def module_facts_of(source: str, path: str, name: str) -> TreeModule:
    """What the module ``source`` (the file ``path``) offers a script that imports it as
    ``name``: its optimizer factories and optimizer classes (:func:`.tree_facts.module_facts`).
    Raises :class:`ParseError` when it does not parse (CPython's judgement, or libcst's)."""
    check_python(source, path)

    def facts() -> TreeModule:
        parsed = blank_footer_out(form_feeds_out(source))
        try:
            module = cst.parse_module(parsed)
        except cst.ParserSyntaxError as exc:
            raise CodemodError(_libcst_limit(path, source, exc)) from None
        return module_facts(FileContext(path, MetadataWrapper(module, unsafe_skip_copy=True), load_rules()), name)

    with gc_paused():
        return run_deep(path, facts)
