"""What to run next, named with the run's real paths, mode and options: the lines under a
rewrite's summary.

After a run that wrote nothing (``--diff``, ``--check``): the command that applies the change,
the ``verify`` of each rewritten legacy script (it must run before the rewrite, on the legacy
files: with the launch line's arguments and the launcher's setting when a launcher starts the
script), and the one command that does both (``--verify --revert-failed``). After a run that
wrote: ``git diff`` and ``bf16-migrate verify --against HEAD`` in a git work tree (HEAD holds
the legacy versions). In both: what the findings left to do by hand need. After a verify that
passed: the rewrite that applies the verified migration, or the commit of one already made
(:func:`after_pass`).

The launches are read by verify's own reading of the launchers
(:func:`bf16_migrate.verify.launchers.launch_settings`, the codemod's analysis, no torch).
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .carriers import REGISTRY
from .console import display_path
from .diagnostics import Diagnostic
from .rule_files import DEFAULT_MODE, Mode, is_truthy, variable_names
from .scan import kind_of

VERIFY_SHOWN = 3
"""How many ``verify`` commands are listed before the rest is left to ``--verify``."""


@dataclass(frozen=True)
class Invocation:
    """The rewrite's command line as the user gave it: ``paths`` as typed, ``mode`` (as the run
    resolved it), and the options that change what is rewritten (each as its words)."""

    paths: tuple[str, ...]
    mode: Mode
    options: tuple[str, ...] = ()

    def command(self, *extra: str) -> str:
        """``bf16-migrate PATHS --mode M [options] [extra]``, quoted for a POSIX shell."""
        return shlex.join(["bf16-migrate", *self.paths, "--mode", self.mode.name, *self.options, *extra])


@dataclass(frozen=True)
class LegacyScript:
    """A rewritten legacy script as verify takes it, before the rewrite: the ``script``, the
    legacy ``env`` a launcher (or ``--legacy-env``) puts in force for it (empty: it sets the
    switch itself), its ``args`` (a launch line's; None: computed when the launcher runs, at
    ``computed_at``)."""

    script: Path
    env: dict[str, str]
    args: tuple[str, ...] | None = ()
    computed_at: str = ""

    def command(self, mode: Mode) -> str:
        """``bf16-migrate verify SCRIPT [--mode M] [--legacy-env K=V]... [-- ARGS]``."""
        words = ["bf16-migrate", "verify", display_path(self.script)]
        if mode.name != DEFAULT_MODE:  # verify's own default: the option only when another mode is meant
            words += ["--mode", mode.name]
        for key, value in sorted(self.env.items()):
            words += ["--legacy-env", f"{key}={value}"]
        if self.args is None:
            return shlex.join([*words, "--", "ARGS"]) + f"   # {self.computed_at} computes its arguments"
        return shlex.join([*words, "--", *self.args] if self.args else words)


def legacy_scripts(
    changed: Sequence[Path], sources: Mapping[Path, tuple[str, str]], mode: Mode, root: Path, legacy_env: dict[str, str]
) -> list[LegacyScript]:
    """The rewritten legacy scripts, each once: a Python file of ``changed`` that the codemod
    takes for a legacy script by itself (it sets a switch) or under ``legacy_env``
    (``--legacy-env``), as verify decides it (:func:`bf16_migrate.verify.tree._is_legacy_script`,
    given the file's old text from ``sources``), and each script a rewritten launcher under
    ``root`` starts with a legacy variable on (its setting and its launch line's arguments)."""
    from .verify.tree import _is_legacy_script

    found: dict[Path, LegacyScript] = {}
    rewritten = {p.resolve() for p in changed}
    # the launchers verify reads (a notebook's own settings are not: docs/verify.md, "--against")
    carriers = [path for path in changed if kind_of(path) in REGISTRY and kind_of(path) != "notebook"]
    if carriers:  # the launchers first: reading them is cheap, and a script they start needs no trial migration
        from .verify.launchers import launch_settings

        for launch in launch_settings(root, mode, only=tuple(carriers)):
            env = {k: v for k, v in launch.env.items() if is_truthy(v)}
            script = launch.script.resolve()
            if not env or script in found or script not in rewritten:
                continue
            computed = any(word is None for word in launch.args)
            args = None if computed else tuple(w for w in launch.args if w is not None)
            where = f"{display_path(launch.launcher)}:{launch.line}"
            found[script] = LegacyScript(launch.script, env, args, where if computed else "")
    names = variable_names()
    for path in changed:
        if kind_of(path) != "python" or path not in sources or path.resolve() in found:
            continue
        old = sources[path][0]
        # a script that sets a switch names it: the trial migration only for those (and for --legacy-env)
        own = any(name in old for name in names) and _is_legacy_script(old, str(path), {})
        if own or (legacy_env and _is_legacy_script(old, str(path), legacy_env)):
            found[path.resolve()] = LegacyScript(path, dict(legacy_env))
    return list(found.values())


def in_git_work_tree(where: Path) -> bool:
    """Whether ``where`` is inside a git work tree (git absent: False)."""
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--is-inside-work-tree"],
            cwd=where,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0 and found.stdout.strip() == b"true"


def by_hand(diagnostics: Sequence[Diagnostic]) -> str | None:
    """``N finding(s) above need a hand (BFM091 x2, BFM110); `bf16-migrate explain BFM091` says
    what each code needs`` (the most frequent code named), or None."""
    left = [d.code for d in diagnostics if not d.fixed]
    if not left:
        return None
    counts: dict[str, int] = {}
    for code in left:
        counts[code] = counts.get(code, 0) + 1
    ordered = sorted(counts, key=lambda c: (-counts[c], c))
    listed = ", ".join(f"{c} x{counts[c]}" if counts[c] > 1 else c for c in ordered)
    return (
        f"{len(left)} finding(s) need a hand ({listed}): the list above says what each needs; "
        f"`bf16-migrate explain {ordered[0]}` explains a code"
    )


def next_rows(
    invocation: Invocation,
    changed: Sequence[Path],
    diagnostics: Sequence[Diagnostic],
    sources: Mapping[Path, tuple[str, str]],
    *,
    dry_run: bool,
    verified: bool,
    root: Path,
    legacy_env: dict[str, str],
) -> list[tuple[str, str]]:
    """What to run next (module docstring) as ``(label, text)`` rows (a continuation row has an
    empty label); empty when there is nothing to do."""
    rows: list[tuple[str, str]] = []
    if dry_run and changed:
        rows.append(("apply:", invocation.command()))
        verifies = [
            found.command(invocation.mode)
            for found in legacy_scripts(changed, sources, invocation.mode, root, legacy_env)
        ]
        for i, command in enumerate(verifies[:VERIFY_SHOWN]):
            rows.append(("prove first:" if i == 0 else "", command))
        if len(verifies) > VERIFY_SHOWN:
            rows.append(("", f"... and {len(verifies) - VERIFY_SHOWN} more legacy script(s)"))
        if verifies:
            rows.append(("apply, prove:", invocation.command("--verify", "--revert-failed")))
    elif changed and not verified and in_git_work_tree(root):
        rows.append(("review:", "git diff"))
        rows.append(("prove:", "bf16-migrate verify --against HEAD   # HEAD holds the legacy versions"))
    hand = by_hand(diagnostics)
    if hand:
        rows.append(("by hand:", hand))
    return rows


def after_pass(target: Path | None, mode: Mode, migrated_in_tree: bool) -> list[tuple[str, str]]:
    """What to run after ``VERDICT: PASS``, as :func:`next_rows`'s rows. ``migrated_in_tree``
    (``verify --against REV``): the work tree already holds the verified migration, so it is
    committed. Otherwise verify migrated a copy of the legacy ``target`` (a script or the
    launcher given as SCRIPT), and the rewrite of ``target`` applies that migration (a script's
    launchers and modules in its tree come with it)."""
    if migrated_in_tree:
        return [("commit:", "git commit -a   # the migration verified above")]
    if target is None:
        return []
    return [("apply:", Invocation((display_path(target),), mode).command())]


def format_rows(rows: Sequence[tuple[str, str]]) -> list[str]:
    """The rows of :func:`next_rows` as the ``Next:`` block of the text output."""
    if not rows:
        return []
    width = max(len(label) for label, _ in rows)
    return ["Next:", *(f"  {label:<{width}} {text}".rstrip() for label, text in rows)]
