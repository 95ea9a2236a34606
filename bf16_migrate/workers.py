"""How many processes a run may fork to share its work (the byte prefilter's reading, a batch of
migrations)."""

from __future__ import annotations

import os
import sys
import threading


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
