"""verify's temporary directories, named after the process that made them, and removed by the next
verify when that process is gone.

A verify stopped with ``kill -9`` (or by the out-of-memory killer) cannot remove its temporary
directories: copies of the scripts, records, logs and graph dumps, megabytes each. Each is named
``bf16-migrate-KIND-PID-RANDOM`` in the temporary directory (``tempfile.gettempdir()``); making a
new one first removes those of the same kind whose PID is no longer a running process and that
belong to this user (the same rule as the rewrite's staged temporaries, :mod:`bf16_migrate.commit`).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile

_NAME = re.compile(r"^bf16-migrate-(?P<kind>[a-z]+)-(?P<pid>\d+)-[A-Za-z0-9_]+$")


def scratch_dir(kind: str) -> tempfile.TemporaryDirectory:
    """A new temporary directory ``bf16-migrate-KIND-PID-RANDOM`` (``kind``: lower-case letters),
    after removing the stale ones of that kind (:func:`remove_stale`)."""
    remove_stale(kind)
    return tempfile.TemporaryDirectory(prefix=f"bf16-migrate-{kind}-{os.getpid()}-")


def remove_stale(kind: str, where: str | None = None) -> list[str]:
    """Remove the directories ``bf16-migrate-KIND-PID-*`` in ``where`` (default: the temporary
    directory) whose PID no longer runs and that this user owns (a symlink is never followed nor
    removed). Returns the paths removed."""
    where = where or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(where)
    except OSError:
        return removed
    for name in names:
        match = _NAME.match(name)
        if match is None or match["kind"] != kind or _alive(int(match["pid"])):
            continue
        path = os.path.join(where, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def is_scratch(name: str) -> bool:
    """Whether ``name`` (a file name, no directory) is one of verify's temporary directories'
    (``bf16-migrate-KIND-PID-RANDOM``, :func:`scratch_dir`): a working copy never copies one."""
    return _NAME.match(name) is not None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


__all__ = ["is_scratch", "remove_stale", "scratch_dir"]
