"""The shell carrier: shell scripts (``*.sh``, ``*.bash``, extensionless scripts with a shell
shebang).

A script is checked by bash itself (``bash -n``, bash(1)) and read by
:class:`~.shell_fragment.ShellFragment` (tree-sitter-bash; what is read is listed there); the
plan's decisions are rendered by :mod:`.shell_render`, byte for byte outside the edited spans.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import TYPE_CHECKING

from .model import Analysis, CarrierError, apply_edits
from .shell_flags import flag_edits
from .shell_fragment import ShellFragment

if TYPE_CHECKING:
    from pathlib import Path

    from ..diagnostics import Diagnostic

# the Carrier protocol (bf16_migrate.carriers): its kind and how the planner treats its files
KIND = "shell"
INCLUDES = True
INCLUDED_ONLY = False
OWN_COVERAGE = False


def analyze(text: str, path: str) -> Analysis:
    """Analyse a whole shell script into an :class:`Analysis` of kind ``"shell"`` whose
    ``render(decisions)`` returns the new text. Raises :class:`CarrierError`
    (``path:line:col: ...``) when it does not parse, by tree-sitter-bash or by bash itself
    (:func:`bash_syntax_error`)."""
    error = bash_syntax_error(text)
    if error is not None:
        raise CarrierError(f"{path}:{error[0]}:1: cannot parse as a shell script: bash -n says: {error[1]}")
    analysis = Analysis(KIND, text)
    frag = ShellFragment(text, path, analysis)
    analysis.sr_covered = frag.sr_covered
    analysis.launch_flags = lambda entry, launch, flag, sure: flag_edits(frag, entry, launch, flag, sure)
    analysis.render = lambda decisions, python=None: apply_edits(text, frag.edits(decisions) + analysis.added)
    return analysis


def bash_syntax_error(text: str) -> tuple[int, str] | None:
    """bash's own verdict on ``text``: ``(line, message)`` when ``bash -n`` (read commands
    without executing them, bash(1)) rejects it, else None; also None where no bash is installed.
    tree-sitter-bash recovers from errors it does not mark (``f { export X=1; }`` after a
    ``&``, a stray ``else``), and a file bash cannot run is not one to rewrite."""
    bash = shutil.which("bash")
    if bash is None:
        return None
    try:
        proc = subprocess.run(
            [bash, "-n"], input=text.encode("utf-8", "surrogateescape"), capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode == 0:
        return None
    first = next((line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip()), "syntax error")
    found = re.search(r"line (\d+): (.*)", first)
    return (int(found.group(1)), found.group(2)) if found else (1, first)


def reported_text(path: Path, text: str) -> list[Diagnostic]:
    """Findings for the parts of the file read but never rewritten: none, every mention in a
    shell file is an entry, a note or the planner's coverage check."""
    return []
