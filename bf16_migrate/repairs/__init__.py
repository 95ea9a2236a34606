"""Repairs at the places verify's dtype trace names: one unit per kind, applied with libcst.

The trace of a verify run (:mod:`bf16_migrate.verify.trace_findings`) names where float32 enters
the XLA device, where bf16 leaves it and where a model copy stayed float32. A :class:`RepairSite`
is such a place in the text to change (the migrated script or module): its line and the span of
the traced expression there, the text of that line (to find it again if lines moved), and what
the trace knew (the f32 operand's names, its bf16 partner's). Each kind of repair is a unit (a
module of this package with ``KIND``, ``EXAMPLES`` and ``repair``), registered in
:data:`UNITS`; :func:`apply_repairs` runs them over one file's text, one site at a time (parsed
again after each change), and says which applied and why the others did not. The units change
only the traced expression (or, for a model copy, move the model cast before it): small edits
at one line, with nothing else known about the script. No torch is imported here.

The units:

* :mod:`.cast_operand`: an f32 tensor meets a bf16 one (the op computes in f32): the f32
  operand cast to its partner's dtype, ``h + pos`` -> ``h + pos.to(h.dtype)``;
* :mod:`.host_float`: a bf16 tensor handed to the host, where the legacy switch gave float32:
  ``x.cpu()`` -> ``x.cpu().float()``;
* :mod:`.save_float`: bf16 tensors saved where the legacy switch saved float32: the flat dict
  saved made float32 (``torch.save({k: v.float() if v.is_floating_point() else v for k, v in
  sd.items()}, path)``);
* :mod:`.cast_copy`: a copy of the model made before the model cast stays f32: the cast moved
  before the copy;
* :mod:`.cast_module`: a module moved to the device and never cast: cast where it is moved,
  ``Net().to(device)`` -> ``Net().to(device).to(torch.bfloat16)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from . import cast_copy, cast_module, cast_operand, host_float, save_float
from .site import Example, Located, RepairKind, RepairSite, Span, locate, relocate

__all__ = [
    "Example",
    "Located",
    "RepairKind",
    "RepairOutcome",
    "RepairSite",
    "Span",
    "UNITS",
    "apply_repairs",
    "unit_for",
]


UNITS: dict[RepairKind, ModuleType] = {
    unit.KIND: unit for unit in (cast_operand, host_float, save_float, cast_copy, cast_module)
}
"""The units by kind."""


def unit_for(kind: RepairKind) -> ModuleType:
    """The unit of ``kind``: a module with ``KIND``, ``EXAMPLES`` (:class:`Example`) and
    ``repair(located) -> cst.Module | None`` (None: nothing to change there)."""
    return UNITS[kind]


@dataclass
class RepairOutcome:
    """What :func:`apply_repairs` did to one text: the new ``text``, the sites ``applied``, those
    whose repair the text holds already (``already``: the traced line is gone, and the line its
    repair makes is there: a stored trace applied a second time) and those ``left`` with why
    (nothing to change there, the line is gone, no unit could)."""

    text: str
    applied: list[RepairSite] = field(default_factory=list)
    left: list[tuple[RepairSite, str]] = field(default_factory=list)
    already: list[RepairSite] = field(default_factory=list)


def apply_repairs(text: str, sites: Sequence[RepairSite]) -> RepairOutcome:
    """``text`` with the repairs of ``sites`` (all of one file), the last in the text first (an
    edit never moves the lines of a site still to do), one parse each. Sites of one ``group``
    are alternatives: the first that applies stands for the group. Raises nothing for a site
    that cannot be repaired (it is ``left``, with why); a text that does not parse leaves every
    site."""
    outcome = RepairOutcome(text)
    done_groups: set[str] = set()
    order = sorted(enumerate(sites), key=lambda item: (-item[1].span.line, -item[1].span.col, item[0]))
    grouped: dict[str, list[RepairSite]] = {}
    for _i, site in order:
        if site.group:
            grouped.setdefault(site.group, []).append(site)
    for _i, site in order:
        if site.group and site.group in done_groups:
            continue
        alternatives = grouped.get(site.group, [site]) if site.group else [site]
        if site.group:
            alternatives = sorted(alternatives, key=lambda s: sites.index(s))
        why = "nothing to change"
        for alternative in alternatives:
            new, why = _apply_one(outcome.text, alternative)
            if new is not None:
                outcome.text = new
                outcome.applied.append(alternative)
                break
            if why == _ALREADY:
                outcome.already.append(alternative)
                break
        else:
            outcome.left.append((alternatives[0], why))
        if site.group:
            done_groups.add(site.group)
    return outcome


def _apply_one(text: str, site: RepairSite) -> tuple[str | None, str]:
    """The text with one repair, or None and why not."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return None, f"the file does not parse ({exc.message})"
    span = relocate(text, site.span)
    if span is None:
        if _repaired_already(text, site):
            return None, _ALREADY
        return None, f"line {site.span.line} is no longer the traced line ({site.span.anchor.strip()!r})"
    site = replace(site, span=span, also=tuple(s for s in (relocate(text, a) for a in site.also) if s is not None))
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    parents = wrapper.resolve(ParentNodeProvider)
    node = locate(module, positions, text, span)
    if node is None:
        return None, f"no expression spans line {span.line}, columns {span.col + 1}-{span.end_col}"
    located = Located(node, module, dict(positions), dict(parents), site)
    new = unit_for(site.kind).repair(located)
    if new is None:
        return None, "nothing to change there"
    code = new.code
    if code == text:
        return None, "nothing to change there"
    return code, ""


_ALREADY = "repaired already"


def _repaired_already(text: str, site: RepairSite) -> bool:
    """Whether ``text`` holds the line the repair makes of the traced line (a one-line span whose
    line parses on its own once dedented): the trace was applied before."""
    span = site.span
    anchor = span.anchor
    if span.line != span.end_line or not anchor.strip():
        return False
    indent = len(anchor) - len(anchor.lstrip())
    alone = replace(
        site,
        span=replace(
            span, line=1, end_line=1, col=span.col - indent, end_col=span.end_col - indent, anchor=anchor[indent:]
        ),
        also=(),
    )
    try:
        module = cst.parse_module(anchor[indent:] + "\n")
    except cst.ParserSyntaxError:
        return False
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    node = locate(module, positions, module.code, alone.span)
    if node is None:
        return False
    located = Located(node, module, dict(positions), dict(wrapper.resolve(ParentNodeProvider)), alone)
    repaired = unit_for(site.kind).repair(located)
    if repaired is None:
        return False
    first = repaired.code.splitlines()[-1] if repaired.code.strip() else ""  # after an import it adds
    return (
        any(line[len(line) - len(line.lstrip()) :] == first for line in text.splitlines()) and first != anchor[indent:]
    )
