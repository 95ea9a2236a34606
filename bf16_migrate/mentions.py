"""Where a text names a legacy variable, and the findings for the text bf16-migrate reads but
never rewrites: documentation, files of a kind it has no parser for, a notebook's text cells.

A mention is a whole word: ``XLA_USE_BF16`` in ``export XLA_USE_BF16=1``, ``$XLA_USE_BF16`` or
``'XLA_USE_BF16': '1',``, not in ``MY_XLA_USE_BF16`` (the rule of the carriers' coverage check,
:func:`bf16_migrate.carriers.text.find_mentions`). The names come from ``rules/XLA_*.toml``.

* documentation (scan kind ``"docs"``: ``.md``, ``.mdx``, ``.rst``, ``.txt``, ``.html``,
  ``.adoc``) and a notebook's markdown and raw cells: one BFM091 per line naming a variable
  (the text tells readers to use a deprecated switch);
* any other file whose kind bf16-migrate does not rewrite (a Makefile, TOML, JSON, a jsonnet
  config, an unknown extension): one BFM090 per mention;
* a file of a kind it rewrites that names a variable only where nothing is set (comments), left
  with no change and no finding (:func:`bf16_migrate.project.migrate_paths` finds them): BFM094
  at its first mention when it holds a byte that is not UTF-8 (:func:`sets_nothing_undecodable`,
  :func:`first_bad_byte`), else only the summary's "nothing to change" (:func:`first_mention`).

Nothing here edits a file.
"""

from __future__ import annotations

import codecs
import re
from functools import cache
from pathlib import Path

from .diagnostics import Diagnostic, report
from .rules import load_rules


@cache
def _pattern() -> re.Pattern[str]:
    names = "|".join(sorted(map(re.escape, load_rules().variables), key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])({names})(?![A-Za-z0-9_])")


def mentions(text: str) -> list[tuple[int, int, str]]:
    """1-based (line, column, variable) of every whole-word mention of a legacy variable."""
    found: list[tuple[int, int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        found.extend((number, m.start() + 1, m.group(1)) for m in _pattern().finditer(line))
    return found


def named(variables: list[str]) -> str:
    """``variables`` in order, each once, joined by "and" (the ``variables`` field of BFM091)."""
    return " and ".join(dict.fromkeys(variables))


def docs_findings(path: str, text: str) -> list[Diagnostic]:
    """BFM091 for each line of the documentation ``text`` that names a legacy variable, at the
    first name on the line."""
    by_line: dict[int, list[tuple[int, str]]] = {}
    for line, col, variable in mentions(text):
        by_line.setdefault(line, []).append((col, variable))
    return [
        report("BFM091", path, line, found[0][0], False, variables=named([v for _, v in found]))
        for line, found in sorted(by_line.items())
    ]


def unsupported_findings(path: Path, text: str, binary: bool = False) -> list[Diagnostic]:
    """BFM090 for every mention in a file of a kind bf16-migrate does not rewrite (``binary``:
    a compiled or data file, which only a rebuild from migrated sources changes)."""
    kind = f"`{path.suffix}`" if path.suffix else f"`{path.name}`"
    variant = "binary" if binary else None
    return [
        report("BFM090", str(path), line, col, False, variant, variable=variable, kind=kind)
        for line, col, variable in mentions(text)
    ]


def decode_text(data: bytes) -> tuple[str, bool]:
    """``(text, binary)`` for bytes that are only searched for mentions: UTF-16/32 by their
    byte-order mark, UTF-16 without one when a name appears in it that way, otherwise UTF-8
    with undecodable bytes replaced (a Latin-1 README still gets its findings). ``binary`` is
    True when NUL bytes remain in UTF-8 reading (a compiled or data file)."""
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(codec, "replace"), False
    if b"\0" in data:
        for codec in ("utf-16-le", "utf-16-be"):
            if any(name.encode(codec) in data for name in load_rules().variables) and not any(
                name.encode() in data for name in load_rules().variables
            ):
                return data.decode(codec, "replace"), False
        return data.decode("utf-8", "replace"), True
    return data.decode("utf-8-sig", "replace"), False


def first_mention(text: str) -> tuple[int, int, str]:
    """``(line, column, variables)`` of the first mention in ``text`` (1-based; ``variables``
    every name mentioned, :func:`named`); ``(1, 1, "a legacy variable")`` when none is found."""
    found = mentions(text)
    if not found:
        return 1, 1, "a legacy variable"
    return found[0][0], found[0][1], named([v for _, _, v in found])


def first_bad_byte(data: bytes) -> tuple[int, int, int] | None:
    """``(offset, line, byte)`` of the first byte of ``data`` that is not UTF-8 (0-based byte
    offset in the file, 1-based line), or None when it all decodes (a UTF-8 BOM allowed)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start, data.count(b"\n", 0, exc.start) + 1, data[exc.start]
    return None


def sets_nothing_undecodable(path: str, text: str, bad: tuple[int, int, int]) -> Diagnostic:
    """BFM094 for the file ``path`` (its ``text``, read as bytes) that names a legacy variable only
    where nothing is set and holds a byte that is not UTF-8 (``bad``, :func:`first_bad_byte`): at
    its first mention, naming the byte by its line and offset."""
    line, col, variables = first_mention(text)
    offset, bad_line, byte = bad
    return report(
        "BFM094", path, line, col, False, variables=variables, byte=f"0x{byte:02X}", bad_line=bad_line, offset=offset
    )
