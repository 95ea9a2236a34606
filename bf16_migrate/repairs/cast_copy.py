"""Repair unit: a copy of the model made before the model cast stays float32; the cast moves
before the copy.

``ema = copy.deepcopy(model)`` (an EMA model, a teacher, a frozen reference) copies the model
as it is then; when the migration casts the model to bf16 only after that line, the copy keeps
f32 parameters, and its updates and forward pass compute in f32 on the device where the legacy
run had bf16 (the trace saw the copy's parameters made f32 by ``copy.deepcopy`` at this line,
then used). The repair moves the model cast the migration wrote (``model.to(torch.bfloat16)``,
``model = model.to(torch.bfloat16)``, ``model.bfloat16()``), the first one after the copy in
its block or an enclosing one whose receiver the copy's statement names, to just before that
statement. Where the copy is made inside a helper (an EMA class), the trace's callers in the
same file are tried too (``ema = EMA(model)``), innermost first. Not repaired: no such cast
after the copy (the copy is cast by hand, or the cast is elsewhere).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from .site import Example, Located, RepairKind, locate, relocate

KIND = RepairKind.CAST_COPY

EXAMPLES = [
    Example(
        "INVALID: the EMA copy made before the model cast",
        "model = Net().to(device)\nema = copy.deepcopy(model)\nmodel.to(torch.bfloat16)\n"
        "opt = SGD(model.parameters())\n",
        2,
        "copy.deepcopy(model)",
        "model = Net().to(device)\nmodel.to(torch.bfloat16)\nema = copy.deepcopy(model)\n"
        "opt = SGD(model.parameters())\n",
    ),
    Example(
        "INVALID: the copy under a flag, the cast after the if (moved before the if)",
        "def main(args):\n    model = Net().to(device)\n    if args.ema:\n        ema = copy.deepcopy(model)\n"
        "    model = model.to(torch.bfloat16)\n",
        4,
        "copy.deepcopy(model)",
        "def main(args):\n    model = Net().to(device)\n    model = model.to(torch.bfloat16)\n    if args.ema:\n"
        "        ema = copy.deepcopy(model)\n",
    ),
    Example(
        "VALID: the cast comes before the copy already (a second --fix changes nothing)",
        "model = Net().to(device)\nmodel.to(torch.bfloat16)\nema = copy.deepcopy(model)\n",
        3,
        "copy.deepcopy(model)",
        None,
    ),
    Example(
        "VALID: no cast of the copied model after the copy",
        "model = Net().to(device)\nema = copy.deepcopy(model)\nother.to(torch.bfloat16)\n",
        2,
        "copy.deepcopy(model)",
        None,
    ),
]

_CAST = m.Call(
    func=m.Attribute(attr=m.Name("to")), args=[m.Arg(value=m.Attribute(value=m.Name("torch"), attr=m.Name("bfloat16")))]
) | m.Call(func=m.Attribute(attr=m.Name("bfloat16")), args=[])


def repair(located: Located) -> cst.Module | None:
    """Move the first model cast after the copy's statement (or an enclosing statement) before
    it; the site's span first, then its ``also`` spans (callers in the file)."""
    site = located.site
    spans = [site.span, *site.also]
    text = located.module.code
    for span in spans:
        node = located.node if span is site.span else locate(located.module, located.positions, text, span)
        if node is None:
            relocated = relocate(text, span)
            node = locate(located.module, located.positions, text, relocated) if relocated is not None else None
        if node is None:
            continue
        moved = _move_cast_before(located, node)
        if moved is not None:
            return moved
    return None


def _move_cast_before(located: Located, node: cst.CSTNode) -> cst.Module | None:
    names = {located.code(n) for n in _names(node)}
    current: cst.CSTNode | None = node
    while current is not None:
        parent = located.parent(current)
        if isinstance(current, cst.BaseStatement) and isinstance(parent, (cst.Module, cst.IndentedBlock)):
            body = list(parent.body)
            index = next(i for i, s in enumerate(body) if s is current)
            for later in body[index + 1 :]:
                receiver = _cast_receiver(located, later)
                if receiver is not None and receiver in names:
                    new_body = body[:index] + [later] + [s for s in body[index:] if s is not later]
                    return located.module.deep_replace(parent, parent.with_changes(body=new_body))  # type: ignore[return-value]
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        current = parent
    return None


def _names(node: cst.CSTNode) -> list[cst.BaseExpression]:
    found: list[cst.BaseExpression] = []

    class _Find(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

        def visit_Attribute(self, n: cst.Attribute) -> None:
            found.append(n)

    node.visit(_Find())
    return found


def _cast_receiver(located: Located, stmt: cst.BaseStatement) -> str | None:
    """The code of the module a statement casts to bf16 (``model`` for ``model.to(torch.bfloat16)``
    and ``model = model.to(torch.bfloat16)``), or None."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Expr):
        call = small.value
    elif isinstance(small, cst.Assign) and len(small.targets) == 1:
        call = small.value
    else:
        return None
    if not m.matches(call, _CAST):
        return None
    assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
    receiver = located.code(call.func.value)
    if isinstance(small, cst.Assign) and located.code(small.targets[0].target) != receiver:
        return None
    return receiver
