"""Worker processes end with the run that forked them (bf16_migrate.workers): the migrations'
process pool (bf16_migrate.migrations) and the byte prefilter's reading child
(bf16_migrate.prefilter_fork), when the run is stopped by SIGTERM (a cancelled CI job, ``timeout``),
by Ctrl-C (SIGINT to the whole foreground group) and when it is killed outright (SIGKILL, which no
handler sees: the kernel's parent-death signal is what ends the workers then).

Each run is a small driver process using the real modules, with the work itself replaced by a
sleep of ten minutes, so the workers are certainly busy when the driver is stopped: it prints
one line per busy worker, and the test stops it once all of them have printed. Every process
carries a marker in its command line (forked workers share their parent's), by which the test
looks for survivors. verify's runs have their own supervisor (tests/test_verify_reaper.py).
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

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers and /proc: Linux only"),
]

ROOT = Path(__file__).resolve().parents[1]

POOL = """import os, sys, time
from bf16_migrate import cli, migrations, workers
from bf16_migrate.rules import mode_named

def busy(call):
    os.write(1, f"busy {os.getpid()}\\n".encode())  # one write: whole lines from both workers
    time.sleep(600)

migrations._run = busy  # the workers are forked after this: they run it
workers.fork_workers = lambda: 2  # whatever the machine's cores
cli._interrupt_on_termination()  # as the command line does: SIGTERM raises KeyboardInterrupt
calls = [("x = 1\\n" * 3000, mode_named("stochastic"), f"train{i}.py", {}) for i in range(4)]
try:
    migrations.Migrations().ahead(calls)
except KeyboardInterrupt:
    sys.exit(130)
"""

PREFILTER = """import os, sys, time
from bf16_migrate import cli, prefilter_fork

parent = os.getpid()

started = sys.argv[2]

def test(name):
    if os.getpid() != parent:  # the child's first file never ends
        open(started, "w").close()
        os.write(1, f"busy {os.getpid()}\\n".encode())
        time.sleep(600)
    while not os.path.exists(started):  # this process reads on once the child has its file
        time.sleep(0.01)
    return False

cli._interrupt_on_termination()
try:
    prefilter_fork.read_forked([str(i) for i in range(100)], test, None)
except KeyboardInterrupt:
    sys.exit(130)
"""


def marked(marker: str) -> list[int]:
    """The pids of the processes whose command line holds ``marker``."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(proc.name))
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` is running (a zombie, dead and waiting for its reaper, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


def left_after(pids: list[int], seconds: float = 10.0) -> list[int]:
    """Those of ``pids`` still running after up to ``seconds`` (the kernel's signal and the
    workers' end take a moment; a survivor would sleep for ten minutes)."""
    deadline = time.monotonic() + seconds
    while True:
        left = [pid for pid in pids if alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def start_busy(driver: str, workers: int, marker: str, *args: str) -> tuple[subprocess.Popen, list[int]]:
    """The driver started in a session of its own (so that a Ctrl-C to its group reaches no
    other process), and the pids of its ``workers`` once each has printed that it is busy."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-c", driver, marker, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    busy: list[int] = []
    assert proc.stdout is not None
    while len(busy) < workers:
        line = proc.stdout.readline()
        assert proc.stderr is not None
        assert line, f"the driver ended before its workers were busy: {proc.wait()} {proc.stderr.read()}"
        assert line.startswith("busy "), line
        busy.append(int(line.split()[1]))
    assert proc.pid not in busy and all(alive(pid) for pid in busy)
    return proc, busy


@pytest.fixture
def marker():
    name = f"bfm-test-worker-{uuid.uuid4().hex}"
    yield name
    for pid in marked(name):  # never leave them to the next test, whatever happened
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def stop(proc: subprocess.Popen, how: str) -> int:
    """Stop the driver ``how`` and return its exit status (negative: the signal that ended it)."""
    if how == "SIGTERM":
        proc.send_signal(signal.SIGTERM)  # the driver alone, as a CI runner or `kill PID` does
    elif how == "Ctrl-C":
        os.killpg(proc.pid, signal.SIGINT)  # the whole group, as the terminal does
    else:
        proc.send_signal(signal.SIGKILL)
    try:
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode


@pytest.mark.parametrize(("how", "status"), [("SIGTERM", 130), ("Ctrl-C", 130), ("SIGKILL", -signal.SIGKILL)])
def test_the_migrations_pool_ends_with_the_run(marker, how, status):
    proc, busy = start_busy(POOL, 2, marker)
    assert stop(proc, how) == status
    assert left_after(busy) == []
    assert [pid for pid in marked(marker) if alive(pid)] == []


@pytest.mark.parametrize(("how", "status"), [("SIGTERM", 130), ("Ctrl-C", 130), ("SIGKILL", -signal.SIGKILL)])
def test_the_prefilter_child_ends_with_the_run(tmp_path, marker, how, status):
    """The child is busy on a file that does not end (a read that blocks); the run is stopped
    anyway, at once, and the child with it."""
    proc, busy = start_busy(PREFILTER, 1, marker, str(tmp_path / "started"))
    assert stop(proc, how) == status
    assert left_after(busy) == []
    assert [pid for pid in marked(marker) if alive(pid)] == []


def test_a_worker_whose_parent_is_already_gone_ends_at_once():
    """A worker forked just before its parent died (before it could ask for the parent-death
    signal) finds its parent gone and ends, instead of working on for nobody. The worker holds
    the driver's stdout: ``subprocess.run`` returns once the worker has ended too."""
    script = (
        "import os, time\n"
        "from bf16_migrate import workers\n"
        "parent = os.getpid()\n"
        "if os.fork() == 0:\n"
        "    while os.getppid() == parent:\n"  # until the parent is gone (re-parented)
        "        time.sleep(0.01)\n"
        "    workers.die_with_parent(parent)\n"
        "    print('worked on', flush=True)\n"
        "    os._exit(0)\n"
        "print('parent ends', flush=True)\n"
        "os._exit(0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout == "parent ends\n", done.stderr
