"""``libcst.matchers``, imported once with the class docstrings it would not use left unwritten.

libcst's matchers module defines a dataclass per node class (about 440). For a class without a
docstring, :func:`dataclasses.dataclass` writes one from ``inspect.signature(cls)`` (CPython's
``Lib/dataclasses.py``, ``_process_class``), and the matchers' signatures are long unions of
matcher types whose rendering was a third of the module's import, 0.1 s of every run that
migrates a file (measured on 2 cores: libcst and its matchers 0.59 s of CPU, 0.48 s this way).
Here that signature is not rendered while the module is imported: each matcher's ``__doc__`` is
its class name, as dataclasses writes it when no signature can be had. Nothing reads those
docstrings (they are not libcst's documentation, which is the matchers' own module text).
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import threading

_lock = threading.Lock()


class _NoSignature:
    """:mod:`inspect` as :mod:`dataclasses` sees it during the import: ``signature`` raises
    ``ValueError`` (which dataclasses takes for a class without one), the rest is inspect's."""

    def __getattr__(self, name: str) -> object:
        return getattr(inspect, name)

    @staticmethod
    def signature(*args: object, **kwargs: object) -> inspect.Signature:
        raise ValueError("not rendered: bf16_migrate.python._matchers")


def load() -> None:
    """Import ``libcst.matchers`` (once; a no-op when it is imported already)."""
    if "libcst.matchers" in sys.modules:
        return
    with _lock:
        saved = getattr(dataclasses, "inspect", None)
        if saved is not inspect:  # another Python's dataclasses: import as it is
            import libcst.matchers  # noqa: F401

            return
        setattr(dataclasses, "inspect", _NoSignature())  # noqa: B010  (not in typeshed's dataclasses)
        try:
            import libcst.matchers  # noqa: F401
        finally:
            setattr(dataclasses, "inspect", saved)  # noqa: B010


load()
