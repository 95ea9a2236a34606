"""Legacy variables named inside Python string literals that the rest of the codemod does not
handle: each such mention gets one unfixed diagnostic, so no mention goes unreported.

:mod:`.env_writes` and :mod:`.precision` handle a literal that *is* a variable's name (an
``os.environ`` key, a read, a test helper's argument) and ``os.system("export X=1")``. A name
inside any other literal (``"MALLOC_ARENA_MAX=64 XLA_USE_BF16=1"``, a docstring, the text of an
f-string, a part of a concatenation) is found here, and so is a name the planner leaves
unreported (a read in a file whose precision a framework owns): a literal of
:func:`.env_writes.collect_writes` that a diagnostic of the planner points into is the planner's.
Comments are not strings, and are never reported: a comment sets nothing.

Each mention is classified, the first rule that holds wins:

* BFM091, documentation: a string statement (a docstring, PEP 257: the first statement of a
  module, class or function; any other bare string statement, PEP 258's attribute docstrings)
  or the help text of a command-line parser (``help=`` of argparse's ``add_argument``, click,
  typer; argparse's ``description=``/``epilog=``/``usage=``; the third argument of absl's
  ``flags.DEFINE_*``). One diagnostic per line naming a variable;
* BFM052, in test code (:mod:`.in_tests`): tests are not rewritten;
* BFM133, run as a shell command: the literal, a name bound to it in the file, or a string built
  from either (f-string, ``+``, ``%``, ``.format``, ``" ".join``) is the command of
  ``subprocess.run/call/check_call/check_output/Popen(..., shell=True)``, ``os.system``,
  ``os.popen``, ``subprocess.getoutput/getstatusoutput`` (docs.python.org: ``os.system``
  "Execute the command (a string) in a subshell"; subprocess, "Frequently Used Arguments" for
  ``shell=True`` and "Legacy Shell Invocation Functions") or IPython's
  ``get_ipython().system/getoutput`` (a notebook exported as a script). :mod:`.shell_strings` reads the
  command's text and the script it launches, named in the message;
* BFM131 otherwise.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from functools import cache

import libcst as cst
import libcst.matchers as m

from ..mentions import named
from .cells import cell_of
from .context import FileContext
from .env_writes import collect_writes
from .in_tests import in_test
from .outcome import Refusal
from .shell_strings import launched_script, pieces, shown
from .snippets import EMITTED_MARK

ALWAYS_SHELL = {"os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput"}
SHELL_IF_ASKED = {
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.Popen",
}
# IPython's InteractiveShell.system / getoutput run a shell command; a notebook exported as a
# script (nbconvert --to script) has its `!cmd` lines as `get_ipython().system('cmd')`
IPYTHON_SHELL = m.Attribute(value=m.Call(func=m.Name("get_ipython")), attr=m.Name("system") | m.Name("getoutput"))
COMMAND_KEYWORDS = ("args", "cmd", "command")
# argparse.ArgumentParser(description=, epilog=, usage=) and its sub-parsers / groups
PARSER_TEXT_KEYWORDS = ("description", "epilog", "usage")
PARSER_FACTORIES = ("ArgumentParser", "add_parser", "add_argument_group", "add_mutually_exclusive_group")
_MAX_HOPS = 4  # names followed from a literal to the call that runs it


@dataclass(frozen=True)
class StringMention:
    """One legacy variable named at (``line``, ``col``) inside ``literal`` (a SimpleString or
    the FormattedStringText of an f-string); ``setting`` is ``X=VALUE`` when the text sets it."""

    variable: str
    line: int
    col: int
    literal: cst.SimpleString | cst.FormattedStringText
    setting: str | None


@cache
def _pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    """A whole-word name in a literal's source text; ``\\n`` / ``\\t``... before it count as
    a separator (``"a=1\\nXLA_USE_BF16=1"``)."""
    alternatives = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    return re.compile(rf"(?:(?<![A-Za-z0-9_])|(?<=\\[abfnrtv]))({alternatives})(?![A-Za-z0-9_])(=[^\s'\"`;&|)]*)?")


def find_string_mentions(ctx: FileContext) -> list[StringMention]:
    """Every legacy variable named in a string literal of the file, in source order."""
    pattern = _pattern(tuple(sorted(ctx.rules.variables)))
    found = []
    literals: list[cst.SimpleString | cst.FormattedStringText] = [
        *ctx.nodes(cst.SimpleString),
        *ctx.nodes(cst.FormattedStringText),
    ]
    for literal in literals:
        raw = literal.value
        start_line, start_column = ctx.span(literal)[0]
        for match in pattern.finditer(raw):
            offset = match.start(1)
            newlines = raw.count("\n", 0, offset)
            line = start_line + newlines
            col = start_column + offset + 1 if not newlines else offset - raw.rfind("\n", 0, offset)
            setting = match.group(1) + match.group(2) if match.group(2) else None
            found.append(StringMention(match.group(1), line, col, literal, setting))
    return sorted(found, key=lambda s: (s.line, s.col))


def report_string_mentions(ctx: FileContext) -> None:
    """Report the mentions in string literals that are not the planner's (call it after the
    planner has reported)."""
    planners = _planners_literals(ctx)
    docs: dict[tuple[int, int], list[StringMention]] = {}
    for mention in find_string_mentions(ctx):
        if id(mention.literal) in planners:
            continue
        top = _built_string(ctx, mention.literal)
        if _is_documentation(ctx, top):
            if EMITTED_MARK not in mention.literal.value:  # not the docstring of a helper the codemod wrote
                docs.setdefault((mention.line, id(mention.literal)), []).append(mention)
        elif in_test(ctx, mention.literal):
            ctx.outcome.refuse(
                Refusal.TEST,
                ctx.report_at(
                    "BFM052", mention.line, mention.col, fixed=False, variant="string", variable=mention.variable
                ),
            )
        else:
            call = _shell_call(ctx, mention.literal)
            if call is not None:
                _report_shell_string(ctx, mention, call)
            else:
                ctx.report_at(
                    "BFM131",
                    mention.line,
                    mention.col,
                    fixed=False,
                    variable=mention.variable,
                    where="in a string bf16-migrate does not rewrite",
                )
    for mentions in docs.values():  # one per line of documentation
        ctx.report_at(
            "BFM091", mentions[0].line, mentions[0].col, fixed=False, variables=named([x.variable for x in mentions])
        )


def _planners_literals(ctx: FileContext) -> set[int]:
    """The literals :mod:`.env_writes` finds (the keys of writes, the strings that are a
    variable's name) that a diagnostic of the planner points into: the planner reported them
    (a read it leaves unreported is reported here)."""
    writes, mentions = collect_writes(ctx, set(ctx.rules.variables))
    points = sorted((d.line, d.col - 1) for d in ctx.diagnostics)  # sorted: one search per literal
    found = set()
    for node in [w.key for w in writes] + [x.node for x in mentions]:
        start, end = ctx.span(node)
        first = bisect_left(points, start)  # the first point in or after the literal
        if first < len(points) and points[first] < end:
            found.add(id(node))
    return found


# -- the string an expression is part of --------------------------------------------------------


def _built_string(ctx: FileContext, node: cst.CSTNode) -> cst.CSTNode:
    """The outermost expression built from ``node`` by string operations: an implicit
    concatenation, an f-string it is interpolated in, ``+`` / ``%``, ``.format(...)`` (as the
    template or an argument), ``sep.join([...])``."""
    while True:
        parent = ctx.parent(node)
        if isinstance(parent, (cst.ConcatenatedString, cst.FormattedString)):
            node = parent
        elif isinstance(parent, cst.FormattedStringExpression):
            node = _up(ctx, parent)
        elif isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, (cst.Add, cst.Modulo)):
            node = parent
        elif isinstance(parent, cst.Element) and _is_operand_sequence(ctx, ctx.parent(parent)):
            node = _up(ctx, parent)
        elif isinstance(parent, cst.Attribute) and parent.attr.value in ("format", "join") and _calls(ctx, parent):
            node = _up(ctx, parent)
        elif isinstance(parent, cst.Arg) and _is_string_method_call(ctx.parent(parent)):
            node = _up(ctx, parent)
        else:
            return node


def _up(ctx: FileContext, node: cst.CSTNode) -> cst.CSTNode:
    """The parent of ``node``, which has one (an f-string's expression, a sequence's element,
    a call's attribute or argument)."""
    parent = ctx.parent(node)
    assert parent is not None, f"a {type(node).__name__} inside the module has a parent"
    return parent


def _calls(ctx: FileContext, attribute: cst.Attribute) -> bool:
    call = ctx.parent(attribute)
    return isinstance(call, cst.Call) and call.func is attribute


def _is_string_method_call(call: cst.CSTNode | None) -> bool:
    return call is not None and m.matches(call, m.Call(func=m.Attribute(attr=m.Name("format") | m.Name("join"))))


def _is_operand_sequence(ctx: FileContext, seq: cst.CSTNode | None) -> bool:
    """A tuple / list that is the right side of ``%`` or the argument of ``.join``."""
    if not isinstance(seq, (cst.Tuple, cst.List)):
        return False
    parent = ctx.parent(seq)
    if isinstance(parent, cst.BinaryOperation):
        return isinstance(parent.operator, cst.Modulo) and parent.right is seq
    return isinstance(parent, cst.Arg) and _is_string_method_call(ctx.parent(parent))


def _is_documentation(ctx: FileContext, top: cst.CSTNode) -> bool:
    """A string statement (a docstring) or a help text."""
    return isinstance(ctx.parent(top), cst.Expr) or _is_help_text(ctx, top)


def _is_help_text(ctx: FileContext, top: cst.CSTNode) -> bool:
    """The help text of a command-line option or parser (see the module docstring)."""
    arg = ctx.parent(top)
    call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
    if not isinstance(arg, cst.Arg) or not isinstance(call, cst.Call):
        return False
    keyword = arg.keyword.value if arg.keyword is not None else None
    func = (
        call.func.attr.value
        if isinstance(call.func, cst.Attribute)
        else call.func.value
        if isinstance(call.func, cst.Name)
        else ""
    )
    if keyword == "help":
        return True
    if keyword in PARSER_TEXT_KEYWORDS and func in PARSER_FACTORIES:
        return True
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return func.startswith("DEFINE_") and len(positional) > 2 and positional[2] is arg


# -- shell commands -----------------------------------------------------------------------------


def _shell_call(ctx: FileContext, node: cst.CSTNode, hops: int = 0) -> cst.Call | None:
    """The call that runs the string ``node`` is part of as a shell command, following names
    bound to it in the file (``opts = "..."; subprocess.run(f"{opts} torchrun ...", shell=True)``)."""
    top = _built_string(ctx, node)
    parent = ctx.parent(top)
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        return (
            call if isinstance(call, cst.Call) and _command_arg(call) is parent and _runs_in_shell(ctx, call) else None
        )
    if hops >= _MAX_HOPS:
        return None
    for use in _uses_of_name_bound_to(ctx, top):
        found = _shell_call(ctx, use, hops + 1)
        if found is not None:
            return found
    return None


def _uses_of_name_bound_to(ctx: FileContext, value: cst.CSTNode) -> list[cst.CSTNode]:
    """The uses of the name ``value`` is assigned to (``NAME = value``, ``NAME += value``)."""
    statement = ctx.parent(value)
    if isinstance(statement, cst.Assign):
        targets = [t.target for t in statement.targets]
    elif isinstance(statement, (cst.AnnAssign, cst.AugAssign)) and statement.value is value:
        targets = [statement.target]
    else:
        return []
    uses: list[cst.CSTNode] = []
    for target in targets:
        if not isinstance(target, cst.Name):
            continue
        scope = ctx.scopes.get(target)
        if scope is None:
            continue
        for assignment in scope.assignments[target.value]:
            if getattr(assignment, "node", None) is target:
                uses.extend(access.node for access in assignment.references if access.node is not target)
    return uses


def _command_arg(call: cst.Call) -> cst.Arg | None:
    for arg in call.args:
        if (arg.keyword is None and not arg.star) or (
            arg.keyword is not None and arg.keyword.value in COMMAND_KEYWORDS
        ):
            return arg
    return None


def _runs_in_shell(ctx: FileContext, call: cst.Call) -> bool:
    names = ctx.qualified_names(call.func)
    if names & ALWAYS_SHELL or m.matches(call.func, IPYTHON_SHELL):
        return True
    shell = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "shell"), None)
    return bool(names & SHELL_IF_ASKED) and shell is not None and m.matches(shell, m.Name("True"))


def _report_shell_string(ctx: FileContext, mention: StringMention, call: cst.Call) -> None:
    """BFM133 for ``mention`` in the command string of ``call``, naming the command and, when
    its words can be read, the script it launches."""
    command = _command_arg(call)
    assert command is not None, "_shell_call found the call by its command argument"
    parts = pieces(ctx, command.value)
    script = launched_script(parts, mention.variable)
    fields = {
        "subject": f"{mention.setting} is set" if mention.setting else f"{mention.variable} is named",
        "where": _line_label(ctx, ctx.pos(call)[0]),
        "command": shown(parts),
    }
    if script:
        ctx.report_at("BFM133", mention.line, mention.col, fixed=False, script=script, **fields)
    else:
        ctx.report_at("BFM133", mention.line, mention.col, fixed=False, variant="script_unknown", **fields)


def _line_label(ctx: FileContext, line: int) -> str:
    """``line N``; in the code cells of a notebook joined into one module by
    :mod:`bf16_migrate.carriers.notebook` (a marker line opens each cell), ``cellC line L`` as
    the notebook's diagnostics name them."""
    cell = cell_of(ctx.module.code, line)
    return f"line {line}" if cell is None else f"cell{cell[0]} line {cell[1]}"
