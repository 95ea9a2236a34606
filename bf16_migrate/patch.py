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
    a, b = _lines(old), _lines(new)
    if len(a) + len(b) < ANCHORED_FROM:
        # the first two lines are difflib's own ---/+++ header, replaced by the one above (a
        # removed line "--x" also starts with "---": only the position tells the header)
        hunks = list(difflib.unified_diff(a, b, lineterm="\n", n=3))[2:]
    else:
        hunks = list(_unified_hunks(_Anchored(a, b), a, b, 3))
    for line in hunks:
        body.append(line if line.endswith("\n") else line + "\n" + NO_NEWLINE)
    return head + "".join(body).encode(encoding)


ANCHORED_FROM = 4000
"""From this many lines (old and new together) the hunks come from :class:`_Anchored`: difflib's
matcher costs the lines times the copies of each line (a file of 93 pasted scripts, 10k lines:
2.7 s; 20k lines: 25 s), the anchored one the lines."""


class _Anchored(difflib.SequenceMatcher):
    """difflib's matcher whose matching blocks are found between anchors: the lines that occur
    once in each text, in the same order in both (the longest such run: "patience diff", Bram
    Cohen's; git's ``--patience``), each gap between two anchors matched by difflib on its own.
    The gaps are short where the texts are long and alike, so the cost is about linear; the
    alignment may differ from difflib's on the whole text where several are equally good (any
    is a patch that applies)."""

    def __init__(self, a: list[str], b: list[str]) -> None:
        super().__init__(None, a, b, autojunk=False)
        self._lines = (a, b)
        self._blocks: list[difflib.Match] | None = None

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self._blocks is not None:
            return self._blocks
        a, b = self._lines
        blocks: list[tuple[int, int, int]] = []
        i0 = j0 = 0
        for i, j in [*_anchors(a, b), (len(a), len(b))]:
            gap = difflib.SequenceMatcher(None, a[i0:i], b[j0:j], autojunk=False)
            blocks.extend((i0 + x, j0 + y, size) for x, y, size in gap.get_matching_blocks() if size)
            if i < len(a):
                blocks.append((i, j, 1))
            i0, j0 = i + 1, j + 1
        merged: list[tuple[int, int, int]] = []
        for i, j, size in blocks:  # adjacent blocks as one, as difflib gives them
            if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
                merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
            else:
                merged.append((i, j, size))
        self._blocks = [difflib.Match(*m) for m in [*merged, (len(a), len(b), 0)]]
        return self._blocks


def _anchors(a: list[str], b: list[str]) -> list[tuple[int, int]]:
    """The (i, j) of lines that occur once in ``a`` and once in ``b``, the longest run of them in
    the same order in both (a longest increasing subsequence of j, by patience sorting)."""
    count_a: dict[str, int] = {}
    for line in a:
        count_a[line] = count_a.get(line, 0) + 1
    where_b: dict[str, int] = {}
    count_b: dict[str, int] = {}
    for j, line in enumerate(b):
        count_b[line] = count_b.get(line, 0) + 1
        where_b[line] = j
    pairs = [(i, where_b[line]) for i, line in enumerate(a) if count_a[line] == 1 and count_b.get(line) == 1]
    tails: list[int] = []  # tails[k]: index in pairs of the smallest last j of a run of k + 1
    before: list[int] = []  # the pair before each pair in its run
    for k, (_, j) in enumerate(pairs):
        lo, hi = 0, len(tails)
        while lo < hi:
            mid = (lo + hi) // 2
            if pairs[tails[mid]][1] < j:
                lo = mid + 1
            else:
                hi = mid
        before.append(tails[lo - 1] if lo else -1)
        if lo == len(tails):
            tails.append(k)
        else:
            tails[lo] = k
    run: list[tuple[int, int]] = []
    k = tails[-1] if tails else -1
    while k >= 0:
        run.append(pairs[k])
        k = before[k]
    return run[::-1]


def _unified_hunks(matcher: difflib.SequenceMatcher, a: list[str], b: list[str], n: int):
    """The hunks of a unified diff (``@@`` lines and their lines) from ``matcher``'s grouped
    opcodes, as :func:`difflib.unified_diff` writes them."""
    for group in matcher.get_grouped_opcodes(n):
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in a[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in b[j1:j2])


def _range(start: int, stop: int) -> str:
    """A unified diff's range (``start,length``; GNU diffutils' form: one line is its number
    alone, none is the line before it with length 0)."""
    beginning, length = start + 1, stop - start
    if length == 1:
        return f"{beginning}"
    if not length:
        beginning -= 1
    return f"{beginning},{length}"
