"""``bf16-migrate verify --fix``: repair what the run's dtype trace names, verify again, repeat.

Round 0 is a verify (:func:`bf16_migrate.verify.verify_script`). Each later round takes the
repair sites of the trace's findings that count (:mod:`.trace_findings`; a deliberate f32 island
the migration reported does not), applies them to the texts the migrated run ran (the migrated
script and the migrated modules of its tree, or the user's own file for one the migration left
as it is) with the repair units (:mod:`bf16_migrate.repairs`), and makes the migrated run again
(the legacy and reference runs are the first round's: their texts did not change). It stops
when the trace is clean, when no repair applies any more, or after :data:`MAX_ROUNDS` repair
rounds; what is left is reported at its line with the trace's evidence, and the verdict is the
last round's: the repaired script's. Writing (or showing, ``--diff``) the migration with its
repairs is the rewrite's (:func:`bf16_migrate.project.migrate_paths` with ``repairs``): the same
codemod and the same one-change commit as ``bf16-migrate PATHS``. No torch here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..repairs import RepairSite, apply_repairs
from .records import RunError
from .runner import read_source
from .trace_findings import FindingKind

__all__ = ["MAX_ROUNDS", "FixResult", "FixRound", "verify_and_fix"]

MAX_ROUNDS = 3
"""Repair rounds at most (each one migrated run more)."""


@dataclass
class FixRound:
    """One repair round: the sites ``applied`` and those ``left`` (with why), and the verdict of
    the migrated run made after them."""

    applied: list[RepairSite] = field(default_factory=list)
    left: list[tuple[RepairSite, str]] = field(default_factory=list)
    verdict: str = ""


@dataclass
class FixResult:
    """What ``verify --fix`` did: the final ``report`` (the repaired script's verdict, its trace's
    findings: what is left), or ``error`` when its runs could not be judged (an inference script
    makes no optimizer step; its trace still names lines, and is repaired), the ``first`` findings
    (before any repair), the ``rounds`` of repairs, every site applied over all rounds
    (``applied``, in the coordinates of the text each was applied to), the final ``texts`` of the
    files the migrated run ran that the repairs changed (the user's path -> text), and why the
    loop ``stopped``."""

    report: Any
    error: Any = None
    first: list[Any] = field(default_factory=list)
    rounds: list[FixRound] = field(default_factory=list)
    applied: list[RepairSite] = field(default_factory=list)
    texts: dict[Path, str] = field(default_factory=dict)
    stopped: str = ""

    @property
    def findings(self) -> list[Any]:
        """The trace's findings after the last round (the report's, or the error's)."""
        if self.report is not None:
            return list(self.report.trace_findings)
        return list(getattr(self.error, "findings", []))

    @property
    def left(self) -> list[Any]:
        """The trace's findings still counting after the last round."""
        return [f for f in self.findings if f.counts]


def verify_and_fix(
    script: Path,
    *,
    verify: Callable[..., Any],
    max_rounds: int = MAX_ROUNDS,
    on_round: Callable[[int, FixRound], None] | None = None,
    **kwargs: Any,
) -> FixResult:
    """Verify ``script`` (``verify`` is :func:`bf16_migrate.verify.verify_script`, given so that a
    caller can wrap it), then repair and verify again as the module docstring says. ``kwargs`` go
    to every verify; ``on_round(n, round)`` is told after each repair round.

    A verify that raises :class:`~.records.RunError` is an outcome too: its trace's findings (the
    line of a failure, and what caused it) are repaired like a report's. A round whose migrated
    run fails (a repair that lets it reach a place where f32 meets bf16 further on) is the start
    of the next round, not an end; but what ``--fix`` keeps is the last state whose migrated run
    did not fail (a migration that crashes is worse than one that computes in f32), and a round
    that changes nothing the trace names ends the loop. Raises the first verify's error when it
    names nothing to repair."""
    script = Path(script).resolve()
    report, error = _attempt(verify, script, kwargs)
    if error is not None and not [f for f in error.findings if f.counts and f.repair is not None]:
        raise error
    texts = _texts(script, report, error)
    result = FixResult(report, error, list(report.trace_findings if report is not None else error.findings))
    state = _State(texts, report, error, [], {})
    best = state if not _crashed(error) else None
    for number in range(1, max_rounds + 1):
        counted = [f for f in state.findings if f.counts]
        sites = [f.repair for f in counted if f.repair is not None]
        if not counted:
            result.stopped = "the trace is clean"
            break
        if not sites:
            result.stopped = "no repair applies to what is left"
            break
        fix_round, changed = _repair(state.texts, sites)
        result.rounds.append(fix_round)
        if not changed:
            result.stopped = "no repair applies to what is left"
            _tell(on_round, number, fix_round)
            break
        trial = {**state.texts, **changed}
        modules = {p: t for p, t in trial.items() if p != script}
        again = {**kwargs, "migrated_source": trial[script], "migrated_modules": modules}
        if state.report is not None:
            again["previous"] = state.report
        report, error = _attempt(verify, script, again)
        state = _State(trial, report, error, [*state.applied, *fix_round.applied], {**state.changed, **changed})
        fix_round.verdict = report.verdict.status if report is not None else f"ERROR: {error.message}"
        _tell(on_round, number, fix_round)
        if not _crashed(error):
            best = state
        if {_key(f) for f in state.findings if f.counts} == {_key(f) for f in counted}:
            result.stopped = "the repairs changed nothing the trace names"
            break
    else:
        left = [f for f in state.findings if f.counts]
        result.stopped = "the trace is clean" if not left else f"{max_rounds} rounds, the most --fix makes"
    if not result.stopped:
        result.stopped = "the trace is clean"
    if best is None:  # every state failed, the first included: nothing is kept
        best = _State(texts, result.report, result.error, [], {})
    if best is not state:
        result.stopped += (
            f"; the migrated run failed after the last repairs ({_message(state.error)}): the repairs kept are those "
            "of the last run that did not fail"
        )
    result.report, result.error = best.report, best.error
    result.applied, result.texts = best.applied, best.changed
    return result


@dataclass
class _State:
    """One state of the loop: the texts the migrated run ran, its outcome, and the repairs that
    made them (``applied``, the texts they ``changed``)."""

    texts: dict[Path, str]
    report: Any
    error: Any
    applied: list[RepairSite]
    changed: dict[Path, str]

    @property
    def findings(self) -> list[Any]:
        return list(self.report.trace_findings if self.report is not None else self.error.findings)


def _crashed(error: Any) -> bool:
    """The migrated run failed with an exception (not only an outcome that cannot be judged,
    such as an inference script's run without an optimizer step)."""
    if error is None:
        return False
    migrated = (getattr(error, "runs", None) or {}).get("migrated")
    if migrated is not None and migrated.exception:
        return True
    return any(getattr(f, "kind", None) is FindingKind.FAILURE for f in error.findings)


def _key(finding: Any) -> tuple[Any, ...]:
    """What tells one finding from another across rounds: its place, its message and its repair's
    names (the next operand of one line is another finding)."""
    d = finding.diagnostic
    site = finding.repair
    return (d.code, d.path, d.line, d.message, site.names if site else (), site.arg if site else None)


def _message(error: Any) -> str:
    return getattr(error, "message", "") or "no verdict"


def _attempt(verify: Callable[..., Any], script: Path, kwargs: Mapping[str, Any]) -> tuple[Any, Any]:
    """(report, None) or (None, the RunError) of one verify."""
    try:
        return verify(script, **kwargs), None
    except RunError as exc:
        return None, exc


def _texts(script: Path, report: Any, error: Any) -> dict[Path, str]:
    """The texts the migrated run ran: the migrated script and the migrated modules of its tree."""
    owner = report if report is not None else error
    texts = {script: owner.migrated_source}
    texts.update({Path(p).resolve(): t for p, t in (owner.modules or {}).items()})
    return texts


def _tell(on_round: Callable[[int, FixRound], None] | None, number: int, fix_round: FixRound) -> None:
    if on_round is not None:
        on_round(number, fix_round)


def _repair(texts: Mapping[Path, str], sites: Sequence[RepairSite]) -> tuple[FixRound, dict[Path, str]]:
    """Apply ``sites`` to the texts the migrated run ran (the user's file as it is for one not
    among ``texts``); returns the round and the texts that changed."""
    fix_round = FixRound()
    changed: dict[Path, str] = {}
    by_path: dict[Path, list[RepairSite]] = {}
    for site in sites:
        by_path.setdefault(Path(site.path).resolve(), []).append(site)
    for path, group in by_path.items():
        text = texts.get(path)
        if text is None:
            try:
                text = read_source(path)
            except (OSError, SyntaxError, UnicodeDecodeError) as exc:
                fix_round.left.extend((site, f"{path} cannot be read: {exc}") for site in group)
                continue
        outcome = apply_repairs(text, group)
        fix_round.applied.extend(outcome.applied)
        fix_round.left.extend(outcome.left)
        if outcome.text != text:
            changed[path] = outcome.text
    return fix_round, changed
