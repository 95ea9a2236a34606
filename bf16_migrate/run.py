"""One ``bf16-migrate PATHS...`` run: settings (command line over ``[tool.bf16-migrate]``),
the files to look at (excludes, ``.gitignore``, ``--force-exclude``, ``-`` for stdin), the
migration (:func:`bf16_migrate.project.migrate_paths`), suppressions, output and exit code.

The click command (:mod:`bf16_migrate.cli`) only parses arguments; everything that decides
what a run does is here, so it reads top to bottom as the run happens.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click

from .config import Config, ConfigError, common_parent, load_config
from .output import FORMATS, Report, format_text, statistics, to_github, to_json, to_sarif
from .rules import DEFAULT_MODE, MODES, RuleError, load_rules
from .suppress import Selection, SelectionError, check_codes, filter_findings, hold_noqa_writes

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
    ignore_codes: tuple[str, ...] = ()
    config_path: Path | None = None
    stdin_filename: str | None = None
    fp32_optimizer_state: bool | None = None
    helpers_module: str | None = None
    legacy_env: dict[str, str] = field(default_factory=dict)
    statistics: bool = False
    exit_zero: bool = False
    quiet: bool = False
    verify: bool = False
    """Run every rewritten script on the XLA device against its pre-rewrite bytes."""
    revert_failed: bool = False
    """With ``verify``: put back the files of the scripts whose verdict is not PASS."""
    verify_steps: int = 20
    verify_timeout: float = 600.0
    jobs: int = 1


@dataclass(frozen=True)
class Settings:
    """What the run does, once the command line and the configuration are merged."""

    mode: str
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


def resolve_settings(options: RunOptions, config: Config, paths: list[Path]) -> Settings:
    """The command line wins over the configuration, key by key (``--exclude`` replaces
    ``exclude``; ``extend-exclude`` is added from both; ``--legacy-env`` overrides the
    configuration's value of the same variable). Raises :class:`ConfigError` or
    :class:`SelectionError` with a one-line message naming the file or the option."""
    where = f"{config.path}: [tool.bf16-migrate]"
    mode = options.mode or config.mode or DEFAULT_MODE
    if mode not in MODES:
        raise ConfigError(f"{where} mode = {mode!r}: not one of {', '.join(MODES)}")
    fmt = options.fmt or config.output_format or "text"
    if fmt not in FORMATS:
        raise ConfigError(f"{where} output-format = {fmt!r}: not one of {', '.join(FORMATS)}")
    exclude = options.exclude or config.exclude or ()
    exclude = (*exclude, *config.extend_exclude, *options.extend_exclude)
    # the rules (TOML) are loaded only when a code or a variable is to be checked: a run on
    # files that name nothing never reads them
    codes = (
        load_rules().diagnostics if (options.select or options.ignore_codes or config.select or config.ignore) else {}
    )
    if options.select:
        select = check_codes("--select", options.select, codes)
    else:
        select = check_codes(f"{where} select:", config.select or (), codes)
    if options.ignore_codes:
        ignore = check_codes("--ignore", options.ignore_codes, codes)
    else:
        ignore = check_codes(f"{where} ignore:", config.ignore or (), codes)
    legacy_env = {**config.legacy_env, **options.legacy_env}
    variables = load_rules().variables if legacy_env else {}
    unknown = [key for key in legacy_env if key not in variables]
    if unknown:
        origin = "--legacy-env" if unknown[0] in options.legacy_env else f"{where} legacy-env:"
        raise ConfigError(f"{origin} {unknown[0]}: not a legacy variable (one of {', '.join(sorted(variables))})")
    return Settings(
        mode=mode,
        fmt=fmt,
        exclude=tuple(exclude),
        selection=Selection(select, ignore),
        legacy_env=legacy_env,
        fp32_optimizer_state=bool(
            options.fp32_optimizer_state if options.fp32_optimizer_state is not None else config.fp32_optimizer_state
        ),
        helpers_module=_helpers_module(options.helpers_module, config.helpers_module, where),
        respect_gitignore=_first(options.respect_gitignore, config.respect_gitignore, True),
        force_exclude=_first(options.force_exclude, config.force_exclude, False),
        root=config.root or _default_root(paths),
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
    from .ignore import GitIgnore, excluded
    from .scan import ScanError

    stdin = [str(p) for p in paths] == ["-"]
    if stdin and not options.stdin_filename:
        usage("`-` reads the source from stdin and needs --stdin-filename PATH (its name decides its kind)")
    if options.stdin_filename and not stdin:
        usage("--stdin-filename only goes with the PATHS `-`")
    stdin_path = Path(options.stdin_filename) if options.stdin_filename else None  # set whenever stdin (checked above)
    config_paths = [stdin_path] if stdin_path is not None else paths
    try:
        config = load_config(config_paths, options.config_path)
        settings = resolve_settings(options, config, config_paths)
    except (ConfigError, SelectionError, RuleError) as exc:
        # a bad option is a usage error; a bad configuration names its file
        click.echo(f"{'usage error' if str(exc).startswith('--') else 'error'}: {exc}", err=True)
        return EXIT_ERROR
    if options.statistics and settings.fmt in ("sarif", "github"):
        usage(f"--statistics prints text or json, not {settings.fmt}")
    ignore = GitIgnore(settings.root) if settings.respect_gitignore else None
    if settings.force_exclude:
        named = [stdin_path] if stdin_path is not None else paths
        skipped = [
            p
            for p in named
            if excluded(p, settings.root, settings.exclude) or (ignore is not None and ignore(p, p.is_dir()))
        ]
        if stdin and skipped:
            _write_stdout(sys.stdin.buffer.read())  # as ruff does: an excluded file comes back as it is
            return EXIT_OK
        paths = [p for p in paths if p not in skipped]
        if not paths:
            if not options.quiet:
                click.echo("bf16-migrate: every path given is excluded (--force-exclude); nothing to do", err=True)
            return EXIT_OK
    if options.verify and (stdin or options.show_diff or options.check):
        usage("--verify proves what the rewrite writes: it does not go with --diff, --check or `-`")
    snapshot: dict[Path, bytes | None] | None = {} if options.verify else None
    try:
        if stdin_path is not None:
            return _run_stdin(stdin_path, options, settings)
        paths = paths + _launchers_of_scripts(paths, settings, ignore)
        from .scan import scan

        # the codemod is imported as soon as one file names a variable, while a large tree's
        # remaining files are still read in another process
        candidates = scan(paths, settings.exclude, ignore, on_found=_load_codemod)
        if not candidates and not settings.legacy_env:
            # nothing names a legacy variable: no codemod, no rules, no libcst import
            outcome = _Nothing()
        else:
            outcome = _migrate(paths, options, settings, ignore, snapshot, candidates)
    except (ScanError, RuleError) as exc:
        click.echo(f"error: {exc}", err=True)
        return EXIT_ERROR
    except KeyboardInterrupt:
        click.echo("bf16-migrate: interrupted before anything was written; no file was changed", err=True)
        return EXIT_INTERRUPTED
    code = _report(outcome, options, settings)
    if options.verify and code != EXIT_INTERRUPTED:
        code = _verify_rewrite(outcome, snapshot or {}, paths, options, settings, ignore, code)
    return code


def _verify_rewrite(
    outcome, snapshot: dict, paths: list[Path], options: RunOptions, settings: Settings, ignore, code: int
) -> int:
    """``--verify``: every rewritten legacy script run on the XLA device against its bytes
    before the rewrite (:func:`bf16_migrate.verify.after_rewrite.verify_rewrite`), one table
    (stdout in text format, stderr otherwise, so a json/sarif stdout stays one document);
    ``--revert-failed`` puts back what did not pass. The exit code is the worse of the
    rewrite's and the verify's (:func:`_worse`; 2: a verify could not be made; 1: one failed; 3:
    one could not decide; 4: nothing was verified)."""
    from .verify.after_rewrite import verify_rewrite
    from .verify.records import RunError

    to_stderr = settings.fmt != "text"

    def echo(text: str, err: bool) -> None:
        click.echo(text, err=err or to_stderr)

    if not outcome.changed:
        if not options.quiet:
            click.echo("bf16-migrate --verify: nothing was written, nothing to verify", err=True)
        return code
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
        return EXIT_ERROR
    except OSError as exc:
        click.echo(f"error: --verify: the tree before the rewrite could not be mirrored: {exc}", err=True)
        return EXIT_ERROR
    except KeyboardInterrupt:
        click.echo(
            "bf16-migrate --verify: interrupted; the runs were stopped, nothing was reverted (the rewrite stays)",
            err=True,
        )
        return EXIT_INTERRUPTED
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
            return EXIT_ERROR
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
    return _worse(code, result.exit_code)


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


def _launchers_of_scripts(paths: list[Path], settings: Settings, ignore) -> list[Path]:
    """The launchers to plan with the Python scripts named on the command line that name a
    legacy variable (:func:`bf16_migrate.scan.launchers_of`, searched in each script's project:
    :func:`bf16_migrate.scan.project_dir`), leaving out those the paths already cover. So
    ``bf16-migrate train.py`` is the same change as ``bf16-migrate .`` for train.py and its
    launchers, and pre-commit's batches cannot split a launcher from its script. A script that
    names no legacy variable brings in nothing (nothing to plan with it: a clean file costs no walk)."""
    from .scan import kind_of, launchers_of, mentions_legacy, project_dir

    scripts = [p for p in paths if p.is_file() and kind_of(p) == "python" and mentions_legacy(p)]
    if not scripts:
        return []
    given = {p.resolve() for p in paths}
    dirs = [p.resolve() for p in paths if p.is_dir()]
    cwd = Path.cwd()
    extra: list[Path] = []
    for project in sorted({project_dir(script) for script in scripts}):
        for found in launchers_of(scripts, project, settings.exclude, ignore):
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
    (:func:`gc.freeze`: frozen objects are left out of every collection)."""
    global _exit_frozen
    from . import project  # noqa: F401

    load_rules()
    if not _exit_frozen:
        atexit.register(gc.freeze)
        _exit_frozen = True


_exit_frozen = False


def _migrate(paths, options: RunOptions, settings: Settings, ignore, snapshot: dict | None = None, candidates=None):
    from .project import migrate_paths

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
    )


def _run_stdin(name: Path, options: RunOptions, settings: Settings) -> int:
    """``-``: the source comes from stdin and is migrated as if it were ``name`` (alone: the
    launchers and modules of its tree are not looked at). The migrated source goes to stdout
    in the input's encoding and newline style (with ``--diff`` the diff, with ``--check``
    nothing), everything else to stderr."""
    import dataclasses

    from .write import ReadError, read_source

    data = sys.stdin.buffer.read()
    with tempfile.TemporaryDirectory(prefix="bf16-migrate-stdin-") as tmp:
        path = Path(tmp) / name.name
        path.write_bytes(data)
        outcome = _migrate([path], dataclasses.replace(options, check=True), settings, None)
        try:
            source = read_source(path)
            text, encoding = source.text, source.encoding
        except ReadError:  # reported in outcome.errors
            text, encoding = data.decode("utf-8", "replace"), "utf-8"

    def rename(value: str) -> str:
        return value.replace(str(path), str(name))

    outcome.diagnostics = [
        dataclasses.replace(d, path=rename(d.path), message=rename(d.message)) for d in outcome.diagnostics
    ]
    outcome.errors = [rename(e) for e in outcome.errors]
    new = outcome.sources.get(path, (text, text))[1]
    if options.show_diff:
        _write_stdout(rename(outcome.diffs.get(path, "")).encode("utf-8"))
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


def _report(  # noqa: C901
    outcome, options: RunOptions, settings: Settings, to_stderr: bool = False, dry_run: bool | None = None
) -> int:
    """Print the outcome in the chosen format and return the exit code."""
    dry = (options.show_diff or options.check) if dry_run is None else dry_run
    texts = {str(path): old for path, (old, _new) in outcome.sources.items()}
    filtered = filter_findings(outcome.diagnostics, settings.selection, texts, kept=map(str, outcome.kept))
    ignored = frozenset(d.code for d in filtered.suppressed if not settings.selection.enabled(d.code))
    changed = set(outcome.changed)
    report = Report(
        reported=filtered.reported,
        suppressed=filtered.suppressed,
        errors=list(outcome.errors),
        held_back=[str(p) for p in outcome.held_back],
        kept={str(p): why for p, why in outcome.kept.items()},
        sources={str(p): pair for p, pair in outcome.sources.items() if p in changed},
        dry_run=dry,
        ignored_codes=ignored,
    )
    color = False if os.environ.get("NO_COLOR") else None  # None: click strips colour when not a terminal

    def out(line: str = "", nl: bool = True) -> None:
        click.echo(line, nl=nl, err=to_stderr, color=color)

    def err(line: str) -> None:
        click.echo(line, err=True, color=color)

    if options.statistics:
        stats = statistics(report.reported)
        if settings.fmt == "json":
            import json

            out(json.dumps(stats, indent=2))
        else:
            for row in stats:
                out(f"{row['count']}\t{row['code']}\t{'[*] ' if row['fixable'] else ''}{row['name']}")
    elif settings.fmt == "json":
        out(to_json(report))
    elif settings.fmt == "sarif":
        from . import __version__

        out(to_sarif(report, __version__))
    elif settings.fmt == "github":
        for line in to_github(report):
            out(line)
    else:
        if options.show_diff:
            for path in outcome.changed:
                out(outcome.diffs[path], nl=False)
        for d in report.reported:
            out(format_text(d, dry, style=click.style))
    if settings.fmt == "text" or (settings.fmt == "github" and not options.statistics):
        if settings.fmt == "text":
            for error in outcome.errors:
                err(f"error: {error}")
        if outcome.held_back:
            written = f"written: {', '.join(map(str, outcome.changed))}" if outcome.changed else "nothing was written"
            err(
                "error: not written, so that no launcher is migrated without its script: "
                f"{', '.join(map(str, outcome.held_back))} ({written}); fix the error above and run again"
            )
        if not options.quiet:
            for path, why in report.kept.items():
                err(f"bf16-migrate: left as it is: {path} ({why})")
            err(summary(outcome, report, written=not dry))
            if settings.fmt == "text" and not options.statistics:
                from .diagnostics import format_todo

                todo = format_todo(report.reported)
                if todo:
                    err(todo)
    if outcome.removed and not options.quiet:
        err(
            f"bf16-migrate: removed {len(outcome.removed)} temporary file(s) left by an interrupted run: "
            f"{', '.join(map(str, outcome.removed))}"
        )
    if outcome.interrupted:
        err(
            f"bf16-migrate: {outcome.interrupted} arrived while writing; the change was completed first (the files "
            "above were written), then the run stopped"
        )
        return EXIT_INTERRUPTED
    if outcome.errors or outcome.held_back:
        return EXIT_ERROR
    if options.exit_zero:
        return EXIT_OK
    return EXIT_FINDINGS if _fails(outcome, report) else EXIT_OK


def _fails(outcome, report: Report) -> bool:
    """Exit 1: a reported finding needs a hand, or (dry run) a file would change and not every
    finding about it is suppressed."""
    if any(not d.fixed for d in report.reported):
        return True
    if not report.dry_run:
        return False
    for path in outcome.changed:
        about = [d for d in report.reported + report.suppressed if d.path == str(path) or d.path.startswith(f"{path}#")]
        if not about or any(d in report.reported for d in about):
            return True
    return False


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
    if report.suppressed:
        parts.append(f"{len(report.suppressed)} suppressed")
    if outcome.errors:
        parts.append(f"{len(outcome.errors)} file(s) could not be processed")
    if outcome.held_back:
        parts.append(f"{len(outcome.held_back)} file(s) held back")
    return "bf16-migrate: " + ", ".join(parts) + f" ({outcome.files_seen} file(s) name a legacy variable)"
