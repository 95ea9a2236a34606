"""The supervisor of one verify run: ``python -E -S reaper.py -- COMMAND...``.

A training script starts processes of its own (DataLoader workers, ``xmp.spawn``, a helper that
calls ``setsid`` or ``subprocess.Popen(..., start_new_session=True)``); killing the run's process
group does not reach those that left it. This process stands between verify and the run:

* it is the run's **child subreaper** (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``, prctl(2)): every
  process the run starts and that outlives its parent is re-parented to it, whatever session or
  group it moved to, instead of to init;
* it starts ``COMMAND`` (``os.execvp``, the environment it was given) and waits for it;
* when ``COMMAND`` ends, and when it is told to stop (SIGTERM, SIGINT, SIGHUP: verify's timeout
  and Ctrl-C), it kills every process it has become the ancestor of (found in ``/proc``, killed
  with SIGKILL, and reaped, until none is left), then ends with ``COMMAND``'s status (the same
  exit code, or the same signal);
* it asks to be sent SIGTERM when verify itself dies (``prctl(PR_SET_PDEATHSIG)``), so a verify
  killed with ``kill -9`` leaves nothing running either.

It imports nothing of bf16_migrate and runs with ``-E -S`` (no ``PYTHONPATH``, no site): the
run's own environment, harness included, is for ``COMMAND`` only. Where prctl or ``/proc`` is
missing (not Linux) it still starts and waits, and verify's process-group kill is what is left.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Stop(Exception):
    """A stop signal arrived."""


def _prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children_of() -> dict[int, int]:
    """pid -> parent pid of every process in ``/proc`` (empty without ``/proc``)."""
    parents: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return parents
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")"
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            parents[int(name)] = int(fields[1])
    return parents


def descendants(root: int) -> list[int]:
    """Every process below ``root`` in the process tree (``/proc``), children first."""
    parents = _children_of()
    below: list[int] = []
    frontier = [root]
    while frontier:
        current = frontier.pop()
        kids = [pid for pid, parent in parents.items() if parent == current]
        below.extend(kids)
        frontier.extend(kids)
    return below


def kill_all_below(me: int, rounds: int = 200) -> None:
    """SIGKILL every descendant of ``me`` and reap them, until none is left (a process forking
    while it is killed has its child re-parented here, and found in the next round)."""
    for _ in range(rounds):
        below = descendants(me)
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _reap()
        if not below and not _has_children():
            return
        time.sleep(0.01)


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _has_children() -> bool:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        print("usage: reaper.py -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    command = argv[argv.index("--") + 1 :]
    parent = os.getppid()
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)

    stopping: list[int] = []

    def stop(signum, frame):
        if not stopping:  # once: a second signal must not interrupt the cleanup
            stopping.append(signum)
            raise _Stop

    for signum in STOP_SIGNALS:
        signal.signal(signum, stop)
    me = os.getpid()
    status = None
    try:
        if os.getppid() != parent:  # verify died before the death signal was asked for
            return 128 + signal.SIGTERM
        child = os.fork()
        if child == 0:
            for signum in STOP_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            try:
                os.execvp(command[0], command)
            except OSError as exc:
                print(f"verify: cannot start {command[0]}: {exc.strerror}", file=sys.stderr)
            os._exit(127)
        while status is None:
            pid, code = os.waitpid(-1, 0)  # orphans re-parented here are reaped as they end
            if pid == child:
                status = code
    except _Stop:
        status = None
    finally:
        stopping.append(0)
        kill_all_below(me)
    if status is None:
        return 128 + signal.SIGTERM
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(me, sig)  # end as the command did, so verify reads the same status
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
