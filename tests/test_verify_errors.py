"""verify's error paths, without XLA: scripts that never train, want arguments, hang, are
interrupted, or swallow the stop; --against's git errors; JSON/plot/progress output.

The scripts here do not import torch_xla (most not even torch), so these run in seconds. Every
CLI call runs with TMPDIR in tmp_path, so the tests can check that the temporary files are gone.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bf16_migrate.rules import mode_named
from bf16_migrate.verify import RunError, verify_script
from bf16_migrate.verify.compare import judge
from bf16_migrate.verify.gitrev import legacy_source_at
from bf16_migrate.verify.graphs import GraphStats
from bf16_migrate.verify.progress import PlainProgress, RichProgress, make_progress
from bf16_migrate.verify.records import RunRecord
from bf16_migrate.verify.runner import _argparse_error, _crash_hint, _read_progress, child_env

SWITCH = 'import os\nos.environ["XLA_USE_BF16"] = "1"\n'


def _cli(args, tmp_path, timeout=120, **kw):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    proc = subprocess.run(
        [sys.executable, "-m", "bf16_migrate.cli", "verify", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        **kw,
    )
    return proc, tmpdir


def _script(tmp_path, body, name="train.py"):
    path = tmp_path / name
    path.write_text(SWITCH + body)
    return path


def _no_leftovers(tmpdir: Path, marker: str) -> None:
    assert list(tmpdir.iterdir()) == [], list(tmpdir.iterdir())
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            assert marker not in cmdline, f"process {proc.name} still runs: {cmdline!r}"


def test_script_that_never_calls_backward_is_exit_2_with_advice(tmp_path):
    script = _script(
        tmp_path,
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs', type=int, default=0)\n"
        "args = p.parse_args()\nfor _ in range(args.epochs):\n    pass\nprint('done')\n",
    )
    proc, tmpdir = _cli([str(script), "--steps", "3"], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "ran to its end without calling backward(): 0 optimizer steps" in proc.stderr
    assert "what to try:" in proc.stderr and "after `--`" in proc.stderr
    _no_leftovers(tmpdir, str(script))


def test_script_that_needs_arguments_says_to_pass_them_after_dashes(tmp_path):
    script = _script(
        tmp_path,
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--data-dir', required=True)\np.parse_args()\n",
    )
    proc, tmpdir = _cli([str(script), "--steps", "3"], tmp_path)
    assert proc.returncode == 2
    # the pre-flight says it from one short process, before any run (verify/preflight.py)
    assert "does not accept the arguments (none)" in proc.stderr
    assert "the following arguments are required: --data-dir" in proc.stderr and "run started" not in proc.stderr
    assert "pass the script's own arguments after `--`" in proc.stderr
    _no_leftovers(tmpdir, str(script))


def test_hanging_script_times_out_with_exit_2_and_children_killed(tmp_path):
    script = _script(tmp_path, "import time\ntime.sleep(600)\n", name="hang_forever.py")
    start = time.monotonic()
    proc, tmpdir = _cli([str(script), "--steps", "3", "--timeout", "2"], tmp_path)
    assert proc.returncode == 2
    assert "timed out after 2 s (0 optimizer steps made)" in proc.stderr
    assert "raise --timeout" in proc.stderr
    assert time.monotonic() - start < 60
    _no_leftovers(tmpdir, str(script))


def test_ctrl_c_kills_the_runs_and_removes_the_temporary_files(tmp_path):
    script = _script(tmp_path, "import time\ntime.sleep(600)\n", name="interrupt_me.py")
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bf16_migrate.cli", "verify", str(script), "--steps", "3"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmpdir)},
    )
    try:
        line = ""
        deadline = time.monotonic() + 60
        while "run started" not in line and time.monotonic() < deadline:
            assert proc.stderr is not None
            line = proc.stderr.readline()
        assert "run started" in line
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    _no_leftovers(tmpdir, str(script))


def test_script_that_swallows_the_stop_is_ended_after_its_record(tmp_path):
    # A bare `except:` catches even SystemExit: the harness then ends the process itself.
    pytest.importorskip("torch")
    body = (
        "import torch\n"
        "w = torch.nn.Parameter(torch.ones(3))\n"
        "opt = torch.optim.SGD([w], lr=0.1)\n"
        "for step in range(10000):\n"
        "    try:\n"
        "        opt.zero_grad()\n"
        "        loss = ((w - 2) ** 2).sum()\n"
        "        loss.backward()\n"
        "        opt.step()\n"
        "    except:  # noqa: E722\n"
        "        print('swallowed', flush=True)\n"
        "print('loop ended')\n"
    )
    script = _script(tmp_path, body)
    record = tmp_path / "r.json"
    env = child_env(dict(os.environ), tmp_path, record=record, steps=4)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "caught the stop" in proc.stderr and "loop ended" not in proc.stdout
    data = json.loads(record.read_text())
    assert data["steps"] == 4 and data["exit_reason"] == "steps_reached"
    assert data["losses"][0] == pytest.approx(3.0)  # sum((1 - 2)^2), CPU float32
    assert data["backward_calls"] == 4


def test_no_legacy_variable_anywhere_is_a_clear_error(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('hello')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("XLA_")}
    with pytest.raises(RunError) as info:
        verify_script(script, env=env)
    assert "names no legacy variable" in str(info.value) and "--legacy-env" in str(info.value)


def test_json_is_written_on_a_run_error_too(tmp_path):
    script = _script(tmp_path, "raise SystemExit(3)\n")
    out = tmp_path / "v.json"
    proc, tmpdir = _cli([str(script), "--steps", "3", "--json", str(out)], tmp_path)
    assert proc.returncode == 2
    data = json.loads(out.read_text())
    assert data["schema"] == "bf16-migrate/verify/2" and data["passed"] is False
    assert data["error"]["run"] == "migrated" and "exited with code 3" in data["error"]["message"]
    assert set(data["error"]["runs"]) >= {"migrated", "legacy"}
    _no_leftovers(tmpdir, str(script))


# -- --against: git errors (the passing case runs on XLA in test_verify_e2e.py) ------------------


def _git(cwd, *args):
    subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.com",
        },
    )


def test_against_outside_a_git_repository_is_exit_2(tmp_path):
    script = _script(tmp_path, "")
    proc, _ = _cli([str(script), "--against", "HEAD"], tmp_path, cwd=tmp_path)
    assert proc.returncode == 2
    assert "is not inside a git repository" in proc.stderr


def test_against_errors_in_a_repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "other.py").write_text("x = 1\n")
    _git(repo, "add", "other.py")
    _git(repo, "commit", "-q", "-m", "first")
    script = _script(repo, "print('migrated')\n")
    with pytest.raises(RunError, match=r"train.py does not exist at HEAD"):
        legacy_source_at(script, "HEAD")
    with pytest.raises(RunError, match="no such commit"):
        legacy_source_at(script, "no-such-branch")
    _git(repo, "add", "train.py")
    _git(repo, "commit", "-q", "-m", "second")
    text, sha = legacy_source_at(script, "HEAD")
    assert text == script.read_text() and len(sha) == 40
    # the same text at REV and in the work tree: nothing was migrated in between
    proc, _ = _cli([str(script), "--against", "HEAD"], tmp_path, cwd=repo)
    assert proc.returncode == 2 and "nothing was migrated" in proc.stderr
    proc, _ = _cli([str(script), "--against", "HEAD~5"], tmp_path, cwd=repo)
    assert proc.returncode == 2 and "no such commit" in proc.stderr


# -- small pieces ---------------------------------------------------------------------------


def test_argparse_error_and_crash_hints_are_recognised():
    tail = [
        "usage: train.py [-h] --data-dir DATA_DIR",
        "train.py: error: the following arguments are required: --data-dir",
    ]
    assert _argparse_error(tail) == "the following arguments are required: --data-dir"
    assert _argparse_error(["error: something"]) is None
    hint = _crash_hint(["RuntimeError: ... Seen floating point types of different precisions in %multiply"])
    assert hint and "cast it with .to(torch.bfloat16)" in hint
    assert _crash_hint(["KeyError: 'x'"]) is None


def test_progress_file_and_child_env(tmp_path):
    assert _read_progress(tmp_path / "none") == (None, None)
    (tmp_path / "p").write_text("7 12.5\n")
    assert _read_progress(tmp_path / "p") == (7, 12.5)
    env = child_env(
        {"XLA_SAVE_TENSORS_FILE": "/mine", "XLA_SAVE_TENSORS_FMT": "text"},
        tmp_path,
        record=tmp_path / "r",
        steps=3,
        graphs=tmp_path / "g",
        progress=tmp_path / "p",
    )
    assert env["XLA_SAVE_TENSORS_FILE"] == str(tmp_path / "g") and env["XLA_SAVE_TENSORS_FMT"] == "hlo"
    assert env["BF16_MIGRATE_PROGRESS"] == str(tmp_path / "p")
    env = child_env({"XLA_SAVE_TENSORS_FILE": "/mine"}, tmp_path, record=tmp_path / "r", steps=3)
    assert "XLA_SAVE_TENSORS_FILE" not in env  # no dump asked for: the caller's is not inherited either


def test_plain_progress_lines():
    buf = io.StringIO()
    p = PlainProgress(buf, steps=8)
    p.start("legacy")
    for k in range(1, 9):
        p.step("legacy", k, k * 0.5)
    p.end("legacy", RunRecord("legacy", losses=[1.0] * 8, wall_time_s=4.0))
    p.end("reference", RunRecord("reference", error="timed out after 2 s (0 optimizer steps made)"))
    lines = buf.getvalue().splitlines()
    assert lines[0] == "verify: legacy run started"
    assert "verify: legacy step 1/8 (0.5 s)" in lines and "verify: legacy step 8/8 (4.0 s)" in lines
    assert len([x for x in lines if " step " in x]) == 5  # 1, 2, 4, 6, 8: the first step and every quarter
    assert lines[-2] == "verify: legacy run done, 8 steps in 4.0 s"
    assert lines[-1].startswith("verify: fp32-ref run FAILED: timed out")


def test_make_progress_picks_plain_off_a_tty_and_rich_on_request():
    with make_progress(5, ["legacy"], stream=io.StringIO()) as p:
        assert isinstance(p, PlainProgress)
    pytest.importorskip("rich")
    buf = io.StringIO()
    with make_progress(5, ["legacy", "migrated"], stream=buf, rich=True) as p:
        assert isinstance(p, RichProgress)
        p.start("legacy")
        p.step("legacy", 5, 1.0)
        p.end("legacy", RunRecord("legacy", losses=[1.0] * 5, wall_time_s=2.0))
    assert "legacy" in buf.getvalue() and "done, 5 steps" in buf.getvalue()


def test_rewrite_path_imports_neither_rich_nor_matplotlib_nor_torch(tmp_path):
    target = tmp_path / "t.py"
    target.write_text("x = 1\n")
    code = (
        "import sys\nfrom bf16_migrate.cli import main\n"
        "try:\n    main([sys.argv[1], '--check'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('rich', 'matplotlib', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    from bf16_migrate.verify import VerifyReport
    from bf16_migrate.verify.plot import plot_report

    legacy = [0.71484375, 0.8828125, 0.84375, 0.7421875, 0.73046875, 0.625]
    fp32 = [x * 1.01 for x in legacy]
    g = GraphStats(matmuls=8, matmuls_bf16=8, step=6)
    runs = {
        "legacy": RunRecord("legacy", losses=legacy, device_param_dtypes={"bf16": 6}, graph=g, compile_count=2),
        "migrated": RunRecord(
            "migrated",
            losses=legacy[:3] + [x * 1.004 for x in legacy[3:]],
            param_dtypes={"bfloat16": 6},
            device_param_dtypes={"bf16": 6},
            graph=g,
            compile_count=2,
        ),
        "reference": RunRecord("reference", losses=fp32, graph=GraphStats(matmuls=8, matmuls_f32=8), compile_count=2),
    }
    rep = VerifyReport(
        script=tmp_path / "train.py",
        mode=mode_named("stochastic"),
        steps=6,
        runs=runs,
        verdict=judge(mode_named("stochastic"), runs),
    )
    out = plot_report(rep, tmp_path / "curves.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000
