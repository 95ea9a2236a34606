"""A module that sets the legacy switch for the scripts that import it (``env_setup.py``).

**What.** A project keeps its runtime settings in a module its entry points import first
(``import env_setup`` at the top of ``train.py``, whose module level runs
``os.environ.setdefault("XLA_USE_BF16", "1")``): the switch is in force for every script that
imports it, while the module itself builds no model. Migrated alone, the module has nothing to
change (BFM010: no optimizer here) and the scripts name no legacy variable: the switch stayed,
with an instruction pointing at a file without a model (found by two hunts of our own).

**Fix.** The scripts among the paths given that import the module are migrated as scripts their
launcher starts with its settings (``launched_with``, the module's
:attr:`~bf16_migrate.python.outcome.Outcome.sets_on_import`); when every one of them takes the
change, the module is migrated as a module of the tree they import
(:mod:`bf16_migrate.tree_modules`), where its writes go as a launcher's setting goes (stochastic:
``NEURON_RT_STOCHASTIC_ROUNDING_EN=1`` in their place; :meth:`.python.precision.Planner._set_for_importers`).
When one of them cannot be migrated, nothing changes: the module keeps its switch and its finding
names that script (BFM010 ``importers``), since removing the switch would leave that script in
FP32 (the link planner's rule for launchers, :mod:`bf16_migrate.carriers.link`).

**Entries.** The same settings made by a thin entry script that then hands its training to a module
(``main.py``: ``os.environ["XLA_USE_BF16"] = "1"``, ``import train``, ``train.main()``;
:func:`.carriers.delegate.delegated_module`), imported by nothing: the module it hands over to is
migrated as launched with the entry's settings, and only when it takes the change do the entry's
writes go (BFM001 ``handed``); else they stay, naming the module (BFM010 ``hands``).

**Process launchers.** A Python launcher that starts a script of the tree in a process of its own with
the switch in the environment it hands it (``subprocess.run([sys.executable, "train.py"],
env={**os.environ, "XLA_USE_BF16": "1"})``, :mod:`.python.launch_env`): the script is migrated under
those settings (:func:`migrate_launched`), and only when it takes the change do the launcher's
entries go, as a shell launcher's do (BFM001 ``carrier``); else they stay, naming the script and why
(BFM042 ``launches_kept``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from pathlib import Path

from .carriers.delegate import delegated_module
from .carriers.model import FileResult
from .carriers.resolve import named_tree_imports_of, resolve_script
from .diagnostics import report
from .python.outcome import LaunchedScript

__all__ = ["calls_a_setter", "migrate_importers", "migrate_launched"]

PythonResult = Callable[[Path, str, str, dict[str, str]], FileResult]
"""Migrates one script (path, text, encoding) launched with settings (the link planner's)."""


def migrate_importers(
    results: list[FileResult],
    python_files: Callable[[], Iterable[Path]],
    read_python: Callable[[Path], tuple[str, str]],
    root_of: Callable[[Path], Path],
    migrate: PythonResult,
    errors: list[str],
    migrate_entry: PythonResult | None = None,
) -> tuple[list[FileResult], frozenset[Path]]:
    """``results`` with the scripts that import an env module (a result with ``sets_on_import``)
    migrated under its settings, each replacing its own result (or added); unchanged when there is
    no such module. ``python_files()``: the Python files among the paths given (walked only when
    there is such a module; read only when their bytes name it). ``read_python(path) -> (text,
    encoding)`` raises on a file that cannot be read (recorded in ``errors``, one line, and the module
    then left as it is: never guessed at). Also returned: the resolved paths of the env modules whose
    every importer took the change, whose writes may go (``migrate_imported_modules(env_modules=)``).
    An importer found outside the paths given (in the module's own directory) blocks: it would
    lose the switch with no change of its own.

    A module no file imports that hands its training to one module of the tree (an entry,
    :func:`~.carriers.delegate.delegated_module`) has that module migrated under its settings with
    ``migrate``, then itself with ``migrate_entry(path, text, encoding, settings)`` (its writes go as
    an env module's whose importers took the change); None leaves entries as they are."""
    modules = [r for r in results if r.sets_on_import and r.new == r.old]
    if not modules:
        return results, frozenset()
    files = list(python_files())
    given = {path.resolve() for path in files}
    out = list(results)
    cleared: set[Path] = set()
    for module in modules:
        nearby = [p for p in module.path.parent.rglob("*.py") if p.resolve() not in given]
        importers = _importers(module.path, [*files, *nearby], read_python, root_of, errors, module.sets_on_call)
        if importers == [] and migrate_entry is not None and not module.sets_on_call:
            out = _hand_over(module, out, read_python, root_of, migrate, migrate_entry, errors)
        if not importers:
            continue
        outside = next((path for path, _, _ in importers if path.resolve() not in given), None)
        if outside is not None:
            _report_blocked(module, outside, "it is not among the paths given: run on their directory")
            continue
        migrated: list[FileResult] = []
        blocked: FileResult | None = None
        for path, text, encoding in importers:
            done = next((r for r in out if r.path.resolve() == path.resolve()), None)
            if done is not None and all(name in done.legacy_env for name in module.sets_on_import):
                continue  # migrated under these settings already (its own switch, a launcher's)
            result = migrate(path, text, encoding, dict(module.sets_on_import))
            if not all(name in result.legacy_env for name in module.sets_on_import):
                blocked = result
                break
            migrated.append(result)
        if blocked is not None:
            why = next((d for d in blocked.diagnostics if not d.fixed), None)
            reason = f"{why.path}:{why.line}: {why.code}" if why is not None else "nothing to change found"
            _report_blocked(module, blocked.path, reason)
            continue
        cleared.add(module.path.resolve())
        for result in migrated:
            key = result.path.resolve()
            out = [r for r in out if r.path.resolve() != key] + [result]
    return out, frozenset(cleared)


def _hand_over(
    entry: FileResult,
    out: list[FileResult],
    read_python: Callable[[Path], tuple[str, str]],
    root_of: Callable[[Path], Path],
    migrate: PythonResult,
    migrate_entry: PythonResult,
    errors: list[str],
) -> list[FileResult]:
    """``out`` with the module the entry script ``entry`` hands its training to migrated under the
    entry's settings and, when it took the change, the entry's own result migrated with
    ``migrate_entry``; ``out`` unchanged when ``entry`` hands over to no one module, and its BFM010
    turned into ``hands`` (naming the module and why) when the module did not take the change."""
    handed = delegated_module(entry.path, entry.old, root_of(entry.path))
    if handed is None:
        return out
    key = handed.resolve()
    done = next((r for r in out if r.path.resolve() == key), None)
    if done is None or not all(name in done.legacy_env for name in entry.sets_on_import):
        try:
            text, encoding = (done.old, done.encoding) if done is not None else read_python(handed)
        except Exception as exc:  # reported, never guessed at
            errors.append(f"{handed}: cannot be read ({exc})")
            return out
        done = migrate(handed, text, encoding, dict(entry.sets_on_import))
        if not all(name in done.legacy_env for name in entry.sets_on_import):
            why = next((d for d in done.diagnostics if not d.fixed), None)
            reason = f"{why.path}:{why.line}: {why.code}" if why is not None else "nothing to change found"
            _report_blocked(entry, handed, reason, "hands")
            return out
    own = migrate_entry(entry.path, entry.old, entry.encoding, dict(entry.sets_on_import))
    keys = {key, entry.path.resolve()}
    return [r for r in out if r.path.resolve() not in keys] + [done, own]


def _importers(
    module: Path,
    files: list[Path],
    read_python: Callable[[Path], tuple[str, str]],
    root_of: Callable[[Path], Path],
    errors: list[str],
    setters: tuple[str, ...] = (),
) -> list[tuple[Path, str, str]] | None:
    """The files of ``files`` that import ``module`` (its name in their bytes, then their import
    statements resolved in the tree, each to the first file of Python's search, the script's own
    directory first: :func:`.carriers.resolve.named_tree_imports_of`) and, where the
    module's settings are made by functions (``setters``), call one of them (:func:`calls_a_setter`),
    with their text and encoding; None when one that may import it cannot be read."""
    key = module.resolve()
    found: list[tuple[Path, str, str]] = []
    for path in files:
        if path.resolve() == key:
            continue
        try:
            text, encoding = read_python(path)
        except Exception as exc:  # reported, never guessed at
            errors.append(f"{path}: cannot be read ({exc})")
            return None
        if module.stem not in text:
            continue
        loaded: dict[str, Path] = {}
        for name, target in named_tree_imports_of(path, text, root_of(path)):
            loaded.setdefault(name, target)  # the first in Python's search order: the one it loads
        if any(target.resolve() == key for target in loaded.values()):
            if not setters or calls_a_setter(text, setters):
                found.append((path, text, encoding))
    return found


def calls_a_setter(source: str, setters: Iterable[str]) -> bool:
    """Whether Python ``source`` calls one of the functions named ``setters`` (``setup_env()`` or
    ``common.setup_env()``; by name, as the module that defines them is the one it imports). A file
    Python cannot parse counts as calling (it is then reported where it is migrated, not skipped).
    Python's own parser: the call may sit anywhere (``main()``'s first line, under ``__main__``)."""
    names = set(setters)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in names:
                return True
    return False


def _report_blocked(module: FileResult, blocked: Path, reason: str, variant: str = "importers") -> None:
    """BFM010 ``variant`` on each write of ``module``: the script ``blocked`` imports it (``importers``),
    or is the module the entry ``module`` hands its training to (``hands``), and cannot be migrated
    (``reason``), so the switch stays for all of them."""
    for diag in list(module.diagnostics):
        if diag.code == "BFM010":
            module.diagnostics.append(
                report(
                    "BFM010",
                    diag.path,
                    diag.line,
                    diag.col,
                    False,
                    variant,
                    variable=", ".join(module.sets_on_import),
                    script=str(blocked),
                    reason=reason,
                )
            )
            module.diagnostics.remove(diag)


LauncherResult = Callable[[Path, str, str, dict[str, str]], FileResult]
"""Migrates a launcher (path, text, encoding) whose launched scripts (as written -> their path) took the change."""


def migrate_launched(
    results: list[FileResult],
    read_python: Callable[[Path], tuple[str, str]],
    root_of: Callable[[Path], Path],
    left_out: Callable[[Path], str | None],
    migrate: PythonResult,
    migrate_launcher: LauncherResult,
    errors: list[str],
) -> list[FileResult]:
    """``results`` with the scripts each Python launcher starts with legacy settings in their
    environment (a result with ``launches``) migrated under them (``migrate``, as
    :func:`_hand_over` migrates the module an entry hands over to), and the launcher migrated again
    with ``migrate_launcher`` given those that took the change, whose settings then go. A launcher
    the run changes otherwise (it is a training script of its own) is left to that change; a script
    that cannot be found or read, or does not take the change, keeps its settings (BFM042
    ``launches_kept``, naming it and why)."""
    out = list(results)
    for launcher in [r for r in results if r.launches]:
        if launcher.new != launcher.old or launcher.legacy_env:
            continue  # a script of its own too: its settings stay with the findings it has
        took: dict[str, str] = {}
        scripts: list[FileResult] = []
        for launched in launcher.launches:
            done, why = _launched_result(launcher, launched, out, read_python, root_of, left_out, migrate, errors)
            if done is None:
                _report_kept(launcher, launched, why or "it did not take the change")
                continue
            took[launched.script] = str(done.path)
            scripts.append(done)
        if not took:
            continue
        own = migrate_launcher(launcher.path, launcher.old, launcher.encoding, took)
        own.with_scripts = tuple(
            r.path for r in scripts
        )  # held back with them (a noqa comment), as a shell launcher is
        keys = {r.path.resolve() for r in [*scripts, launcher]}
        out = [r for r in out if r.path.resolve() not in keys] + [*scripts, own]
    return out


def _launched_result(
    launcher: FileResult,
    launched: LaunchedScript,
    out: list[FileResult],
    read_python: Callable[[Path], tuple[str, str]],
    root_of: Callable[[Path], Path],
    left_out: Callable[[Path], str | None],
    migrate: PythonResult,
    errors: list[str],
) -> tuple[FileResult | None, str | None]:
    """The script ``launched`` found in the tree and migrated under its settings (its result in
    ``out`` when it took them already), or None and why not."""
    if launched.beside:
        path: Path | None = launcher.path.parent / launched.script
        why = None if path is not None and path.is_file() else f"{path} is not in the tree"
    else:
        path, why = resolve_script(launched.script, launcher.path, root_of(launcher.path))
    if path is None or why is not None:
        return None, why
    excluded = left_out(path)
    if excluded is not None:
        return None, f"{path} is left out of the run ({excluded})"
    settings = dict(launched.settings)
    done = next((r for r in out if r.path.resolve() == path.resolve()), None)
    if done is not None and all(name in done.legacy_env for name in settings):
        return done, None  # migrated under these settings already (a shell launcher's, its own)
    if done is not None and (done.new != done.old or done.legacy_env):
        return None, f"{path} is migrated under other settings in this run"
    try:
        text, encoding = (done.old, done.encoding) if done is not None else read_python(path)
    except Exception as exc:  # reported, never guessed at
        errors.append(f"{path}: cannot be read ({exc})")
        return None, f"{path} cannot be read"
    result = migrate(path, text, encoding, settings)
    if all(name in result.legacy_env for name in settings) and not any(d.code == "BFM034" for d in result.diagnostics):
        return result, None
    why_not = next((d for d in result.diagnostics if not d.fixed), None)
    return None, f"{why_not.path}:{why_not.line}: {why_not.code}" if why_not is not None else "nothing to change found"


def _report_kept(launcher: FileResult, launched: LaunchedScript, reason: str) -> None:
    """BFM042 ``launches_kept`` in place of the ``launches`` finding on each entry of ``launched``: the
    script cannot take the change (``reason``), so its settings stay."""
    settings = dict(launched.settings)
    for diag in list(launcher.diagnostics):
        if diag.code == "BFM042" and diag.line in launched.entries:
            variable = next((name for name in settings if name in diag.message), next(iter(settings)))
            launcher.diagnostics[launcher.diagnostics.index(diag)] = report(
                "BFM042",
                diag.path,
                diag.line,
                diag.col,
                False,
                "launches_kept",
                variable=variable,
                line=launched.line,
                script=launched.script,
                reason=reason,
            )
