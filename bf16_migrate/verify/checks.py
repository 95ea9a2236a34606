"""The checks a verdict asks once its judge has made the numeric parts: each a module of this
package registered by name in :data:`REGISTRY`, asked in that order by :func:`ask`.

The judge (:func:`.compare.judge` for a run that trains, :func:`.outputs.judge_outputs` for one
that does not) makes the parts that decide together (runs, trains, precision, matches, graph;
runs and matches for the outputs); a check is a part that stands on its own: it reads the typed
run records (:class:`~.records.RunRecord`) and the trace's findings and gives one
:class:`~.parts.Part` or none. The dtype trace's part is the first (:mod:`.trace_check`).

A new check is one module with ``NAME`` and ``check(given)`` (the :class:`~.check.Check`
protocol, given a :class:`~.check.CheckInput`) and one line in :data:`REGISTRY`; docs/verify.md
has the recipe ("A check of your own"), which tests/test_verify_check_recipe.py follows.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, cast

from .check import Check, CheckInput
from .compare import Verdict

__all__ = ["Check", "CheckInput", "REGISTRY", "ask", "for_name"]


REGISTRY: dict[str, str] = {
    "trace": "trace_check",
}
"""Part name -> the module in this package that makes it (imported when first asked), in the
order :func:`ask` asks them and the verdict lists their parts, after the judge's."""

if TYPE_CHECKING:  # every registered module satisfies the protocol (checked by mypy, never imported here at run time)
    from . import trace_check

    _CHECKED: tuple[Check, ...] = (trace_check,)


def for_name(name: str) -> Check:
    """The check module registered as ``name`` in :data:`REGISTRY`. ``ValueError`` for a name it
    does not hold."""
    if name not in REGISTRY:
        raise ValueError(f"no verify check named {name!r}")
    return cast(Check, importlib.import_module(f".{REGISTRY[name]}", __package__))


def ask(given: CheckInput) -> Verdict:
    """Ask every registered check, in :data:`REGISTRY`'s order, and add the part each gives to
    ``given.verdict`` (returned). A part is added only when the verdict's first part passed: that
    part (runs) says the runs could be compared, without which no other part can be judged. Every
    check is asked all the same (it may add a note)."""
    verdict = given.verdict
    for name in REGISTRY:
        part = for_name(name).check(given)
        if part is not None and verdict.parts and verdict.parts[0].passed:
            verdict.parts.append(part)
    return verdict
