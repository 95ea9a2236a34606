"""The tree's own modules: what a migrated script imports from the tree gets the switch's meaning.

Under the legacy switch every floating tensor on the device was bf16, in the script and in every
module it imports: an optimizer class in a sibling file (``from adamw_fp32 import AdamWFP32``)
ran under the switch too, and may even read it (``os.environ.get("XLA_DOWNCAST_BF16") == "1"``
to keep its state in FP32, with the ``.double()`` idiom). Once the script is migrated the
variable is gone, so such a module silently changes precision unless it is migrated with the
script: aws-neuron-samples' BERT migration (commit b14af0b) made the sibling optimizer's
gradient ``.float()`` for exactly this reason.

After the per-file migration, every Python script that was migrated unconditionally (its
``legacy_env`` is known) has its imports followed one level into the tree
(:func:`~bf16_migrate.carriers.resolve.tree_imports`), and each module found is migrated with
``imported_under`` set to the script's settings (:func:`~bf16_migrate.python.migrate_source`).
A module imported by scripts under different settings is left as its own run made it and
reported (BFM014).

The codemod of a script also needs to know what it calls in those modules: a function that
builds its optimizer (``build_optimizer(model, cfg)`` in ``optim.py``), an optimizer class
defined there. :class:`TreeFactsReader` reads them (:func:`bf16_migrate.python.module_facts_of`)
for the codemod (``migrate_source(..., tree=...)``); what the migrated script then asks of such
a factory (FP32 master weights in gpu-compatible mode: ``MigrationResult.factory_changes``) is
carried out here, in the same change, whatever the setting the script ran under (BFM016).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from .carriers.link import FileResult
from .carriers.resolve import named_tree_imports, tree_imports
from .diagnostics import report
from .python import FactoryChange, MigrationResult, ParseError, TreeFacts, migrate_source, module_facts_of
from .python.tree_facts import TreeModule
from .rules import Mode


class TreeFactsReader:
    """The :class:`~bf16_migrate.python.TreeFacts` of a script: what the modules of its tree it
    imports offer its codemod (optimizer factories, optimizer classes). ``read_python(path) ->
    (text, encoding)`` reads a module; ``root_of(path)`` is the tree a path belongs to. A
    module that cannot be read or parsed offers nothing (its own run reports it). Each module
    is read once per name it is imported under."""

    def __init__(
        self,
        read_python: Callable[[Path], tuple[str, str]],
        root_of: Callable[[Path], Path],
        left_out: Callable[[Path], str | None] | None = None,
    ) -> None:
        self.read_python = read_python
        self.root_of = root_of
        # a module outside the paths given, or excluded, is never read: it offers the script nothing
        self.left_out = left_out or (lambda path: None)
        self._modules: dict[tuple[Path, str], TreeModule | None] = {}

    def __call__(self, path: Path, text: str) -> TreeFacts | None:
        """The facts for the script ``path`` whose text is ``text``; None when its imports
        reach no module of the tree that builds an optimizer or defines an optimizer class."""
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        modules: dict[tuple[Path, str], TreeModule] = {}
        for name, file in named_tree_imports(path, tree, self.root_of(path)):
            key = (file.resolve(), name)
            if key[0] == path.resolve() or key in modules or self.left_out(file) is not None:
                continue
            if key not in self._modules:
                self._modules[key] = self._read(file, name, path)
            found = self._modules[key]
            if found is not None and (found.factories or found.optimizer_classes):
                modules[key] = found
        return TreeFacts(tuple(modules.values())) if modules else None

    def _read(self, file: Path, name: str, script: Path) -> TreeModule | None:
        try:
            text, _ = self.read_python(file)
            return module_facts_of(text, str(_as_given(file.resolve(), [(script, {})])), name)
        except Exception:  # ReadError, ParseError: the module's own run reports it
            return None


def migrate_imported_modules(
    results: list[FileResult],
    read_python: Callable[[Path], tuple[str, str]],
    root_of: Callable[[Path], Path],
    mode: Mode,
    fp32_optimizer_state: bool,
    errors: list[str],
    migrate: Callable[..., MigrationResult] = migrate_source,
    outside: Callable[[Path], Path | None] | None = None,
    excluded: Callable[[Path], str | None] | None = None,
) -> list[FileResult]:
    """``results`` with the modules imported by migrated scripts migrated as well.

    ``read_python(path) -> (text, encoding)`` reads a module that was not among the files
    scanned (raising ``OSError``/``ReadError``); ``root_of(path)`` is the tree a path belongs
    to. A module that cannot be read or parsed is recorded in ``errors`` (one line) and left as
    it is. The returned list holds one result per file: a module's result replaces the one its
    own run made. ``outside(path)``: the real path of a module that lies outside the paths
    given (a symlink leads out of the tree), None for one inside
    (:meth:`bf16_migrate.bounds.Bounds.outside`); such a module is never read, and is reported
    (BFM093). ``excluded(path)``: why a module is excluded (an exclude glob, ``.gitignore``), or
    None; such a module is not rewritten, and is reported (BFM093)."""
    by_path = {r.path.resolve(): r for r in results}
    requests: dict[Path, list[FactoryChange]] = {}
    for result in results:
        for change in result.factory_changes:
            requests.setdefault(Path(change.path).resolve(), []).append(change)
    wanted, escaped = _imports_of(results, root_of, outside, excluded)
    out = list(results) + _escaped_results(escaped)
    left_keys = {module.resolve() for module in escaped}
    for key in sorted((set(wanted) | set(requests)) - left_keys):
        importers = wanted.get(key, [])
        asked = tuple(requests.get(key, ()))
        given = _as_given(key, importers) if importers else Path(asked[0].path)
        module_path = next((r.path for r in results if r.path.resolve() == key), None) or given
        own = by_path.get(key)
        if own is not None and own.legacy_env:
            # a script of its own, migrated as such: only what its importers ask of its factories
            if asked:
                out = _with_factory_changes(out, own, asked, mode, errors, migrate)
            continue
        settings = {tuple(sorted(env.items())) for _, env in importers}
        env = dict(importers[0][1]) if len(settings) == 1 else None
        if len(settings) > 1:
            names = ", ".join(f"{p} ({', '.join(f'{k}={v}' for k, v in env.items())})" for p, env in importers)
            diag = report("BFM014", str(module_path), 1, 1, False, "different_settings", settings=names)
            if own is not None:
                own.diagnostics.append(diag)
            else:
                out.append(FileResult(module_path, "", "", "utf-8", [diag]))
            if not asked:
                continue
        if own is not None:
            text, encoding = own.old, own.encoding
        else:
            try:
                text, encoding = read_python(module_path)
            except Exception as exc:  # a module we cannot read is reported, never guessed at
                errors.append(f"{module_path}: cannot be read ({exc})")
                continue
        try:
            migrated = migrate(
                text,
                mode,
                str(module_path),
                fp32_optimizer_state=fp32_optimizer_state,
                imported_under=env,
                factory_changes=asked or None,
            )
        except ParseError as exc:
            errors.append(str(exc))
            continue
        if migrated.code == text and not migrated.diagnostics and own is None:
            continue
        diags = list(migrated.diagnostics)
        if migrated.code != text and env:
            settings_text = ", ".join(f"{k}={v}" for k, v in env.items())
            diags.insert(
                0, report("BFM014", str(module_path), 1, 1, True, importer=importers[0][0], settings=settings_text)
            )
        new = FileResult(module_path, text, migrated.code, encoding, diags)
        out = [new if r.path.resolve() == key else r for r in out] if own is not None else out + [new]
    return out


def _with_factory_changes(
    out: list[FileResult],
    own: FileResult,
    asked: tuple[FactoryChange, ...],
    mode: Mode,
    errors: list[str],
    migrate: Callable[..., MigrationResult],
) -> list[FileResult]:
    """``out`` with the script ``own`` (a module of the tree that is also a migrated script)
    given, on top of its own migration, what other scripts ask of its optimizer factories."""
    try:
        again = migrate(own.new, mode, str(own.path), factory_changes=asked)
    except ParseError as exc:
        errors.append(str(exc))
        return out
    new = FileResult(
        own.path,
        own.old,
        again.code,
        own.encoding,
        own.diagnostics + again.outcome.factory_changes_made,
        own.legacy_env,
        own.helpers,
        own.factory_changes,
    )
    return [new if r is own else r for r in out]


def _as_given(key: Path, importers: list[tuple[Path, dict[str, str]]]) -> Path:
    """``key`` (a resolved path) spelled relative to the importer's directory as given."""
    importer = importers[0][0]
    try:
        return importer.parent / key.relative_to(importer.parent.resolve())
    except ValueError:
        return key


_Env = dict[str, str]


def _imports_of(
    results: list[FileResult],
    root_of: Callable[[Path], Path],
    outside: Callable[[Path], Path | None] | None,
    excluded: Callable[[Path], str | None] | None,
) -> tuple[dict[Path, list[tuple[Path, _Env]]], dict[Path, tuple[Path | str, Path, _Env]]]:
    """The tree modules the legacy scripts of ``results`` import: ``(wanted, escaped)``.
    ``wanted``: resolved module path to its importers and their settings; ``escaped``: a module
    outside the paths given (its real path) or excluded (why), with the first importer."""
    wanted: dict[Path, list[tuple[Path, _Env]]] = {}
    escaped: dict[Path, tuple[Path | str, Path, _Env]] = {}
    for result in results:
        if not result.legacy_env or not str(result.path).endswith(".py"):
            continue
        try:
            tree = ast.parse(result.old)
        except (SyntaxError, ValueError):
            continue
        for module in tree_imports(result.path, tree, root_of(result.path)):
            left: Path | str | None = outside(module) if outside is not None else None
            if left is None and excluded is not None:
                left = excluded(module)
            if left is not None:
                escaped.setdefault(module, (left, result.path, result.legacy_env))
                continue
            key = module.resolve()
            if key != result.path.resolve():
                wanted.setdefault(key, []).append((result.path, result.legacy_env))
    return wanted, escaped


def _escaped_results(escaped: dict[Path, tuple[Path | str, Path, _Env]]) -> list[FileResult]:
    """One BFM093 finding per module left out: outside the paths given, or excluded."""
    out = []
    for module, (left, importer, env) in sorted(escaped.items()):
        under = ", ".join(f"{k}={v}" for k, v in env.items())
        if isinstance(left, Path):
            diag = report(
                "BFM093", str(module), 1, 1, False, module=module, importer=importer, settings=under, real=left
            )
        else:
            diag = report(
                "BFM093",
                str(module),
                1,
                1,
                False,
                "excluded",
                module=module,
                importer=importer,
                settings=under,
                why=left,
            )
        out.append(FileResult(module, "", "", "utf-8", [diag]))
    return out
