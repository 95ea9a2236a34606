"""Frameworks that own the precision setting (``rules/frameworks.toml``: Lightning, Accelerate,
Hugging Face ``TrainingArguments``): a legacy switch in their scripts becomes the framework's own
setting, which the codemod reports rather than writes (BFM055).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from ..rules import FrameworkRule
from .apply import EditPlan
from .context import FileContext
from .env_writes import LegacyWrite
from .outcome import Refusal


def find_framework(ctx: FileContext) -> tuple[FrameworkRule, cst.Call] | None:
    """The first use of a framework object that owns precision, with its rule: a
    construction (``TrainingArguments(...)``) or the class handed over to be built
    (``HfArgumentParser((ModelArguments, TrainingArguments))``, the shape of the Hugging
    Face example scripts)."""
    for call in ctx.nodes(cst.Call):
        names = ctx.qualified_names(call.func)
        for rule in ctx.rules.frameworks:
            if names & rule.qualified and (
                rule.owns_with is None
                or any(a.keyword is not None and a.keyword.value == rule.owns_with for a in call.args)
            ):
                return rule, call
    for call in ctx.nodes(cst.Call):
        for arg in call.args:
            values = arg.value.elements if isinstance(arg.value, (cst.Tuple, cst.List)) else [arg.value]
            for v in values:
                v = v.value if isinstance(v, cst.BaseElement) else v
                if not isinstance(v, (cst.Name, cst.Attribute)):
                    continue
                names = ctx.qualified_names(v)
                for rule in ctx.rules.frameworks:
                    if names & rule.qualified and rule.owns_with is None:
                        return rule, call
    return None


def framework_flag_hack(ctx: FileContext, w: LegacyWrite) -> cst.If | None:
    """``if args.bf16: args.bf16 = False; os.environ[...] = "1"``: the framework's bf16
    flag traded for the legacy variable (seen in the Neuron HF examples of aws-neuron-samples). Undoing the
    trade is safe: the block only moves the setting. Returns the ``if`` to remove."""
    block = ctx.parent(w.statement)
    owner = ctx.parent(block)
    if not (
        isinstance(block, cst.IndentedBlock)
        and isinstance(owner, cst.If)
        and owner.orelse is None
        and isinstance(owner.test, cst.Attribute)
    ):
        return None
    flag = ctx.code(owner.test)
    others = [st for st in block.body if st is not w.statement]
    for st in others:
        assign = st.body[0] if isinstance(st, cst.SimpleStatementLine) and len(st.body) == 1 else None
        if not (
            isinstance(assign, cst.Assign)
            and len(assign.targets) == 1
            and ctx.code(assign.targets[0].target) == flag
            and m.matches(assign.value, m.Name("False"))
        ):
            return None
    return owner if others and isinstance(ctx.parent(owner), (cst.IndentedBlock, cst.Module)) else None


def report_framework_launched(ctx: FileContext, external: list[str], rule: FrameworkRule, call: cst.Call) -> None:
    """A launcher sets the variable for a script whose precision a framework owns: the
    switch must become the framework's setting, not a model cast (Neuron's migration guide
    leaves precision to the framework's own flag; optimum-neuron's tutorials pass
    ``--bf16``). Reported; the launcher keeps the switch unless it passes the flag."""
    variables = ", ".join(external)
    flag = f" (on the command line: `{rule.launch_flag}`)" if rule.launch_flag else ""
    ctx.outcome.refuse(
        Refusal.FRAMEWORK,
        ctx.report(
            "BFM055",
            call,
            fixed=False,
            variant="launcher",
            variables=variables,
            framework=rule.name,
            call=ctx.code(call.func),
            line=ctx.pos(call)[0],
            setting=rule.setting,
            flag=flag,
            advice=rule.advice,
        ),
    )


def report_framework_writes(
    ctx: FileContext, plan: EditPlan, rule: FrameworkRule, call: cst.Call, writes: list[LegacyWrite]
) -> None:
    """The file's own writes in a script whose precision ``rule``'s framework owns (first used
    at ``call``): each is reported as the framework's setting to use (BFM055), and the Hugging
    Face trade of the framework's flag for the variable (:func:`framework_flag_hack`) is undone."""
    for w in writes:
        hack = framework_flag_hack(ctx, w) if rule.key == "hf-trainer" else None
        if hack is not None:
            plan.remove.add(id(hack))
            ctx.report(
                "BFM055",
                w.key,
                fixed=True,
                variant="trade_undone",
                variable=w.variable,
                framework=rule.name,
                flag=ctx.code(hack.test),
                advice=rule.advice,
            )
        else:
            ctx.outcome.refuse(
                Refusal.FRAMEWORK,
                ctx.report(
                    "BFM055",
                    w.key,
                    fixed=False,
                    variable=w.variable,
                    framework=rule.name,
                    call=ctx.code(call.func),
                    line=ctx.pos(call)[0],
                    setting=rule.setting,
                    advice=rule.advice,
                ),
            )
