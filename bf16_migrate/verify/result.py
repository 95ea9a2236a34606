"""What a verify found (:class:`VerifyReport`): the record :func:`bf16_migrate.verify.verify_script`
returns and :mod:`.report` renders, a floor below both."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rules import Mode
from .compare import Verdict
from .records import RunRecord
from .trace_findings import TraceFinding


@dataclass
class VerifyReport:
    """What :func:`bf16_migrate.verify.verify_script` found (its JSON form:
    :func:`bf16_migrate.verify.report.report_dict`).

    ``runs``: ``"legacy"`` / ``"migrated"`` / ``"reference"`` -> :class:`RunRecord` (losses
    as floats per optimizer step, step end times in seconds, parameter dtypes, XLA compile
    counts, the executed step graph's statistics; a run that failed but was not needed has
    ``error`` set). ``verdict``: the parts (runs, trains, precision, matches, graph) with their
    figures. ``diagnostics``: the migration's
    findings (objects with ``code``, ``line``, ``col``, ``message``, ``fixed``).
    ``wall_time_s``: seconds for the whole verify. ``passed``: every part passed.
    ``legacy_label``: where the legacy text came from (``--against``), or None.
    ``graphs``: whether the graphs were dumped (the graph part exists only then).
    ``legacy_env``: the variables added to the legacy run; ``legacy_env_source``: where they
    came from (``["run.sh:3"]`` for a launcher of the tree at ``--against``, ``["--legacy-env"]``).
    ``rounds``: the steps of each round of runs (``[20]``; ``[20, 80]`` when the first round
    could not decide and the runs were made again with more steps); ``steps`` is the last.
    ``trace_findings``: what the migrated run's dtype trace shows that the legacy run's does not
    (:mod:`.trace_findings`; the ``trace`` part of the verdict counts them). ``modules``: the
    migrated text of each module of the tree the migrated run ran in place of the legacy one.
    ``islands``: the deliberate f32 islands the migration kept (``Outcome.f32_islands`` by file).
    """

    script: Path
    mode: Mode
    steps: int
    runs: dict[str, RunRecord]
    verdict: Verdict
    script_args: list[str] = field(default_factory=list)
    diagnostics: list[Any] = field(default_factory=list)
    device: str = "CPU"
    wall_time_s: float = 0.0
    migrated_source: str = ""
    legacy_label: str | None = None
    graphs: bool = True
    legacy_env: dict[str, str] = field(default_factory=dict)
    legacy_env_source: list[str] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)
    trace_findings: list[TraceFinding] = field(default_factory=list)
    modules: dict[Path, str] = field(default_factory=dict)
    islands: dict[Path, list[Any]] = field(default_factory=dict)
    own_migration: bool = True
    """The migrated text was the codemod's own migration of the legacy text (its islands and the lines where
    it wrote ``float32`` excuse f32); a ``verify --fix`` round keeps what the first round was."""

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @property
    def parts(self) -> list:
        return self.verdict.parts
