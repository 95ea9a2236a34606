"""Read and write source files without losing anything: encoding (PEP 263 cookie, BOM), newline
style and file mode are kept, and a write is atomic (a temporary file in the same directory,
then ``os.replace``), so a crash never leaves a half-written file."""

from __future__ import annotations

import io
import os
import tempfile
import tokenize
from dataclasses import dataclass
from pathlib import Path


class ReadError(Exception):
    """A file cannot be read or decoded; the message names the file (one line)."""


@dataclass(frozen=True)
class SourceFile:
    """A decoded source file: ``text`` with its newlines untranslated, and the ``encoding`` to
    write it back with (``"utf-8-sig"`` when it had a BOM)."""

    path: Path
    text: str
    encoding: str


def read_source(path: Path) -> SourceFile:
    """Decode ``path`` as Python source (tokenize.detect_encoding: BOM or coding cookie,
    UTF-8 by default). Raises :class:`ReadError` when unreadable or undecodable."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReadError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as exc:
        raise ReadError(f"{path}: cannot decode: {exc}") from None
    return SourceFile(path, text, encoding)


def write_atomic(path: Path, text: str, encoding: str) -> None:
    """Replace ``path`` with ``text`` encoded as ``encoding``, keeping its permission bits.

    The bytes go to a temporary file beside ``path`` which then replaces it in one rename;
    on any error the temporary file is removed and ``path`` is untouched (raises OSError)."""
    data = text.encode(encoding)
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".bf16-migrate", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
