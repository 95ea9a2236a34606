"""Apply a planned set of edits to the module in one libcst transformer pass.

Edits are keyed by the identity of the ORIGINAL nodes (collected with metadata), and applied in
``on_leave``: statement-level edits (remove, insert before, wrap a range) only when the enclosing
Module/IndentedBlock is left, so the original and updated bodies still line up index by index.
"""

from __future__ import annotations

import difflib
import io
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from .snippets import autocast_with, in_newline_style


@dataclass
class EditPlan:
    """Everything one file's migration changes.

    * ``remove``: ids of SimpleStatementLines to delete (their comment lines move to the next
      statement; an emptied block gets ``pass``);
    * ``insert_before``: id of a statement -> statements to put right before it;
    * ``insert_after``: id of a statement -> statements to put right after it (in its block, so
      they run only where it ran: the last statement of an ``if`` body keeps them in the body);
    * ``replace``: id of any node -> function(updated node) -> new node;
    * ``drop_elements``: ids of DictElement / Arg nodes to drop from their Dict / Call;
    * ``wraps``: id of a block -> list of (first, last) original statements to put in one
      autocast ``with`` block;
    * ``prelude``: statements to insert after the module's leading imports;
    * ``imports``: modules that must be imported (added with libcst's AddImportsVisitor);
    * ``parent_of``: id of a node of the module -> its parent (``FileContext.parent_of_id``);
      when given, the pass only walks down the nodes that hold an edit.
    """

    remove: set[int] = field(default_factory=set)
    insert_before: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    insert_after: dict[int, list[cst.BaseStatement]] = field(default_factory=dict)
    # the function gets the updated node whose id is the key (an Attribute for an Attribute's
    # id...): typed Any, as a dict cannot tie each key to its node's class
    replace: dict[int, Callable[[Any], cst.CSTNode]] = field(default_factory=dict)
    drop_elements: set[int] = field(default_factory=set)
    wraps: dict[int, list[tuple[cst.BaseStatement, cst.BaseStatement]]] = field(default_factory=dict)
    wrap_guard: cst.BaseExpression | None = None
    prelude: list[cst.BaseStatement] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    parent_of: Callable[[int], cst.CSTNode | None] | None = None

    @property
    def empty(self) -> bool:
        return not (
            self.remove
            or self.insert_before
            or self.insert_after
            or self.replace
            or self.drop_elements
            or self.wraps
            or self.prelude
        )


# what holds no statement-level comment line: an EmptyLine found below one of these is part of
# an expression (a comment line inside parentheses), which goes with the removed code
_NO_STATEMENT_LINES = (
    cst.BaseExpression,
    cst.BaseSmallStatement,
    cst.BaseParenthesizableWhitespace,
    cst.TrailingWhitespace,
    cst.Comment,
)


def comments_within(node: cst.CSTNode, indent: str, default_indent: str) -> list[cst.EmptyLine]:
    """The comment lines of a statement to be removed (its leading lines, and for a compound
    statement those of every statement, clause and block footer inside it), in source order,
    each made to render with its own indentation wherever it is put.

    libcst stores an :class:`~libcst.EmptyLine` relative to its block: ``indent=True`` means
    "the block's indentation, then ``whitespace``" (libcst's "Whitespace" documentation). A
    comment moved to another block (the next statement of an outer block, a block's footer)
    would take that block's indentation, so ``indent`` (the absolute indentation of the block
    ``node`` is in) is written into ``whitespace`` and the flag cleared: the line comes out byte
    for byte as it was."""
    out: list[cst.EmptyLine] = []

    def walk(current: cst.CSTNode, at: str) -> None:
        if isinstance(current, cst.EmptyLine):
            if current.comment is not None:
                out.append(
                    current.with_changes(indent=False, whitespace=cst.SimpleWhitespace(at + current.whitespace.value))
                    if current.indent
                    else current
                )
            return
        if isinstance(current, _NO_STATEMENT_LINES):
            return
        if isinstance(current, cst.IndentedBlock):
            at += default_indent if current.indent is None else current.indent
        for child in current.children:
            walk(child, at)

    walk(node, indent)
    return out


class _Apply(cst.CSTTransformer):
    def __init__(self, plan: EditPlan, module: cst.Module) -> None:
        super().__init__()
        self.module = module
        self.plan = plan
        self.holds_edits = _holding_edits(plan, module)
        self.default_indent = module.default_indent
        self._parents: dict[int, cst.CSTNode] | None = None  # when the plan cannot tell parents

    def _absolute_indent(self, block: cst.CSTNode) -> str:
        """The indentation of the statements of ``block`` (an original Module/IndentedBlock)."""
        parent_of = self.plan.parent_of
        if parent_of is None:
            if self._parents is None:
                self._parents = _parent_map(self.module)
            parent_of = self._parents.get
        parts = []
        node: cst.CSTNode | None = block
        while node is not None:
            if isinstance(node, cst.IndentedBlock):
                parts.append(self.default_indent if node.indent is None else node.indent)
            node = parent_of(id(node))
        return "".join(reversed(parts))

    def on_visit(self, node) -> bool:
        # a libcst pass rebuilds every node it walks: only walk down to the edits (a node
        # with none below it is left as it is, which is what walking it would give back)
        return self.holds_edits is None or id(node) in self.holds_edits

    def on_leave(self, original_node, updated_node):
        plan = self.plan
        fn = plan.replace.get(id(original_node))
        if fn is not None:
            updated_node = self._bracketed(original_node, fn(updated_node))
        if isinstance(original_node, cst.Dict) and isinstance(updated_node, cst.Dict):
            updated_node = self._drop(original_node.elements, updated_node, "elements")
        elif isinstance(original_node, cst.Call) and isinstance(updated_node, cst.Call):
            updated_node = self._drop(original_node.args, updated_node, "args")
        if isinstance(original_node, (cst.Module, cst.IndentedBlock)):
            updated_node = self._rebuild(original_node, updated_node)
        return updated_node

    def _bracketed(self, original: cst.CSTNode, new: cst.CSTNode) -> cst.CSTNode:
        """``new`` (the replacement of ``original``) in parentheses when it is a conditional
        expression (``y.to(torch.bfloat16) if c else y``) put where an operator would bind tighter
        than it: ``out - y`` must become ``out - (y.to(torch.bfloat16) if c else y)``, not the
        conditional of ``out - y.to(...)``. Where it stands alone (an argument, an element, an
        assignment's value, a return) it is left bare."""
        if not isinstance(new, cst.IfExp) or new.lpar or isinstance(original, cst.IfExp):
            return new
        parent_of = self.plan.parent_of
        if parent_of is None:
            if self._parents is None:
                self._parents = _parent_map(self.module)
            parent_of = self._parents.get
        if isinstance(parent_of(id(original)), _ALONE):
            return new
        return new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

    def _drop(self, originals, updated, attr):
        items = getattr(updated, attr)
        if not any(id(old) in self.plan.drop_elements for old in originals):
            return updated
        keep = [new for old, new in zip(originals, items) if id(old) not in self.plan.drop_elements]
        if len(keep) == len(items):
            return updated
        changes: dict[str, object] = {attr: keep}
        if keep and id(originals[-1]) in self.plan.drop_elements:
            closing = getattr(updated, "rbrace", None)
            before = closing.whitespace_before if closing is not None else None
            after = getattr(keep[-1].comma, "whitespace_after", None)
            if (
                closing is not None
                and isinstance(before, cst.ParenthesizedWhitespace)
                and isinstance(after, cst.ParenthesizedWhitespace)
            ):
                # a dict of one entry a line: the last kept entry's own line (its comment) now ends
                # before the brace, the dropped entry's trailing comment goes with it
                changes["rbrace"] = closing.with_changes(
                    whitespace_before=after.with_changes(last_line=before.last_line)
                )
            keep[-1] = keep[-1].with_changes(comma=items[-1].comma)
        return updated.with_changes(**changes)

    def _rebuild(self, original, updated):
        plan = self.plan
        old_body, new_body = list(original.body), list(updated.body)
        wraps = {id(first): last for first, last in plan.wraps.get(id(original), [])}
        out: list[cst.BaseStatement] = []
        carried: list[cst.EmptyLine] = []
        indent: str | None = None
        i = 0
        while i < len(old_body):
            old, new = old_body[i], new_body[i]
            out.extend(plan.insert_before.get(id(old), []))
            if id(old) in plan.remove:
                if indent is None:
                    indent = self._absolute_indent(original)
                carried.extend(comments_within(new, indent, self.default_indent))
                out.extend(plan.insert_after.get(id(old), []))
                i += 1
                continue
            if carried:
                new = new.with_changes(leading_lines=[*carried, *new.leading_lines])
                carried = []
            if id(old) in wraps:
                last = wraps[id(old)]
                j = next(k for k in range(i, len(old_body)) if old_body[k] is last)
                inner = [new, *(plan.insert_after.get(id(old), []) if i < j else [])] + [
                    stmt
                    for k in range(i + 1, j + 1)
                    for stmt in (
                        *plan.insert_before.get(id(old_body[k]), []),
                        new_body[k],
                        *(plan.insert_after.get(id(old_body[k]), []) if k < j else []),
                    )
                ]
                leading = inner[0].leading_lines
                inner[0] = inner[0].with_changes(leading_lines=[])
                block = autocast_with(inner, self.plan.wrap_guard).with_changes(leading_lines=leading)
                if _ends_flow(last):  # the region ends in a return: what goes after it goes right before
                    out.extend(plan.insert_after.get(id(last), []))
                    out.append(block)
                else:
                    out.append(block)
                    out.extend(plan.insert_after.get(id(last), []))
                i = j + 1
                continue
            if _ends_flow(old):  # nothing after a return runs: what goes after it goes right before
                out.extend(plan.insert_after.get(id(old), []))
                out.append(new)
            else:
                out.append(new)
                out.extend(plan.insert_after.get(id(old), []))
            i += 1
        if isinstance(original, cst.Module) and plan.prelude:
            out = _insert_prelude(out, plan.prelude)
        if not out and isinstance(original, cst.IndentedBlock):
            out = [cst.SimpleStatementLine([cst.Pass()], leading_lines=carried)]
            carried = []
        if carried:  # comments above a removed last statement stay, as the block's footer
            return updated.with_changes(body=out, footer=[*carried, *updated.footer])
        return updated.with_changes(body=out)


def _parent_map(module: cst.Module) -> dict[int, cst.CSTNode]:
    parents: dict[int, cst.CSTNode] = {}

    def walk(node: cst.CSTNode) -> None:
        for child in node.children:
            parents[id(child)] = node
            walk(child)

    walk(module)
    return parents


def _holding_edits(plan: EditPlan, module: cst.Module) -> set[int] | None:
    """The ids of the nodes the plan edits and of all their ancestors (None: walk everything,
    when the plan cannot tell parents)."""
    parent_of = plan.parent_of
    if parent_of is None:
        return None
    found = {id(module)}
    keys = [*plan.remove, *plan.insert_before, *plan.insert_after, *plan.replace, *plan.drop_elements, *plan.wraps]
    for key in keys:
        while key not in found:
            found.add(key)
            parent = parent_of(key)
            if parent is None:
                break
            key = id(parent)
    return found


def _insert_prelude(body: list[cst.BaseStatement], prelude: list[cst.BaseStatement]):
    """After the last import of the module's leading section (before the first def/class or
    other compound statement)."""
    position = 0
    for index, stmt in enumerate(body):
        if isinstance(stmt, cst.BaseCompoundStatement) and not isinstance(stmt, (cst.If, cst.Try)):
            break
        if isinstance(stmt, cst.SimpleStatementLine) and any(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
        ):
            position = index + 1
    rest = body[position:]
    if rest and isinstance(prelude[-1], (cst.FunctionDef, cst.ClassDef)):
        # PEP 8: two blank lines after a top-level definition
        first = rest[0]
        assert isinstance(first, (cst.SimpleStatementLine, cst.BaseCompoundStatement)), (
            "a Module's body holds statement lines and compound statements"
        )
        blank = 0
        for line in first.leading_lines:
            if line.comment is not None:
                break
            blank += 1
        if blank < 2:
            rest[0] = first.with_changes(leading_lines=[cst.EmptyLine()] * (2 - blank) + list(first.leading_lines))
    return body[:position] + list(prelude) + rest


def apply_plan(module: cst.Module, plan: EditPlan) -> cst.Module:
    """The module with ``plan`` applied and the needed imports added."""
    if plan.empty:
        return module
    newline = module.default_newline
    if newline != "\n":  # inserted string tokens (the helpers' docstrings) take the file's line end
        plan = replace(
            plan,
            prelude=in_newline_style(plan.prelude, newline),
            insert_before={
                key: in_newline_style(statements, newline) for key, statements in plan.insert_before.items()
            },
            insert_after={key: in_newline_style(statements, newline) for key, statements in plan.insert_after.items()},
        )
    new = module.visit(_Apply(plan, module))
    if plan.imports:
        context = CodemodContext()
        for name in plan.imports:
            AddImportsVisitor.add_needed_import(context, name)
        new = AddImportsVisitor(context).transform_module(new)
    return new


def import_where_added(before: cst.Module, after: cst.Module, name: str) -> cst.Module:
    """``after`` with ``import <name>`` added (libcst's AddImportsVisitor) when it reads the name ``name``
    more often than ``before`` did: an edit wrote ``torch.bfloat16`` or a helper calling ``torch`` into a
    module that binds no ``torch`` at its top (a training loop of the tree that only calls methods of the
    tensors it is handed: a NameError at run time, found by a hunt). The caller asks only of a module that does
    not bind ``name`` (libcst's scopes)."""

    def count(module: cst.Module) -> int:
        return sum(1 for _ in _names(module, name))

    if count(after) <= count(before):
        return after
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, name)
    return AddImportsVisitor(context).transform_module(after)


def _names(module: cst.Module, name: str) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                found.append(node)

    module.visit(Names())
    return found


# libcst does not model a form feed in the indentation of a line: a statement's indentation is
# not stored per statement but rebuilt from its IndentedBlock's ``indent`` (or
# Module.default_indent, taken from the first indented line), so "\fdef f():" renders as
# "def f():", a block whose first line is "\f    x = 1" renders each of its lines with that
# form feed, and its tokenizer, comparing indentation strings, even rejects valid code such as
# "class A:\n\f    x = 1\n    def f(self):\n        pass\n". Python resets the column at a
# form feed (the language reference, "Indentation"), so what precedes the last form feed of
# the leading whitespace does not count: libcst is given each line without it (the lines
# inside a multi-line string token excepted), and the lines the edits leave alone are written
# back as they were.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")
_BEFORE_FORM_FEED = re.compile(r"^[ \t\f]*\f")


def form_feeds_out(source: str) -> str:
    """``source`` with the leading whitespace of each line cut after its last form feed, which
    Python reads as the same code (see the note above); the lines inside a string token (found
    with the standard library's :mod:`tokenize`) are kept. ``source`` itself when it has no
    form feed or does not tokenize (the parser then reports the error)."""
    if "\f" not in source:
        return source
    inside: set[int] = set()  # 0-based indexes of the lines a token continues onto
    try:
        for token in tokenize.generate_tokens(io.StringIO(source, newline="").readline):
            inside.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return source
    out: list[str] = []
    for k, line in enumerate(_LINE.findall(source)):
        if k not in inside:
            cut = _BEFORE_FORM_FEED.sub("", line)
            # a line of only a form feed after an old-Mac line end ("x\r" "\f\n") must not
            # become "\n": joined to the "\r" before it, it would read as one CRLF line end
            # and the lines would no longer pair one for one with ``source``'s
            line = " " + cut if cut.startswith("\n") and out and out[-1].endswith("\r") else cut
        out.append(line)
    return "".join(out)


# libcst loses blank lines in a module's footer (after its last statement) when a line of
# only spaces or tabs follows them: "x = 1\n\n \n" renders as "x = 1\n \n" (libcst 1.x's
# native parser; found by the property tests). Python ignores such lines, so libcst is given
# them empty, and the lines the edits leave alone are written back as they were; a last line
# of only spaces or tabs without a line end is left out and put back after the rendering.
_FOOTER_SPACE = re.compile(r"[ \t]+(?=\r\n|\r|\n|\Z)")


def blank_footer_out(source: str) -> str:
    """``source`` with the lines of only spaces and tabs of its footer (the blank and comment
    lines after the last line of code) emptied, and a last such line without a line end left
    out (:func:`restore_untouched_lines` puts it back); ``source`` itself when its footer has
    none. The lines pair one for one with ``source``'s but for that last one."""
    lines = _LINE.findall(source)
    k = len(lines)
    while k > 0 and (not lines[k - 1].strip(" \t\f\r\n") or lines[k - 1].lstrip(" \t\f").startswith("#")):
        k -= 1
    if not any(_FOOTER_SPACE.match(line) and not line.strip(" \t\r\n") for line in lines[k:]):
        return source
    out = lines[:k]
    for line in lines[k:]:
        if line.strip(" \t\r\n") or not _FOOTER_SPACE.match(line):
            out.append(line)
            continue
        ending = line.lstrip(" \t")
        if not ending:
            continue  # the last line, without a line end: put back by restore_untouched_lines
        # a line end must not join an old-Mac "\r" before it into one CRLF (see form_feeds_out)
        out.append(line if ending.startswith("\n") and out and out[-1].endswith("\r") else ending)
    return "".join(out)


def restore_untouched_lines(
    source: str, parsed: str, new: cst.Module, render: Callable[[cst.Module], str] | None = None
) -> str:
    """The code of ``new`` (the migrated module of ``parsed``, the :func:`form_feeds_out` and
    :func:`blank_footer_out` of ``source``) with every line the edits left alone byte for byte
    as in ``source``: :mod:`difflib` pairs the unchanged lines of ``parsed`` with those of the
    code, and ``parsed`` has the lines of ``source`` one for one (but a last line of spaces
    without a line end, which blank_footer_out leaves out and this puts back).

    Also the last line end of a file with CR (old Mac) line ends: libcst's parser takes a final
    ``\\r`` for no line end (``Module.has_trailing_newline`` is False, libcst's "Nodes"
    documentation), so the rendering would lose it.

    ``render``: what gives a module's code, ``new.code`` by default (the file's
    :meth:`.context.FileContext.module_code`, which renders only the statements the edits made)."""
    if parsed.endswith("\r") and not parsed.endswith("\\\r") and not new.has_trailing_newline:
        new = new.with_changes(has_trailing_newline=True)
    code = new.code if render is None else render(new)
    if parsed == source:
        return code
    original, before, out = _LINE.findall(source), _LINE.findall(parsed), _LINE.findall(code)
    if len(original) == len(before) + 1 and not original[-1].strip(" \t"):  # left out by blank_footer_out
        out.append(original[-1])
        before.append(original[-1])
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, before, out, autojunk=False).get_opcodes():
        if tag == "equal":
            out[j1:j2] = original[i1:i2]
    return "".join(out)


def source_columns(source: str, parsed: str, diagnostics: list) -> list:
    """``diagnostics`` found in ``parsed`` (the :func:`form_feeds_out` of ``source``) with their
    columns counted in ``source``: the lines differ only in their leading whitespace."""
    if parsed == source:
        return list(diagnostics)
    original, before = _LINE.findall(source), _LINE.findall(parsed)
    out = []
    for d in diagnostics:
        if 1 <= d.line <= len(original) and original[d.line - 1] != before[d.line - 1]:
            src, cut = original[d.line - 1], before[d.line - 1]
            removed = len(src) - len(cut)
            if d.col > len(cut) - len(cut.lstrip(" \t\f")):
                d = replace(d, col=d.col + removed)
        out.append(d)
    return out


_ALONE = (
    cst.Arg,
    cst.Element,
    cst.DictElement,
    cst.Assign,
    cst.AnnAssign,
    cst.AugAssign,
    cst.Return,
    cst.Index,
    cst.Expr,
    cst.FormattedStringExpression,
)
"""Where a conditional expression needs no parentheses: the whole of an argument, an element, an
assignment's value, a return value, a subscript, an expression statement, an f-string field."""

_FLOW_ENDS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def _ends_flow(statement: cst.BaseStatement) -> bool:
    """Whether ``statement`` is a line whose last statement leaves the block (``return``, ``raise``,
    ``continue``, ``break``): a statement put after it would never run, so the plan's statements
    for "right after it" go right before it (the module cast after ``return model.to(device)``: the
    model cast on the host and then moved is bf16 on the device all the same)."""
    return isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[-1], _FLOW_ENDS)
