"""Shell words shared by every carrier that holds shell: the tree-sitter-bash parser and the
static value of a word (bash's quote removal, "QUOTING" and "Quote Removal" in bash(1)).

Used by the shell carrier (:mod:`.walk`), Dockerfile ``ENV`` pairs and shell forms
(:mod:`.dockerfile`) and the expansion reader (:mod:`.expand`).
"""

from __future__ import annotations

import functools
import re

import tree_sitter
import tree_sitter_bash


@functools.lru_cache(maxsize=1)
def parser() -> tree_sitter.Parser:
    """The tree-sitter parser of the tree-sitter-bash grammar (one per process). Parse with
    :func:`parse`, never with its ``parse`` method directly."""
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


# A character of Unicode's planes 12-16 (UTF-8 lead byte 0xF3 or 0xF4: U+C0000..U+10FFFF) after
# `{` or in a word crashes tree-sitter-bash 0.25.1's scanner (a segmentation fault, not always:
# reads out of bounds; measured: U+E0000, U+10FE80, U+10FEF4). The codec of carriers that are not
# UTF-8 puts every such byte in U+10FE80..U+10FEFF (:mod:`bf16_migrate.escaped_bytes`), so a latin-1
# comment in a shell script could kill the process. The parser is given each such character as
# U+30000, a CJK ideograph that is a word character to bash as the original is: the same four
# UTF-8 bytes long, so every byte offset of the tree is the text's own (its text is read from the
# text's bytes, never from what the parser was given).
_HIGH_PLANES = re.compile(rb"[\xf3\xf4][\x80-\xbf]{3}")
_STAND_IN = chr(0x30000).encode("utf-8")


def parse(data: bytes) -> tree_sitter.Tree:
    """The tree-sitter-bash tree of the UTF-8 bytes ``data`` (its byte offsets are ``data``'s)."""
    return parser().parse(_HIGH_PLANES.sub(_STAND_IN, data))


def is_env_file_name(name: str) -> bool:
    """``.env``, ``train.env``, ``.env.local``: the names docker compose and dotenv tools read."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    return base == ".env" or base.endswith(".env") or base.startswith(".env.") or base == "env.list"


def _unescape(text: str, escapable: str | None) -> str:
    """Bash backslash removal: outside quotes (``escapable=None``) a backslash escapes any
    character; inside double quotes only ``"``, ``\\``, ``$``, `` ` `` and newline. An escaped
    newline is a line continuation and disappears."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and (escapable is None or text[i + 1] in escapable):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def static_value(node: tree_sitter.Node, data: bytes) -> str | None:
    """The value of a shell word node when it holds no expansion, ``None`` otherwise.

    ``word``/``number``: backslash escapes removed; ``"..."``: only literal content (``\\"``,
    ``\\\\``, ``\\$``, ``\\```` unescaped); ``'...'`` verbatim; concatenations of those."""
    kind = node.type
    text = data[node.start_byte : node.end_byte].decode("utf-8")
    if kind in ("word", "number"):
        if any(c in text for c in "$`*?["):
            return None
        return _unescape(text, escapable=None)
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        if any(child.type not in ('"', "string_content") for child in node.children):
            return None
        # the whole inside of the quotes: tree-sitter-bash leaves a line break between two
        # `string_content` children out of both
        return _unescape(text[1:-1], escapable='"\\$`\n')
    if kind == "concatenation":
        pieces = [static_value(c, data) for c in node.named_children]
        static = [p for p in pieces if p is not None]
        if len(static) != len(pieces):
            return None
        return "".join(static)
    return None


def positional_all(node: tree_sitter.Node, data: bytes) -> bool:
    """Whether a shell word is all of the script's own arguments: ``"$@"``, ``$@``, ``"${@}"``,
    ``$*``, ``"$*"`` (bash(1), "Special Parameters"). Read from the tree-sitter node: a
    ``simple_expansion`` or ``expansion`` of the special parameter ``@`` or ``*``, alone or
    alone inside double quotes."""
    if node.type == "command_name" and node.named_children:
        node = node.named_children[0]
    if node.type == "string":
        inner = [c for c in node.children if c.type != '"']
        if len(inner) != 1:
            return False
        node = inner[0]
    if node.type not in ("simple_expansion", "expansion") or len(node.named_children) != 1:
        return False
    var = node.named_children[0]
    return var.type == "special_variable_name" and data[var.start_byte : var.end_byte] in (b"@", b"*")


def first_error(node: tree_sitter.Node) -> tree_sitter.Node:
    """The first ``ERROR`` or missing node under ``node`` (``node`` itself when none is found
    below it): where a parse went wrong."""
    if node.type == "ERROR" or node.is_missing:
        return node
    for c in node.children:
        if c.has_error or c.type == "ERROR" or c.is_missing:
            return first_error(c)
    return node


def heredoc_target(node: tree_sitter.Node, data: bytes) -> str | None:
    """The file a ``heredoc_redirect`` node writes, as a static word: ``cat > F <<EOF`` (the
    statement's file redirect) or ``cat <<EOF | tee F`` (tee's first operand, which wins);
    None when it writes none or the name is computed. ``data`` is the parsed bytes."""
    stmt = node.parent
    target = None
    if stmt is not None and stmt.type == "redirected_statement":
        for r in stmt.children:
            if r.type == "file_redirect":
                dest = r.child_by_field_name("destination")
                if dest is not None:
                    target = static_value(dest, data)
    for c in node.children:
        if c.type == "pipeline":
            for cmdn in c.named_children:
                if cmdn.type == "command":
                    nm = cmdn.child_by_field_name("name")
                    if nm is not None and data[nm.start_byte : nm.end_byte].decode("utf-8") == "tee":
                        args = [static_value(a, data) for a in cmdn.children_by_field_name("argument")]
                        operands = [a for a in args if a is not None and not a.startswith("-")]
                        if operands:
                            target = operands[0]
    return target
