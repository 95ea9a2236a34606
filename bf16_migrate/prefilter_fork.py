"""Reading a long list of files in two processes: a forked child from the front, this process
from the back, meeting wherever the work takes them.

Written on ``os.fork`` rather than :mod:`multiprocessing` or :mod:`concurrent.futures`: a pool
hands out fixed tasks and returns their results, while here this process must be free to stop
reading for a while (to import the codemod once a file names a variable) and have the child read
on into its share. The two processes claim files from the two ends of the list through two
counters in an anonymous shared mapping; the child sends the indices it finds through a pipe.
Forking also gives the child the list without pickling 30,000 paths.

Claiming (one writer per counter, each only ever moving toward the other): the child claims
index ``i`` by setting ``front = i + 1`` after reading ``back > i``; this process claims ``j`` by
setting ``back = j`` after reading ``front <= j``. A stale read can make both claim the same
index (it is then read twice, which is harmless), never neither. If the child does not end
well (killed, or an error), this process reads everything the child had claimed again itself:
no file is ever left unread.
"""

from __future__ import annotations

import mmap
import os
import signal
import struct
from collections.abc import Callable, Sequence

from .workers import die_with_parent

_FRONT, _BACK, _FOUND, _STOP = range(4)  # int64 slots of the shared mapping
_INDEX = struct.Struct("<q")


def read_forked(
    names: Sequence[str], test: Callable[[str], bool], on_found: Callable[[], None] | None, at_once: bool = False
) -> list[str]:
    """Those of ``names`` for which ``test`` (:func:`bf16_migrate.prefilter.mentions_legacy`) is
    True, in the order of ``names``, read by this process and a forked child (see the module's
    docstring). ``on_found`` is called once in this process: as soon as either process has found
    one, or, with ``at_once``, right after the fork, while the child reads. Raises what
    ``on_found`` raises, and KeyboardInterrupt (the child is killed and reaped first). The child
    ends with this process, whatever ends it (:func:`bf16_migrate.workers.die_with_parent`)."""
    shared = mmap.mmap(-1, 8 * 4)  # anonymous and MAP_SHARED: the child's writes are seen here
    slots = memoryview(shared).cast("q")
    slots[_FRONT], slots[_BACK], slots[_FOUND], slots[_STOP] = 0, len(names), 0, 0
    read_end, write_end = os.pipe()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:  # no process to spare (EAGAIN, ENOMEM): this process reads the whole list
        pid = 0
    else:
        if pid == 0:  # the child: never returns
            die_with_parent(parent)
            os.close(read_end)
            _child(names, test, slots, write_end)
    os.close(write_end)
    hits: set[int] = set()
    called = on_found is None
    try:
        if at_once and on_found is not None:
            called = True
            on_found()
        while True:
            j = slots[_BACK] - 1
            if j < slots[_FRONT]:
                break
            slots[_BACK] = j
            if test(names[j]):
                hits.add(j)
            if not called and (hits or slots[_FOUND]):
                called = True
                on_found()  # type: ignore[misc]
        hits.update(_drain(read_end))
        ok = _reap(pid) if pid else True  # without a child, front stayed 0: all read here
        pid = 0
        if not ok:  # the child's share is read again here
            hits.update(i for i in range(slots[_FRONT]) if test(names[i]))
        if hits and not called:
            on_found()  # type: ignore[misc]
    finally:
        if pid:  # left by an exception (an interrupt, or on_found's): the child's reading is not wanted
            slots[_STOP] = 1
            os.close(read_end)
            # killed, not waited for: a file it is reading may block for long (a stalled network
            # mount), and a run that was interrupted must end now; it only reads, so nothing is lost
            _kill(pid)
            _reap(pid)
        else:
            os.close(read_end)
        slots.release()
        shared.close()
    return [names[i] for i in sorted(hits)]


def _child(names: Sequence[str], test: Callable[[str], bool], slots: memoryview, write_end: int) -> None:
    """Read from the front until meeting this process's share (or told to stop), sending each
    index found; exit 0 when done, 1 on any error. Never returns, never runs the parent's
    clean-up (``os._exit``)."""
    code = 1
    try:
        i = 0
        while i < slots[_BACK] and not slots[_STOP]:
            slots[_FRONT] = i + 1
            if test(names[i]):
                slots[_FOUND] = 1
                os.write(write_end, _INDEX.pack(i))
            i += 1
        code = 0
    except BaseException:  # noqa: BLE001 - a forked child must never unwind into the parent's code
        code = 1
    finally:
        os._exit(code)


def _drain(fd: int) -> list[int]:
    """The indices the child sent, read until it closes the pipe."""
    data = bytearray()
    while chunk := os.read(fd, 1 << 16):
        data += chunk
    usable = len(data) - len(data) % _INDEX.size
    return [value for (value,) in _INDEX.iter_unpack(bytes(data[:usable]))]


def _kill(pid: int) -> None:
    """SIGKILL the child (not yet reaped, so the pid is still its own)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:  # pragma: no cover - already reaped elsewhere
        pass


def _reap(pid: int) -> bool:
    """Wait for the child; whether it exited with 0."""
    while True:
        try:
            _, status = os.waitpid(pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            return False
        return os.waitstatus_to_exitcode(status) == 0
