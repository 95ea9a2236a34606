"""The code of ``python -c CODE`` as the script it is, and back into the form it is written in.

Inline code is often one line of statements joined by ``;`` (``import torch, torch_xla; m = ...;
o = torch.optim.SGD(m.parameters(), lr=0.1); ...``). The codemod places its changes between
statement lines (``model.to(torch.bfloat16)`` before the line that builds the optimizer), so such
a line is first split into one statement per line (:func:`as_script`: Python reads ``a; b`` as
``a`` then ``b``, python(1) and the language reference, "Simple statements"), migrated, and, where
the launcher holds the code in one line (a notebook's ``!`` line, a Dockerfile instruction), joined
back with ``; `` when every statement is a simple one (:func:`one_line`).
"""

from __future__ import annotations

import libcst as cst

__all__ = ["as_script", "one_line"]


def as_script(code: str) -> str:
    """``code`` with every line of several simple statements split into one per line, at the same
    indentation; ``code`` itself when it has none or does not parse."""
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError:
        return code
    if not any(isinstance(line, cst.SimpleStatementLine) and len(line.body) > 1 for line in _lines(module)):
        return code
    return module.visit(_Split()).code


def one_line(code: str) -> str | None:
    """``code`` as one line: its statements joined with ``; `` when all of them are simple ones
    with no comment (``a = 1; b = 2``); None when it cannot be (a ``for``, a ``def``, a comment)."""
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError:
        return None
    parts: list[str] = []
    for line in module.body:
        if not isinstance(line, cst.SimpleStatementLine) or line.trailing_whitespace.comment is not None:
            return None
        if any(empty.comment is not None for empty in line.leading_lines):
            return None
        parts.extend(
            module.code_for_node(small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)) for small in line.body
        )
    return "; ".join(part.strip() for part in parts) if parts else None


def _lines(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class _Collect(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            found.append(node)

    module.visit(_Collect())
    return found


class _Split(cst.CSTTransformer):
    """Each line of several simple statements becomes one line per statement."""

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.FlattenSentinel[cst.SimpleStatementLine]:
        if len(updated_node.body) < 2:
            return updated_node
        lines = [
            cst.SimpleStatementLine(
                body=[small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)],
                leading_lines=updated_node.leading_lines if index == 0 else [],
                trailing_whitespace=updated_node.trailing_whitespace
                if index == len(updated_node.body) - 1
                else cst.TrailingWhitespace(),
            )
            for index, small in enumerate(updated_node.body)
        ]
        return cst.FlattenSentinel(lines)
