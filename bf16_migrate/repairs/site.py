"""What the repair units share (:mod:`bf16_migrate.repairs`): the kinds, a place to repair
(:class:`RepairSite`, its :class:`Span`), a unit's :class:`Example`, the traced expression found
in the parsed text (:class:`Located`, :func:`locate`, :func:`relocate`) and the small edits the
units make with libcst. A floor below the units and the package that registers them."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor, GatherImportsVisitor


class RepairKind(str, enum.Enum):
    """The kinds of repair, one unit each (see the module docstring)."""

    CAST_OPERAND = "cast_operand"
    HOST_FLOAT = "host_float"
    SAVE_FLOAT = "save_float"
    CAST_COPY = "cast_copy"
    CAST_MODULE = "cast_module"


@dataclass(frozen=True)
class Span:
    """A traced expression in a text: 1-based ``line``/``end_line``, 0-based character columns
    ``col``/``end_col`` (end exclusive), and ``anchor``, the text of line ``line`` (without its
    newline) when the trace ran, to find it again when lines moved."""

    line: int
    col: int
    end_line: int
    end_col: int
    anchor: str = ""


@dataclass(frozen=True)
class RepairSite:
    """One place to repair in the file ``path`` (the user's file the repair is written to).

    ``kind``: the unit; ``span``: the traced expression in the text to change; ``names``: the
    names bound to the f32 operand there (``cast_operand``); ``partner``: a name of its bf16
    partner, whose dtype the cast takes (None: ``torch.bfloat16``); ``op``: the traced operation.
    ``finding``: ``(code, line, col)`` of the finding it repairs, in the user's file as reported.
    ``group``: sites of one finding that are alternatives (a copy's frames, innermost first):
    the first that applies is the repair. ``also``: more spans of the same site (a copy's
    callers in this file, innermost first). ``message``: the finding's message, for the rewrite
    that applies a stored trace (``--trace FILE``). ``arg``: the f32 operand's position among
    the operation's tensor operands (``cast_operand`` of an operand with no name: a side of
    ``h + table(n)``)."""

    kind: RepairKind
    path: str
    span: Span
    names: tuple[str, ...] = ()
    partner: str | None = None
    op: str = ""
    finding: tuple[str, int, int] = ("", 0, 0)
    group: str = ""
    also: tuple[Span, ...] = ()
    message: str = ""
    arg: int | None = None

    def to_dict(self) -> dict:
        return {
            "kind": self.kind.value,
            "path": self.path,
            "span": _span_dict(self.span),
            "names": list(self.names),
            "partner": self.partner,
            "op": self.op,
            "finding": {"code": self.finding[0], "line": self.finding[1], "col": self.finding[2]},
            "group": self.group,
            "also": [_span_dict(s) for s in self.also],
            "message": self.message,
            "arg": self.arg,
        }

    @classmethod
    def from_dict(cls, data: dict) -> RepairSite:
        """Raises KeyError, TypeError or ValueError for a site that cannot be read."""
        finding = data.get("finding") or {}
        return cls(
            kind=RepairKind(str(data["kind"])),
            path=str(data["path"]),
            span=_span_from(data["span"]),
            names=tuple(str(n) for n in data.get("names") or ()),
            partner=data.get("partner"),
            op=str(data.get("op", "")),
            finding=(str(finding.get("code", "")), int(finding.get("line", 0)), int(finding.get("col", 0))),
            group=str(data.get("group", "")),
            also=tuple(_span_from(s) for s in data.get("also") or ()),
            message=str(data.get("message", "")),
            arg=int(data["arg"]) if data.get("arg") is not None else None,
        )


def _span_dict(span: Span) -> dict:
    return {
        "line": span.line,
        "col": span.col,
        "end_line": span.end_line,
        "end_col": span.end_col,
        "anchor": span.anchor,
    }


def _span_from(data: dict) -> Span:
    return Span(int(data["line"]), int(data["col"]), int(data["end_line"]), int(data["end_col"]), str(data["anchor"]))


@dataclass(frozen=True)
class Example:
    """A unit's example: ``source``, the traced expression ``expr`` on ``line`` (its first
    occurrence there), the site's ``names`` and ``partner``, and ``fixed``: the repaired text
    (INVALID: the trace's finding is right there) or None (VALID: nothing to repair, the text
    stays). ``why`` says what the example shows."""

    why: str
    source: str
    line: int
    expr: str
    fixed: str | None
    names: tuple[str, ...] = ()
    partner: str | None = None
    arg: int | None = None
    op: str = ""

    def site(self, kind: RepairKind) -> RepairSite:
        """The site the trace would give for this example."""
        text = self.source.splitlines()[self.line - 1]
        col = text.index(self.expr.splitlines()[0])
        lines = self.expr.splitlines()
        end_line = self.line + len(lines) - 1
        end_col = col + len(lines[0]) if len(lines) == 1 else len(lines[-1]) + _indent_of(self.source, end_line)
        span = Span(self.line, col, end_line, end_col, text)
        return RepairSite(kind, "example.py", span, self.names, self.partner, self.op, arg=self.arg)


def _indent_of(source: str, line: int) -> int:
    text = source.splitlines()[line - 1]
    return len(text) - len(text.lstrip())


@dataclass
class Located:
    """The traced expression found in the parsed text: ``node``, the ``module``, the text's
    ``positions`` and ``parents`` (libcst's metadata), and the ``site``."""

    node: cst.CSTNode
    module: cst.Module
    positions: dict
    parents: dict
    site: RepairSite

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)


def relocate(text: str, span: Span) -> Span | None:
    """``span`` where its line is now: the same line when it still reads ``anchor`` (or no
    anchor is known), else the nearest line reading the anchor, shifted; None when there is none."""
    lines = text.splitlines()
    if not span.anchor or (0 < span.line <= len(lines) and lines[span.line - 1] == span.anchor):
        return span
    found = [i + 1 for i, line in enumerate(lines) if line == span.anchor]
    if not found:
        return None
    best = min(found, key=lambda n: abs(n - span.line))
    shift = best - span.line
    return replace(span, line=span.line + shift, end_line=span.end_line + shift)


def locate(module: cst.Module, positions, text: str, span: Span) -> cst.CSTNode | None:
    """The expression the span covers: one whose range is the span, or the smallest whose
    range holds it and whose code, outer parentheses aside, is the span's text."""
    lines = text.splitlines()
    try:
        if span.line == span.end_line:
            wanted = lines[span.line - 1][span.col : span.end_col]
        else:
            first = lines[span.line - 1][span.col :]
            middle = lines[span.line : span.end_line - 1]
            last = lines[span.end_line - 1][: span.end_col]
            wanted = "\n".join([first, *middle, last])
    except IndexError:
        return None
    best: cst.CSTNode | None = None
    best_size: tuple[int, int] | None = None
    for node, where in positions.items():
        if not isinstance(node, cst.BaseExpression):
            continue
        start, end = where.start, where.end
        if (start.line, start.column) == (span.line, span.col) and (end.line, end.column) == (
            span.end_line,
            span.end_col,
        ):
            return node
        holds = (start.line, start.column) <= (span.line, span.col) and (end.line, end.column) >= (
            span.end_line,
            span.end_col,
        )
        if not holds:
            continue
        if _unparenthesized(module.code_for_node(node)) != _unparenthesized(wanted):
            continue
        size = (end.line - start.line, end.column - start.column)
        if best_size is None or size < best_size:
            best, best_size = node, size
    return best


def _unparenthesized(code: str) -> str:
    code = code.strip()
    while code.startswith("(") and code.endswith(")"):
        code = code[1:-1].strip()
    return code


def replace_node(module: cst.Module, old: cst.CSTNode, new: cst.CSTNode) -> cst.Module:
    """``module`` with the node ``old`` (by identity) replaced by ``new``."""
    replaced = module.deep_replace(old, new)
    assert isinstance(replaced, cst.Module)
    return replaced


def dtype_expression(partner: str | None) -> cst.BaseExpression:
    """What a cast takes: the partner's dtype (``h.dtype``) when its name is known, else
    ``torch.bfloat16`` (the model's dtype in the modes that cast it)."""
    if partner:
        try:
            return cst.parse_expression(f"{partner}.dtype")
        except cst.ParserSyntaxError:
            pass
    return cst.parse_expression("torch.bfloat16")


def with_torch_import(module: cst.Module, expression: cst.BaseExpression) -> cst.Module:
    """``module`` with ``import torch`` added (libcst's AddImportsVisitor) when ``expression``
    names ``torch`` and the module does not import it."""
    if not cst.Module([]).code_for_node(expression).startswith("torch."):
        return module
    context = CodemodContext()
    gather = GatherImportsVisitor(context)
    module.visit(gather)
    if "torch" in gather.module_imports:
        return module
    AddImportsVisitor.add_needed_import(context, "torch")
    return AddImportsVisitor(context).transform_module(module)


def names_in(located: Located, node: cst.CSTNode, wanted: Iterable[str]) -> list[cst.BaseExpression]:
    """The Name and Attribute nodes under ``node`` (itself included) whose code is one of ``wanted``
    (``pos``, ``self.pos``), outermost first, not those inside a match."""
    wanted = set(wanted)
    found: list[cst.BaseExpression] = []

    class _Find(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if isinstance(n, (cst.Name, cst.Attribute)) and located.code(n) in wanted:
                found.append(n)
                return False
            return True

    node.visit(_Find())
    return found


Repair = Callable[[Located], cst.Module | None]
