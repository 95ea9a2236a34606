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
    for result in results:
        if not result.legacy_env or not str(result.path).endswith(".py"):
            continue
        try:
            tree = ast.parse(result.old)
        except (SyntaxError, ValueError):
            continue
        for module in tree_imports(result.path, tree, root_of(result.path)):
            key = module.resolve()
            if key != result.path.resolve():
                wanted.setdefault(key, []).append((result.path, result.legacy_env))
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
                text, mode, str(module_path), fp32_optimizer_state=fp32_optimizer_state, imported_under=env
            )
        except ParseError as exc:
            errors.append(str(exc))
            continue
        if migrated.code == text and not migrated.diagnostics and own is None:
            continue
        importer = importers[0][0]
        diags = list(migrated.diagnostics)
        if migrated.code != text:
            diags.insert(
                0,
                report(
                    "BFM014",
                    str(module_path),
                    1,
                    1,
                    True,
                    importer=importer,
                    settings=", ".join(f"{k}={v}" for k, v in env.items()),
                ),
            )
        new = FileResult(module_path, text, migrated.code, encoding, diags)
        out = [new if r.path.resolve() == key else r for r in out] if own is not None else out + [new]
    return out


def _as_given(key: Path, importers: list[tuple[Path, dict[str, str]]]) -> Path:
    """``key`` (a resolved path) spelled relative to the importer's directory as given."""
    importer = importers[0][0]
    try:
        return importer.parent / key.relative_to(importer.parent.resolve())
    except ValueError:
        return key
