"""Python scripts that read a carrier file themselves: a ``.env`` loaded with python-dotenv
(``load_dotenv()``, ``dotenv_values()``; with no path they read the ``.env`` found from the
calling script's directory upward: python-dotenv's ``find_dotenv``), or any file whose name a
script spells as a string (``Path(__file__).with_name("config.yaml")``, a hand-written
``KEY=VALUE`` loop) and then puts in ``os.environ``.

A setting such a script loads reaches it at run time, but through the script's own code, which the
launch planner does not follow. The planner keeps such a setting (BFM110) and names the line that
loads it, so the finding tells the user where the setting goes in force instead of saying that it
reaches no script.

Why a byte and line search rather than libcst: this only points at a line for a refusal, it never
rewrites the script, and it runs on every Python file of a tree whose bytes might name the file,
which parsing each would make costly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

DOTENV_CALLS = (b"load_dotenv(", b"dotenv_values(")
"""python-dotenv's loaders; with no path they read ``.env`` (python-dotenv's ``main.py``)."""


@dataclass(frozen=True)
class PythonLoader:
    """A line of ``script`` that reads the carrier file: ``line`` 1-based, ``code`` its text
    (stripped)."""

    script: Path
    line: int
    code: str


def python_loaders(carrier: Path, python_files: Iterable[Path], read: Callable[[Path], bytes]) -> list[PythonLoader]:
    """The Python files among ``python_files`` that read ``carrier`` themselves, with the first line
    that does: one that spells the carrier's file name in quotes, or, for a file named ``.env`` in
    the script's directory or above it, a python-dotenv loader call. ``read(path)`` returns a
    file's bytes (OSError: the file is skipped, as the tree's walk skips it)."""
    name = carrier.name.encode()
    quoted = (b'"' + name + b'"', b"'" + name + b"'")
    home = carrier.parent.resolve()
    found = []
    for path in python_files:
        try:
            data = read(path)
        except OSError:
            continue
        needles = [q for q in quoted if q in data]
        if carrier.name == ".env" and home in path.resolve().parents:
            needles += [call for call in DOTENV_CALLS if call in data]
        if not needles:
            continue
        for number, raw in enumerate(data.splitlines(), 1):
            if any(needle in raw for needle in needles) and not raw.lstrip().startswith(b"#"):
                found.append(PythonLoader(path, number, raw.decode("utf-8", "replace").strip()))
                break
    return found
