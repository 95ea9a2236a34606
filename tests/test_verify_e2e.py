"""End-to-end verify runs on the XLA CPU device (slow: each test starts two XLA processes).

The script is tests/data/verify_mlp.py (legacy, XLA_USE_BF16) and its hand-migrated copy
tests/data/verify_mlp_stochastic.py, so these tests do not depend on the codemod's output.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from bf16_migrate.verify import RunError, format_report, verify_script

pytestmark = pytest.mark.xla

DATA = Path(__file__).parent / "data"
LEGACY = DATA / "verify_mlp.py"
STEPS = 8
JOBS = int(os.environ.get("BF16_MIGRATE_TEST_JOBS", "2"))  # children at once (2 cores)


def _source(name: str) -> str:
    return (DATA / name).read_text()


def test_hand_migrated_stochastic_run_passes():
    migrated = _source("verify_mlp_stochastic.py")
    report = verify_script(LEGACY, "stochastic", steps=STEPS, migrated_source=migrated, run_reference=False, jobs=JOBS)
    text = format_report(report)
    assert report.passed, text
    assert report.runs["migrated"].losses == report.runs["legacy"].losses  # AdamW: bit-identical
    assert report.runs["migrated"].steps == STEPS
    assert report.runs["migrated"].param_dtypes == {"bfloat16": 4}
    assert report.runs["legacy"].device_param_dtypes == {"bf16": 4}
    assert report.runs["legacy"].exit_reason == "steps_reached"
    assert "VERDICT: PASS" in text


def test_migrated_run_that_crashes_is_a_run_error_with_the_output_tail():
    # Model cast to bf16 but the float inputs left in f32: the HLO verifier rejects the graph
    # at the first sync (semantics.md, "What breaks", 1).
    broken = _source("verify_mlp_stochastic.py").replace(".to(device).to(torch.bfloat16)", ".to(device)")
    start = time.monotonic()
    with pytest.raises(RunError) as info:
        verify_script(LEGACY, "stochastic", steps=STEPS, migrated_source=broken, run_reference=False, jobs=JOBS)
    err = info.value
    assert err.run == "migrated"
    assert err.returncode not in (None, 0)
    assert err.tail and len(err.tail) <= 20
    assert "the legacy run succeeded" in str(err)
    assert "last output lines" in str(err)
    assert time.monotonic() - start < 300


def test_negative_control_only_deleting_the_variable_fails_matches():
    fp32 = _source("verify_mlp.py").replace('os.environ["XLA_USE_BF16"] = "1"', "")
    report = verify_script(LEGACY, "stochastic", steps=STEPS, migrated_source=fp32, run_reference=False, jobs=JOBS)
    assert not report.passed
    assert report.verdict.part("matches").status == "FAIL", format_report(report)
    assert report.verdict.part("precision").status == "FAIL"


def test_timeout_kills_the_child():
    with pytest.raises(RunError) as info:
        verify_script(LEGACY, "stochastic", steps=STEPS, migrated_source=_source("verify_mlp_stochastic.py"),
                      run_reference=False, jobs=JOBS, timeout=1.0)
    assert "timed out" in str(info.value)
