"""docs/verify.md's recipe for a check of your own, followed: a made-up check
(tests/legacy_warnings_check.py: the migrated run's output holds no torch-xla warning that a
legacy variable is deprecated) registered the way the recipe says and nowhere else (its module,
one line of ``checks.REGISTRY``). Its part is in the verdict after the judge's, and it can FAIL
it: judged on recorded run records (tests/test_verify_unit.py's), and through
:func:`bf16_migrate.verify.verify_script` with its runs stood in for (no XLA)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

import bf16_migrate.verify as verify_pkg
from bf16_migrate.rules import mode_named
from bf16_migrate.verify import checks, format_report, report_dict, verify_script
from bf16_migrate.verify.check import Check, CheckInput
from bf16_migrate.verify.compare import judge
from bf16_migrate.verify.parts import FAIL, PASS
from bf16_migrate.verify.records import MIGRATED, RunRecord
from bf16_migrate.verify.summary import EXIT_CODES

import legacy_warnings_check
from conftest import FIXTURES, part_of
from test_verify_unit import LEGACY_LOSSES, runs

WARNING = (
    "/venv/lib/python3.11/site-packages/torch_xla/__init__.py:179: UserWarning: The environment variable "
    "'XLA_USE_FP16' is deprecated Please update your code to avoid using it."
)

CHECKED: Check = legacy_warnings_check  # the module satisfies the protocol (mypy checks it over tests/)


@pytest.fixture
def registered(monkeypatch):
    """The recipe's registration: the module in the package (stood in for through sys.modules)
    and its line in the registry, after the trace's."""
    monkeypatch.setitem(sys.modules, "bf16_migrate.verify.legacy_warnings", legacy_warnings_check)
    monkeypatch.setitem(checks.REGISTRY, "legacy_warnings", "legacy_warnings")


def test_the_registry_is_ordered_data_with_the_trace_first():
    assert list(checks.REGISTRY)[0] == "trace"
    trace = checks.for_name("trace")
    assert trace.NAME == "trace"
    with pytest.raises(ValueError, match="no verify check named 'legacy_warnings'"):
        checks.for_name("legacy_warnings")


def test_a_registered_check_adds_its_part_and_can_fail_the_verdict(registered):
    mode = mode_named("stochastic")
    clean = judge(mode, runs(LEGACY_LOSSES), requested_steps=20)
    assert clean.passed
    checks.ask(CheckInput(clean, runs(LEGACY_LOSSES)))
    assert [p.name for p in clean.parts][-1] == "legacy_warnings"
    assert part_of(clean, "legacy_warnings").status == PASS and clean.passed

    warned = runs(LEGACY_LOSSES, tail=["step 1", WARNING])
    verdict = checks.ask(CheckInput(judge(mode, warned, requested_steps=20), warned))
    part = verdict.part("legacy_warnings")
    assert part is not None and part.status == FAIL and part.figures == {"warnings": 1}
    assert "'XLA_USE_FP16' is deprecated" in part.detail
    assert verdict.status == FAIL and not verdict.passed
    assert all(p.passed for p in verdict.parts if p.name != "legacy_warnings")  # it alone fails it


def test_a_check_adds_no_part_when_the_runs_could_not_be_compared(registered):
    broken = runs([float("nan")] * 20, tail=[WARNING])
    verdict = checks.ask(CheckInput(judge(mode_named("stochastic"), broken, requested_steps=20), broken))
    assert verdict.parts[0].name == "runs" and verdict.parts[0].status == FAIL
    assert verdict.part("legacy_warnings") is None


def _verify(tmp_path: Path, monkeypatch, records: dict[str, RunRecord]):
    """``verify_script`` over the mlp_regression fixture with its runs stood in for by
    ``records`` (the migration, the judge and the checks are the real ones)."""
    script = tmp_path / "train.py"
    shutil.copy(FIXTURES / "mlp_regression" / "train.py", script)

    def recorded_runs(*args, **kwargs):
        return dict(records), "CPU"

    monkeypatch.setattr(verify_pkg, "_run", recorded_runs)
    return verify_script(script, "stochastic", steps=20)


def test_the_check_is_in_verify_scripts_verdict_and_its_report(tmp_path, monkeypatch, registered):
    unchecked_status = None
    with monkeypatch.context() as m:
        m.delitem(checks.REGISTRY, "legacy_warnings")
        unchecked_status = _verify(tmp_path, m, runs(LEGACY_LOSSES)).verdict.status
    report = _verify(tmp_path, monkeypatch, runs(LEGACY_LOSSES))
    part = report.verdict.part("legacy_warnings")
    assert part is not None and part.status == PASS
    assert report.verdict.status == unchecked_status  # a check that passes changes nothing
    # no trace recorded: the trace check gave no part, and its note says why
    assert report.verdict.part("trace") is None
    assert any("dtype trace could not be recorded (no trace was written)" in n for n in report.verdict.notes)

    report = _verify(tmp_path, monkeypatch, runs(LEGACY_LOSSES, tail=[WARNING]))
    assert report.verdict.status == FAIL and EXIT_CODES[report.verdict.status] == EXIT_CODES[FAIL]
    assert report.runs[MIGRATED].tail == [WARNING]
    assert "legacy_warnings" in format_report(report)
    parts = {p["name"]: p["status"] for p in report_dict(report)["parts"]}
    assert parts["legacy_warnings"] == "FAIL"
