"""``--diff``: the change of a run as one patch that ``git apply`` (and ``patch -p1``) take.

Python's :func:`difflib.unified_diff` gives the hunks; what it leaves out is what a patch tool
needs to apply them to the bytes on disk, added here:

- paths relative to the current directory, whatever the form of the paths given (``a/`` and
  ``b/`` prefixes as git writes them; an absolute path would read ``a//abs/path`` and be refused).
  A file outside the current directory gets a ``../`` path, which ``git apply`` and ``patch``
  refuse: run ``--diff`` from the directory that holds the files (the repository's root);
  a file created by the run is ``--- /dev/null`` (git's documentation, "git diff": "Generating
  patch text with -p");
- lines split at ``\\n`` only (:meth:`str.splitlines` also splits at ``\\f``, ``\\x1c``, ``\\u2028``
  and others, which are not line ends for a patch tool), ``\\r\\n`` kept inside the line;
- a last line without a newline followed by ``\\ No newline at end of file`` (GNU diffutils'
  marker, which git reads);
- each file's hunks in the file's own encoding, a UTF-8 BOM included on its first line
  (the text of :mod:`bf16_migrate.write` is decoded without it), so the context lines are the
  bytes the file holds.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from . import escaped_bytes  # noqa: F401 (registers the utf-8+bytes codec the carriers are written with)

NO_NEWLINE = "\\ No newline at end of file\n"


def patch_path(path: Path | str) -> str:
    """``path`` as a patch names it: relative to the current directory (``../`` when it is
    outside), with ``/`` separators. Symlinks are not resolved (the path is the one the user
    knows)."""
    return Path(os.path.relpath(os.path.abspath(path))).as_posix()


def _lines(text: str) -> list[str]:
    """``text`` split after each ``\\n`` (only there), each piece keeping its line end."""
    pieces = text.split("\n")
    lines = [piece + "\n" for piece in pieces[:-1]]
    if pieces[-1]:
        lines.append(pieces[-1])
    return lines


def file_patch(path: Path | str, old: str, new: str, encoding: str = "utf-8", created: bool = False) -> bytes:
    """The unified diff turning ``old`` into ``new`` (the decoded texts of the file at ``path``,
    written as ``encoding``: a codec name, ``"utf-8-sig"`` for a file with a BOM), as bytes;
    ``created``: the file does not exist yet. Empty when the texts are equal. Raises
    :class:`UnicodeEncodeError` when a text cannot be encoded as ``encoding`` (the run's write
    refuses the file then too)."""
    if old == new:
        return b""
    if encoding.replace("_", "-").lower() == "utf-8-sig":
        old, new, encoding = ("\ufeff" + old if old else old), "\ufeff" + new, "utf-8"
    # the header names the file by its bytes: a name that is not UTF-8 is given back as it is on disk
    name = os.fsencode(patch_path(path))
    head = b"--- " + (b"/dev/null" if created else b"a/" + name) + b"\n+++ b/" + name + b"\n"
    body = []
    # the first two lines are difflib's own ---/+++ header, replaced by the one above (a removed
    # line "--x" also starts with "---": only the position tells the header)
    for line in list(difflib.unified_diff(_lines(old), _lines(new), lineterm="\n", n=3))[2:]:
        body.append(line if line.endswith("\n") else line + "\n" + NO_NEWLINE)
    return head + "".join(body).encode(encoding)
