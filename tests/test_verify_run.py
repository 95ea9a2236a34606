"""One verify run (:mod:`bf16_migrate.verify.run`) without the XLA device: a typed request in, a
typed result out, every script verified through one :class:`~bf16_migrate.verify.jobs.VerifyJob`
(``verify_script`` and the preflight stood in for)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

import bf16_migrate.verify as verify_pkg
from bf16_migrate.rules import mode_named
from bf16_migrate.verify import run as verify_run
from bf16_migrate.verify.jobs import Job, VerifyJob
from bf16_migrate.verify.records import RunError


class _Device:
    def describe(self) -> str:
        return "a device stood in for"


@pytest.fixture
def seen(monkeypatch):
    """The calls of verify_script, each as (script, kwargs); the preflight stood in for."""
    calls: list[tuple[Path, dict]] = []

    def fake_verify(script, **kwargs):
        calls.append((Path(script), kwargs))
        if Path(script).name == "broken.py":
            raise RunError("the migrated run exited with code 1")
        return SimpleNamespace(verdict=SimpleNamespace(status="INCONCLUSIVE"), passed=False)

    monkeypatch.setattr(verify_pkg, "verify_script", fake_verify)
    monkeypatch.setattr(verify_run, "check_xla", _Device)
    monkeypatch.setattr(verify_run, "check_arguments", lambda *args, **kwargs: False)
    return calls


def _usage(message: str):
    raise AssertionError(f"no usage error expected: {message}")


def test_a_legacy_script_is_one_verify_with_its_settings_typed(tmp_path, seen):
    script = tmp_path / "train.py"
    script.write_text("import os\nos.environ['XLA_USE_BF16'] = '1'\n")
    amp = mode_named("amp")
    request = verify_run.VerifyRequest(
        script, ("--steps", "5"), mode=amp, legacy_env={"XLA_USE_BF16": "1"}, steps=7, timeout=30.0, trace_time=0.0
    )
    verified = verify_run.run_verify(request, _usage)
    assert verified.shape is verify_run.Shape.ONE and verified.exit_code == 3  # INCONCLUSIVE
    assert verified.sha is None and verified.fixed is None and not verified.in_tree
    [(called, kwargs)] = seen
    assert called == script
    assert kwargs["mode"] is amp and kwargs["steps"] == 7 and kwargs["timeout"] == 30.0
    assert kwargs["script_args"] == ["--steps", "5"] and kwargs["legacy_env"] == {"XLA_USE_BF16": "1"}
    assert kwargs["legacy_env_source"] == ["--legacy-env"] and kwargs["checkout"] is None
    assert (kwargs["trace"], kwargs["trace_time"], kwargs["max_steps"]) == (True, 0.0, None)


def test_a_verify_that_cannot_be_made_raises_its_run_error(tmp_path, seen):
    script = tmp_path / "broken.py"
    script.write_text("import os\nos.environ['XLA_USE_BF16'] = '1'\n")
    request = verify_run.VerifyRequest(script, mode=mode_named("stochastic"))
    with pytest.raises(RunError, match="exited with code 1"):
        verify_run.run_verify(request, _usage)


def test_a_planned_job_and_a_legacy_script_call_verify_script_alike(tmp_path):
    stochastic = mode_named("stochastic")
    job = Job(tmp_path / "a.py", "a.py", {"XLA_USE_BF16": "1"}, ["run.sh:2"], stochastic, "--mode", args=["-x"])
    verify = VerifyJob.planned(job, "CHECKOUT", steps=6, timeout=60.0, max_steps=24, trace=False, trace_time=1.0)
    assert verify.kwargs() == {
        "mode": stochastic,
        "steps": 6,
        "legacy_env": {"XLA_USE_BF16": "1"},
        "script_args": ["-x"],
        "timeout": 60.0,
        "checkout": "CHECKOUT",
        "legacy_env_source": ["run.sh:2"],
        "max_steps": 24,
        "trace": False,
        "trace_time": 1.0,
    }
    assert "trace_time" not in VerifyJob(job.script, stochastic, 6).kwargs()  # verify_script's default
    with pytest.raises(TypeError):
        VerifyJob.planned(job, None, steps=6, timeout=60.0, jobs=2)
