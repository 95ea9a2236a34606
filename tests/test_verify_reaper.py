"""verify leaves nothing running: every process a run starts is killed when the run ends, times
out, crashes, is interrupted with Ctrl-C, and when verify itself is killed with SIGKILL, even a
process that left the run's session (``start_new_session=True``, ``setsid``).

The stand-in scripts import neither torch nor torch_xla; each names the legacy variable (verify
needs one) and starts two processes in sessions of their own that would sleep for ten minutes,
each carrying a marker in its command line by which the test looks for survivors.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

SPAWNER = """import os
os.environ["XLA_USE_BF16"] = "1"
import subprocess, sys, time
marker = sys.argv[1]
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker], start_new_session=True)
subprocess.Popen(["sh", "-c", "setsid sh -c 'sleep 600; echo " + marker + "' &"])
time.sleep(0.5)
print("spawned", flush=True)
if sys.argv[2] == "hang":
    time.sleep(600)
elif sys.argv[2] == "crash":
    raise RuntimeError("boom")
"""

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to look for survivors")


def survivors(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace").replace("\0", " ")
        except OSError:
            continue
        if marker in cmdline:
            found.append(f"{proc.name}: {cmdline}")
    return found


def wait_for_no_survivors(marker: str, seconds: float = 5.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while True:
        left = survivors(marker)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.fixture
def spawner(tmp_path):
    script = tmp_path / "spawner.py"
    script.write_text(SPAWNER)
    marker = f"bfm-test-survivor-{uuid.uuid4().hex}"
    yield script, marker
    for line in survivors(marker):  # never leave them to the next test, whatever happened
        os.kill(int(line.split(":")[0]), signal.SIGKILL)


def verify_command(script: Path, marker: str, how: str, timeout: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bf16_migrate.cli",
        "verify",
        str(script),
        "--steps",
        "3",
        "--timeout",
        str(timeout),
        "--",
        marker,
        how,
    ]


@pytest.mark.parametrize("how", ["hang", "exit", "crash"])
def test_nothing_a_run_started_survives_its_end_or_its_timeout(tmp_path, spawner, how):
    script, marker = spawner
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        verify_command(script, marker, how, timeout=4), capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 2, proc.stderr
    if how == "hang":
        assert "timed out after 4 s" in proc.stderr
    assert wait_for_no_survivors(marker) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_nothing_survives_ctrl_c_or_a_killed_verify(tmp_path, spawner, signum):
    script, marker = spawner
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    proc = subprocess.Popen(
        verify_command(script, marker, "hang", timeout=120),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 120
        while len(survivors(marker)) < 6 and time.monotonic() < deadline:  # three runs, two each
            time.sleep(0.2)
        assert len(survivors(marker)) >= 6, "the runs did not start their processes"
        proc.send_signal(signum)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == (-signal.SIGKILL if signum == signal.SIGKILL else 130)
    assert wait_for_no_survivors(marker) == []


SLOW_TO_PARSE = """import os
os.environ["XLA_USE_BF16"] = "1"
import argparse, time
time.sleep(600)  # a script that imports and builds for long before it parses its arguments
argparse.ArgumentParser().parse_args()
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_the_argument_check_ends_with_a_killed_verify(tmp_path, signum):
    """verify starts a script that uses argparse once, to check its arguments, before the runs;
    verify stopped meanwhile (SIGKILL: no handler of its own runs) leaves no such process."""
    script = tmp_path / "slow_to_parse.py"
    script.write_text(SLOW_TO_PARSE)
    marker = f"bfm-test-survivor-{uuid.uuid4().hex}"
    proc = subprocess.Popen(
        verify_command(script, marker, "parse", timeout=120),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    try:
        deadline = time.monotonic() + 120

        def checking() -> list[str]:  # verify's own command line holds the marker too
            return [line for line in survivors(marker) if int(line.split(":")[0]) != proc.pid]

        while not checking() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert checking(), "the argument check did not start"
        proc.send_signal(signum)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        left = wait_for_no_survivors(marker)
        for line in left:
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
    assert proc.returncode == (-signal.SIGKILL if signum == signal.SIGKILL else 130)
    assert left == []
