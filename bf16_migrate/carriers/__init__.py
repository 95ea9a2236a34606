"""Carriers: the files outside Python that set the legacy variables, and the scripts they launch.

One module per kind, each with a real parser (never a regular expression over the file):

* :mod:`.shell` - shell scripts (tree-sitter-bash), also used for Dockerfile ``RUN``/``CMD``
  shell forms, notebook ``!`` lines and YAML ``run:``/``script:`` blocks;
* :mod:`.dockerfile` - Dockerfiles (dockerfile-parse for the instructions, the shell parser for
  ``ENV`` pairs and shell forms), multi-stage;
* :mod:`.yaml_env` - Kubernetes, docker compose and CI YAML (ruamel.yaml node marks to find the
  entries; the text edited in place so comments, quoting and order survive byte for byte);
* :mod:`.dotenv` - ``.env`` files;
* :mod:`.notebook` - Jupyter notebooks (nbformat; Python through the codemod, magics and ``!``
  lines through the shell carrier).

:mod:`.link` plans across files: a setting is removed only together with the code change of the
Python scripts it is in force for (:mod:`.resolve` finds them in the tree).
"""

from __future__ import annotations

from .model import Analysis, CarrierError

KINDS = ("shell", "dockerfile", "yaml", "dotenv", "notebook")


def analyze(kind: str, text: str, path: str) -> Analysis:
    """Parse ``text`` (the file ``path``, of carrier ``kind``) into an :class:`Analysis`.

    Raises :class:`CarrierError` (``path:line:col: ...``, one line) when the file does not parse,
    or when its analysis fails in any other way (nesting deeper than the parsers walk, a
    bf16-migrate bug): one file's failure is that file's error, never the whole run's.
    ``ValueError`` for an unknown kind. The analysis runs in the codemod's large-stack worker
    (:func:`bf16_migrate.python.guard.run_deep`)."""
    from ..python.guard import ParseError, run_deep

    if kind not in KINDS:
        raise ValueError(f"unknown carrier kind {kind!r}")
    try:
        return run_deep(path, lambda: _analyze(kind, text, path), expected=(CarrierError,))
    except ParseError as exc:  # run_deep's CodemodError: recursion, memory, a bug
        raise CarrierError(str(exc)) from None


def _analyze(kind: str, text: str, path: str) -> Analysis:
    if kind == "shell":
        from . import shell

        return shell.analyze(text, path)
    if kind == "dockerfile":
        from . import dockerfile

        return dockerfile.analyze(text, path)
    if kind == "yaml":
        from . import yaml_env

        return yaml_env.analyze(text, path)
    if kind == "dotenv":
        from . import dotenv

        return dotenv.analyze(text, path)
    if kind == "notebook":
        from . import notebook

        return notebook.analyze(text, path)
    raise ValueError(f"unknown carrier kind {kind!r}")


__all__ = ["Analysis", "CarrierError", "KINDS", "analyze"]
