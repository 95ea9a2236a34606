"""``python -c CODE`` in a shell fragment: where the code is, and its migrated text written back in
its place.

The code of ``python -c`` is the script the launch runs (python(1), ``-c``); the plan reads it like
any launched script (:mod:`..link_decide`). When its migration changes it, the new code goes back
into the same word: quoted as the old word was (``'...'`` when the code holds no ``'``, else
``"..."`` with ``\\``, ``"``, ``$`` and `````` escaped: bash(1), "QUOTING"), and the fragment is
parsed again with tree-sitter-bash to check that the word now reads, after bash's quote removal
(:func:`.words.static_value`), exactly the new code, in the same command. Where that cannot hold,
the code is not rewritten and the plan keeps the setting (BFM171): a fragment that is one line of
its host (a notebook's ``!`` line, a Dockerfile instruction) cannot take a code of several lines;
IPython expands ``{...}`` and ``$name`` in a ``!`` line (IPython's documentation, "System shell
access"), so such code can neither be read nor written there; ``-cCODE`` written as one word is
left as written.
"""

from __future__ import annotations

from collections.abc import Mapping

import tree_sitter

from ..model import Edit, InlineCode, apply_edits
from .parsed import ParsedFragment, ShellSource
from .words import parse, static_value

__all__ = ["IPYTHON_EXPANDS", "inline_code", "inline_edits", "quoted"]

IPYTHON_EXPANDS = ("$", "{", "}")
"""What IPython expands in a ``!`` line before the shell sees it."""


def quoted(code: str, old: str) -> str:
    """``code`` as one shell word, in the quotes of the word ``old`` when it can be: single quotes
    when ``code`` holds none (nothing is special inside them), else double quotes with ``\\``,
    ``"``, ``$`` and `````` escaped (bash(1), "QUOTING")."""
    if not old.startswith('"') and "'" not in code:
        return "'" + code + "'"
    escaped = "".join("\\" + ch if ch in '\\"$`' else ch for ch in code)
    return '"' + escaped + '"'


def inline_code(
    source: ShellSource, word: tree_sitter.Node | None, attached: bool, code: str, one_line: bool, ipython: bool
) -> InlineCode:
    """The :class:`~..model.InlineCode` of a launch whose code is the word ``word`` of ``source``
    (None: the code came from an expansion, and has no word of its own to rewrite)."""
    if word is None:
        start = 0
        reason: str | None = "the code comes from a variable of the script, which bf16-migrate does not rewrite"
    else:
        start = word.start_byte + (2 if attached else 0)
        if not attached and word.type in ("string", "raw_string"):
            start += 1
        reason = "it is written as one word with `-c` (`-cCODE`)" if attached else None
    line, col = source.at(start)

    def why_not(new: str) -> str | None:
        if reason is not None:
            return reason
        assert word is not None, "a word to rewrite"
        if one_line and "\n" in new:
            lines = new.count("\n") + 1
            return f"its line holds one line of shell, and the migrated code has {lines} lines that `;` cannot join"
        if ipython and any(c in new for c in IPYTHON_EXPANDS):
            return "IPython would expand the `{`, `}` or `$` of the migrated code in this `!` line"
        return _reads_back(source, word, new)

    return InlineCode(code, line, col, why_not, one_line)


def _reads_back(source: ShellSource, word: tree_sitter.Node, new: str) -> str | None:
    """None when the fragment with ``word`` replaced by the quoted ``new`` parses and the word at
    that place reads ``new``; else why not."""
    bm = source.bm
    start, end = bm.char(word.start_byte), bm.char(word.end_byte)
    text = quoted(new, source.text[start:end])
    edited = apply_edits(source.text, [Edit(start, end, text)])
    data = edited.encode("utf-8")
    tree = parse(data)  # never the parser's own parse: words.parse keeps it off bytes it crashes on
    if tree.root_node.has_error:
        return "the shell would not parse with the migrated code in its quotes"
    begin = len(source.text[:start].encode("utf-8"))
    found = tree.root_node.descendant_for_byte_range(begin, begin + len(text.encode("utf-8")))
    while found is not None and (found.start_byte, found.end_byte) != (begin, begin + len(text.encode("utf-8"))):
        found = found.parent
    if found is None or static_value(found, data) != new:
        return "the migrated code would not read back the same from its quotes"
    return None


def inline_edits(parsed: ParsedFragment, new_code: Mapping[int, str]) -> list[Edit]:
    """The edits (character offsets of the fragment) that write ``new_code`` (launch index ->
    migrated code) into the code words of the fragment's launches."""
    edits: list[Edit] = []
    source = parsed.source
    for index, word in parsed.inline_words.items():
        if index not in new_code:
            continue
        start, end = source.bm.char(word.start_byte), source.bm.char(word.end_byte)
        edits.append(Edit(start, end, quoted(new_code[index], source.text[start:end])))
    return edits
