"""The codec of carriers that are not valid UTF-8: ``utf-8+bytes``.

bash and docker read their files as bytes: a shell script with a latin-1 comment (``# Café``
saved by an old editor, byte ``0xE9``) runs, and must be migrated and written back byte for byte.
(A YAML loader does not: a YAML stream is Unicode, and the YAML carrier reports such a file.)
``utf-8+bytes`` decodes what is valid UTF-8 as UTF-8 and every other byte
``0xNN`` as one character of Unicode's supplementary private use area (U+10FE80 + ``0xNN`` -
0x80), and encodes those characters back to their bytes. The PEP 383 ``surrogateescape`` handler
does the same with lone surrogates, which no parser here accepts (ruamel.yaml refuses them as
unprintable, tree-sitter is given UTF-8 bytes): a private use character is a valid character to
all of them, one character per byte, so line and column numbers stay those of the file.

A text that already holds one of those private use characters cannot be told from an escaped
byte: :func:`decode` refuses it (``ValueError``). Registered with :mod:`codecs` on import, so
``text.encode(NAME)`` writes the bytes back wherever a file's encoding is used (the commit, the
patch).
"""

from __future__ import annotations

import codecs
import encodings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer

NAME = "utf-8+bytes"
BASE = 0x10FE80 - 0x80
"""Byte ``0xNN`` (0x80-0xFF) <-> ``chr(BASE + 0xNN)``, U+10FE80..U+10FEFF."""
_LOW, _HIGH = BASE + 0x80, BASE + 0xFF
_TO_PRIVATE = {0xDC00 + b: BASE + b for b in range(0x80, 0x100)}
_TO_SURROGATE = {BASE + b: 0xDC00 + b for b in range(0x80, 0x100)}


def holds_escape_characters(text: str) -> bool:
    """Whether ``text`` holds a character this codec uses for a byte (U+10FE80..U+10FEFF)."""
    return any(_LOW <= ord(ch) <= _HIGH for ch in text if ord(ch) >= _LOW)


def decode(data: bytes) -> str:
    """``data`` decoded: valid UTF-8 as such, any other byte as its private use character.
    ``ValueError`` when the valid UTF-8 itself holds one of those characters (ambiguous)."""
    text = data.decode("utf-8", "surrogateescape")
    if holds_escape_characters(text):
        raise ValueError("it holds characters U+10FE80..U+10FEFF, which this reading uses for undecodable bytes")
    return text.translate(_TO_PRIVATE)


def encode(text: str, errors: str = "strict") -> bytes:
    """``text`` encoded: each private use character of :func:`decode` back to its byte, the rest as UTF-8."""
    return text.translate(_TO_SURROGATE).encode("utf-8", "surrogateescape" if errors == "strict" else errors)


class _Codec(codecs.Codec):
    def encode(self, input: str, errors: str = "strict", /) -> tuple[bytes, int]:
        return encode(input, errors), len(input)

    def decode(self, input: Buffer, errors: str = "strict", /) -> tuple[str, int]:
        data = bytes(input)
        text = data.decode("utf-8", "surrogateescape").translate(_TO_PRIVATE)
        return text, len(data)


def _search(name: str) -> codecs.CodecInfo | None:
    if encodings.normalize_encoding(name).lower() != encodings.normalize_encoding(NAME):
        return None
    codec = _Codec()
    return codecs.CodecInfo(codec.encode, codec.decode, name=NAME)


codecs.register(_search)
