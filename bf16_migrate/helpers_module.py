"""``--helpers-module NAME``: the helper functions written once per directory, not once per script.

By default every migrated script is self-contained: the functions its mode needs
(``with_fp32_master_weights``, ``clip_grad_norm_fp32_``, ``floating_to_bf16``...) are written into
it (:mod:`bf16_migrate.python.snippets`). With ``--helpers-module NAME`` the scripts of a
directory import them instead (``from NAME import ...``), and ``NAME.py`` is written once into
that directory, with all of them.

Where the module goes, and when a script keeps its own copy: Python puts the directory of the
script it runs first on ``sys.path`` ("The initialization of the sys.path module search path" in
the Python docs), so a module beside the script is found however the script is started with
``python path/to/train.py`` (torchrun and ``xmp.spawn`` start it the same way). A directory that
is a package (it has ``__init__.py``) may be run as ``python -m pkg.train``, where ``sys.path``
starts with the current directory instead: its scripts keep their own copy. So does a script
whose directory already has a ``NAME.py`` that bf16-migrate did not write.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .python.snippets import EMITTED_MARK, helpers_module_source


class HelpersModuleError(ValueError):
    """``--helpers-module`` is not a plain Python module name (one identifier, no dots)."""


# A module beside the script shadows any installed one of that name (the script's directory comes
# first on sys.path): the standard library's (sys.stdlib_module_names) and these are refused.
_INSTALLED = frozenset(
    {
        "torch",
        "torch_xla",
        "torchvision",
        "numpy",
        "transformers",
        "accelerate",
        "datasets",
        "neuronx_distributed",
        "torch_neuronx",
        "lightning",
        "pytorch_lightning",
    }
)


# Modules Python (or the tools around a training script) import by themselves, without any
# `import` of the script: a file of that name beside the scripts would run on its own.
# sitecustomize/usercustomize: the site module ("site — Site-specific configuration hook" in the
# Python docs); __main__ / __init__: a package's entry point and body; conftest: pytest's plugin
# files ("conftest.py: local per-directory plugins" in pytest's docs).
_IMPORTED_BY_ITSELF = frozenset({"sitecustomize", "usercustomize", "__main__", "__init__", "conftest"})


def check_name(name: str) -> str:
    """``name`` if it can be the stem of a module file beside the scripts, else raises
    :class:`HelpersModuleError` with a one-line message: not an identifier, a name Python or
    pytest imports by itself (``sitecustomize``, ``usercustomize``, ``__main__``, ``__init__``,
    ``conftest``, any ``__dunder__``), or the name of a standard-library or training-stack module
    it would shadow."""
    if not name.isidentifier() or not name.isascii():
        raise HelpersModuleError(
            f"--helpers-module {name!r}: not a plain Python module name (letters, digits, _; no dots)"
        )
    if name in _IMPORTED_BY_ITSELF or (name.startswith("__") and name.endswith("__")):
        raise HelpersModuleError(
            f"--helpers-module {name!r}: Python or pytest imports a module of that name by itself; choose another name"
        )
    if name in sys.stdlib_module_names or name in _INSTALLED:
        raise HelpersModuleError(
            f"--helpers-module {name!r}: a module of that name beside the scripts would shadow the installed {name}"
        )
    return name


def module_path(script: Path, name: str) -> Path:
    """Where ``script``'s helpers module goes: ``<script's directory>/<name>.py``."""
    return script.parent / f"{name}.py"


def usable_for(script: Path, name: str) -> str | None:
    """Why ``script`` cannot import its helpers from ``name`` (a one-line reason), or None
    when it can: it imports no other module of that name, its directory is not a package, and
    ``<name>.py`` there is absent or ours. (A regular expression, not a parse: the codemod parses
    the script right after, and a false match only keeps the self-contained default.)"""
    try:
        source = script.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        return f"{script} cannot be read ({exc})"
    if re.search(rf"^\s*(?:import|from)\s+{re.escape(name)}\b", source, re.M):
        return f"{script} already imports a module named {name}"
    if (script.parent / "__init__.py").exists():
        return (
            f"{script.parent} is a package (it has __init__.py; run as `python -m` the module beside the script is "
            "not found)"
        )
    target = module_path(script, name)
    if target.is_symlink() or (target.exists() and not target.is_file()):
        return f"{target} exists and is not a regular file"
    if target.exists():
        try:
            text = target.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return f"{target} cannot be read ({exc})"
        if EMITTED_MARK not in text:
            return f"{target} exists and was not written by bf16-migrate"
    return None


def module_text(target: Path) -> str | None:
    """The text ``target`` (a helpers module path) must have, or None when it already has it.
    An existing module keeps its line ends."""
    old = target.read_bytes().decode("utf-8") if target.exists() else None
    newline = "\r\n" if old is not None and "\r\n" in old else "\n"
    text = helpers_module_source(newline)
    return None if old == text else text
