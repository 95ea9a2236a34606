"""Keep one file's failure that file's error: check the source with CPython's parser first, and
run libcst where a deep recursion cannot take the process down.

libcst parses with a native (Rust) parser and walks trees recursively in Python. A valid but
deep expression (a 400-term ``a + a + ...`` chain is a left-nested tree 400 levels deep) exceeds
Python's default recursion limit, and a few thousand levels overflow the 8 MiB main-thread C
stack, which kills the process with SIGSEGV and no output. CPython's own parser is the judge of
what is Python (it rejects more than 200 nested brackets: ``MAXLEVEL`` in CPython's
``Parser/tokenizer.h``), so it runs first; libcst then runs in a worker thread with a large stack
and a raised recursion limit, and whatever still fails becomes a :class:`CodemodError` naming the
file.
"""

from __future__ import annotations

import ast
import sys
import threading
import warnings
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

STACK_BYTES = 512 * 1024 * 1024
"""Stack of the worker thread (virtual memory: only the pages a deep walk touches are used)."""
RECURSION_LIMIT = 200_000
"""Python frames allowed in the worker: enough for a 20,000-term expression chain."""


class ParseError(Exception):
    """The source is not valid Python; the message is ``path:line:col: ...`` on one line."""


class CodemodError(ParseError):
    """The source is valid Python but the codemod could not migrate it (nested beyond what it
    can walk, or a bf16-migrate bug); the message is ``path:line:col: ...`` on one line. A
    subclass of :class:`ParseError`, so every caller that reports a file it cannot parse
    reports this one the same way."""


def check_python(source: str, path: str) -> None:
    """Raise :class:`ParseError` at CPython's line and column when ``source`` is not valid
    Python for the running interpreter (what ``compile`` rejects: a NUL character, nesting
    beyond CPython's limits, Python 2 syntax, and the compiler's checks such as ``return``
    outside a function).

    CPython's own judgement, so what it rejects never reaches libcst."""
    nul = source.find("\0")
    if nul >= 0:
        line = source.count("\n", 0, nul) + 1
        col = nul - (source.rfind("\n", 0, nul) + 1) + 1
        raise ParseError(f"{path}:{line}:{col}: not valid Python: NUL character")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning (invalid escapes) is not our finding
            # compiled, not only parsed: the compiler's own checks ('return' outside function,
            # 'nonlocal' at module level...) are CPython's too. Top-level await is allowed, as
            # IPython allows it in a notebook's cells (compile's flags, Python's "Built-in
            # Functions": ast.PyCF_ALLOW_TOP_LEVEL_AWAIT). Compiling is no slower than ast.parse.
            compile(source, path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = exc.offset or 1
        raise ParseError(f"{path}:{line}:{col}: not valid Python: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ParseError(f"{path}:1:1: not valid Python: nested too deeply for CPython's parser") from None
    except ValueError as exc:  # pragma: no cover - CPython 3.11 raises this for NUL, caught above
        raise ParseError(f"{path}:1:1: not valid Python: {exc}") from None


def check_output(code: str, path: str) -> None:
    """Raise :class:`CodemodError` when the migrated ``code`` is not valid Python for CPython
    (a bf16-migrate bug: nothing that fails this is ever written)."""
    try:
        check_python(code, path)
    except ParseError as exc:
        raise CodemodError(
            f"{exc}; the migrated code is not valid Python: this is a bf16-migrate bug, please report it"
        ) from None


def run_deep(path: str, work: Callable[[], T], expected: tuple[type[BaseException], ...] = ()) -> T:
    """Run ``work()`` in a thread with a :data:`STACK_BYTES` stack and :data:`RECURSION_LIMIT`
    and return its result. :class:`ParseError` and the ``expected`` exception types pass
    through; a RecursionError, MemoryError or any other exception becomes a
    :class:`CodemodError` for ``path``. KeyboardInterrupt in the caller while waiting
    propagates (the worker is a daemon thread)."""
    outcome: dict[str, T] = {}
    errors: list[BaseException] = []

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # reported below, in the caller's thread
            errors.append(exc)

    old_limit = sys.getrecursionlimit()
    old_stack = threading.stack_size()
    try:
        threading.stack_size(STACK_BYTES)
        worker = threading.Thread(target=target, name=f"bf16-migrate {path}", daemon=True)
        sys.setrecursionlimit(max(old_limit, RECURSION_LIMIT))
        worker.start()
    finally:
        threading.stack_size(old_stack)
    try:
        worker.join()
    finally:
        sys.setrecursionlimit(old_limit)
    if "value" in outcome:
        return outcome["value"]
    error = errors[0] if errors else None
    if error is not None and isinstance(error, (ParseError, *expected)):
        raise error
    if isinstance(error, RecursionError):
        raise CodemodError(
            f"{path}:1:1: cannot migrate: nested too deeply for the codemod (more than {RECURSION_LIMIT} levels)"
        ) from None
    if isinstance(error, MemoryError):
        raise CodemodError(f"{path}:1:1: cannot migrate: out of memory") from None
    if isinstance(error, KeyboardInterrupt):  # pragma: no cover - signals go to the main thread
        raise error
    raise CodemodError(
        f"{path}:1:1: cannot migrate: internal error ({type(error).__name__}: {_one_line(error)}); this is a "
        "bf16-migrate bug, please report it"
    ) from error


def _one_line(error: object) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 200 else text[:197] + "..."
