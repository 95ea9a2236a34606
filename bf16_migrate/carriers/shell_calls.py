"""Shell functions and expansions in launch lines: a function's body starts Python at each call
(``run() { python3 "$@"; }; XLA_USE_BF16=1 run train.py``), and a command whose words expand
variables is read through them (:mod:`.shell_expand`) before it is called unresolved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import tree_sitter

from ..command_lines import Command, read_command
from .model import Analysis, Launch, Target
from .shell_expand import Expander
from .shell_reach import Ctx


class CallingFragment(Protocol):
    """What this module reads of a :class:`~.shell_fragment.ShellFragment`: its functions, the
    calls of them and the prefix settings of each command, its launches, its expander."""

    @property
    def analysis(self) -> Analysis: ...
    @property
    def expander(self) -> Expander: ...
    @property
    def functions(self) -> Mapping[str, tree_sitter.Node]: ...
    @property
    def function_calls(self) -> list: ...
    @property
    def prefix_entries(self) -> Mapping[int, list[int]]: ...
    @property
    def launch_of_node(self) -> Mapping[int, int]: ...
    @property
    def launch_ctx(self) -> dict[int, Ctx]: ...
    @property
    def my_launches(self) -> list[int]: ...
    def t(self, node_or_span) -> str: ...
    def at(self, byte: int) -> tuple[int, int]: ...
    def ctx(self, node) -> Ctx: ...
    def add_launch(self, launch: Launch, entry_ids, node) -> int: ...


def inside_function(frag: CallingFragment, node, name: str) -> bool:
    """Whether ``node`` lies in the body of the script's function ``name``."""
    fn = frag.functions[name]
    return fn.start_byte <= node.start_byte < fn.end_byte


def enclosing_function(frag: CallingFragment, node):
    """The ``function_definition`` node around ``node``, or None."""
    anc = node.parent
    while anc is not None:
        if anc.type == "function_definition":
            return anc
        anc = anc.parent
    return None


def forwards_arguments(frag: CallingFragment, node, word_nodes) -> bool:
    """A command of a function body whose words hold ``"$@"``, ``$*`` or ``$1``...: what
    it starts depends on each call's arguments."""
    if enclosing_function(frag, node) is None:
        return False
    for w in word_nodes:
        stack = [w]
        while stack:
            n = stack.pop()
            if n.type in ("simple_expansion", "expansion"):
                var = next((c for c in n.named_children if c.type in ("variable_name", "special_variable_name")), None)
                if var is not None and (frag.t(var) in ("@", "*") or (frag.t(var).isdigit() and frag.t(var) != "0")):
                    return True
            stack.extend(n.children)
    return False


def expanded(frag: CallingFragment, word_nodes, node, positional=None) -> Command | None:
    """The command read through its expansions (:mod:`.shell_expand`): the script every
    expansion starts, or a problem naming what stays computed; ``None`` when no expansion
    starts Python."""
    expansions = frag.expander.words(word_nodes, node, positional)
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
    computed = ", ".join(_describe(n, line) for n, line in sorted(e.first_unknown().items()))
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


def follow_calls(frag: CallingFragment) -> None:
    """Each call of a function defined in the script: the commands of its body that
    forward the call's arguments (``python3 "$@"``, ``run_test "$@"``, through further
    functions) are launches at the call, reached by the prefix settings along the way
    (``XLA_USE_BF16=1 run_test "$@"``)."""
    for call, name, args in frag.function_calls:
        if enclosing_function(frag, call) is not None and any(forwards_arguments(frag, call, [a]) for a in args):
            continue  # a forwarding call inside a function: followed from the outer calls
        positional = frag.expander.words(args, call)
        if positional is None:
            continue
        found: list = []
        line, col = frag.at(call.start_byte)
        text = frag.t(call).split("\n", 1)[0].strip().rstrip("\\").rstrip()
        prefix = list(frag.prefix_entries.get(call.id, []))
        try:
            _launches_of(frag, name, positional, prefix, found, depth=0, budget=[MAX_CALL_COMMANDS])
        except _TooManyCalls:
            problem = (
                f"following `{name}` through the functions it calls reads more than {MAX_CALL_COMMANDS} commands "
                "(functions that call each other many times over): what it starts is not guessed"
            )
            frag.add_launch(Launch(line, col, text[:100], (Target.SCRIPT, "?"), problem), prefix, call)
            continue
        seen: set = set()
        for cmd, entries, inner in found:
            key = (id(cmd) if cmd is None else (cmd.target, tuple(cmd.args), cmd.problem), tuple(entries), id(inner))
            if key in seen:
                continue  # the same launch reached along another path of calls
            seen.add(key)
            if cmd is None:  # a launch of the body itself: the call's prefix settings reach it
                for eid in entries:
                    frag.analysis.launches[inner].reached_by.setdefault(eid, True)
                continue
            frag.add_launch(Launch(line, col, text[:100], cmd.target, cmd.problem, args=list(cmd.args)), entries, call)


def _launches_of(
    frag: CallingFragment, name: str, positional, entries: list[int], found: list, depth: int, budget: list[int]
) -> None:
    """The launches function ``name``'s body starts for a call with ``positional`` words
    (``None``: the caller's own arguments), appended to ``found``; through nested calls, to depth 8.
    ``budget``: the commands left to read (:data:`MAX_CALL_COMMANDS`); raises
    :class:`_TooManyCalls` past it."""
    if depth > 8:
        return
    body = frag.functions[name]
    stack = [body]
    while stack:
        n = stack.pop()
        if n.type == "function_definition" and n.id != body.id:
            continue
        if n.type == "command":
            budget[0] -= 1
            if budget[0] < 0:
                raise _TooManyCalls
            nm = n.child_by_field_name("name")
            words = ([nm] if nm is not None else []) + list(n.children_by_field_name("argument"))
            if not forwards_arguments(frag, n, words):
                if n.id in frag.launch_of_node and entries:
                    found.append((None, entries, frag.launch_of_node[n.id]))
                callee = frag.t(nm) if nm is not None else None
                if callee is not None and callee in frag.functions and callee != name and entries:
                    _launches_of(
                        frag, callee, None, entries + frag.prefix_entries.get(n.id, []), found, depth + 1, budget
                    )
                stack.extend(n.children)
                continue
            here = entries + frag.prefix_entries.get(n.id, [])
            callee = frag.t(nm) if nm is not None else None
            if callee is not None and callee in frag.functions and callee != name:
                inner = frag.expander.words(words[1:], n, positional)
                if inner is not None:
                    _launches_of(frag, callee, inner, here, found, depth + 1, budget)
                continue
            cmd = expanded(frag, words, n, positional)
            if cmd is not None:
                found.append((cmd, here, n))
            continue
        stack.extend(n.children)


def _describe(name: str, line: int) -> str:
    """How a computed piece of a launch line is named in a message."""
    shown = name if name.startswith(("$", "`")) else f"${name}"
    if line:
        return f"{shown} (set at line {line})" if not name.startswith(("$", "`")) else f"{shown} (line {line})"
    return (
        f"{shown} (from the environment)"
        if not name.isdigit() and name not in ("@", "*")
        else f"{shown} (the script's arguments)"
    )
