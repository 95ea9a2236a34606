"""Read source files without losing anything: the encoding (PEP 263 cookie, BOM) is kept with
the text, newlines are not translated, and only regular files are ever opened for reading.
Writing is :mod:`bf16_migrate.commit` (all files of a run as one change)."""

from __future__ import annotations

import codecs
import errno
import io
import os
import stat
import tokenize
from dataclasses import dataclass
from pathlib import Path

from . import escaped_bytes
from .commit import describe_file_type


class ReadError(Exception):
    """A file cannot be read or decoded; the message names the file (one line)."""


@dataclass(frozen=True)
class SourceFile:
    """A decoded source file: ``text`` with its newlines untranslated, and the ``encoding`` to
    write it back with (``"utf-8-sig"`` when it had a BOM)."""

    path: Path
    text: str
    encoding: str


def read_bytes(path: Path) -> bytes:
    """The bytes of the regular file ``path``. Raises :class:`ReadError` (one line naming the
    file) when it cannot be read, is a symlink loop, or is not a regular file: a FIFO, device
    or socket is never read (opened non-blocking, checked with ``fstat``, then closed), since
    reading it could block forever or never end (``/dev/zero``)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        reason = "symlink loop" if exc.errno == errno.ELOOP else exc.strerror
        raise ReadError(f"{path}: cannot read: {reason}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReadError(f"{path}: not read: not a regular file ({describe_file_type(info.st_mode)})")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise ReadError(f"{path}: cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)


def _line_col(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    start = data.rfind(b"\n", 0, offset) + 1
    return line, offset - start + 1


def read_source(path: Path) -> SourceFile:
    """Decode ``path`` as Python source (tokenize.detect_encoding: BOM or coding cookie,
    UTF-8 by default, as CPython reads a script: PEP 263). Raises :class:`ReadError` when
    unreadable (see :func:`read_bytes`), undecodable, UTF-16/32 (CPython cannot run such a
    source), or holding a NUL byte (CPython refuses those); the message names the line."""
    data = read_bytes(path)
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ReadError(
            f"{path}:1:1: cannot decode: UTF-16/UTF-32 (byte-order mark); Python reads source as UTF-8 or a PEP 263 "
            "coding"
        )
    nul = data.find(b"\0")
    if nul >= 0:
        line, col = _line_col(data, nul)
        raise ReadError(f"{path}:{line}:{col}: cannot decode: NUL byte (a binary or UTF-16 file?)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise ReadError(f"{path}:{exc.lineno or 1}:1: cannot decode: {exc.msg}") from None
    try:
        text = data.decode(encoding)
    except LookupError as exc:
        raise ReadError(f"{path}:1:1: cannot decode: {exc}") from None
    except UnicodeDecodeError as exc:
        line, col = _line_col(data, exc.start)
        raise ReadError(
            f"{path}:{line}:{col}: cannot decode as {encoding}: {exc.reason} (byte 0x{data[exc.start]:02x})"
        ) from None
    return SourceFile(path, text, encoding)


def read_carrier(path: Path) -> SourceFile:
    """Decode ``path``, a carrier (shell script, YAML, ``.env``, Dockerfile), as bash and docker
    read theirs: as bytes (the YAML carrier then refuses bytes that are not UTF-8, as YAML loaders do).
    UTF-8 (a BOM kept, ``utf-8-sig``) when it is valid UTF-8; otherwise
    the encoding is ``utf-8+bytes`` (:mod:`bf16_migrate.escaped_bytes`): the bytes that are not
    UTF-8 (a latin-1 ``# Café``) each become one character and are written back as they were.
    Raises :class:`ReadError` when unreadable (see :func:`read_bytes`), UTF-16/32 (a byte-order
    mark: bash cannot run it), holding a NUL byte (a binary file), or holding the characters
    that encoding uses for bytes (U+10FE80..U+10FEFF) as well as bytes that are not UTF-8."""
    data = read_bytes(path)
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ReadError(f"{path}:1:1: cannot decode: UTF-16/UTF-32 (byte-order mark); only UTF-8 text is rewritten")
    nul = data.find(b"\0")
    if nul >= 0:
        line, col = _line_col(data, nul)
        raise ReadError(f"{path}:{line}:{col}: cannot decode: NUL byte (a binary or UTF-16 file?)")
    encoding = "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    try:
        return SourceFile(path, data.decode(encoding), encoding)
    except UnicodeDecodeError:
        pass
    try:  # a BOM before bytes that are not UTF-8 stays in the text, as U+FEFF
        return SourceFile(path, escaped_bytes.decode(data), escaped_bytes.NAME)
    except ValueError as exc:
        raise ReadError(f"{path}:1:1: cannot decode: {exc}") from None


def read_text_file(path: Path, kind: str) -> SourceFile:
    """``path`` decoded as its ``kind`` is read: Python and notebooks as Python source
    (:func:`read_source`), every other carrier as bytes (:func:`read_carrier`)."""
    return read_source(path) if kind in ("python", "notebook") else read_carrier(path)
