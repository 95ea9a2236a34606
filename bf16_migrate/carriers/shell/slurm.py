"""Slurm in a shell script: the ``--export`` lists of ``sbatch``/``srun`` command lines and the
``#SBATCH`` directives of a batch script.

A batch script is a launcher: ``#SBATCH --export=ALL,XLA_USE_BF16=1`` puts the variable in the
environment the whole script runs in (and so in every ``srun`` step and Python process it
starts), exactly as an ``export`` on its first line would. sbatch(1) (Slurm 26.11): "The batch
script may contain one or more lines beginning with "#SBATCH" followed by any of the CLI
options"; "Once the first non-comment, non-whitespace line has been reached in the script, no
more #SBATCH directives will be processed"; the directives are "read directly by Slurm, so
shell-specific syntax including variable names will be read as literal text". Slurm reads a
directive line (src/sbatch/opt.c, ``_opt_batch_script``: a line starting with ``#SBATCH``, or
the old ``#SLURM``, at its very first column) into words as a shell would split it: whitespace
separates, quotes group, an unquoted ``#`` starts a comment (``get_argument``). Here the line is
split by :mod:`shlex` (POSIX rules: the same splitting, quotes and ``#`` comments; a backslash
inside quotes, which Slurm and shlex read differently, leaves the line unrewritten).

An ``--export`` list (:func:`bf16_migrate.command_lines.export_list`) is edited item by item:
the legacy item goes (``--export=ALL,XLA_USE_BF16=1`` -> ``--export=ALL``), or becomes
``NEURON_RT_STOCHASTIC_ROUNDING_EN=1`` in its place; ``ALL``/``NONE``/``NIL`` and the other
variables stay as written. A list left with no item becomes ``NONE``, which exports what an
empty list of variables exports (only ``SLURM_*``, src/sbatch/sbatch.c). A list whose quotes
are inside it (``--export=ALL,"X=1"``) is read but not rewritten (reported: BFM131).
"""

from __future__ import annotations

import io
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...command_lines import ExportList, export_list
from ..model import KEEP, REPLACE, STOCHASTIC, Decision, Edit

DIRECTIVE_PREFIXES = (b"#SBATCH", b"#SLURM")
"""The words that start a directive line (src/sbatch/opt.c: ``#SLURM`` is the old spelling)."""


COMPUTED = "\0"
"""Stands in a list's value for a part computed at run time (``LR=$lr``; :func:`computed_word`):
the NUL of :data:`.expand.COMPUTED`, which a word never holds."""


@dataclass
class ExportSite:
    """One ``--export`` list in the text: its ``listed`` items (:class:`ExportList`), the byte
    offset ``start`` of its text as written in the parsed data, ``written`` that text and
    ``spans`` each item's span in it (``start`` None, with ``problem``, when the list cannot be
    edited in place), and the entry id of each item made an entry (item index -> id)."""

    listed: ExportList
    start: int | None
    written: str = ""
    spans: tuple[tuple[int, int], ...] = ()
    problem: str | None = None
    entries: dict[int, int] = field(default_factory=dict)

    def written_as_read(self, index: int) -> bool:
        """Whether item ``index`` is written as its value reads (no quote or escape in it)."""
        a, b = self.spans[index]
        item = self.listed.items[index]
        return self.written[a:b] == self.listed.text[item.start : item.end]

    def item_byte(self, index: int) -> int:
        """The byte offset in the parsed data where item ``index`` is written."""
        assert self.start is not None, "an editable site"
        return self.start + len(self.written[: self.spans[index][0]].encode("utf-8", "surrogateescape"))


UNEDITABLE = (
    "its --export list cannot be rewritten item by item as it is written (quotes or escapes in the item): edit it "
    "by hand"
)


def site_in_word(raw: str, listed: ExportList, word_start: int) -> ExportSite:
    """The :class:`ExportSite` of ``listed``, found in a shell word written ``raw`` (bytes from
    ``word_start``): after its ``--export=`` (if any), the list may be quoted as a whole
    (``"--export=ALL,X=1"``, ``--export="ALL,LR=$lr,X=1"``, ``'ALL,X=1'``), and, split at the
    commas outside quotes as Slurm splits its value, must give the value's items one for one,
    each legacy one written as it reads; else the site is read but not edited in place."""
    prefix = "--export=" if listed.offset else ""
    body, skipped = raw, 0
    if body[:1] in "'\"" and body.endswith(body[:1]) and len(body) >= 2:
        body, skipped = body[1:-1], 1
    if prefix and body.startswith(prefix):
        body, skipped = body[len(prefix) :], skipped + len(prefix)
        if body[:1] in "'\"" and body.endswith(body[:1]) and len(body) >= 2 and body.count(body[0]) == 2:
            body, skipped = body[1:-1], skipped + 1
    written = export_list(body)
    spans = tuple((item.start, item.end) for item in written.items)
    fits = len(spans) == len(listed.items) and all(
        item.name is None
        or COMPUTED in listed.text[item.start : item.end]
        or body[a:b] == listed.text[item.start : item.end]
        or not _plain(body[a:b])
        for (a, b), item in zip(spans, listed.items)
    )
    if not fits or not body:
        return ExportSite(listed, None, problem=UNEDITABLE)
    start = word_start + len(raw[:skipped].encode("utf-8", "surrogateescape"))
    return ExportSite(listed, start, body, spans)


def _plain(text: str) -> bool:
    return not any(ch in text for ch in "'\"\\")


def computed_word(node, data: bytes, static_value) -> str | None:
    """The value of a shell word starting ``--export=`` with each part computed at run time
    (``$lr``, ``${X}``, ``$(cmd)``) as :data:`COMPUTED`, so its static items can still be read;
    None for another word, or one with a computed part a list item cannot be told from."""
    parts: list[str] = []
    for child in node.named_children if node.type == "concatenation" else [node]:
        if child.type == "string":
            for inner in child.named_children:
                value = static_value(inner, data) if inner.type != "string_content" else None
                text = data[inner.start_byte : inner.end_byte].decode("utf-8", "surrogateescape")
                parts.append(text if inner.type == "string_content" else (value if value is not None else COMPUTED))
            continue
        value = static_value(child, data)
        parts.append(value if value is not None else COMPUTED)
    word = "".join(parts)
    return word if word.startswith("--export=") else None


def list_edits(site: ExportSite, decisions: Mapping[int, Decision], char_of) -> list[Edit]:
    """The one edit that carries out the ``decisions`` (entry id -> decision) for the entries of
    ``site``: the list rewritten with the removed items gone and the replaced ones renamed (the
    other items as written), ``NONE`` when no item is left. ``char_of(byte)`` maps a byte offset
    of the data to a character offset of the text."""
    if site.start is None:
        return []
    by_item = {index: decisions.get(eid, KEEP) for index, eid in site.entries.items()}
    if all(decision == KEEP for decision in by_item.values()):
        return []
    kept = []
    for index, (a, b) in enumerate(site.spans):
        decision = by_item.get(index, KEEP)
        if decision == KEEP:
            kept.append(site.written[a:b])
        elif decision == REPLACE:
            kept.append(f"{STOCHASTIC}=1")
    new = ",".join(dict.fromkeys(kept)) or "NONE"
    end = site.start + len(site.written.encode("utf-8", "surrogateescape"))
    return [Edit(char_of(site.start), char_of(end), new)]


@dataclass(frozen=True)
class Directive:
    """An ``--export`` list of a ``#SBATCH`` directive: its :class:`ExportSite` (byte offsets of
    the script's data) and the byte offset of the directive line's start."""

    site: ExportSite
    line_start: int


def directive_block_end(data: bytes) -> int:
    """The byte offset where the ``#SBATCH`` directives of a batch script end: the start of its
    first line that is neither blank nor a comment (sbatch(1): no directive is read after it)."""
    pos = 0
    for line in data.splitlines(keepends=True):
        stripped = line.strip()
        if stripped and not stripped.startswith(b"#"):
            return pos
        pos += len(line)
    return pos


OTHER_SCHEDULERS = {
    b"#PBS": "PBS/Torque",
    b"#$": "Grid Engine",
    b"#BSUB": "LSF",
    b"#COBALT": "Cobalt",
    b"#FLUX:": "Flux",
}
"""Directive prefixes of the batch schedulers whose directives are read but not rewritten (BFM115)."""


def other_scheduler(line: bytes) -> str | None:
    """The scheduler whose directive ``line`` is (``#PBS -v X=1``: ``"PBS/Torque"``), or None."""
    return next((name for prefix, name in OTHER_SCHEDULERS.items() if line.startswith(prefix)), None)


def is_directive(line: bytes) -> bool:
    """Whether ``line`` (a comment line of the directive block) is a Slurm directive."""
    return line.startswith(DIRECTIVE_PREFIXES)


def directive_exports(line: bytes, line_start: int) -> list[Directive] | str:
    """The ``--export`` lists of the directive ``line`` (its bytes, starting at byte
    ``line_start`` of the script), split as Slurm splits it (see the module docstring); a
    string saying why when the line cannot be split (an unmatched quote: sbatch refuses it too)."""
    prefix = next(p for p in DIRECTIVE_PREFIXES if line.startswith(p))
    body = line[len(prefix) :].decode("utf-8", "surrogateescape").rstrip("\r\n")
    try:
        words = _split(body)
    except ValueError as exc:
        return f"sbatch cannot read this directive ({exc})"
    body_start = line_start + len(prefix)
    found = []
    for k, (raw, value, start) in enumerate(words):
        listed, word = None, (raw, value, start)
        if value.startswith("--export="):
            listed = export_list(value[len("--export=") :], len("--export="))
        elif value == "--export" and k + 1 < len(words):
            word = words[k + 1]
            listed = export_list(word[1])
        if listed is not None:
            byte = body_start + len(body[: word[2]].encode("utf-8", "surrogateescape"))
            found.append(Directive(site_in_word(word[0], listed, byte), line_start))
    return found


def _split(body: str) -> list[tuple[str, str, int]]:
    """The words of a directive's text: ``(raw, value, start)`` each, ``raw`` as written from
    character ``start`` of ``body``, ``value`` as :mod:`shlex` reads it (POSIX mode, ``#``
    comments). ``ValueError`` for an unmatched quote."""
    stream = io.StringIO(body)
    lexer = shlex.shlex(stream, posix=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words = []
    while True:
        # the stream's position before a word is where the blanks before it start
        before = stream.tell()
        value = lexer.get_token()
        if value is None or value == lexer.eof:
            break
        start = before + len(body[before:]) - len(body[before:].lstrip())
        words.append((body[start : _word_end(body, start)], value, start))
    return words


def _word_end(body: str, start: int) -> int:
    """Where the word starting at ``start`` of ``body`` ends, as shlex ends it: at a blank or a
    ``#`` outside quotes (a backslash outside single quotes escapes the next character)."""
    quote, k = "", start
    while k < len(body):
        ch = body[k]
        if ch == "\\" and quote != "'":
            k += 2
            continue
        if ch in "'\"" and (not quote or quote == ch):
            quote = "" if quote else ch
        elif not quote and (ch.isspace() or ch == "#"):
            break
        k += 1
    return min(k, len(body))
