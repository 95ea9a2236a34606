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

A script that took the change under a condition (``if args.bf16: os.environ[...] = "1"``:
``switched`` but no ``legacy_env``) cannot say what the switch meant for a module's reads or
``.double()``, but the tensors its model and optimizer classes make still follow the dtype they
meet once the switch is gone: such a module gets that audit alone (``audited_under``,
:mod:`bf16_migrate.python.model_code`), so a conditional migration does not leave the model
computing in f32 in a sibling file either.

The loss a migrated script's step applies may live in such a module too (``from losses import
nt_xent``, ``criterion = losses.NTXent(0.2)``): the script names what it imports there
(``MigrationResult.loss_code``), and the module's audit reads those functions and classes as the loss
code of a step (``migrate_source(..., loss_code=...)``, :mod:`bf16_migrate.python.loss_reach`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from .carriers import CarrierError, analyze
from .carriers.link import FileResult
from .carriers.resolve import may_import_tree, named_tree_imports, named_tree_imports_of, unreadable_tree_imports
from .diagnostics import report
from .python import (
    FactoryChange,
    MigrationResult,
    ModelHandoff,
    ParseError,
    TreeFacts,
    migrate_source,
    module_facts_of,
)
from .python.tree_types import TreeModule
from .rules import Mode, load_rules


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
        self._facts: dict[tuple[Path, str], TreeFacts | None] = {}

    def __call__(self, path: Path, text: str) -> TreeFacts | None:
        """The facts for the script ``path`` whose text is ``text``; None when its imports
        reach no module of the tree that builds an optimizer or defines an optimizer class, nor
        one that is there but cannot be read (:func:`~.carriers.resolve.unreadable_tree_imports`).
        Asked again for the same script and text (a launched script's trial and its result),
        the answer of the first time."""
        key = (path, text)
        if key not in self._facts:
            self._facts[key] = self._facts_of(path, text)
        return self._facts[key]

    def _facts_of(self, path: Path, text: str) -> TreeFacts | None:
        root = self.root_of(path)
        if not may_import_tree(path, text, root):
            return None  # not parsed: no import of it can name a module of the tree
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            return None
        # unread wherever it lies (excluded, or a symlink out of the paths): what its code does cannot be told
        unread = tuple((name, str(file), why) for name, file, why in unreadable_tree_imports(path, tree, root))
        modules: dict[tuple[Path, str], TreeModule] = {}
        for name, file in named_tree_imports(path, tree, root):
            key = (file.resolve(), name)
            if key[0] == path.resolve() or key in modules or self.left_out(file) is not None:
                continue
            if key not in self._modules:
                self._modules[key] = self._read(file, name, path)
            found = self._modules[key]
            if found is not None and (found.factories or found.optimizer_classes or found.float64_state):
                modules[key] = found
        return TreeFacts(tuple(modules.values()), unread) if modules or unread else None

    def _read(self, file: Path, name: str, script: Path) -> TreeModule | None:
        try:
            text, _ = self.read_python(file)
            if not may_offer_optimizers(text) and not may_hold_float64_state(text):
                return None  # not parsed: nothing in it can build an optimizer, be one, or register float64 state
            return module_facts_of(text, str(_as_given(file.resolve(), [(script, {})])), name)
        except Exception:  # ReadError, ParseError: the module's own run reports it
            return None


def may_offer_optimizers(text: str) -> bool:
    """False when the module ``text`` can hold no optimizer factory and no optimizer class
    (:func:`bf16_migrate.python.tree_facts.module_facts`), judged by its words alone: a
    factory builds an optimizer over ``X.parameters()`` or calls an optimizer class, and an
    optimizer class subclasses ``torch.optim``'s; the codemod knows such a class by its
    qualified name (``rules/torch_api.toml``: ``stock_optimizers``, ``optimizer_subclasses``,
    ``zero_redundancy_optimizers``), which the module must spell: its last part, or ``optim``
    of ``torch.optim``. Any of these words, in any case, and the module is parsed."""
    lowered = text.lower()
    return any(word in lowered for word in _optimizer_words())


def may_hold_float64_state(text: str) -> bool:
    """False when no class of the module ``text`` can register a buffer or parameter from float64 data
    (:func:`bf16_migrate.python.model_reach.float64_state_calls`), judged by its words alone: such a
    registration is a ``register_buffer``, a ``Parameter`` or an embedding's ``from_pretrained``."""
    return any(word in text for word in ("register_buffer", "Parameter", "from_pretrained"))


def _optimizer_words() -> frozenset[str]:
    api = load_rules().torch_api
    names = api.stock_optimizers | api.optimizer_subclasses | api.zero_redundancy_optimizers
    return frozenset({"optim", "parameters"} | {n.rpartition(".")[2].lower() for n in names})


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
    on_count: Callable[[int], None] | None = None,
    env_modules: frozenset[Path] = frozenset(),
) -> list[FileResult]:
    """``results`` with the modules imported by migrated scripts migrated as well.

    ``env_modules``: the resolved paths of the modules that set the switch for their importers and
    whose every importer took the change (:func:`bf16_migrate.env_modules.migrate_importers`): their
    writes go (``importers_migrated``); any other module keeps its own writes.

    ``read_python(path) -> (text, encoding)`` reads a module that was not among the files
    scanned (raising ``OSError``/``ReadError``); ``root_of(path)`` is the tree a path belongs
    to. A module that cannot be read or parsed is recorded in ``errors`` (one line) and left as
    it is. The returned list holds one result per file: a module's result replaces the one its
    own run made. ``outside(path)``: the real path of a module that lies outside the paths
    given (a symlink leads out of the tree), None for one inside
    (:meth:`bf16_migrate.bounds.Bounds.outside`); such a module is never read, and is reported
    (BFM093). ``excluded(path)``: why a module is excluded (an exclude glob, ``.gitignore``), or
    None; such a module is not rewritten, and is reported (BFM093). ``on_count(n)``: told how many
    modules are looked at, before the first (a progress display's total)."""
    requests = _factory_requests(results)
    wanted, audited, escaped = _imports_of(results, root_of, outside, excluded)
    losses = _loss_requests(results, root_of)
    handoffs = _handoff_requests(results, root_of)
    run = _ModuleRun(results, read_python, mode, fp32_optimizer_state, errors, migrate, env_modules)
    run.out += _escaped_results(escaped)
    left_keys = {module.resolve() for module in escaped}
    keys = sorted((set(wanted) | set(requests) | set(audited)) - left_keys)
    if on_count is not None:
        on_count(len(keys))
    for key in keys:
        loss = tuple(sorted(losses.get(key, ())))
        handed = tuple(sorted(handoffs.get(key, ())))
        run.module(key, wanted.get(key, []), audited.get(key, []), tuple(requests.get(key, ())), loss, handed)
    return run.out


def _loss_requests(results: list[FileResult], root_of: Callable[[Path], Path]) -> dict[Path, set[str]]:
    """The names each module of the tree defines that migrated scripts apply as their loss
    (``MigrationResult.loss_code``: ``losses.nt_xent`` imported as ``losses`` gives ``nt_xent`` in
    the module ``losses.py``), by the module's resolved path (:func:`_by_module`)."""
    found: dict[Path, set[str]] = {}
    for result in results:
        for file, rest, _ in _by_module(result, root_of, [(q, None) for q in result.loss_code]):
            found.setdefault(file, set()).add(rest)
    return found


def _handoff_requests(results: list[FileResult], root_of: Callable[[Path], Path]) -> dict[Path, set[ModelHandoff]]:
    """The functions each module of the tree defines that migrated scripts hand their model to
    (``MigrationResult.handoffs``), named by their names there, by the module's resolved path (:func:`_by_module`)."""
    found: dict[Path, set[ModelHandoff]] = {}
    for result in results:
        for file, rest, handoff in _by_module(result, root_of, [(h.function, h) for h in result.handoffs]):
            assert handoff is not None, "each handoff given with its name"
            found.setdefault(file, set()).add(replace(handoff, function=rest))
    return found


_Named = TypeVar("_Named")


def _by_module(
    result: FileResult, root_of: Callable[[Path], Path], named: list[tuple[str, _Named]]
) -> list[tuple[Path, str, _Named]]:
    """Each of ``named`` (a qualified name as ``result``'s script imports it, and what goes with it) as (the
    resolved path of the module of the tree defining it, its name there, what goes with it); the longest module
    name wins (``pkg.losses.NTXent`` is ``NTXent`` of ``pkg/losses.py``, not ``losses.NTXent`` of ``pkg``)."""
    if not named:
        return []
    modules = sorted(named_tree_imports_of(result.path, result.old, root_of(result.path)), key=lambda n: -len(n[0]))
    found: list[tuple[Path, str, _Named]] = []
    for qualified, item in named:
        for name, file in modules:
            rest = qualified[len(name) + 1 :] if qualified.startswith(name + ".") else ""
            if rest.isidentifier():
                found.append((file.resolve(), rest, item))
                break
    return found


def _factory_requests(results: list[FileResult]) -> dict[Path, list[FactoryChange]]:
    """What the migrated scripts of ``results`` ask of the optimizer factories of the tree
    (``MigrationResult.factory_changes``), by the resolved path of the module defining each."""
    requests: dict[Path, list[FactoryChange]] = {}
    for result in results:
        for change in result.factory_changes:
            requests.setdefault(Path(change.path).resolve(), []).append(change)
    return requests


def _audit_env(importers: list[tuple[Path, _Env]], audited: list[tuple[Path, _Env]]) -> _Env | None:
    """The settings a module gets the model-code audit alone under (``audited_under``): the
    union of its conditional importers' settings (``audited``) when no importer ran under the
    switch unconditionally (``importers``), else None (it is migrated under theirs)."""
    return None if importers else {k: v for _, e in audited for k, v in e.items()} or None


def _importers_env(importers: list[tuple[Path, _Env]]) -> tuple[_Env | None, bool]:
    """``(env, differ)``: the one setting all the unconditional importers of a module ran under
    (None when there is none, or more than one), and whether they ran under different settings
    (the module is then left as its own run made it, bar what is asked of its factories: BFM014)."""
    settings = {tuple(sorted(env.items())) for _, env in importers}
    env = dict(importers[0][1]) if len(settings) == 1 else None
    return env, len(settings) > 1


class _ModuleRun:
    """The modules of one :func:`migrate_imported_modules` call, migrated one at a time into
    ``out`` (the results so far: a module's result replaces the one its own run made, or is
    added). ``errors`` collects a module that cannot be read or parsed, as one line."""

    def __init__(
        self,
        results: list[FileResult],
        read_python: Callable[[Path], tuple[str, str]],
        mode: Mode,
        fp32_optimizer_state: bool,
        errors: list[str],
        migrate: Callable[..., MigrationResult],
        env_modules: frozenset[Path] = frozenset(),
    ) -> None:
        self.env_modules = env_modules
        self.results = results
        self.by_path = {r.path.resolve(): r for r in results}
        self.read_python = read_python
        self.mode = mode
        self.fp32_optimizer_state = fp32_optimizer_state
        self.errors = errors
        self.migrate = migrate
        self.out = list(results)

    def module(
        self,
        key: Path,
        importers: list[tuple[Path, _Env]],
        audited: list[tuple[Path, _Env]],
        asked: tuple[FactoryChange, ...],
        loss: tuple[str, ...] = (),
        handoffs: tuple[ModelHandoff, ...] = (),
    ) -> None:
        """Migrate the module at the resolved path ``key`` under what its importers ran under:
        ``importers`` ran under the switch unconditionally, ``audited`` under a condition (the
        model-code audit alone), ``asked`` is what scripts ask of its factories, ``loss`` the names
        of its functions and classes the scripts apply as their loss (audited too), ``handoffs`` its functions
        the scripts hand their model to (their forward passes autocast in amp). A module that
        is a migrated script of its own gets only what is asked of its factories; one imported
        under different settings is reported (BFM014) and gets only what is asked."""
        audit_env = _audit_env(importers, audited)
        named = importers or audited
        module_path = self._path_of(key, named, asked)
        own = self.by_path.get(key)
        if own is not None and (own.legacy_env or (audit_env and own.switched)):
            # a script of its own, migrated as such: only what its importers ask of its factories
            if asked:
                self.out = _with_factory_changes(self.out, own, asked, self.mode, self.errors, self.migrate)
            return
        env, differ = _importers_env(importers)
        if differ:
            self._report_different_settings(module_path, importers, own)
            if not asked:
                return
        source = self._source(module_path, own)
        if source is None:
            return
        new = self._migrated(
            module_path, source, own, env, (asked, loss, handoffs), audit_env, named[0][0] if named else None
        )
        if new is not None:
            new.with_scripts = tuple(path for path, _env in (*importers, *audited))
            self.out = (
                [new if r.path.resolve() == key else r for r in self.out] if own is not None else self.out + [new]
            )

    def _path_of(self, key: Path, named: list[tuple[Path, _Env]], asked: tuple[FactoryChange, ...]) -> Path:
        """The module at the resolved path ``key`` as the run spells it: as given when it is among
        the results, else relative to its first importer's directory (:func:`_as_given`), else as
        the first factory change asked of it names it."""
        given = _as_given(key, named) if named else Path(asked[0].path)
        return next((r.path for r in self.results if r.path.resolve() == key), None) or given

    def _report_different_settings(
        self, module_path: Path, importers: list[tuple[Path, _Env]], own: FileResult | None
    ) -> None:
        """BFM014: the module is imported by scripts that ran under different settings; on its
        own result when it has one, else on a result of its own that changes nothing."""
        names = ", ".join(f"{p} ({', '.join(f'{k}={v}' for k, v in env.items())})" for p, env in importers)
        diag = report("BFM014", str(module_path), 1, 1, False, "different_settings", settings=names)
        if own is not None:
            own.diagnostics.append(diag)
        else:
            self.out.append(FileResult(module_path, "", "", "utf-8", [diag]))

    def _source(self, module_path: Path, own: FileResult | None) -> tuple[str, str] | None:
        """The module's ``(text, encoding)`` before any change: its own run's when it has one,
        else read; None when it cannot be read (recorded in ``errors``: never guessed at)."""
        if own is not None:
            return own.old, own.encoding
        try:
            return self.read_python(module_path)
        except Exception as exc:  # a module we cannot read is reported, never guessed at
            self.errors.append(f"{module_path}: cannot be read ({exc})")
            return None

    def _migrated(
        self,
        module_path: Path,
        source: tuple[str, str],
        own: FileResult | None,
        env: _Env | None,
        asks: tuple[tuple[FactoryChange, ...], tuple[str, ...], tuple[ModelHandoff, ...]],
        audit_env: _Env | None,
        importer: Path | None,
    ) -> FileResult | None:
        """The module's result migrated under ``env`` (``imported_under``), ``asks``: what is asked
        of its factories (``factory_changes``), the names the scripts apply as their loss
        (``loss_code``) and the functions they hand their model to (``handoffs``), and ``audit_env``
        (``audited_under``), led by a BFM014 that names ``importer`` and the settings when the code
        changed under a setting (a factory change says so itself: BFM016). None when it does not parse
        (recorded in ``errors``), or when a module with no result of its own is neither changed nor
        diagnosed."""
        text, encoding = source
        asked, loss, handoffs = asks
        try:
            migrated = self.migrate(
                text,
                self.mode,
                str(module_path),
                fp32_optimizer_state=self.fp32_optimizer_state,
                imported_under=env,
                factory_changes=asked or None,
                **({"importers_migrated": True} if module_path.resolve() in self.env_modules else {}),
                audited_under=audit_env,
                **({"loss_code": loss} if loss else {}),
                **({"handoffs": handoffs} if handoffs else {}),
            )
        except ParseError as exc:
            self.errors.append(str(exc))
            return None
        if migrated.code == text and not migrated.diagnostics and own is None:
            return None
        diags = list(migrated.diagnostics)
        said = env or (None if asked else audit_env)  # a factory change says so itself (BFM016)
        if migrated.code != text and said:
            settings_text = ", ".join(f"{k}={v}" for k, v in said.items())
            variant = None if env else "audited"
            diags.insert(
                0, report("BFM014", str(module_path), 1, 1, True, variant, importer=importer, settings=settings_text)
            )
        return FileResult(
            module_path, text, migrated.code, encoding, diags, f32_islands=list(migrated.outcome.f32_islands)
        )


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
        own.switched,
        own.loss_code,
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


_Importers = dict[Path, list[tuple[Path, _Env]]]


def _imports_of(
    results: list[FileResult],
    root_of: Callable[[Path], Path],
    outside: Callable[[Path], Path | None] | None,
    excluded: Callable[[Path], str | None] | None,
) -> tuple[_Importers, _Importers, dict[Path, tuple[Path | str, Path, _Env]]]:
    """The tree modules the migrated scripts of ``results`` import: ``(wanted, audited, escaped)``.
    ``wanted``: resolved module path to its importers that ran under the switch unconditionally
    (``legacy_env``) and their settings; ``audited``: the same for importers that switched under a
    condition (``switched``, no ``legacy_env``: the module gets the model-code audit alone);
    ``escaped``: a module outside the paths given (its real path) or excluded (why), with the first
    importer."""
    wanted: _Importers = {}
    audited: _Importers = {}
    escaped: dict[Path, tuple[Path | str, Path, _Env]] = {}
    for result in results:
        ran_under = result.legacy_env or result.switched
        python = _python_of(result) if ran_under else None
        if python is None:
            continue
        for _, module in named_tree_imports_of(result.path, python, root_of(result.path)):
            left: Path | str | None = outside(module) if outside is not None else None
            if left is None and excluded is not None:
                left = excluded(module)
            if left is not None:
                escaped.setdefault(module, (left, result.path, ran_under))
                continue
            key = module.resolve()
            if key != result.path.resolve():
                (wanted if result.legacy_env else audited).setdefault(key, []).append((result.path, ran_under))
    return wanted, audited, escaped


def _python_of(result: FileResult) -> str | None:
    """The Python a migrated file runs: a script's text, a notebook's code cells as one module
    (:func:`bf16_migrate.carriers.notebook.analyze`: its imports ran under the kernel's switch as
    a script's do); None for other files."""
    name = str(result.path)
    if name.endswith(".py"):
        return result.old
    if name.endswith(".ipynb"):
        try:
            analysis = analyze("notebook", result.old, name)
        except CarrierError:  # reported where the notebook itself was read
            return None
        return analysis.python.source if analysis.python is not None else None
    return None


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
