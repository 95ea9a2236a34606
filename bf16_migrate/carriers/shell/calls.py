"""Shell functions and expansions in launch lines: a function's body starts Python at each call
(``run() { python3 "$@"; }; XLA_USE_BF16=1 run train.py``), and a command whose words expand
variables is read through them (:mod:`.expand`) before it is called unresolved.
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from ...command_lines import Command, read_command
from ..model import Launch, Target
from .context import Contexts
from .expand import Expander
from .parsed import Functions, ParsedFragment, ShellSource


def inside_function(functions: Functions, node: tree_sitter.Node, name: str) -> bool:
    """Whether ``node`` lies in the body of the script's function ``name``."""
    fn = functions.definitions[name]
    return fn.start_byte <= node.start_byte < fn.end_byte


def enclosing_function(node: tree_sitter.Node, contexts: Contexts | None = None) -> tree_sitter.Node | None:
    """The ``function_definition`` node around ``node``, or None (``contexts``: found through its
    cache, :meth:`.context.Contexts.function_of`, as the walk of a whole fragment asks)."""
    if contexts is not None:
        return contexts.function_of(node)
    anc = node.parent
    while anc is not None:
        if anc.type == "function_definition":
            return anc
        anc = anc.parent
    return None


def forwards_arguments(
    source: ShellSource, node: tree_sitter.Node, word_nodes, contexts: Contexts | None = None
) -> bool:
    """A command of a function body whose words hold ``"$@"``, ``$*`` or ``$1``...: what
    it starts depends on each call's arguments (bash(1), "Special Parameters")."""
    if enclosing_function(node, contexts) is None:
        return False
    for w in word_nodes:
        stack = [w]
        while stack:
            n = stack.pop()
            if n.type in ("simple_expansion", "expansion") and _is_positional(source, n):
                return True
            stack.extend(n.children)
    return False


def _is_positional(source: ShellSource, expansion: tree_sitter.Node) -> bool:
    """Whether an expansion reads the positional parameters: ``$@``, ``$*``, ``$1``..."""
    var = next((c for c in expansion.named_children if c.type in ("variable_name", "special_variable_name")), None)
    if var is None:
        return False
    name = source.t(var)
    return name in ("@", "*") or (name.isdigit() and name != "0")


def expanded(expander: Expander, word_nodes, node, positional=None) -> Command | None:
    """The command read through its expansions (:mod:`.expand`): the script every
    expansion starts, or a problem naming what stays computed; ``None`` when no expansion
    starts Python."""
    expansions = expander.words(word_nodes, node, positional)
    if expansions is None:
        return None
    reads = [(read_command(e.words), e) for e in expansions]
    launching = [(r, e) for r, e in reads if r.python or r.target is not None]
    if not launching:
        return None
    resolved = {r.target for r, _ in launching if r.problem is None and r.target is not None}
    out = Command(python=any(r.python for r, _ in launching))
    if len(resolved) > 1:
        out.problem = (
            "it starts a different script depending on "
            + ", ".join(f"${n}" for n in sorted({n for _, e in launching for n in e.computed} or {"its variables"}))
            + f" ({', '.join(sorted(t[1] for t in resolved))})"
        )
        return out
    unresolved = [(r, e) for r, e in launching if r.problem is not None or r.target is None]
    if resolved and not unresolved:
        out.target = next(iter(resolved))
        out.args = next(r.args for r, _ in launching if r.target == out.target)
        return out
    r, e = unresolved[0]
    computed = ", ".join(describe_computed(n, line) for n, line in sorted(e.first_unknown().items()))
    out.target = r.target
    out.problem = (r.problem or "no training script found") + (
        f"; computed at run time: {computed}" if computed else ""
    )
    return out


MAX_CALL_COMMANDS = 4096
"""Commands of function bodies read to follow one call, nested calls included. Functions that
call each other many times over (``f2() { f1; f1; ...; }``) would otherwise be read once per path,
exponentially many; past this, what the call starts is not guessed: its launch is unresolved and a
setting in force there is kept (BFM111)."""


class _TooManyCalls(Exception):
    """Following one call read more than :data:`MAX_CALL_COMMANDS` commands."""


@dataclass
class CallLaunch:
    """What following a function call found: a ``launch`` at the call (the command node
    ``call``) reached by the settings ``entries`` made along the way, or, with ``launch`` None,
    the launch ``inner`` (an index of the body's own launch) reached by ``entries`` too."""

    call: tree_sitter.Node
    entries: list[int]
    launch: Launch | None = None
    inner: int | None = None


def follow_calls(parsed: ParsedFragment, expander: Expander) -> list[CallLaunch]:
    """Each call of a function defined in the script (``parsed.function_calls``): the commands
    of its body that forward the call's arguments (``python3 "$@"``, ``run_test "$@"``, through
    further functions) are launches at the call, reached by the prefix settings along the way
    (``XLA_USE_BF16=1 run_test "$@"``); a launch of the body itself is reached by the call's
    prefix settings. Returns them in the order found, each launch once."""
    out: list[CallLaunch] = []
    source = parsed.source
    for fc in parsed.function_calls:
        call = fc.node
        if enclosing_function(call) is not None and any(forwards_arguments(source, call, [a]) for a in fc.arguments):
            continue  # a forwarding call inside a function: followed from the outer calls
        positional = expander.words(fc.arguments, call)
        if positional is None:
            continue
        found: list = []
        line, col = source.at(call.start_byte)
        text = source.t(call).split("\n", 1)[0].strip().rstrip("\\").rstrip()
        prefix = list(parsed.prefix_entries.get(call.id, []))
        try:
            _launches_of(parsed, expander, fc.name, positional, prefix, found, depth=0, budget=[MAX_CALL_COMMANDS])
        except _TooManyCalls:
            problem = (
                f"following `{fc.name}` through the functions it calls reads more than {MAX_CALL_COMMANDS} commands "
                "(functions that call each other many times over): what it starts is not guessed"
            )
            out.append(CallLaunch(call, prefix, Launch(line, col, text[:100], (Target.SCRIPT, "?"), problem)))
            continue
        seen: set = set()
        for cmd, entries, inner in found:
            key = (id(cmd) if cmd is None else (cmd.target, tuple(cmd.args), cmd.problem), tuple(entries), id(inner))
            if key in seen:
                continue  # the same launch reached along another path of calls
            seen.add(key)
            if cmd is None:  # a launch of the body itself: the call's prefix settings reach it
                out.append(CallLaunch(call, entries, inner=inner))
                continue
            launch = Launch(line, col, text[:100], cmd.target, cmd.problem, args=list(cmd.args))
            out.append(CallLaunch(call, entries, launch))
    return out


def _launches_of(
    parsed: ParsedFragment,
    expander: Expander,
    name: str,
    positional,
    entries: list[int],
    found: list,
    depth: int,
    budget: list[int],
) -> None:
    """The launches function ``name``'s body starts for a call with ``positional`` words
    (``None``: the caller's own arguments), appended to ``found``; through nested calls, to depth 8.
    ``budget``: the commands left to read (:data:`MAX_CALL_COMMANDS`); raises
    :class:`_TooManyCalls` past it."""
    if depth > 8:
        return
    source, functions = parsed.source, parsed.functions.definitions
    body = functions[name]
    stack = [body]
    while stack:
        n = stack.pop()
        if n.type == "function_definition" and n.id != body.id:
            continue
        if n.type != "command":
            stack.extend(n.children)
            continue
        budget[0] -= 1
        if budget[0] < 0:
            raise _TooManyCalls
        nm = n.child_by_field_name("name")
        words = ([nm] if nm is not None else []) + list(n.children_by_field_name("argument"))
        callee = source.t(nm) if nm is not None else None
        calls_another = callee is not None and callee in functions and callee != name
        here = entries + parsed.prefix_entries.get(n.id, [])
        if not forwards_arguments(source, n, words):
            if n.id in parsed.launch_of_node and entries:
                found.append((None, entries, parsed.launch_of_node[n.id]))
            if calls_another and entries:
                assert callee is not None
                _launches_of(parsed, expander, callee, None, here, found, depth + 1, budget)
            stack.extend(n.children)
            continue
        if calls_another:
            assert callee is not None
            inner = expander.words(words[1:], n, positional)
            if inner is not None:
                _launches_of(parsed, expander, callee, inner, here, found, depth + 1, budget)
            continue
        cmd = expanded(expander, words, n, positional)
        if cmd is not None:
            found.append((cmd, here, n))


def describe_computed(name: str, line: int) -> str:
    """How a computed piece of a launch line is named in a message."""
    shown = name if name.startswith(("$", "`")) else f"${name}"
    if line:
        return f"{shown} (set at line {line})" if not name.startswith(("$", "`")) else f"{shown} (line {line})"
    return (
        f"{shown} (from the environment)"
        if not name.isdigit() and name not in ("@", "*")
        else f"{shown} (the script's arguments)"
    )
