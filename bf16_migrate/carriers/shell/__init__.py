"""The shell carrier: shell scripts (``*.sh``, ``*.bash``, extensionless scripts with a shell
shebang).

A script is checked by bash itself (``bash -n``, bash(1)) and read by
:class:`~.fragment.ShellFragment`, which the Dockerfile, notebook and YAML carriers use for the
shell they hold. The package holds the parsed fragment as plain data and the passes over it:

* :mod:`.words` - the tree-sitter-bash parser and a word's static value (shared with the
  Dockerfile carrier);
* :mod:`.parsed` - the data: the parsed text, the script's functions, the entries, launches,
  includes, env-file heredocs and events one walk found;
* :mod:`.walk` - that walk (what is read is listed there), with :mod:`.context` (where a node
  runs), :mod:`.dead` (code that never runs), :mod:`.expand` (a command's words through the
  script's variables) and :mod:`.calls` (what a function call starts);
* :mod:`.reach` - which settings are in force at which launch;
* :mod:`.render` - the plan's decisions as edits, byte for byte outside the edited spans;
* :mod:`.flags` - a launched script's own flag passed where a setting was (amp);
* :mod:`.fragment` - :class:`~.fragment.ShellFragment`, the passes run in order.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import TYPE_CHECKING

from ..model import Analysis, CarrierError, apply_edits
from .flags import flag_edits
from .fragment import ShellFragment

if TYPE_CHECKING:
    from pathlib import Path

    from ...diagnostics import Diagnostic

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
    frag = ShellFragment(text, path, analysis, batch=True)
    analysis.batch_isolated = frag.parsed.batch_isolated
    analysis.sr_covered = frag.sr_covered
    analysis.launch_flags = lambda entry, launch, flag, sure: flag_edits(
        frag.parsed, analysis.launches, entry, launch, flag, sure
    )
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
