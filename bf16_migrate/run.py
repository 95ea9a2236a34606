"""One ``bf16-migrate PATHS...`` run: settings (command line over ``[tool.bf16-migrate]``),
the files to look at (excludes, ``.gitignore``, ``--force-exclude``, ``-`` for stdin), the
migration (:func:`bf16_migrate.project.migrate_paths`), suppressions, output and exit code.

The click command (:mod:`bf16_migrate.cli`) only parses arguments; everything that decides
what a run does is here, so it reads top to bottom as the run happens.
"""

from __future__ import annotations

import atexit
import dataclasses
import gc
import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import click

from . import scan
from .config import Config, ConfigError, common_parent, load_config
from .console import display_path, is_terminal, use_color, width
from .ignore import GitIgnore, excluded
from .next_steps import Invocation, format_rows, legacy_scripts, next_rows
from .output import (
    FORMATS,
    Report,
    format_text,
    message_of,
    printable,
    silent_changes,
    statistics,
    to_github,
    to_json,
    to_sarif,
)
from .output_human import fixes_lines, grouped_lines, todo_lines, wrap
from .output_markdown import to_markdown
from .patch import file_patch
from .rule_files import DEFAULT_MODE, MODES, Mode, RuleError, diagnostic_rules, mode_named, variable_rules
from .scan import ScanError, kind_of, launchers_of, mentions_legacy, project_root
from .suppress import Selection, SelectionError, check_codes, filter_findings, hold_noqa_writes, split_path
from .walk_progress import WalkProgress
from .wording import silent_change

if TYPE_CHECKING:
    from .next_steps import Invocation

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130


@dataclass
class RunOptions:
    """The command line as given: None for an option not given (the configuration decides)."""

    show_diff: bool = False
    check: bool = False
    mode: str | None = None
    fmt: str | None = None
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool | None = None
    respect_gitignore: bool | None = None
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore_codes: tuple[str, ...] = ()
    per_file_ignores: tuple[str, ...] = ()
    """``GLOB:CODE[,CODE]`` each, as given (replacing the configuration's ``per-file-ignores``)."""
    config_path: Path | None = None
    stdin_filename: str | None = None
    fp32_optimizer_state: bool | None = None
    helpers_module: str | None = None
    legacy_env: dict[str, str] = field(default_factory=dict)
    statistics: bool = False
    exit_zero: bool = False
    quiet: bool = False
    show_fixes: bool | None = None
    color: str | None = None
    """``--color``: ``auto``, ``always`` or ``never`` (None: not given, ``auto``)."""
    verify: bool = False
    """Run every rewritten script on the XLA device against its pre-rewrite bytes."""
    revert_failed: bool = False
    """With ``verify``: put back the files of the scripts whose verdict is not PASS."""
    verify_steps: int = 20
    verify_timeout: float = 600.0
    jobs: int = 1
    trace_file: Path | None = None
    """``--trace FILE``: a verify ``--json`` document whose trace's repairs the rewrite applies."""


@dataclass(frozen=True)
class Settings:
    """What the run does, once the command line and the configuration are merged: ``mode`` the
    :class:`~bf16_migrate.rules.Mode` named by ``--mode`` or the configuration's ``mode`` (the
    one place its name is looked up)."""

    mode: Mode
    fmt: str
    exclude: tuple[str, ...]
    selection: Selection
    legacy_env: dict[str, str]
    fp32_optimizer_state: bool
    helpers_module: str | None
    respect_gitignore: bool
    force_exclude: bool
    root: Path
    """The project root: the configuration's directory, else the current directory or the
    common parent of the paths (:func:`_default_root`)."""
    show_fixes: bool = False


def resolve_settings(options: RunOptions, config: Config, paths: list[Path]) -> Settings:
    """The command line wins over the configuration, key by key (``--exclude`` replaces
    ``exclude``; ``extend-exclude`` is added from both; ``--legacy-env`` overrides the
    configuration's value of the same variable). Raises :class:`ConfigError` or
    :class:`SelectionError` with a one-line message naming the file or the option."""
    where = f"{config.path}: [tool.bf16-migrate]"
    name = options.mode or config.mode or DEFAULT_MODE
    if name not in MODES:
        raise ConfigError(f"{where} mode = {name!r}: not one of {', '.join(MODES)}")
    mode = mode_named(name)
    fmt = options.fmt or config.output_format or _default_format(options)
    if fmt not in FORMATS:
        raise ConfigError(f"{where} output-format = {fmt!r}: not one of {', '.join(FORMATS)}")
    exclude = options.exclude or config.exclude or ()
    exclude = (*exclude, *config.extend_exclude, *options.extend_exclude)
    # the rules (TOML) are loaded only when a code or a variable is to be checked: a run on
    # files that name nothing never reads them
    selection = _selection(options, config, where, config.root or _default_root(paths))
    legacy_env = {**config.legacy_env, **options.legacy_env}
    variables = variable_rules() if legacy_env else {}
    unknown = [key for key in legacy_env if key not in variables]
    if unknown:
        origin = "--legacy-env" if unknown[0] in options.legacy_env else f"{where} legacy-env:"
        raise ConfigError(f"{origin} {unknown[0]}: not a legacy variable (one of {', '.join(sorted(variables))})")
    return Settings(
        mode=mode,
        fmt=fmt,
        exclude=tuple(exclude),
        selection=selection,
        legacy_env=legacy_env,
        fp32_optimizer_state=bool(
            options.fp32_optimizer_state if options.fp32_optimizer_state is not None else config.fp32_optimizer_state
        ),
        helpers_module=_helpers_module(options.helpers_module, config.helpers_module, where),
        respect_gitignore=_first(options.respect_gitignore, config.respect_gitignore, True),
        force_exclude=_first(options.force_exclude, config.force_exclude, False),
        root=config.root or _default_root(paths),
        show_fixes=_first(options.show_fixes, config.show_fixes, False),
    )


def _default_format(options: RunOptions) -> str:
    """``grouped`` where the findings go to a terminal (stdout; stderr under ``--diff``, whose
    stdout is the patch), else ``text``, the one-line format of pipes, editors and logs."""
    return "grouped" if is_terminal(sys.stderr if options.show_diff else sys.stdout) else "text"


def _selection(options: RunOptions, config: Config, where: str, root: Path) -> Selection:
    """``--select``/``--extend-select``/``--ignore``/``--per-file-ignores`` over the
    configuration's keys of the same names (the command line replaces a key, ``extend-select``
    adds up), each code checked against the catalogue (loaded only when a code is given)."""
    given = (
        options.select, options.extend_select, options.ignore_codes, options.per_file_ignores,
        config.select, config.extend_select, config.ignore, config.per_file_ignores,
    )  # fmt: skip
    codes = diagnostic_rules() if any(given) else {}

    def checked(option: str, key: str, cli: tuple[str, ...], configured) -> tuple[str, ...]:
        return check_codes(option, cli, codes) if cli else check_codes(f"{where} {key}:", configured or (), codes)

    pairs: list[tuple[str, tuple[str, ...]]] = []
    if options.per_file_ignores:
        for item in options.per_file_ignores:
            glob, sep, listed = item.rpartition(":")
            if not sep or not glob:
                raise SelectionError(f"--per-file-ignores expects GLOB:CODE[,CODE], got {item!r}")
            pairs.append((glob, check_codes(f"--per-file-ignores {glob}:", (listed,), codes)))
    else:
        for glob, configured in (config.per_file_ignores or {}).items():
            pairs.append((glob, check_codes(f"{where} per-file-ignores {glob!r}:", configured, codes)))
    return Selection(
        select=checked("--select", "select", options.select, config.select),
        ignore=checked("--ignore", "ignore", options.ignore_codes, config.ignore),
        extend_select=(
            *check_codes(f"{where} extend-select:", config.extend_select, codes),
            *check_codes("--extend-select", options.extend_select, codes),
        ),
        per_file_ignores=tuple(pairs),
        root=root,
    )


def _helpers_module(option: str | None, configured: str | None, where: str) -> str | None:
    name = option if option is not None else configured
    if name is None:
        return None
    from .helpers_module import HelpersModuleError, check_name

    try:
        return check_name(name)
    except HelpersModuleError as exc:
        raise ConfigError(
            str(exc) if option is not None else f"{where} helpers-module = {name!r}: not a plain Python module name"
        ) from None


def _default_root(paths: list[Path]) -> Path:
    """Without a configuration: the current directory when the paths are under it (where
    pre-commit and CI run), else their common parent."""
    parent, cwd = common_parent(paths), Path.cwd()
    return cwd if parent == cwd or cwd in parent.parents else parent


def _first(*values):
    return next(value for value in values if value is not None)


def run_migrate(paths: list[Path], options: RunOptions, usage: Callable[[str], None]) -> int:
    """Run the rewrite over ``paths`` and print its output; returns the exit code (``usage``
    reports a usage error and exits)."""
    stdin = [str(p) for p in paths] == ["-"]
    stdin_path = _stdin_path(stdin, options, usage)
    config_paths = [stdin_path] if stdin_path is not None else paths
    settings = _settings_or_none(options, config_paths)
    if settings is None:
        return EXIT_ERROR
    if options.statistics and settings.fmt in ("sarif", "github"):
        usage(f"--statistics prints text or json, not {settings.fmt}")
    ignore = GitIgnore(settings.root) if settings.respect_gitignore else None
    if settings.force_exclude:
        kept = _force_exclude(paths, stdin, config_paths, options, settings, ignore)
        if kept is None:
            return EXIT_OK
        paths = kept
    _check_verify_usage(stdin, options, usage)
    snapshot: dict[Path, bytes | None] | None = {} if options.verify else None
    invocation = _invocation(paths, options, settings)
    try:
        if stdin_path is not None:
            return _run_stdin(stdin_path, options, settings)
        paths = paths + _launchers_of_scripts(paths, settings, ignore)
        outcome = _scan_and_migrate(paths, options, settings, ignore, snapshot)
        if outcome is None:
            return EXIT_ERROR  # nothing written: what cannot be verified is not rewritten
    except (ScanError, RuleError) as exc:
        click.echo(f"error: {exc}", err=True)
        return EXIT_ERROR
    except KeyboardInterrupt:
        click.echo("bf16-migrate: interrupted before anything was written; no file was changed", err=True)
        return EXIT_INTERRUPTED
    if not options.verify or outcome.interrupted:
        return _report(outcome, options, settings, invocation=invocation)
    # verify first, so that the findings its dtype traces name go out with the rewrite's, in
    # the chosen format (one document on stdout for json and sarif)
    verified, found = _verify_rewrite(outcome, snapshot or {}, paths, options, settings, ignore)
    outcome.diagnostics.extend(found)
    code = _report(outcome, options, settings, invocation=invocation)
    return code if verified is None or code == EXIT_INTERRUPTED else _worse(code, verified)


def _stdin_path(stdin: bool, options: RunOptions, usage: Callable[[str], None]) -> Path | None:
    """The file the source on stdin stands for (``--stdin-filename``), or None when the paths
    are not ``-``. ``-`` without ``--stdin-filename``, ``--stdin-filename`` without ``-``, or a
    name that cannot be a file in this tree (:func:`_stdin_name_problem`) is a usage error."""
    if stdin and not options.stdin_filename:
        usage("`-` reads the source from stdin and needs --stdin-filename PATH (its name decides its kind)")
    if options.stdin_filename and not stdin:
        usage("--stdin-filename only goes with the PATHS `-`")
    stdin_path = Path(options.stdin_filename) if options.stdin_filename else None  # set whenever stdin (checked above)
    if stdin_path is not None:
        problem = _stdin_name_problem(options.stdin_filename or "")
        if problem is not None:
            usage(f"--stdin-filename {options.stdin_filename}: {problem}")
    return stdin_path


def _check_verify_usage(stdin: bool, options: RunOptions, usage: Callable[[str], None]) -> None:
    """``--verify`` proves what the rewrite writes to disk, so it is a usage error with
    ``--diff``, ``--check`` (nothing is written) or ``-`` (the rewrite goes to stdout)."""
    if options.verify and (stdin or options.show_diff or options.check):
        usage("--verify proves what the rewrite writes: it does not go with --diff, --check or `-`")


def _settings_or_none(options: RunOptions, config_paths: list[Path]) -> Settings | None:
    """The run's settings (:func:`resolve_settings` over the configuration found for
    ``config_paths``), or None after printing why they cannot be had: a bad option is a usage
    error, a bad configuration names its file."""
    try:
        config = load_config(config_paths, options.config_path)
        return resolve_settings(options, config, config_paths)
    except (ConfigError, SelectionError, RuleError) as exc:
        click.echo(f"{'usage error' if str(exc).startswith('--') else 'error'}: {exc}", err=True)
        return None


def _force_exclude(
    paths: list[Path], stdin: bool, named: list[Path], options: RunOptions, settings: Settings, ignore
) -> list[Path] | None:
    """``--force-exclude``: the paths left to run over once those the excludes leave out
    (:func:`_force_excluded`) are dropped, or None when nothing is left and the run is done
    (exit 0). An excluded stdin file is written back to stdout as it was read, as ruff does; a
    command line all of whose paths are excluded says so on stderr unless ``--quiet``."""
    skipped = _force_excluded(named, settings, ignore)
    if stdin and skipped:
        _write_stdout(sys.stdin.buffer.read())  # as ruff does: an excluded file comes back as it is
        return None
    kept = [p for p in paths if p not in skipped]
    if not kept and not options.quiet:
        click.echo("bf16-migrate: every path given is excluded (--force-exclude); nothing to do", err=True)
    return kept or None


def _force_excluded(named: list[Path], settings: Settings, ignore) -> list[Path]:
    """``--force-exclude``: the paths named on the command line (or the stdin file's name) that
    the excludes or, when respected, ``.gitignore`` leave out, as if the walk had met them."""
    return [
        p
        for p in named
        if excluded(p, settings.root, settings.exclude) or (ignore is not None and ignore(p, os.path.isdir(p)))
    ]


def _scan_and_migrate(paths: list[Path], options: RunOptions, settings: Settings, ignore, snapshot):
    """The migration of ``paths``: a :class:`_Nothing` when no file names a legacy variable and
    none is set with ``--legacy-env`` (no codemod, no rules, no libcst import), else the outcome
    of :func:`_migrate`. None when ``--verify`` cannot verify what the rewrite would write
    (:func:`_verify_preflight` said why; nothing is written)."""
    # the codemod is imported as soon as one file names a variable, while a large tree's
    # remaining files are still read in another process
    candidates = scan.scan(paths, settings.exclude, ignore, on_found=_load_codemod)
    if not candidates and not settings.legacy_env and options.trace_file is None:
        return _Nothing()
    if options.verify and not _verify_preflight(paths, options, settings, ignore, candidates):
        return None
    with WalkProgress(sys.stderr, None if not options.quiet else False, use_color(options.color)) as progress:
        return _migrate(paths, options, settings, ignore, snapshot, candidates, progress)


def _verify_rewrite(
    outcome, snapshot: dict, paths: list[Path], options: RunOptions, settings: Settings, ignore
) -> tuple[int | None, list]:
    """``--verify``: every rewritten legacy script run on the XLA device against its bytes
    before the rewrite (:func:`bf16_migrate.verify.after_rewrite.verify_rewrite`), one table
    (stdout in text format, stderr otherwise, so a json/sarif stdout stays one document);
    ``--revert-failed`` puts back what did not pass. Returns the verify's exit code, which the
    caller combines with the rewrite's (:func:`_worse`; 2: a verify could not be made; 1: one
    failed; 3: one could not decide; 4: nothing was verified; None: nothing was written), and
    the findings of the runs' dtype traces (``BFM2xx``, at the written files' lines)."""
    from .verify.after_rewrite import verify_rewrite
    from .verify.records import RunError

    to_stderr = settings.fmt != "text"

    def echo(text: str, err: bool) -> None:
        click.echo(text, err=err or to_stderr)

    if not outcome.changed:
        if not options.quiet:
            click.echo("bf16-migrate --verify: nothing was written, nothing to verify", err=True)
        return None, []
    try:
        result = verify_rewrite(
            outcome.changed,
            snapshot,
            mode=settings.mode,
            legacy_env=settings.legacy_env,
            roots=paths,
            ignore=ignore,
            steps=options.verify_steps,
            timeout=options.verify_timeout,
            jobs=options.jobs,
            revert=options.revert_failed,
            echo=echo,
        )
    except RunError as exc:
        click.echo(f"error: --verify: {exc}", err=True)
        return EXIT_ERROR, [f.diagnostic for f in exc.findings]
    except OSError as exc:
        click.echo(f"error: --verify: the tree before the rewrite could not be mirrored: {exc}", err=True)
        return EXIT_ERROR, []
    except KeyboardInterrupt:
        click.echo(
            "bf16-migrate --verify: interrupted; the runs were stopped, nothing was reverted (the rewrite stays)",
            err=True,
        )
        return EXIT_INTERRUPTED, []
    found = [f.diagnostic for f in result.trace_findings if f.counts]
    echo(result.table.rstrip("\n"), False)
    revert = result.revert
    if revert is not None:
        if revert.failed:
            for why in revert.failed.values():
                click.echo(f"error: --revert-failed: {why}", err=True)
            click.echo(
                "error: --revert-failed: nothing was put back (the files above could not be); the rewrite stays as "
                "written",
                err=True,
            )
            return EXIT_ERROR, found
        back = [str(p) for p in revert.restored] + [f"{p} (removed)" for p in revert.removed]
        click.echo(
            f"bf16-migrate --revert-failed: put back {len(back)} file(s) as they were before the rewrite: "
            f"{', '.join(back)}",
            err=True,
        )
        if revert.kept:
            click.echo(
                "bf16-migrate --revert-failed: left migrated, no verdict speaks for them: "
                f"{', '.join(map(str, revert.kept))}",
                err=True,
            )
    return result.exit_code, found


def _worse(rewrite: int, verify: int) -> int:
    """The exit code of a rewrite and its verify together: the worse of the two, in the order 0
    (all done, all proven), 4 (nothing verified), 3 (a verify could not decide), 1 (a finding
    left, or a verdict failed), 2 (an error)."""
    order = [EXIT_OK, 4, 3, EXIT_FINDINGS, EXIT_ERROR]
    return max(rewrite, verify, key=lambda c: order.index(c) if c in order else len(order))


@dataclass
class _Nothing:
    """The outcome of a run over files none of which names a legacy variable (what
    :class:`bf16_migrate.project.Outcome` would hold), without importing the codemod."""

    changed: list = field(default_factory=list)
    diffs: dict = field(default_factory=dict)
    diagnostics: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    files_seen: int = 0
    interrupted: str | None = None
    removed: list = field(default_factory=list)
    held_back: list = field(default_factory=list)
    sources: dict = field(default_factory=dict)
    kept: dict = field(default_factory=dict)
    not_examined: list = field(default_factory=list)
    nothing_to_change: list = field(default_factory=list)


def _stdin_name_problem(name: str) -> str | None:
    """Why ``--stdin-filename NAME`` cannot name the file the source on stdin stands for, or
    None: it must be a file's path (its name gives its kind, its place the configuration and
    the excludes), inside the current directory's tree, and not a directory."""
    path = Path(name)
    if name.endswith(("/", os.sep)) or path.name in ("", ".", ".."):
        return "names a directory, not a file"
    if os.path.isdir(path):
        return "is a directory, not a file"
    cwd = os.path.realpath(os.getcwd())
    real = os.path.realpath(path)
    if real != cwd and not real.startswith(cwd.rstrip(os.sep) + os.sep):
        return f"is outside the current directory ({cwd}); name the file as it is in your tree"
    return None


def _launchers_of_scripts(paths: list[Path], settings: Settings, ignore) -> list[Path]:
    """The launchers to plan with the Python scripts named on the command line that name a
    legacy variable (:func:`bf16_migrate.scan.launchers_of`, searched in each script's project:
    :func:`bf16_migrate.scan.project_dir`), leaving out those the paths already cover. So
    ``bf16-migrate train.py`` is the same change as ``bf16-migrate .`` for train.py and its
    launchers, and pre-commit's batches cannot split a launcher from its script. A script that
    names no legacy variable brings in nothing (nothing to plan with it: a clean file costs no walk).
    The search is bounded by the project root its version control or configuration gives
    (:func:`bf16_migrate.scan.project_root`); a script in no project has its launchers looked
    for beside it only, not in every folder under its own (a script in a home directory of
    180,000 files cost a walk of them all)."""
    scripts = [p for p in paths if os.path.isfile(p) and kind_of(p) == "python" and mentions_legacy(p)]
    if not scripts:
        return []
    given = {p.resolve() for p in paths}
    dirs = [p.resolve() for p in paths if os.path.isdir(p)]
    cwd = Path.cwd()
    extra: list[Path] = []
    searches = {
        (project_root(script) or script.parent.resolve(), project_root(script) is not None) for script in scripts
    }
    for project, recursive in sorted(searches):
        for found in launchers_of(scripts, project, settings.exclude, ignore, recursive=recursive):
            real = found.resolve()
            if real in given or any(d in real.parents for d in dirs):
                continue
            given.add(real)
            extra.append(Path(os.path.relpath(found, cwd)) if cwd in found.parents else found)
    return extra


def _load_codemod() -> None:
    """Import what :func:`_migrate` runs (libcst, the carriers' parsers) and read the rules.
    The garbage collector is frozen when the process exits: the interpreter's shutdown would
    otherwise walk libcst's thousands of classes in its final collections, 30 ms for nothing
    (:func:`gc.freeze`: frozen objects are left out of every collection). The collector is
    paused while they load: the import allocates libcst's node and matcher classes and the
    rules' tables, which its scans kept walking (what the import leaves is kept anyway)."""
    global _exit_frozen
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        from .project import read_rules

        read_rules()
    finally:
        if was_enabled:
            gc.enable()
    if not _exit_frozen:
        atexit.register(gc.freeze)
        _exit_frozen = True


_exit_frozen = False


def _invocation(paths: list[Path], options: RunOptions, settings: Settings) -> Invocation:
    """The command line that applies this run's change (for the summary's ``Next:``): the
    paths as given, the mode, and the options given that change what is rewritten."""
    words: list[str] = []
    for key, value in sorted(options.legacy_env.items()):
        words += ["--legacy-env", f"{key}={value}"]
    for option, values in (("--exclude", options.exclude), ("--extend-exclude", options.extend_exclude)):
        for value in values:
            words += [option, value]
    if options.config_path is not None:
        words += ["--config", str(options.config_path)]
    if options.helpers_module is not None:
        words += ["--helpers-module", options.helpers_module]
    if options.fp32_optimizer_state:
        words.append("--fp32-optimizer-state")
    if options.force_exclude:
        words.append("--force-exclude")
    if options.respect_gitignore is False:
        words.append("--no-respect-gitignore")
    return Invocation(tuple(str(p) for p in paths), settings.mode, tuple(words))


def _verify_preflight(paths: list[Path], options: RunOptions, settings: Settings, ignore, candidates) -> bool:
    """``--verify``, before anything is written (:mod:`bf16_migrate.verify.preflight`): torch
    and torch-xla installed, the device named, and each legacy script the rewrite would change
    accepting its launch line's arguments (found by a run that writes nothing). False, with
    the error printed, when one of these fails: then nothing is rewritten."""
    from .verify.package import package_run
    from .verify.preflight import check_arguments, check_xla
    from .verify.records import RunError
    from .verify.runner import LEGACY_VARIABLES, read_source

    try:
        device = check_xla()
        click.echo(f"bf16-migrate --verify: {device.describe()}", err=True)
        plan = _migrate(paths, dataclasses.replace(options, check=True), settings, ignore, None, candidates)
        for found in legacy_scripts(plan.changed, plan.sources, settings.mode, settings.root, settings.legacy_env):
            if found.args is not None:
                source = read_source(found.script)
                package = package_run(found.script, source)
                check_arguments(found.script, found.args, source, drop=LEGACY_VARIABLES, package=package)
    except RunError as exc:
        click.echo(f"error: --verify: {exc}", err=True)
        click.echo("bf16-migrate --verify: nothing was rewritten (it could not then be verified)", err=True)
        return False
    return True


def _migrate(
    paths, options: RunOptions, settings: Settings, ignore, snapshot: dict | None = None, candidates=None, progress=None
):
    from .project import migrate_paths

    repairs = _stored_repairs(options, settings)
    return migrate_paths(
        paths,
        settings.mode,
        write=not (options.show_diff or options.check),
        exclude=settings.exclude,
        fp32_optimizer_state=settings.fp32_optimizer_state,
        legacy_env=settings.legacy_env,
        ignore=ignore,
        helpers_module=settings.helpers_module,
        hold=hold_noqa_writes,
        snapshot=snapshot,
        candidates=candidates,
        progress=progress,
        repairs=repairs,
    )


def _stored_repairs(options: RunOptions, settings: Settings) -> list:
    """The repair sites of ``--trace FILE`` (:func:`bf16_migrate.trace_repairs.read_trace_file`);
    a file that cannot be read, or that verified another mode, is a :class:`RuleError` (exit 2)."""
    if options.trace_file is None:
        return []
    from .trace_repairs import read_trace_file

    try:
        stored = read_trace_file(options.trace_file)
    except ValueError as exc:
        raise RuleError(str(exc)) from None
    if stored.modes and settings.mode.name not in stored.modes:
        raise RuleError(
            f"--trace {options.trace_file} was made in mode {', '.join(sorted(stored.modes))}, not {settings.mode}: "
            "its repairs are that mode's (pass --mode to match, or verify in this mode)"
        )
    return stored.sites


def _run_stdin(name: Path, options: RunOptions, settings: Settings) -> int:
    """``-``: the source comes from stdin and is migrated as if it were ``name`` (alone: the
    launchers and modules of its tree are not looked at). The migrated source goes to stdout
    in the input's encoding and newline style (with ``--diff`` the diff, with ``--check``
    nothing), everything else to stderr."""
    from .write import ReadError, read_text_file

    data = sys.stdin.buffer.read()
    with tempfile.TemporaryDirectory(prefix="bf16-migrate-stdin-") as tmp:
        path = Path(tmp) / name.name
        path.write_bytes(data)
        outcome = _migrate([path], dataclasses.replace(options, check=True), settings, None)
        try:
            source = read_text_file(path, kind_of(path) or "unsupported")
            text, encoding = source.text, source.encoding
        except ReadError:  # reported in outcome.errors
            text, encoding = data.decode("utf-8", "replace"), "utf-8"

    def rename(value: str) -> str:
        return value.replace(str(path), str(name))

    outcome.diagnostics = [
        dataclasses.replace(d, path=rename(d.path), message=rename(d.message)) for d in outcome.diagnostics
    ]
    outcome.errors = [rename(e) for e in outcome.errors]
    outcome.nothing_to_change = [(rename(where), line) for where, line in outcome.nothing_to_change]
    new = outcome.sources.get(path, (text, text))[1]
    if options.show_diff:
        try:
            _write_stdout(file_patch(name, text, new, encoding))
        except UnicodeEncodeError:  # reported in outcome.errors (the write would be refused)
            pass
    elif not options.check:
        _write_stdout(new.encode(encoding) if new != text else data)
    outcome.sources = {name: (text, new)}  # the text for the noqa comments (edits only when it changed)
    outcome.diffs, outcome.changed = {}, ([name] if new != text else [])
    dry = options.show_diff or options.check
    return _report(outcome, dataclasses.replace(options, show_diff=False), settings, to_stderr=True, dry_run=dry)


def _write_stdout(data: bytes) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def _report(
    outcome,
    options: RunOptions,
    settings: Settings,
    to_stderr: bool = False,
    dry_run: bool | None = None,
    invocation: Invocation | None = None,
) -> int:
    """Print the outcome in the chosen format and return the exit code. With ``--diff`` the
    patch goes to stdout, alone, and everything else to stderr. ``invocation``: the command
    line, for the commands the summary names next (None: no ``Next:``)."""
    dry = (options.show_diff or options.check) if dry_run is None else dry_run
    report = _make_report(outcome, settings, dry)
    if options.show_diff:
        # --diff: stdout holds the patch and only the patch (git apply, patch -p1)
        for path in outcome.changed:
            _write_stdout(outcome.diffs[path])
        to_stderr = True
    echo = _Echo(use_color(options.color), to_stderr)
    _print_findings(report, options, settings, echo, outcome, invocation)
    if settings.fmt in ("text", "grouped") or (settings.fmt == "github" and not options.statistics):
        _print_trailer(outcome, report, options, settings, echo, invocation)
    if outcome.removed and not options.quiet:
        echo.err(
            f"bf16-migrate: removed {len(outcome.removed)} temporary file(s) left by an interrupted run: "
            f"{', '.join(printable(str(p)) for p in outcome.removed)}"
        )
    if outcome.interrupted:
        echo.err(
            f"bf16-migrate: {outcome.interrupted} arrived while writing; the change was completed first (the files "
            "above were written), then the run stopped"
        )
        return EXIT_INTERRUPTED
    if outcome.errors or outcome.held_back:
        return EXIT_ERROR
    if options.exit_zero:
        return EXIT_OK
    return EXIT_FINDINGS if _fails(outcome, report) else EXIT_OK


@dataclass
class _Echo:
    """Where a run's lines go: ``out`` to stdout (stderr with ``to_stderr``), ``err`` to stderr,
    coloured per ``color`` (:func:`bf16_migrate.console.use_color`)."""

    color: bool | None
    to_stderr: bool

    def out(self, line: str = "", nl: bool = True) -> None:
        click.echo(line, nl=nl, err=self.to_stderr, color=self.color)

    def err(self, line: str) -> None:
        # a file name holding a newline or a terminal escape is shown escaped, never acted on
        click.echo("\n".join(printable(part) for part in line.split("\n")), err=True, color=self.color)

    def width(self, err: bool = False) -> int | None:
        """The columns to wrap to on the stream (None: not a terminal, no wrapping)."""
        return width(sys.stderr if err or self.to_stderr else sys.stdout)


def _escaped(findings: list) -> list:
    """``findings`` with path and message shown escaped (:func:`bf16_migrate.output.printable`):
    a file name holding a newline or a terminal escape is shown, never acted on."""
    return [replace(d, path=printable(d.path), message=printable(d.message)) for d in findings]


def _make_report(outcome, settings: Settings, dry: bool) -> Report:
    """The findings split by suppression, every path shown as the user knows it (relative to the
    current directory when under it: :func:`bf16_migrate.console.display_path`)."""
    texts = {str(path): old for path, (old, _new) in outcome.sources.items()}
    filtered = filter_findings(outcome.diagnostics, settings.selection, texts, kept=map(str, outcome.kept))
    ignored = frozenset(d.code for d in filtered.suppressed if not settings.selection.enabled(d.code, d.path))
    changed = set(outcome.changed)

    def shown(findings):
        # file by file in the order of the paths shown (each file's findings in the order found):
        # a script reached through a launcher may be named relative while the walk's are absolute
        moved = [dataclasses.replace(d, path=display_path(d.path)) for d in findings]
        return sorted(moved, key=lambda d: split_path(d.path)[0])

    return Report(
        reported=shown(filtered.reported),
        suppressed=shown(filtered.suppressed),
        errors=list(outcome.errors),
        held_back=[display_path(p) for p in outcome.held_back],
        kept={display_path(p): why for p, why in outcome.kept.items()},
        sources={display_path(p): pair for p, pair in outcome.sources.items() if p in changed},
        dry_run=dry,
        ignored_codes=ignored,
        changed=[display_path(p) for p in outcome.changed],
    )


def _print_findings(report: Report, options: RunOptions, settings: Settings, echo: _Echo, outcome, invocation) -> None:
    """The findings in the chosen format (or ``--statistics``)."""
    if options.statistics:
        stats = statistics(report.reported)
        if settings.fmt == "json":
            echo.out(json.dumps(stats, indent=2))
        else:
            for row in stats:
                echo.out(f"{row['count']}\t{row['code']}\t{'[*] ' if row['fixable'] else ''}{row['name']}")
    elif settings.fmt == "json":
        echo.out(to_json(report))
    elif settings.fmt == "sarif":
        from . import __version__

        echo.out(to_sarif(report, __version__))
    elif settings.fmt == "github":
        for line in to_github(report):
            echo.out(line)
    elif settings.fmt == "markdown":
        steps = _next_steps(outcome, report, options, settings, invocation)
        echo.out(to_markdown(report, summary(outcome, report, written=not report.dry_run), steps, settings.mode))
    elif settings.fmt == "grouped":
        message = partial(message_of, dry_run=report.dry_run)
        for line in grouped_lines(_escaped(report.reported), message, report.dry_run, echo.width(), click.style):
            echo.out(line)
    else:
        for d in report.reported:
            echo.out(format_text(d, report.dry_run, style=click.style))


def _print_trailer(outcome, report: Report, options: RunOptions, settings: Settings, echo: _Echo, invocation) -> None:
    """On stderr, after the findings: the errors (text formats), the files held back, the files
    kept, then (unless ``--quiet``) the summary, the to-do list, the fixes (``--show-fixes``) and
    the commands to run next."""
    human = settings.fmt in ("text", "grouped")
    if human:
        for error in outcome.errors:
            echo.err(f"error: {error}")
    if outcome.held_back:
        written = f"written: {', '.join(report.changed)}" if outcome.changed else "nothing was written"
        echo.err(
            "error: not written, so that no launcher is migrated without its script: "
            f"{', '.join(report.held_back)} ({written}); fix the error above and run again"
        )

    for path, codes in silent_changes(report):  # even with --quiet: the only word on why the check fails
        echo.err(silent_change(path, codes))
    if options.quiet:
        return
    for path, why in report.kept.items():
        echo.err(f"bf16-migrate: left as it is: {path} ({why})")
    if human and not options.statistics and report.reported:  # nothing found: the catalogue is not read
        rules = diagnostic_rules()
        titles = {code: rule.title for code, rule in rules.items()}
        todos = {code: rule.todo for code, rule in rules.items()}
        for line in todo_lines(_escaped(report.reported), titles, todos, echo.width(err=True)):
            echo.err(line)
        if settings.show_fixes:
            for line in fixes_lines(_escaped(report.reported), titles, report.dry_run):
                echo.err(line)

    for line in wrap(summary(outcome, report, written=not report.dry_run), echo.width(err=True), indent=2, first=0):
        echo.err(line)

    for line in format_rows(_next_steps(outcome, report, options, settings, invocation)):
        echo.err(line)


def _next_steps(outcome, report: Report, options: RunOptions, settings: Settings, invocation) -> list[tuple[str, str]]:
    """What to run next (:func:`bf16_migrate.next_steps.next_rows`): nothing without an
    ``invocation`` (stdin), with ``--quiet`` or ``--statistics``."""
    if invocation is None or options.quiet or options.statistics:
        return []

    return next_rows(
        invocation,
        outcome.changed,
        report.reported,
        outcome.sources,
        dry_run=report.dry_run,
        verified=options.verify,
        root=settings.root,
        legacy_env=settings.legacy_env,
    )


def _fails(outcome, report: Report) -> bool:
    """Exit 1: a reported finding needs a hand, or (dry run) a file would change, whatever is
    suppressed about it: a suppression changes what is reported, never what the rewrite writes
    (``--check``'s "exit 1 if anything would change"; a ``# noqa`` on a legacy write keeps the
    file, which then does not change)."""
    return any(not d.fixed for d in report.reported) or (report.dry_run and bool(report.changed))


def summary(outcome, report: Report, written: bool) -> str:
    """``bf16-migrate: N file(s) changed, N finding(s) fixed, N left to do by hand, N
    suppressed (...)`` ("would change", "would be fixed" in a dry run)."""
    fixed = sum(d.fixed for d in report.reported)
    todo = sum(not d.fixed for d in report.reported)
    parts = [
        f"{len(outcome.changed)} file(s) {'changed' if written else 'would change'}",
        f"{fixed} finding(s) {'fixed' if written else 'would be fixed'}",
        f"{todo} left to do by hand",
    ]
    unexamined = outcome.not_examined
    if unexamined:  # "0 left" only when every module on the device was examined (python/outcome.py)
        parts[-1] += f" and {len(unexamined)} place(s) not examined ({'; '.join(unexamined)})"
    if report.suppressed:
        parts.append(f"{len(report.suppressed)} suppressed")
    if outcome.errors:
        parts.append(f"{len(outcome.errors)} file(s) could not be processed")
    if outcome.held_back:
        parts.append(f"{len(outcome.held_back)} file(s) held back")
    return (
        "bf16-migrate: " + ", ".join(parts) + f" ({outcome.files_seen} file(s) name a legacy variable{_quiet(outcome)})"
    )


QUIET_SHOWN = 3
"""How many of the files naming a variable only in comments the summary names (the rest are counted)."""


def _quiet(outcome) -> str:
    """``; 2 only in comments, nothing to change: run.sh:3, train.py:2`` for the files that name a
    legacy variable only where nothing is set (:attr:`bf16_migrate.project.Outcome.nothing_to_change`,
    shown as findings are), or ""."""
    quiet = outcome.nothing_to_change
    if not quiet:
        return ""
    more = len(quiet) - QUIET_SHOWN
    shown = [f"{printable(display_path(where))}:{line}" for where, line in quiet[:QUIET_SHOWN]]
    return f"; {len(quiet)} only in comments, nothing to change: {', '.join(shown)}" + (
        f" and {more} more" if more > 0 else ""
    )
