"""``bf16-migrate verify LAUNCHER``: verify a launcher as users run it.

The launcher (a shell script, a Dockerfile, a YAML job spec: anything the carriers parse, see
:mod:`bf16_migrate.carriers`) is read with the codemod's own analysis (:mod:`.launchers`):
each launch of a Python script of the tree becomes one verify of that script with the launch
line's arguments (followed by the arguments given after ``--``) and the legacy settings in
force for it. The launch is reduced to one process: the interpreter runs the script itself,
without the wrappers around it (``torchrun --nproc_per_node=8``, ``mpirun``, ``docker run``),
and the harness stops it after ``--steps`` optimizer steps. A launch whose arguments are
computed when the launcher runs (``$DATA``) is not guessed: it is left out with a note. The
launcher's own arguments (``python train.py --lr 0.1 "$@"``) are those given after ``--``
(``verify run.sh -- --steps 40`` runs ``python train.py --lr 0.1 --steps 40``, as ``./run.sh
--steps 40`` would), and none without ``--``.

Without ``--against``, the launcher and its scripts are the legacy ones (migrated on the fly);
with ``--against REV``, the launcher at REV gives the launches and settings, the legacy side
runs from REV's tree and the migrated side from the work tree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..rules import Mode, all_modes
from .launchers import launch_settings, tree_root
from .records import RunError
from .runner import read_source
from .tree import Job, _env_text, _on, detect_mode

__all__ = ["plan_launcher"]


def plan_launcher(
    launcher: Path,
    checkout=None,
    mode: Mode | None = None,
    legacy_env: Mapping[str, str] | None = None,
    steps: int = 20,
    extra_args: Sequence[str] = (),
    notes: list[str] | None = None,
) -> list[Job]:
    """The jobs verifying every Python launch of ``launcher`` (see the module docstring).
    ``legacy_env`` (``--legacy-env``) replaces the launcher's settings. Raises
    :class:`RunError` when the launcher starts no Python script of the tree."""
    notes = notes if notes is not None else []
    launcher = Path(launcher).resolve()
    if checkout is not None:
        root = checkout.tree.resolve()
        source = checkout.path_for(launcher)
        if not source.is_file():
            raise RunError(f"--against {checkout.rev}: {checkout.relative(launcher)} does not exist at {checkout.rev}")
    else:
        root = tree_root(launcher)
        source = launcher
    found = [s for s in launch_settings(root, extra=(source,)) if s.launcher == source.resolve()]
    if not found and launcher.suffix == ".ipynb":
        # a notebook's cells are no script a run can start with the legacy variables and stop after its steps
        raise RunError(
            f"{launcher}: a notebook's own code is not verified (verify runs Python scripts) and it launches none",
            hint=f"export the legacy notebook as a script and verify that: jupyter nbconvert --to script "
            f"{launcher.name}, then bf16-migrate verify {launcher.stem}.py --mode MODE (verify migrates a copy)",
        )
    if not found:
        raise RunError(
            f"{launcher}: no launch of a Python script of the tree found in it",
            hint="verify the script itself: bf16-migrate verify SCRIPT --legacy-env XLA_USE_BF16=1",
        )
    jobs: list[Job] = []
    for s in found:
        where = s.where(root)
        words, said, consumed = _launch_words(s, extra_args)
        if any(word is None for word in words):
            notes.append(f"{where} (`{s.text}`): its arguments are computed when the launcher runs{said}: not verified")
            continue
        args = [word for word in words if word is not None]  # all of them (a computed one is skipped above)
        script = checkout.work_path(s.script) if checkout is not None else s.script
        rel = checkout.relative(s.script) if checkout is not None else _relative(s.script, root)
        if not script.is_file():
            notes.append(f"{where}: {rel} is not in the work tree: not verified")
            continue
        env = dict(legacy_env) if legacy_env else _on(s.env)
        source_label = ["--legacy-env"] if legacy_env else [where]
        if mode is not None:
            chosen, how = mode, "--mode"
        elif checkout is not None:
            chosen, how = detect_mode(read_source(s.script), read_source(script), rel, env)
        else:
            chosen, how = all_modes()[0], "default"
        job_notes = [f"launched at {where}: `{s.text}`, run as one process: python {rel} {' '.join(args)}".rstrip()]
        if said:
            job_notes.append(f"{where}: its arguments resolved as the shell would{said}")
        if not env:
            job_notes.append(
                f"{where} switches no legacy variable on for {rel}: the legacy run has only the script's own settings"
            )
        elif not s.sure:
            job_notes.append(f"{where} switches {_env_text(env)} on some paths only")
        if s.forwards and not extra_args:
            job_notes.append(f'{where} passes the launcher\'s own arguments (`"$@"`): none given after `--`')
        tail = [] if s.forwards or consumed else [str(a) for a in extra_args]  # "$@" ($1...) took them in place
        jobs.append(Job(script, rel, env, source_label, chosen, how, [*args, *tail], job_notes))
    return jobs


def _launch_words(setting, extra_args: Sequence[str]) -> tuple[list[str | None], str, bool]:
    """The launch's words with the launcher's own arguments (``extra_args``, given after ``--``)
    in place, and, where the line holds words computed when the launcher runs, those words as
    the shell would expand them (:mod:`bf16_migrate.carriers.shell.launch_args`: the defaults of
    the variables this environment leaves unset, ``$1``, ``"$@"``), with what was used, worded
    for a note (``""`` when nothing had to be resolved), and whether the line took the arguments
    given after ``--`` itself (``$1``, ``"$@"``)."""
    words = _with_launcher_args(setting, extra_args)
    if not any(word is None for word in words) or setting.resolve is None:
        return words, "", False
    found = setting.resolve(os.environ, [str(a) for a in extra_args])
    said = [_used(name, value) for name, value in found.used.items()]
    if found.unknown:
        said.append(f"{', '.join(found.unknown)} unknown (unset, with no default: set it to verify this launch)")
    consumed = any(name.startswith("$") for name in found.used)
    return list(found.words), (": " + "; ".join(said)) if said else "", consumed


def _used(name: str, value: str | None) -> str:
    """One value :func:`_launch_words` used, for its note."""
    if name == "$@":
        return f'"$@" is the arguments after `--` ({value or "none"})'
    if value is None:
        return f"{name} is unset, so its default is used"
    return f"{name}={value}" + (" (after `--`)" if name.startswith("$") else " (from this environment)")


def _with_launcher_args(setting, extra_args: Sequence[str]) -> list[str | None]:
    """The launch's words with the launcher's own arguments (``"$@"``, at
    ``setting.forwards``) replaced by ``extra_args``, the arguments given after ``--``."""
    words: list[str | None] = []
    for i, word in enumerate(setting.args):
        if i in setting.forwards:
            words.extend(str(a) for a in extra_args)
        else:
            words.append(word)
    return words


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)
