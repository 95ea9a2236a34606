"""Shell code that never runs: a function nothing calls, a branch whose condition is a constant.

A setting there never took effect (the legacy run did not have it), so it must neither be
migrated nor make the scripts after it migrate (BFM092). Only what can be told for sure from the
file itself counts as dead:

* a function none of whose uses can be seen: its name appears nowhere else in the file (not as a
  command, nor as a word or string another command could run it by: ``trap setup EXIT``,
  ``export -f setup``, ``bash -c setup``, ``case`` dispatch by name).
* the ``then`` branch of ``if C`` (and the right side of ``C && ...``) when ``C`` is always false,
  the ``else`` branch (and the right side of ``C || ...``) when it is always true, where ``C`` is
  one of ``true``, ``false``, ``:`` or a ``[ ... ]``, ``[[ ... ]]`` or ``test`` comparison of two
  literal words (``=``, ``==``, ``!=``, ``-eq``, ``-ne``, ``-lt``, ``-le``, ``-gt``, ``-ge``) or
  ``-n``/``-z`` of a literal word (bash(1), "CONDITIONAL EXPRESSIONS"; test(1)).

A function called only in a way the file does not spell (a computed command name, ``"$@"``, or
another file that sources this one) is taken as dead too: that is the safe side, since a setting
found dead is kept as it is and nothing is migrated for it (the message says "by name").
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping

import tree_sitter

from .model import Blocker
from .shell_words import static_value

_COMPARE: dict[str, Callable[[str, str], bool]] = {
    "=": operator.eq,
    "==": operator.eq,
    "!=": operator.ne,
}
_NUMERIC: dict[str, Callable[[int, int], bool]] = {
    "-eq": operator.eq,
    "-ne": operator.ne,
    "-lt": operator.lt,
    "-le": operator.le,
    "-gt": operator.gt,
    "-ge": operator.ge,
}


def uncalled_functions(
    root: tree_sitter.Node, data: bytes, functions: Mapping[str, tree_sitter.Node], line_of: Callable[[int], int]
) -> dict[str, tuple[Blocker, str]]:
    """The functions of the script that nothing in it calls as a command (``functions``: those
    never called so), each with why a setting inside it is kept and the reason, worded for a
    message: :attr:`Blocker.NEVER_IN_FORCE` when nothing names it (see the module docstring),
    :attr:`Blocker.UNREWRITTEN_FORM` (when it runs cannot be told) when something names it
    without calling it (``trap setup EXIT`` runs it at the end, ``export -f`` in another shell).
    ``line_of(byte)``: the line of the file a byte of ``data`` is on."""
    if not functions:
        return {}
    used: dict[str, int] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            fn_name = node.child_by_field_name("name")
            stack.extend(c for c in node.children if fn_name is None or c.id != fn_name.id)
            continue
        if node.child_count == 0 or node.type in ("word", "string_content", "raw_string"):
            text = data[node.start_byte : node.end_byte].decode("utf-8", "replace")
            for name in functions:
                if name in text:
                    used.setdefault(name, line_of(node.start_byte))
        stack.extend(node.children)
    return {
        name: (
            (
                Blocker.UNREWRITTEN_FORM,
                f"it is set in the function `{name}`, which this script never calls as a command (line "
                f"{used[name]} names it): when it runs, if ever, cannot be told",
            )
            if name in used
            else (
                Blocker.NEVER_IN_FORCE,
                f"it is set in the function `{name}`, which nothing in this script calls by name",
            )
        )
        for name in functions
    }


def dead_branch(anc: tree_sitter.Node, child: tree_sitter.Node, data: bytes) -> str | None:  # noqa: C901
    """Why the part ``child`` of the compound ``anc`` never runs (a branch of ``if``, the body
    of ``while``/``until``, a side of ``&&``/``||`` whose condition is a constant; a ``case``
    item none of whose literal patterns is the literal word; a statement of the script after
    ``exit`` or ``exec COMMAND``), or None when it may run."""
    if anc.type == "program":
        return _after_exit(anc, child, data)
    if anc.type == "while_statement" and child.type == "do_group":
        keyword = anc.children[0].type if anc.children else "while"
        conditions = [c for c in anc.children[1:] if c.type not in (";", "\n", "do_group")]
        value = constant(conditions[0], data) if len(conditions) == 1 else None
        shown = data[conditions[0].start_byte : conditions[0].end_byte].decode("utf-8", "replace") if conditions else ""
        if (keyword == "while" and value is False) or (keyword == "until" and value is True):
            return f"it is in the body of `{keyword} {shown}`, which never runs"
        return None
    if anc.type == "case_statement" and child.type == "case_item":
        return _unmatched_item(anc, child, data)
    if anc.type == "if_statement":
        conditions = []
        for c in anc.children:
            if c.type == "then":
                break
            if c.type not in ("if", ";", "\n"):
                conditions.append(c)
        value = constant(conditions[-1], data) if len(conditions) == 1 else None
        if value is None:
            return None
        in_then = _after(anc, "then", child) and child.type not in ("elif_clause", "else_clause")
        has_elif = any(c.type == "elif_clause" for c in anc.children)
        shown = data[conditions[0].start_byte : conditions[0].end_byte].decode("utf-8", "replace")
        if in_then and value is False:
            return f"it is in the `then` branch of `if {shown}`, which never runs"
        if child.type == "else_clause" and value is True and not has_elif:
            return f"it is in the `else` branch of `if {shown}`, which never runs"
        return None
    if anc.type == "list" and anc.named_child_count == 2 and anc.children and anc.children[0].id != child.id:
        left = anc.children[0]
        value = constant(left, data)
        op = next((c.type for c in anc.children if c.type in ("&&", "||")), None)
        shown = data[left.start_byte : left.end_byte].decode("utf-8", "replace")
        if (op == "&&" and value is False) or (op == "||" and value is True):
            return f"it follows `{shown} {op}`, so it never runs"
    return None


def _after(anc: tree_sitter.Node, keyword: str, child: tree_sitter.Node) -> bool:
    seen = False
    for c in anc.children:
        if c.id == child.id:
            return seen
        if c.type == keyword:
            seen = True
    return False


def constant(node: tree_sitter.Node, data: bytes) -> bool | None:
    """The exit status of a condition as a truth value when it is a constant (see the module
    docstring), else None."""
    if node.type == "command":
        word = _command_word(node, data)
        args = [static_value(a, data) for a in node.children_by_field_name("argument")]
        if word in ("true", ":") and not node.children_by_field_name("redirect"):
            return True
        if word == "false":
            return False
        if word == "test" and None not in args:
            return _compare([a for a in args if a is not None])
        return None
    if node.type == "negated_command" and node.named_child_count == 1:
        negated = constant(node.named_children[0], data)
        return None if negated is None else not negated
    if node.type == "test_command":
        inner = [c for c in node.named_children]
        if len(inner) != 1:
            return None
        expr = inner[0]
        if expr.type == "binary_expression" and expr.named_child_count == 2:
            left, right = expr.named_children
            op = next((c for c in expr.children if not c.is_named), None)
            a, b = static_value(left, data), static_value(right, data)
            if op is None or a is None or b is None:
                return None
            return _compare([a, data[op.start_byte : op.end_byte].decode(), b])
        if expr.type == "unary_expression" and expr.named_child_count == 1:
            op = next((c for c in expr.children if c.type == "test_operator"), None)
            value = static_value(expr.named_children[0], data)
            if op is None or value is None:
                return None
            return _compare([data[op.start_byte : op.end_byte].decode(), value])
    return None


_LITERAL_PATTERN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-/:=,")


def _unmatched_item(case: tree_sitter.Node, item: tree_sitter.Node, data: bytes) -> str | None:
    """Why the ``case`` item ``item`` never runs: the word is a literal and so is every pattern
    of the item, none equal to it (a pattern with any glob or quoting character may match)."""
    value = case.child_by_field_name("value")
    word = static_value(value, data) if value is not None else None
    if word is None:
        return None
    patterns = []
    for c in item.children:
        if c.type == ")":
            break
        if c.type in ("|", "("):
            continue
        text = data[c.start_byte : c.end_byte].decode("utf-8", "replace")
        if not text or not set(text) <= _LITERAL_PATTERN:
            return None
        patterns.append(text)
    if not patterns or word in patterns:
        return None
    return f"it is in the `case` item `{'|'.join(patterns)})`, which `{word}` never matches"


def _after_exit(program: tree_sitter.Node, child: tree_sitter.Node, data: bytes) -> str | None:
    """Why the top-level statement ``child`` never runs: an earlier statement of the script is
    ``exit`` or ``exec COMMAND`` (the shell ends, or becomes the command)."""
    for c in program.children:
        if c.id == child.id:
            return None
        if c.type != "command":
            continue
        word = _command_word(c, data)
        if word == "exit" or (word == "exec" and c.children_by_field_name("argument")):
            line = c.start_point[0] + 1
            return f"it comes after `{word}` at line {line}, which ends the script"
    return None


def _command_word(command: tree_sitter.Node, data: bytes) -> str | None:
    """The static name of a ``command`` node (``command_name`` holds one word), or None."""
    name = command.child_by_field_name("name")
    if name is None:
        return None
    if name.type == "command_name" and name.named_child_count == 1:
        name = name.named_children[0]
    return static_value(name, data)


def _compare(words: list[str]) -> bool | None:
    if len(words) == 3:
        a, op, b = words
        if op in _COMPARE:
            return _COMPARE[op](a, b)
        if op in _NUMERIC:
            try:
                return _NUMERIC[op](int(a), int(b))
            except ValueError:
                return None
    if len(words) == 2 and words[0] in ("-n", "-z"):
        return bool(words[1]) if words[0] == "-n" else not words[1]
    return None


__all__ = ["constant", "dead_branch", "uncalled_functions"]
