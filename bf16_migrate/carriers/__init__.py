"""Carriers: the files outside Python that set the legacy variables, and the scripts they launch.

One module per kind, each with a real parser (never a regular expression over the file), each a
:class:`Carrier` registered by its kind in :data:`REGISTRY`:

* :mod:`.shell` - shell scripts (tree-sitter-bash, read by :mod:`.shell.walk`, which also
  reads Dockerfile ``RUN``/``CMD`` shell forms, notebook ``!`` lines and YAML
  ``run:``/``script:`` blocks; a package of plain data and passes over it);
* :mod:`.dockerfile` - Dockerfiles (dockerfile-parse for the instructions, the shell parser for
  ``ENV`` pairs and shell forms), multi-stage;
* :mod:`.yaml_env` - Kubernetes, docker compose and CI YAML (ruamel.yaml node marks to find the
  entries; the text edited in place so comments, quoting and order survive byte for byte);
* :mod:`.dotenv` - ``.env`` files;
* :mod:`.notebook` - Jupyter notebooks (nbformat; Python through the codemod, magics and ``!``
  lines through the shell reader);
* :mod:`.makefile` - Makefiles' recipe lines, each through the shell reader (make's own settings are not
  read: reported);
* :mod:`.procfile` - Procfiles (foreman, honcho: ``web: command``), each command through the shell
  reader;
* :mod:`.vscode` - VS Code's ``.vscode/launch.json`` (json-five: JSON with comments), each Python
  debug configuration a launch with its ``"env"``.

Shared by them: :mod:`.model` (what an analysis holds), :mod:`.text` (the variables' names and
their mentions in a text), :mod:`.shell.words` (the shell parser and a word's static value) and
:mod:`.launch` (which Python a command line starts). :mod:`.link` plans across files: a setting
is removed only together with the code change of the Python scripts it is in force for
(:mod:`.resolve` finds them in the tree).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from .error import CarrierError

if TYPE_CHECKING:  # what an analysis holds (.model) is loaded by the carriers themselves, not by a clean run
    from ..diagnostics import Diagnostic
    from .model import Analysis


class Carrier(Protocol):
    """What a carrier module provides (each of :data:`REGISTRY`'s modules is one; mypy checks it).

    ``KIND``: its name in :data:`REGISTRY` and in ``scan.kind_of``. ``INCLUDES``: its files can
    load another file's settings (``source``, ``--env-file``, compose ``env_file:``): they are
    searched for the files that load an env file. ``INCLUDED_ONLY``: its settings reach a
    process only through the files that load it (``.env``), so those are always looked for.
    ``OWN_COVERAGE``: its analysis reports every mention of a variable itself (as
    :attr:`Analysis.notes`), so the planner's coverage check skips it.

    ``analyze(text, path)`` parses a file into an :class:`Analysis` whose ``render`` (a
    :class:`.model.Render`: ``render(decisions, python=None) -> str``) applies the plan's
    decisions to the text byte for byte; raises :class:`CarrierError` (``path:line:col: ...``)
    for what it cannot parse. ``reported_text(path, text)`` gives the findings for the parts of
    the file it reads but never rewrites (a notebook's markdown and raw cells), ``[]`` for most.
    """

    KIND: str
    INCLUDES: bool
    INCLUDED_ONLY: bool
    OWN_COVERAGE: bool

    def analyze(self, text: str, path: str) -> Analysis: ...

    def reported_text(self, path: Path, text: str) -> list[Diagnostic]: ...


REGISTRY: dict[str, str] = {
    "shell": "shell",
    "dockerfile": "dockerfile",
    "yaml": "yaml_env",
    "dotenv": "dotenv",
    "notebook": "notebook",
    "vscode": "vscode",
    "procfile": "procfile",
    "makefile": "makefile",
}
"""Carrier kind -> its module (or package: ``shell``) in this package (imported on first use: a
run that meets no notebook never imports nbformat). Every carrier can start a Python script or hold a setting for
one, so each is read when a script named alone brings in its launchers
(:func:`bf16_migrate.scan.launchers_of`)."""

HASH_COMMENTS: set[str] = {"shell", "yaml", "dotenv", "procfile", "makefile"}
"""The carrier kinds whose ``#`` comments are comments wherever they start a word (shell, YAML,
``.env``): a ``# noqa`` there covers its own line (:func:`bf16_migrate.suppress.noqa_comments`).
A carrier with a comment syntax of its own (a Dockerfile's instruction comments, a notebook's
cells) has its own reader there."""

if TYPE_CHECKING:  # every registered module satisfies the protocol (checked by mypy, never imported here at run time)
    from . import dockerfile, dotenv, makefile, notebook, procfile, shell, vscode, yaml_env

    _CHECKED: tuple[Carrier, ...] = (shell, dockerfile, yaml_env, dotenv, notebook, vscode, procfile, makefile)


def for_kind(kind: str) -> Carrier:
    """The carrier module of ``kind`` (one of :data:`REGISTRY`). ``ValueError`` for an unknown kind."""
    if kind not in REGISTRY:
        raise ValueError(f"unknown carrier kind {kind!r}")
    return cast(Carrier, importlib.import_module(f".{REGISTRY[kind]}", __name__))


def analyze(kind: str, text: str, path: str) -> Analysis:
    """Parse ``text`` (the file ``path``, of carrier ``kind``) into an :class:`Analysis`.

    Raises :class:`CarrierError` (``path:line:col: ...``, one line) when the file does not parse,
    or when its analysis fails in any other way (nesting deeper than the parsers walk, a
    bf16-migrate bug): one file's failure is that file's error, never the whole run's.
    ``ValueError`` for an unknown kind. The analysis runs in the codemod's large-stack worker
    (:func:`bf16_migrate.python.guard.run_deep`)."""
    from ..python.guard import ParseError, run_deep

    for_kind(kind)  # ValueError here, not as that file's error
    try:
        return run_deep(path, lambda: _analyze(kind, text, path), expected=(CarrierError,))
    except ParseError as exc:  # run_deep's CodemodError: recursion, memory, a bug
        raise CarrierError(str(exc)) from None


def _analyze(kind: str, text: str, path: str) -> Analysis:
    return for_kind(kind).analyze(text, path)


__all__ = ["Carrier", "CarrierError", "HASH_COMMENTS", "REGISTRY", "analyze", "for_kind"]
