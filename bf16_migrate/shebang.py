"""The kind of a script by its ``#!`` line, read without blocking on a special file.

Used by the scan (an extensionless file's kind) and by the launcher plan (a launched file that
its scheduler runs through its ``#!``, as sbatch does)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

SHELL_INTERPRETERS = {"sh", "bash", "zsh", "dash", "ksh"}


def shebang_kind(path: Path) -> str | None:
    """The kind of an extensionless script from its ``#!`` line (``#!/bin/bash``,
    ``#!/usr/bin/env -S python3 -u``), or None when it has none."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # a FIFO or device is never read (it could block)
        head = os.read(fd, 256).split(b"\n", 1)[0]
    except OSError:
        return None
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].decode("utf-8", "replace").split()
    words = [w.rsplit("/", 1)[-1] for w in words if not w.startswith("-")]
    if words and words[0] == "env":
        words = words[1:]
    if not words:
        return "unsupported"
    name = words[0]
    if name in SHELL_INTERPRETERS:
        return "shell"
    if name.startswith("python"):
        return "python"
    return "unsupported"
