"""How many processes a run may fork to share its work (the byte prefilter's reading, a batch of
migrations), and how those worker processes end with the run that forked them.

A worker must never outlive its parent: a run stopped by ``timeout``, by SIGTERM from a cancelled
CI job, or killed outright (SIGKILL) must not leave workers behind, parented to init and waiting
for work that will never come. Each worker, as it starts (:func:`die_with_parent`), takes the
default action back for the signals the parent turns into an interrupt (a signal sent to the
process group ends it at once, instead of raising an interrupt that a pool worker would catch
and live on after), and on Linux asks the kernel to kill it when its parent exits
(``PR_SET_PDEATHSIG``, prctl(2)), which covers a parent killed by SIGKILL. The parent, when an
interrupt leaves a pool early, kills the pool's workers instead of waiting for the work still
queued (:func:`process_pool`).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

PR_SET_PDEATHSIG = 1
"""prctl(2)'s option: the signal the calling process gets when its parent exits (linux/prctl.h)."""


def fork_workers() -> int:
    """The cores this process may run on when it can fork workers safely, else 1: forking is
    used on Linux only, and only while no other thread runs (a thread holding a lock at the
    fork would leave it held in the child: https://docs.python.org/3/library/os.html#os.fork)."""
    if sys.platform != "linux" or not hasattr(os, "fork") or threading.active_count() != 1:
        return 1
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def die_with_parent(parent: int) -> None:
    """Called first in a worker process forked from the process ``parent`` (a pid): SIGINT,
    SIGTERM and SIGHUP take their default action again (they end the worker), and on Linux the
    kernel is asked to send SIGKILL when the parent exits (``PR_SET_PDEATHSIG``; the worker is
    forked by the parent's main thread, whose end is the parent's). A parent that has already
    gone (before the request was made) ends the worker here. Never raises."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(signum, signal.SIG_DFL)
        except (OSError, ValueError):  # pragma: no cover - not the main thread
            pass
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
            pass
    if os.getppid() != parent:
        os._exit(1)


@contextmanager
def process_pool(count: int) -> Iterator[Any]:
    """A :class:`concurrent.futures.ProcessPoolExecutor` of ``count`` workers forked from this
    process (they start with everything it has imported and read), each ending with it
    (:func:`die_with_parent`). Left by an exception (an interrupt: SIGINT, SIGTERM turned into
    one by the command line), the work still queued is cancelled and the workers are killed,
    not waited for. Raises ``OSError`` when no worker can be started."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    before = {child.pid for child in multiprocessing.active_children()}
    pool = ProcessPoolExecutor(
        max_workers=count,
        mp_context=multiprocessing.get_context("fork"),
        initializer=die_with_parent,
        initargs=(os.getpid(),),
    )
    try:
        yield pool
    except BaseException:
        # this process is single-threaded apart from the pool's (fork_workers): the children
        # started since the pool began are its workers
        for child in multiprocessing.active_children():
            if child.pid not in before:
                child.kill()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
