"""What a verdict is made of: the statuses, :class:`Part`, and the small readers of a
:class:`~bf16_migrate.verify.records.RunRecord` that several parts share. No torch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from ..rule_files import Word
from .records import RunRecord

__all__ = ["PASS", "FAIL", "INCONCLUSIVE", "ERROR", "Status", "Part", "usable", "has_bf16", "dtypes_text", "steps_text"]


class Status(Word):
    """A verdict or one of its parts: PASS, FAIL, INCONCLUSIVE (no part failed, one could not
    decide), or ERROR (a run could not be made: a verify's status, never a part's): the words the
    reports and the ``--json`` documents write."""

    PASS = "PASS"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"
    ERROR = "ERROR"


PASS, FAIL, INCONCLUSIVE, ERROR = Status.PASS, Status.FAIL, Status.INCONCLUSIVE, Status.ERROR


@dataclass
class Part:
    """One part of the verdict: ``name`` (runs, trains, precision, matches), ``status`` (PASS,
    FAIL or INCONCLUSIVE), ``detail`` (one line with the figures) and ``figures`` (numbers,
    JSON-ready)."""

    name: str
    status: Status
    detail: str
    figures: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == PASS


def usable(rec: RunRecord | None) -> TypeGuard[RunRecord]:
    """Whether ``rec`` ran to the end with finite losses (a run to compare with)."""
    return rec is not None and rec.ok and rec.finite


def has_bf16(dtypes: Mapping[str, int] | None) -> bool:
    """Whether a dtype -> count mapping (``bfloat16`` or the device's ``bf16``) has bf16 in it."""
    return dtypes is not None and any(k in ("bfloat16", "bf16") for k in dtypes)  # an empty one has none


def dtypes_text(d: Mapping[str, int] | None) -> str:
    """``"bf16 x4, f32 x2"``, or ``"unknown"`` for no mapping."""
    return ", ".join(f"{k} x{v}" for k, v in sorted(d.items())) if d else "unknown"


def steps_text(steps: Sequence[int], limit: int = 8) -> str:
    """1-based step numbers as text, the first ``limit`` of them and how many more."""
    shown = ", ".join(str(s) for s in steps[:limit])
    return shown + (f" and {len(steps) - limit} more" if len(steps) > limit else "")
