"""A Python expression that builds a shell command: its text as far as the file tells it, and
the Python script the command launches.

The text is a list of pieces, each static (a literal, a name the file binds once to a string)
or not (any other expression, shown as ``{code}``). Strings are built the ways Python builds
them: implicit concatenation, ``+``, f-strings (without conversion or format spec),
``str.format`` (docs.python.org "Format String Syntax": ``{}``, ``{0}``, ``{name}``), ``%``
(printf-style formatting: ``%s`` / ``%d`` / ``%r`` consume the operands in order, ``%%`` is a
percent sign) and ``sep.join([...])``. The words of the static text are split as POSIX
``sh`` does (:mod:`shlex`, control operators apart); a word holding a non-static piece is
``None``, as :func:`bf16_migrate.command_lines.read_command` expects.
"""

from __future__ import annotations

import re
import shlex
import string

import libcst as cst
import libcst.matchers as m

from ..command_lines import NAME_VALUE, read_command
from .context import FileContext

Piece = tuple[str | None, str]
"""(static text or None, source code shown when it is not static)."""

SHELL_OPERATORS = {"&&", "||", ";", "|", "&", ";;", "|&"}
_MAX_HOPS = 4  # names followed to what they are bound to
_PRINTF = re.compile(r"%(?:\((\w+)\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
_HOLE = "\ue000"  # a private-use character marking a non-static piece in the shlex input


def pieces(ctx: FileContext, expr: cst.CSTNode, hops: int = 0) -> list[Piece]:
    """The pieces of the string ``expr`` evaluates to (see the module docstring)."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return [(value if isinstance(value, str) else value.decode("utf-8", "replace"), "")]
    if isinstance(expr, cst.ConcatenatedString) or (
        isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add)
    ):
        return pieces(ctx, expr.left, hops) + pieces(ctx, expr.right, hops)
    if isinstance(expr, cst.FormattedString):
        return [piece for part in expr.parts for piece in _fstring_part(ctx, part, hops)]
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        return _printf(ctx, expr, hops) or _opaque(ctx, expr)
    if isinstance(expr, cst.Call) and m.matches(expr, m.Call(func=m.Attribute(attr=m.Name("format")))):
        return _str_format(ctx, expr, hops) or _opaque(ctx, expr)
    if isinstance(expr, cst.Call) and m.matches(
        expr, m.Call(func=m.Attribute(attr=m.Name("join")), args=[m.Arg(keyword=None)])
    ):
        return _join(ctx, expr, hops) or _opaque(ctx, expr)
    if isinstance(expr, cst.Name) and hops < _MAX_HOPS:
        bound = bound_once(ctx, expr)
        if bound is not None:
            return pieces(ctx, bound, hops + 1)
    return _opaque(ctx, expr)


def shown(parts: list[Piece], limit: int = 60) -> str:
    """The command on one line, non-static pieces as ``{code}``, cut after ``limit`` characters."""
    text = "".join(p if p is not None else f"{{{code}}}" for p, code in parts).replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + "..."


def bound_once(ctx: FileContext, name: cst.Name) -> cst.BaseExpression | None:
    """What ``name`` is bound to where it is used, when that is one binding ``NAME = value``
    (in its scope or an enclosing one)."""
    scope = ctx.scopes.get(name)
    if scope is None:
        return None
    assignments = list(scope[name.value])
    if len(assignments) != 1 or not isinstance(getattr(assignments[0], "node", None), cst.Name):
        return None
    target = ctx.parent(assignments[0].node)
    statement = ctx.parent(target) if isinstance(target, cst.AssignTarget) else None
    return statement.value if isinstance(statement, cst.Assign) and len(statement.targets) == 1 else None


def launched_script(parts: list[Piece], variable: str) -> str | None:
    """The Python script (``-m module``) the command starts where ``variable`` is in force: the
    first launch at or after the command of the list that names it; None when it cannot be told."""
    commands = command_words(parts)
    first = next((k for k, words in enumerate(commands) if any(w is not None and variable in w for w in words)), 0)
    for words in commands[first:]:
        while words and words[0] is not None and NAME_VALUE.match(words[0]):
            words = words[1:]  # read_command takes the words after the leading assignments
        target = read_command(words).target
        if target is not None:
            return f"-m {target[1]}" if target[0] == "module" else target[1]
    return None


def command_words(parts: list[Piece]) -> list[list[str | None]]:
    """The words of each command of the text (split at ``&&``, ``;``, ``|``...); a word that
    holds a non-static piece is None, except an option with its value attached
    (``--nproc_per_node={n}``: an option whatever the value, kept as ``--nproc_per_node=*``).
    Empty when shlex cannot split the text (an unmatched quote)."""
    text = "".join(p if p is not None else f"{_HOLE}{k}{_HOLE}" for k, (p, _) in enumerate(parts))
    # a line continuation (backslash, newline) is removed before the words are split (POSIX
    # Shell Command Language 2.2.1); shlex would keep the newline as a word of its own
    text = text.replace("\\\n", "")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:
        return []
    commands: list[list[str | None]] = [[]]
    for token in tokens:
        if token in SHELL_OPERATORS:
            commands.append([])
        else:
            commands[-1].append(_word(token))
    return [c for c in commands if c]


def _word(token: str) -> str | None:
    static = token.split(_HOLE, 1)[0]
    if _HOLE not in token:
        return token
    return static + "*" if static.startswith("-") and "=" in static else None


def _opaque(ctx: FileContext, expr: cst.CSTNode) -> list[Piece]:
    return [(None, ctx.code(expr))]


def _static(ctx: FileContext, expr: cst.CSTNode) -> str | None:
    parts = pieces(ctx, expr)
    known = [p for p, _ in parts if p is not None]
    return None if len(known) < len(parts) else "".join(known)


def _fstring_part(ctx: FileContext, part: cst.BaseFormattedStringContent, hops: int) -> list[Piece]:
    if isinstance(part, cst.FormattedStringText):
        return [(part.value.replace("{{", "{").replace("}}", "}"), "")]
    assert isinstance(part, cst.FormattedStringExpression), "an f-string part is text or an expression"
    if part.conversion is None and part.format_spec is None:
        return pieces(ctx, part.expression, hops)
    return _opaque(ctx, part.expression)


def _str_format(ctx: FileContext, call: cst.Call, hops: int) -> list[Piece] | None:
    """``"...{}...".format(a, k=b)``; None when the template is not static."""
    assert isinstance(call.func, cst.Attribute), "pieces() matched `<template>.format(...)`"
    template = _static(ctx, call.func.value)
    if template is None:
        return None
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    named = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    out: list[Piece] = []
    auto = 0
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return None
    for text, field, spec, conversion in fields:
        out.append((text, ""))
        if field is None:
            continue
        if field == "":
            field, auto = str(auto), auto + 1
        value = positional[int(field)] if field.isdigit() and int(field) < len(positional) else named.get(field)
        out.extend(pieces(ctx, value, hops) if value is not None and not spec and not conversion else [(None, field)])
    return out


def _printf(ctx: FileContext, expr: cst.BinaryOperation, hops: int) -> list[Piece] | None:
    """``"... %s ..." % (a, b)``; None when the template is not static."""
    template = _static(ctx, expr.left)
    if template is None:
        return None
    right = expr.right
    operands = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
    out: list[Piece] = []
    pos = 0
    for match in _PRINTF.finditer(template):
        out.append((template[pos : match.start()], ""))
        pos = match.end()
        if match.group(2) == "%":
            out.append(("%", ""))
        elif match.group(1) is None and operands and match.group(2) in "sdi":
            out.extend(pieces(ctx, operands.pop(0), hops))
        else:
            out.append((None, match.group(0)))
            operands = operands[1:]
    out.append((template[pos:], ""))
    return out


def _join(ctx: FileContext, call: cst.Call, hops: int) -> list[Piece] | None:
    """``sep.join([a, b, ...])`` over a literal list or tuple; None otherwise."""
    assert isinstance(call.func, cst.Attribute), "pieces() matched `<sep>.join(...)`"
    sep = _static(ctx, call.func.value)
    items = call.args[0].value
    if (
        sep is None
        or not isinstance(items, (cst.List, cst.Tuple))
        or any(isinstance(e, cst.StarredElement) for e in items.elements)
    ):
        return None
    out: list[Piece] = []
    for k, element in enumerate(items.elements):
        if k:
            out.append((sep, ""))
        out.extend(pieces(ctx, element.value, hops))
    return out
