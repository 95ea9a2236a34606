"""Command line: ``bf16-migrate PATHS...`` (rewrite), ``bf16-migrate explain CODE`` and
``bf16-migrate verify SCRIPT``.

Only argument handling lives here; a rewrite run (configuration, discovery, suppressions,
output formats) is :mod:`bf16_migrate.run`, a verify run (checkout, plan, runs) is
:mod:`bf16_migrate.verify.run`, whose outcome ``verify`` prints. Exit codes (``--exit-zero`` turns 1 into 0):
0 nothing left to do; 1 ``--check``/``--diff`` found something, or a finding could not be fixed
automatically (verify: the migrated run does not train or match); 2 a file could not be
processed or written, the usage was wrong, or (verify) a run could not be made; verify only: 3
the runs could not tell the precisions apart within the budget of extra steps, 4 nothing was
verified (:data:`bf16_migrate.verify.summary.EXIT_CODES`); 130 interrupted (SIGINT, SIGTERM or
SIGHUP: before the commit nothing was written; during it, the commit was finished first and
reported).
"""

from __future__ import annotations

import difflib
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import click
from click.shell_completion import CompletionItem

from .console import COLOR_CHOICES
from .diagnostics import rule_page
from .output import FORMATS
from .rule_files import DEFAULT_MODE, MODES, diagnostic_rules, mode_named

TRACE_TIME = 120.0
"""``verify --trace-time`` by default (:data:`bf16_migrate.verify.TRACE_TIME`, which the CLI
does not import before a verify runs)."""

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a run stopped by Ctrl-C


class _DefaultToMigrate(click.Group):
    """A group whose default command is ``migrate``: ``bf16-migrate src/ --mode amp`` runs
    ``migrate``, ``bf16-migrate verify train.py`` runs ``verify``. A first word that is no
    command and no existing path but close to a command's name (``verfy``) is a usage error
    that names the command (:func:`difflib.get_close_matches`, as git suggests a command)."""

    def parse_args(self, ctx, args):
        if ctx.resilient_parsing and not args:
            return super().parse_args(ctx, args)  # shell completion of the first word: shell_complete below
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            _refuse_mistyped_command(args[0], [c for c in self.commands if c != "migrate"])
            args = ["migrate", *args]
        elif not args:
            args = ["migrate"]
        return super().parse_args(ctx, args)

    def shell_complete(self, ctx, incomplete):
        """Completion of the first word (click's shell completion, docs/usage.md "Shell
        completion"): the commands and a path, or ``migrate``'s options (the default command's)."""
        if incomplete.startswith("-"):
            return [*self.commands["migrate"].shell_complete(ctx, incomplete), *super().shell_complete(ctx, incomplete)]
        return [*super().shell_complete(ctx, incomplete), CompletionItem(incomplete, type="file")]


def _refuse_mistyped_command(word: str, commands: list[str]) -> None:
    """Exit 2 naming the command ``word`` looks like, when it is neither an option nor an
    existing path (``bf16-migrate verfy train.py``); otherwise return."""
    if word.startswith("-") or os.path.lexists(word):
        return
    close = difflib.get_close_matches(word, commands, n=1, cutoff=0.6)
    if close:
        _usage(f"{word}: no such file, directory or command; did you mean `bf16-migrate {close[0]}`?")


@click.group(cls=_DefaultToMigrate, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="bf16-migrate")
def main() -> None:
    """Migrate PyTorch/XLA training code off XLA_USE_BF16 / XLA_DOWNCAST_BF16 and verify it.

    \b
    bf16-migrate PATHS... [--mode stochastic|gpu-compatible|amp] [--diff | --check] [--legacy-env K=V]...
                          [--output-format grouped|text|json|sarif|github|markdown]
    bf16-migrate PATHS... --verify [--revert-failed] [--jobs N]    (rewrite, then prove every rewritten script)
    bf16-migrate - --stdin-filename PATH < source > migrated
    bf16-migrate explain BFMxxx                                    (or rule BFMxxx, as ruff names it)
    bf16-migrate verify SCRIPT [--mode M] [--steps N] [--legacy-env K=V]... [--against GITREV]
                               [--json FILE] [--markdown FILE] [-- ARGS...]
    bf16-migrate verify --against GITREV [--jobs N] [--list]      (every script a migration changed)
    bf16-migrate verify --merge FILE.json...

    Shell completion: eval "$(_BF16_MIGRATE_COMPLETE=bash_source bf16-migrate)" (docs/usage.md).
    """


@main.command("migrate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=None,
    help=(
        "stochastic (default): bf16 model + NEURON_RT_STOCHASTIC_ROUNDING_EN=1; gpu-compatible: bf16 model with FP32 "
        "master weights; amp: FP32 model under torch.autocast."
    ),
)
@click.option("--diff", "show_diff", is_flag=True, help="Print a unified diff; write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if anything would change or needs a hand.")
@click.option(
    "--output-format",
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default=None,
    help=(
        "grouped (default on a terminal: findings under their file), text (default elsewhere: path:line:col: CODE "
        "message), json, sarif (SARIF 2.1.0), github (workflow commands) or markdown (a CI job summary)."
    ),
)
@click.option("--json", "json_flag", is_flag=True, help="Same as --output-format json.")
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Skip files matching GLOB (repeatable; replaces the configuration's exclude).",
)
@click.option(
    "--extend-exclude",
    multiple=True,
    metavar="GLOB",
    help="Skip files matching GLOB, in addition to exclude (repeatable).",
)
@click.option(
    "--force-exclude/--no-force-exclude",
    default=None,
    help="Apply the excludes and .gitignore to files named on the command line too (for pre-commit).",
)
@click.option(
    "--respect-gitignore/--no-respect-gitignore", default=None, help="Skip the files .gitignore ignores (default: yes)."
)
@click.option(
    "--select",
    multiple=True,
    metavar="CODE",
    help="Report only these codes or prefixes (BFM1: every BFM1xx; repeatable or comma-separated).",
)
@click.option(
    "--extend-select",
    multiple=True,
    metavar="CODE",
    help="Report these codes or prefixes too, on top of the selection (BFM900: unused noqa).",
)
@click.option(
    "--ignore",
    "ignore_codes",
    multiple=True,
    metavar="CODE",
    help="Do not report these codes or prefixes (wins over --select).",
)
@click.option(
    "--per-file-ignores",
    multiple=True,
    metavar="GLOB:CODES",
    help="Do not report these codes in files matching GLOB (docs/*:BFM091; repeatable; replaces the configuration's).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Read [tool.bf16-migrate] from this pyproject.toml instead of the nearest one.",
)
@click.option(
    "--stdin-filename",
    metavar="PATH",
    help="With PATHS `-`: the name of the file read from stdin (its kind, its place in the configuration).",
)
@click.option(
    "--fp32-optimizer-state",
    is_flag=True,
    default=None,
    help="Optimizers defined in the files upcast their gradients and keep their state in FP32.",
)
@click.option(
    "--helpers-module",
    metavar="NAME",
    default=None,
    help=(
        "Write the helper functions once per directory as NAME.py and import them, instead of a copy in every script "
        "(gpu-compatible trees with many scripts)."
    ),
)
@click.option(
    "--legacy-env",
    multiple=True,
    metavar="KEY=VALUE",
    help=(
        "A legacy variable the scripts in PATHS run under from outside the tree (a job spec): they get the mode's "
        "code change (repeatable)."
    ),
)
@click.option("--statistics", is_flag=True, help="Print the number of findings per code instead of the findings.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings are left (errors still exit 2).")
@click.option("-q", "--quiet", is_flag=True, help="Print the findings only: no summary, no to-do list.")
@click.option(
    "--show-fixes/--no-show-fixes",
    default=None,
    help="After the findings, count the fixes made (in a dry run: that would be made) per file and code.",
)
@click.option(
    "--color",
    type=click.Choice(COLOR_CHOICES),
    default=None,
    help="Colour the output: auto (default: on a terminal; FORCE_COLOR and NO_COLOR decide first), always, never.",
)
@click.option(
    "--verify",
    is_flag=True,
    help=(
        "After the rewrite, run every rewritten script on the XLA device against its pre-rewrite bytes (with its "
        "launchers' settings): one table; exit 1 if a verdict fails."
    ),
)
@click.option(
    "--revert-failed",
    is_flag=True,
    help=(
        "With --verify: put back, byte for byte, the files (launchers included) of every script whose verdict did not "
        "pass."
    ),
)
@click.option(
    "--verify-steps",
    type=click.IntRange(min=3),
    default=20,
    show_default=True,
    help="With --verify: optimizer steps to record per run.",
)
@click.option(
    "--verify-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="With --verify: seconds per run before it is killed.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --verify: how many scripts to verify at once (each makes 2-3 runs of its own).",
)
@click.option(
    "--trace",
    "trace_file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help=(
        "A `bf16-migrate verify --json` document: apply the repairs its run's dtype trace names (the same as "
        "verify --fix, without the device)."
    ),
)
def migrate(paths: tuple[Path, ...], show_diff: bool, check: bool, **options) -> None:
    """Rewrite PATHS (files or directories) in place for --mode.

    Settings not given on the command line come from [tool.bf16-migrate] in the nearest
    pyproject.toml (see docs/usage.md, "Configuration")."""
    from .run import RunOptions, run_migrate

    if not paths:
        _usage("no PATHS given (try `bf16-migrate . --diff`)")
    if show_diff and check:
        _usage("--diff and --check cannot be combined")
    if options.pop("json_flag"):
        if options["fmt"] not in (None, "json"):
            _usage(f"--json and --output-format {options['fmt']} cannot be combined")
        options["fmt"] = "json"
    if "-" in map(str, paths) and len(paths) > 1:
        _usage("`-` (stdin) cannot be combined with other PATHS")
    options["legacy_env"] = _parse_env(options["legacy_env"])
    if options["revert_failed"]:
        options["verify"] = True
    if (show_diff or check) and options["verify"]:
        _usage("--verify proves what the rewrite writes: it does not go with --diff or --check")
    _interrupt_on_termination()
    sys.exit(run_migrate(list(paths), RunOptions(show_diff=show_diff, check=check, **options), _usage))


@main.command("explain")
@click.argument("code", required=False)
def explain(code: str | None) -> None:
    """Print the rule page of a diagnostic code such as BFM050 (what it finds, why it matters,
    an example, what to use instead, whether it is fixed); without CODE, list all."""
    _explain(code)


@main.command("rule")
@click.argument("code", required=False)
@click.option("--all", "every", is_flag=True, help="List every code (as without CODE).")
def rule(code: str | None, every: bool) -> None:
    """Same as explain (ruff's name for it): the rule page of CODE; without CODE or with --all,
    list all."""
    if code is not None and every:
        _usage("rule takes CODE or --all, not both")
    _explain(code)


def _explain(code: str | None) -> NoReturn:
    """``explain`` and ``rule``: print CODE's rule page, or the list of codes; exit 0 (2 for an
    unknown code)."""
    catalogue = diagnostic_rules()
    if code is None:
        for known, rule in sorted(catalogue.items()):
            click.echo(f"{known}  {rule.title}{'  (fixable)' if rule.fixable else ''}")
        sys.exit(EXIT_OK)
    entry = catalogue.get(code.upper())
    if entry is None:
        click.echo(f"error: {code}: no such diagnostic code (`bf16-migrate explain` lists them)", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(rule_page(entry), nl=False)
    sys.exit(EXIT_OK)


def _usage(message: str) -> NoReturn:
    click.echo(f"usage error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP stop the run as Ctrl-C does (KeyboardInterrupt), so that a run stopped
    before its commit says that nothing was written; during the commit all three are held
    (:mod:`bf16_migrate.commit`)."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        try:
            signal.signal(signum, interrupt)
        except ValueError:  # pragma: no cover - not the main thread (an embedding application)
            return


_AFTER_DASHDASH = "bf16_migrate.after_dashdash"


class _VerifyCommand(click.Command):
    """``verify``, remembering how many words followed ``--`` (None: no ``--``), which click
    consumes: ``verify --against REV -- --steps 5`` gives every script ``--steps 5``, and
    ``verify --against REV`` alone leaves each script the arguments of its launch line."""

    def parse_args(self, ctx, args):
        ctx.meta[_AFTER_DASHDASH] = len(args) - args.index("--") - 1 if "--" in args else None
        return super().parse_args(ctx, args)


def _parse_env(pairs: tuple[str, ...]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            _usage(f"--legacy-env expects KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


@main.command("verify", cls=_VerifyCommand, context_settings={"ignore_unknown_options": False})
@click.argument("script", required=False, type=click.Path(path_type=Path))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=None,
    help=(
        "The migration's mode (default: stochastic; with --against, the mode the migration used, detected from the "
        "work tree)."
    ),
)
@click.option(
    "--steps", type=click.IntRange(min=3), default=20, show_default=True, help="Optimizer steps to record per run."
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=3),
    default=None,
    help=(
        "The budget for more evidence: when the first --steps steps cannot tell bf16 from FP32, the runs are made "
        "again with this many steps (default: 4 x --steps); only then may the verdict be INCONCLUSIVE (exit 3)."
    ),
)
@click.option(
    "--legacy-env",
    multiple=True,
    metavar="KEY=VALUE",
    help=(
        "A legacy variable a launcher set (legacy run only; repeatable; with --against, replaces what the launchers "
        "at GITREV set)."
    ),
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds per run before it is killed.",
)
@click.option(
    "--against",
    "against",
    metavar="GITREV",
    help=(
        "The work tree is migrated: run the legacy side from the tree at GITREV (its modules, its launchers' "
        "settings). Without SCRIPT: every script whose migration changed since GITREV."
    ),
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With several scripts: how many to verify at once (each makes 2-3 runs of its own).",
)
@click.option(
    "--list",
    "list_only",
    is_flag=True,
    help="With --against: print the scripts to verify, with their settings, as JSON (a CI matrix); run nothing.",
)
@click.option(
    "--merge",
    is_flag=True,
    help="SCRIPT and the arguments after it are --json files of earlier verifies: print one table, exit with one code.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    metavar="FILE",
    help="Also write every record and the verdict as JSON.",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    metavar="FILE.png",
    help="Also draw the loss curves of all runs (PNG, matplotlib; one script and setting only).",
)
@click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    metavar="FILE",
    help='Also append the result as Markdown to FILE (a CI job summary: --markdown "$GITHUB_STEP_SUMMARY").',
)
@click.option(
    "--fix",
    is_flag=True,
    help=(
        "Repair the places the run's dtype trace names (an f32 operand cast to its partner's dtype, .float() at a "
        "host exit, the model cast moved before a copy), verify again (at most 3 rounds), then write the migration "
        "with its repairs as one change. One script."
    ),
)
@click.option(
    "--diff", "show_diff", is_flag=True, help="With --fix: print the change as a unified diff; write nothing."
)
@click.option(
    "--trace-time",
    type=click.FloatRange(min=0),
    default=TRACE_TIME,
    show_default=True,
    metavar="SECONDS",
    help=(
        "How long the legacy and migrated runs go on after the recorded steps, so that the dtype trace sees the code "
        "after the training loop (evaluation, EMA, checkpoints); 0: stop at the steps."
    ),
)
@click.option("--no-trace", is_flag=True, help="Record no dtype trace (no trace part, no findings by line).")
def verify(
    script: Path | None,
    script_args: tuple[str, ...],
    mode: str | None,
    steps: int,
    max_steps: int | None,
    legacy_env: tuple[str, ...],
    timeout: float,
    against: str | None,
    jobs: int,
    list_only: bool,
    merge: bool,
    json_path: Path | None,
    plot_path: Path | None,
    markdown_path: Path | None,
    fix: bool,
    show_diff: bool,
    trace_time: float,
    no_trace: bool,
) -> None:
    """Run SCRIPT as it is (legacy variables in force) and migrated, on the XLA device
    (PJRT_DEVICE=CPU unless set), and compare the loss at each optimizer step.

    With --against GITREV, SCRIPT is the migrated file and the legacy side runs from the tree
    at GITREV: its version of SCRIPT and of every module it imports, under the legacy settings
    its launchers put in force (the CI use: verify the migration commit). Without SCRIPT,
    every script whose migration changed since GITREV is verified: one table, one exit code.
    A launcher (run.sh, a Dockerfile...) as SCRIPT verifies each Python script it starts, with
    its launch line's arguments and settings. Arguments after `--` are passed to the script
    (without SCRIPT: to every script; without `--`, each script gets its launch line's).
    Progress goes to stderr; the report to stdout."""
    after_dashdash = click.get_current_context().meta.get(_AFTER_DASHDASH)
    script, script_args = _verify_script_and_args(script, script_args, against, merge, after_dashdash)
    outputs = _Outputs(json_path, plot_path, markdown_path)
    if show_diff and not fix:
        _usage("--diff goes with --fix (it shows the repairs instead of writing them)")
    if fix and no_trace:
        _usage("--fix repairs what the dtype trace names: it does not go with --no-trace")
    if merge:
        _verify_merge([*([script] if script is not None else []), *map(Path, script_args)], outputs)
    env = _parse_env(legacy_env)
    _check_verify_plan(script, against, list_only, plot_path)
    _interrupt_on_termination()  # a verify stopped by SIGTERM stops its runs and says so, as Ctrl-C does
    from .carriers import REGISTRY as _CARRIERS
    from .scan import kind_of

    launcher = script is not None and kind_of(script) in _CARRIERS  # run.sh, a Dockerfile, a job spec
    if fix and (script is None or launcher):
        _usage("--fix repairs one script: give SCRIPT (a Python file), with or without --against")
    from .verify import RunError
    from .verify.run import VerifyRequest, run_verify

    if against is None and not launcher:
        mode = mode or DEFAULT_MODE  # SCRIPT alone is the legacy file, migrated in the default mode unless --mode
    chosen = mode_named(mode) if mode is not None else None  # None: detected from the work tree
    request = VerifyRequest(
        script,
        tuple(script_args),
        after_dashdash is not None,  # the arguments after `--` (even none) are every script's; else each launch line's
        launcher,
        chosen,
        env,
        against,
        steps=steps,
        max_steps=max_steps,
        timeout=timeout,
        jobs=jobs,
        list_only=list_only,
        plot=plot_path is not None,
        trace=not no_trace,
        trace_time=trace_time,
        fix=fix,
        diff=show_diff,
    )
    try:
        verified = run_verify(request, _usage)
    except RunError as exc:
        outputs.error(script, exc)
        if exc.broke:  # a failed check, not a run that could not be made
            click.echo(f"{exc}\nVERDICT: FAIL ({exc.fail_reason})")
            sys.exit(EXIT_FINDINGS)
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        click.echo("verify: interrupted; the runs were stopped and their temporary files removed", err=True)
        sys.exit(EXIT_INTERRUPTED)
    _show_verified(verified, request, outputs)


def _verify_script_and_args(
    script: Path | None, script_args: tuple[str, ...], against: str | None, merge: bool, after_dashdash: int | None
) -> tuple[Path | None, tuple[str, ...]]:
    """``verify``'s SCRIPT and its arguments as meant: when every word came after ``--`` (only there
    can SCRIPT start with a dash; ``after_dashdash``: how many words did), there is no SCRIPT and
    they are all arguments (``verify --against REV -- --flag`` passes them to every script of the
    commit). Exits with a usage error (2) when SCRIPT is not a file."""
    given = (script is not None) + len(script_args)
    if script is not None and (
        str(script).startswith("-") or (against is not None and not merge and given == after_dashdash)
    ):
        script_args, script = (str(script), *script_args), None
    if script is not None and not script.is_file():
        _usage(f"SCRIPT {script}: {'a directory, not a file' if script.is_dir() else 'no such file'}")
    return script, script_args


def _check_verify_plan(script: Path | None, against: str | None, list_only: bool, plot_path: Path | None) -> None:
    """``verify``'s usage errors about what to verify (exit 2): ``--list`` without ``--against``,
    neither SCRIPT nor ``--against``, ``--plot`` without matplotlib."""
    if list_only and against is None:
        _usage("--list needs --against GITREV (the scripts a migration changed)")
    if script is None and against is None:
        _usage("verify needs SCRIPT, or --against GITREV to verify every script a migration changed")
    if plot_path is not None:
        from .verify.plot import check_matplotlib

        missing = check_matplotlib()
        if missing:
            _usage(missing)


def _show_verified(verified: Any, request: Any, outputs: _Outputs) -> NoReturn:
    """Print what ``verify`` came to (a :class:`~.verify.run.Verified` of the
    :class:`~.verify.run.VerifyRequest` ``request``) and exit with its code: the list as JSON
    (``--list``), one script's report, or the table."""
    from .verify.run import Shape

    if verified.shape is Shape.LIST:
        from .verify.tree import list_entries

        scripts = list_entries(verified.planned, request.against)
        click.echo(json.dumps({"against": request.against, "sha": verified.sha, "scripts": scripts}, indent=2))
        sys.exit(EXIT_OK)
    if verified.shape is Shape.ONE:
        from .next_steps import after_pass

        job = verified.planned[0]
        after = after_pass(job.script, job.mode, migrated_in_tree=verified.in_tree)
        _finish_one(verified.report, job.notes, outputs, after, to_stderr=request.diff, fixed=verified.fixed)
    _verify_table(verified, request, outputs)


@dataclass(frozen=True)
class _Outputs:
    """Where a verify writes besides stdout: ``--json``, ``--plot``, ``--markdown``."""

    json: Path | None = None
    plot: Path | None = None
    markdown: Path | None = None

    def error(self, script: Path | None, exc: Any) -> None:
        """A verify that could not be made, in ``--json`` and ``--markdown``."""
        from .verify.markdown import error_markdown
        from .verify.report import SCHEMA, error_dict

        error = error_dict(exc)
        if self.json is not None:
            _write_json(self.json, {"schema": SCHEMA, "passed": False, "script": _shown(script), "error": error})
        if self.markdown is not None:
            _append_markdown(self.markdown, error_markdown(_shown(script), error))


def _shown(script: Path | None) -> str | None:
    return str(script) if script is not None else None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    """Write ``--json`` (exit 2 when it cannot be written)."""
    try:
        path.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    except OSError as exc:
        click.echo(f"error: --json {path}: {exc}", err=True)
        sys.exit(EXIT_ERROR)


def _append_markdown(path: Path, text: str) -> None:
    """Append ``--markdown`` (a job summary file collects every step's; exit 2 when it cannot
    be written)."""
    try:
        with open(path, "a", encoding="utf-8") as out:
            out.write(text + "\n")
    except OSError as exc:
        click.echo(f"error: --markdown {path}: {exc}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(f"verify: Markdown report written to {path}", err=True)


def _verify_merge(files: list[Path], outputs: _Outputs) -> NoReturn:
    """``verify --merge FILE.json...``: one table and one exit code from earlier ``--json``."""
    from .verify.tree import merge_documents

    if not files:
        _usage("--merge needs the --json files to merge")
    try:
        table, doc, code = merge_documents(files)
    except ValueError as exc:
        _usage(str(exc))
    click.echo(table, nl=False)
    if outputs.json is not None:
        _write_json(outputs.json, doc)
    if outputs.markdown is not None:
        from .verify.markdown import tree_markdown

        _append_markdown(outputs.markdown, tree_markdown(doc, f"bf16-migrate verify --merge ({len(files)} file(s))"))
    sys.exit(code)


def _verify_table(verified: Any, request: Any, outputs: _Outputs) -> NoReturn:
    """Print each report of a verify of several jobs (a :class:`~bf16_migrate.verify.run.Verified`
    of ``request``, a :class:`~bf16_migrate.verify.run.VerifyRequest`), then one table (nothing
    verified: why); exit with the table's code."""
    from .next_steps import after_pass, format_rows
    from .verify import format_report
    from .verify.summary import EXIT_NOTHING, EXIT_PASS
    from .verify.tree import summary_table, tree_dict

    against, planned, notes, label = request.against, verified.planned, verified.notes, verified.label
    title = (
        f"bf16-migrate verify --against {against} ({verified.sha[:12]})"
        if verified.sha is not None
        else f"bf16-migrate verify {request.script}"
    ) + f": {len(planned)} verify(s), --jobs {request.jobs}"
    if not planned:
        if request.launcher:
            why = f"no launch of {request.script} could be verified (the notes say why)"
        else:
            why = f"no legacy script's migration changed since {against}"
        click.echo(f"{title}\n\nnothing verified: {why}", nl=True)
        for note in notes:
            click.echo(f"Note: {note}")
        click.echo(f"\nVERDICT: NOTHING VERIFIED (exit {EXIT_NOTHING}: no comparison was run)")
        _tree_outputs(outputs, tree_dict([], label, notes), title)
        sys.exit(EXIT_NOTHING)
    outcomes = verified.outcomes
    for outcome in outcomes:
        click.echo(f"==> {outcome.job.rel} ({outcome.job.mode}) <==")
        if outcome.report is not None:
            click.echo(format_report(outcome.report))
        else:
            click.echo(f"error: {outcome.error}\n")
    click.echo(summary_table(outcomes, f"{title}, {verified.seconds:.1f} s", notes), nl=False)
    doc = tree_dict(outcomes, label, notes)
    modes = {job.mode for job in planned}
    if doc["exit_code"] == EXIT_PASS and len(modes) == 1:
        target = request.script if request.launcher else None
        rows = after_pass(target, modes.pop(), migrated_in_tree=against is not None)
        click.echo("\n".join(["", *format_rows(rows)]) if rows else "", nl=bool(rows))
    _tree_outputs(outputs, doc, title)
    sys.exit(doc["exit_code"])


def _tree_outputs(outputs: _Outputs, doc: dict[str, Any], title: str) -> None:
    """``--json`` and ``--markdown`` of a verify of several scripts."""
    if outputs.json is not None:
        _write_json(outputs.json, doc)
        click.echo(f"verify: JSON written to {outputs.json}", err=True)
    if outputs.markdown is not None:
        from .verify.markdown import tree_markdown

        _append_markdown(outputs.markdown, tree_markdown(doc, title))


def _finish_one(
    report: Any,
    notes: list[str],
    outputs: _Outputs,
    after: list[tuple[str, str]] | None = None,
    to_stderr: bool = False,
    fixed: Any = None,
) -> NoReturn:
    """Print one report (with the plan's notes; on stderr with ``to_stderr``, when stdout holds a
    patch) and, when it passed, ``after``'s ``Next:`` rows (:func:`bf16_migrate.next_steps.after_pass`);
    write ``--json`` (with ``--fix``'s rounds under ``fix``), ``--markdown`` and ``--plot``, exit
    with its verdict."""
    from .next_steps import format_rows
    from .verify import format_report
    from .verify.report import report_dict

    text = format_report(report)
    extra = [n for n in notes if not n.startswith("selected: ")]
    if extra:
        text = text.replace("\nVERDICT:", "\n" + "".join(f"Note: {n}\n" for n in extra) + "\nVERDICT:", 1)
    from .verify.summary import EXIT_CODES, EXIT_PASS

    if EXIT_CODES[report.verdict.status] == EXIT_PASS and after:
        text += "\n" + "\n".join(format_rows(after)) + "\n"
    click.echo(text, err=to_stderr)
    doc = report_dict(report)
    if extra:
        doc["notes"] = [*doc.get("notes", []), *extra]
    if fixed is not None:
        doc["fix"] = {
            "stopped": fixed.stopped,
            "first": [f.to_dict() for f in fixed.first],
            "rounds": [
                {
                    "applied": [site.to_dict() for site in r.applied],
                    "left": [{"site": site.to_dict(), "why": why} for site, why in r.left],
                    "verdict": r.verdict,
                }
                for r in fixed.rounds
            ],
        }
    if outputs.json is not None:
        _write_json(outputs.json, doc)
        click.echo(f"verify: JSON written to {outputs.json}", err=True)
    if outputs.markdown is not None:
        from .verify.markdown import report_markdown

        _append_markdown(outputs.markdown, report_markdown(doc))
    plot_path = outputs.plot
    if plot_path is not None:
        from .verify.plot import plot_report

        try:
            plot_report(report, plot_path)
        except OSError as exc:
            click.echo(f"error: --plot {plot_path}: {exc}", err=True)
            sys.exit(EXIT_ERROR)
        click.echo(f"verify: loss curves written to {plot_path}", err=True)
    sys.exit(EXIT_CODES[report.verdict.status])


if __name__ == "__main__":  # pragma: no cover
    main()
