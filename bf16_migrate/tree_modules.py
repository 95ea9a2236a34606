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
reported (BFM014). A script that took the change under a condition (``if args.bf16:
os.environ[...] = "1"``: ``switched`` but no ``legacy_env``) cannot say what the switch meant for a
module's reads or ``.double()``, but the tensors its model and optimizer classes make still follow
the dtype they meet once the switch is gone: such a module gets that audit alone (``audited_under``,
:mod:`bf16_migrate.python.model_code`), so a conditional migration does not leave the model
computing in f32 in a sibling file either.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from .carriers.link import FileResult
from .carriers.resolve import tree_imports
from .diagnostics import report
from .python import MigrationResult, ParseError, migrate_source
from .rules import Mode


def migrate_imported_modules(
    results: list[FileResult],
    read_python: Callable[[Path], tuple[str, str]],
    root_of: Callable[[Path], Path],
    mode: Mode,
    fp32_optimizer_state: bool,
    errors: list[str],
    migrate: Callable[..., MigrationResult] = migrate_source,
) -> list[FileResult]:
    """``results`` with the modules imported by migrated scripts migrated as well.

    ``read_python(path) -> (text, encoding)`` reads a module that was not among the files
    scanned (raising ``OSError``/``ReadError``); ``root_of(path)`` is the tree a path belongs
    to. A module that cannot be read or parsed is recorded in ``errors`` (one line) and left as
    it is. The returned list holds one result per file: a module's result replaces the one its
    own run made."""
    by_path = {r.path.resolve(): r for r in results}
    wanted: dict[Path, list[tuple[Path, dict[str, str]]]] = {}
    audited: dict[Path, list[tuple[Path, dict[str, str]]]] = {}
    for result in results:
        env = result.legacy_env or result.switched
        if not env or not str(result.path).endswith(".py"):
            continue
        try:
            tree = ast.parse(result.old)
        except (SyntaxError, ValueError):
            continue
        for module in tree_imports(result.path, tree, root_of(result.path)):
            key = module.resolve()
            if key != result.path.resolve():
                (wanted if result.legacy_env else audited).setdefault(key, []).append((result.path, env))
    out = list(results)
    for key, importers in sorted(wanted.items()):
        settings = {tuple(sorted(env.items())) for _, env in importers}
        module_path = next((r.path for r in results if r.path.resolve() == key), None) or _as_given(key, importers)
        own = by_path.get(key)
        if own is not None and own.legacy_env:
            continue  # a script of its own, migrated as such
        if len(settings) > 1:
            names = ", ".join(f"{p} ({', '.join(f'{k}={v}' for k, v in env.items())})" for p, env in importers)
            diag = report("BFM014", str(module_path), 1, 1, False, "different_settings", settings=names)
            if own is not None:
                own.diagnostics.append(diag)
            else:
                out.append(FileResult(module_path, "", "", "utf-8", [diag]))
            continue
        env = dict(importers[0][1])
        new = _migrate_module(
            module_path,
            own,
            importers[0][0],
            env,
            None,
            read_python,
            errors,
            migrate,
            mode,
            fp32_optimizer_state=fp32_optimizer_state,
            imported_under=env,
        )
        if new is not None:
            out = [new if r.path.resolve() == key else r for r in out] if own is not None else out + [new]
    for key, importers in sorted(audited.items()):
        own = by_path.get(key)
        if key in wanted or (own is not None and (own.legacy_env or own.switched)):
            continue  # migrated in full (the audit included), or a script of its own
        module_path = own.path if own is not None else _as_given(key, importers)
        env = {k: v for _, settings in importers for k, v in settings.items()}
        new = _migrate_module(
            module_path, own, importers[0][0], env, "audited", read_python, errors, migrate, mode, audited_under=env
        )
        if new is not None:
            out = [new if r.path.resolve() == key else r for r in out] if own is not None else out + [new]
    return out


def _migrate_module(
    module_path: Path,
    own: FileResult | None,
    importer: Path,
    env: dict[str, str],
    variant: str | None,
    read_python: Callable[[Path], tuple[str, str]],
    errors: list[str],
    migrate: Callable[..., MigrationResult],
    mode: Mode,
    **options: object,
) -> FileResult | None:
    """The module at ``module_path`` migrated for its importer (``options``: ``imported_under``,
    or ``audited_under`` with the ``"audited"`` wording of BFM014), or None when it cannot be
    read or parsed (in ``errors``) or nothing about it is to be said."""
    if own is not None:
        text, encoding = own.old, own.encoding
    else:
        try:
            text, encoding = read_python(module_path)
        except Exception as exc:  # a module we cannot read is reported, never guessed at
            errors.append(f"{module_path}: cannot be read ({exc})")
            return None
    try:
        migrated = migrate(text, mode, str(module_path), **options)
    except ParseError as exc:
        errors.append(str(exc))
        return None
    if migrated.code == text and not migrated.diagnostics and own is None:
        return None
    diags = list(migrated.diagnostics)
    if migrated.code != text:
        settings = ", ".join(f"{k}={v}" for k, v in env.items())
        diags.insert(0, report("BFM014", str(module_path), 1, 1, True, variant, importer=importer, settings=settings))
    return FileResult(module_path, text, migrated.code, encoding, diags)


def _as_given(key: Path, importers: list[tuple[Path, dict[str, str]]]) -> Path:
    """``key`` (a resolved path) spelled relative to the importer's directory as given."""
    importer = importers[0][0]
    try:
        return importer.parent / key.relative_to(importer.parent.resolve())
    except ValueError:
        return key
