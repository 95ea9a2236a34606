"""Where output goes and how it looks: colour (``--color``, ``FORCE_COLOR``, ``NO_COLOR``), the
terminal's width, and whether a stream is a terminal.

The colour rules are ruff's (ruff's documentation, "Configuring Ruff": ``--color <WHEN>``
``auto``/``always``/``never``, and the ``FORCE_COLOR`` and ``NO_COLOR`` variables of
https://force-color.org and https://no-color.org): the option wins; under ``auto`` a non-empty
``FORCE_COLOR`` turns colour on and a non-empty ``NO_COLOR`` turns it off; otherwise colour
goes to a terminal only.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import TextIO

COLOR_CHOICES = ("auto", "always", "never")


def use_color(when: str | None) -> bool | None:
    """The ``color`` argument of :func:`click.echo` for :func:`click.style`'d text: True
    (always), False (never) or None (click decides: a terminal only). ``when`` is ``--color``
    (None: not given, same as ``auto``)."""
    if when == "always":
        return True
    if when == "never":
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    return None


def colored(when: str | None, stream: TextIO | None = None) -> bool:
    """Whether text written to ``stream`` (default stdout) is coloured: :func:`use_color`
    resolved, a terminal deciding when it leaves it open."""
    decided = use_color(when)
    return decided if decided is not None else is_terminal(stream if stream is not None else sys.stdout)


def is_terminal(stream: TextIO) -> bool:
    """True when ``stream`` is a terminal (a pipe, a file or a captured stream is not)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed, or not a real stream
        return False


def width(stream: TextIO, default: int = 100) -> int | None:
    """The terminal's width in columns when ``stream`` is a terminal (``COLUMNS`` wins, as
    :func:`shutil.get_terminal_size` reads it), else None: text for a pipe, an editor or a log
    is never wrapped. At least 40."""
    if not is_terminal(stream):
        return None
    return max(40, shutil.get_terminal_size((default, 24)).columns)


def display_path(path: Path | str) -> str:
    """A file's path as findings and commands show it, as ruff shows it: relative to the
    current directory when the file is under it, else absolute; ``/`` separators, symlinks not
    resolved. A notebook cell's suffix (``nb.ipynb#cell2``) is kept."""
    text = str(path)
    base, sep, cell = text.partition("#cell") if text.split("#cell")[-1].isdigit() else (text, "", "")
    absolute = Path(os.path.abspath(base))
    cwd = Path(os.getcwd())
    shown = absolute.relative_to(cwd) if absolute == cwd or cwd in absolute.parents else absolute
    return shown.as_posix() + sep + cell
