"""The rule files every run may read, each the first time it is asked for: where they are
(:func:`rules_dir`), the migration modes (``rules/modes.toml``), the legacy variables
(``rules/XLA_*.toml``: :func:`variable_rules`) and the diagnostics catalogue
(``rules/diagnostics*.toml``: :func:`diagnostic_rules`).

The command line, the output and the suppressions read these and nothing else, so they are kept
apart from the codemod's tables (the torch API, the frameworks, the model code, the host exits and
the device modules, with :func:`bf16_migrate.rules.load_rules`, which gathers them all): a run over
files that name no legacy variable defines and reads none of those (bench/RESULTS.md, the clean
path). :mod:`bf16_migrate.rules` re-exports every name here. Every file is validated when it is
read: a malformed rule is a :class:`RuleError` naming the file, never a silently wrong migration.

The rule files are the only place that names the legacy variables, the modes and the diagnostic
codes; the rest of the package derives its lists from here (:func:`variable_names` for the byte
prefilter and the verify runs, :data:`MODES`). Where they are (:func:`rules_dir`): installed
(``pip install .``) they are package data, ``bf16_migrate/_rules/`` (pyproject.toml maps the
package ``bf16_migrate._rules`` to the directory ``rules/``); in a source checkout and an
editable install they are read from ``rules/`` beside the package. ``BF16_MIGRATE_RULES_DIR``
names another directory (a copy with a rule added, to try it: see docs/architecture.md).

A rule page of ``rules/diagnostics*.toml`` holds runnable examples as data (:class:`RuleExample`,
run for every code by tests/test_rule_examples.py), each an array of tables under the page:

* ``[[BFMnnn.invalid]]``: a small tree where the code must be produced;
* ``[[BFMnnn.valid]]``: a nearby legacy or migrated tree where it must not be.

Keys of an example: ``use = "example"`` or ``use = "instead"`` (``train.py`` is
:data:`EXAMPLE_HEADER` then the page's own text of that name) or ``files`` (a table: a file's
path in the tree -> its whole text; a script, its launcher, a Dockerfile ...), exactly one of
the two; ``mode`` (a mode of modes.toml, default the first); ``options`` (a table of
:data:`EXAMPLE_OPTIONS`, passed to the migration); for an invalid example only,
``fixed`` (whether the finding is reported fixed; default: whether the page's fix is not "needs a
hand") and ``holds`` (a table: a file's path -> a line the migrated file must hold; required when
the finding is fixed). A trace code (produced by ``verify``'s run-time trace, not by the
rewrite) names instead the test that produces it: ``tested_by = "tests/<file>.py::<test>"``.
A malformed example is a :class:`RuleError` naming the file and the code.
"""

from __future__ import annotations

import enum
import functools
import os
import re
import string
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

RULES_DIR_ENV = "BF16_MIGRATE_RULES_DIR"
"""An environment variable naming a rules directory to use instead of the installed one."""

VARIABLE_GLOB = "XLA_*.toml"
"""The rule files of the legacy variables, one per variable, named after it."""


def rules_dir() -> Path:
    """The directory of the rule files: ``$BF16_MIGRATE_RULES_DIR`` when set, else the package
    data of an installed copy (``bf16_migrate/_rules``), else ``rules/`` of the source tree the
    package is imported from (a checkout, an editable install)."""
    override = os.environ.get(RULES_DIR_ENV)
    if override:
        return Path(override)
    here = Path(__file__).parent
    installed = here / "_rules"
    return installed if installed.is_dir() else here.parent / "rules"


RULES_DIR = rules_dir()


class RuleError(Exception):
    """A rule file is missing, malformed or inconsistent (the message names the file)."""


def _read(path: Path) -> dict:
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RuleError(f"{path}: cannot read rule file: {exc}") from exc


def _need(data: dict, key: str, kind: type, path: Path):
    if key not in data:
        raise RuleError(f"{path}: missing key {key!r}")
    value = data[key]
    if not isinstance(value, kind):
        raise RuleError(f"{path}: {key!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


class Word(str, enum.Enum):
    """An enum whose members are the words a file or a report writes: each is that ``str`` (equal
    to it, hashed as it, printed as it), so a typed member and the word read back compare equal.
    (``enum.StrEnum`` from Python 3.11 on; the package runs on 3.10.)"""

    def __str__(self) -> str:
        return str(self.value)


class Emit(Word):
    """A change a mode may emit (``rules/modes.toml`` ``emit``); each is planned by its unit, a module
    of :mod:`bf16_migrate.python.changes` named after the word, which says what it means."""

    STOCHASTIC_ROUNDING = "stochastic-rounding"
    MODEL_CAST = "model-cast"
    INPUT_CAST = "input-cast"
    FLOAT32_INPUTS = "float32-inputs"
    FP32_LOSS_ACCUMULATOR = "fp32-loss-accumulator"
    FP32_MASTER_WEIGHTS = "fp32-master-weights"
    FP32_GRAD_NORM = "fp32-grad-norm"
    AUTOCAST = "autocast"
    AUTOCAST_OPERANDS = "autocast-operands"
    BF16_ATTENTION_MATH = "bf16-attention-math"
    MODEL_CODE_DTYPES = "model-code-dtypes"
    ZERO1_BF16_STATE = "zero1-bf16-state"
    HOST_FLOAT32 = "host-float32"
    DEVICE_TENSORS = "device-tensors"
    FLOAT32_OPS = "float32-ops"


EMITS = frozenset(Emit)
"""Every :class:`Emit`."""


@dataclass(frozen=True)
class Mode:
    """One migration mode: a table of ``rules/modes.toml`` (the replacements of AWS Neuron's
    "Migration From XLA_USE_BF16/XLA_DOWNCAST_BF16").

    ``emit`` is what the codemod writes for a variable that switches bf16 on (a subset of
    :data:`EMITS`); the questions the code asks of a mode are read from it, so no code compares
    a mode's name. ``summary`` names the change in findings, ``by_hand`` what to do where the
    model cannot be found, ``script_change`` what a launcher's finding says its script gets.
    ``removes_only``: the internal FP32-reference mode of ``verify`` (:data:`REFERENCE`), which
    removes the legacy writes and adds nothing.
    """

    name: str
    summary: str
    emit: frozenset[Emit]
    by_hand: str = ""
    script_change: str = ""
    removes_only: bool = False
    verify: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)
    """The mode's ``[MODE.verify]`` table: how close ``verify`` holds a migration in this mode to
    its comparison run (read and checked by :mod:`bf16_migrate.verify.compare`)."""

    @property
    def casts_model(self) -> bool:
        """The model becomes bf16 (``model.to(torch.bfloat16)``), its floating inputs with it."""
        return Emit.MODEL_CAST in self.emit

    @property
    def autocast(self) -> bool:
        """The model stays FP32; its forward pass and loss run under ``torch.autocast``."""
        return Emit.AUTOCAST in self.emit

    @property
    def master_weights(self) -> bool:
        """The optimizer updates FP32 master weights of the bf16 parameters."""
        return Emit.FP32_MASTER_WEIGHTS in self.emit

    @property
    def stochastic_rounding(self) -> bool:
        """The legacy setting becomes ``NEURON_RT_STOCHASTIC_ROUNDING_EN=1``."""
        return Emit.STOCHASTIC_ROUNDING in self.emit

    @property
    def marks(self) -> frozenset[str]:
        """What a migration in this mode writes that tells it apart (:data:`EMIT_MARKS` of its
        ``emit``): verify reads the mode of a migrated text the codemod did not write from them."""
        return frozenset(EMIT_MARKS[change] for change in self.emit if change in EMIT_MARKS)

    def __str__(self) -> str:
        return self.name


REFERENCE = Mode(
    name="reference", summary="removed (FP32 reference run)", emit=frozenset({Emit.FLOAT32_INPUTS}), removes_only=True
)
"""The internal mode of ``verify``'s FP32 reference run: the legacy writes removed, and only what the
script needs to run in FP32 at all added (float32-inputs: a float64 batch the switch made bf16)."""

_MODE_TEXTS = ("summary", "by_hand", "script_change")


def _read_modes(directory: Path) -> dict[str, Mode]:
    """The modes of ``directory/modes.toml``, in the file's order; :class:`RuleError` naming the
    file for a mode without its texts or with an unknown emit."""
    path = directory / "modes.toml"
    data = _read(path)
    if not data or not all(isinstance(table, dict) for table in data.values()):
        raise RuleError(f"{path}: one table per mode, e.g. [stochastic], is expected")
    modes = {}
    for name, table in data.items():
        unknown = set(table) - {"emit", "verify", *_MODE_TEXTS}
        if unknown:
            raise RuleError(f"{path}: [{name}] has unknown keys {sorted(unknown)}")
        words = _need(table, "emit", list, path)
        unknown_emits = sorted(str(w) for w in words if w not in {e.value for e in Emit})
        if unknown_emits:
            raise RuleError(f"{path}: [{name}] emits unknown changes {unknown_emits}")
        emit = frozenset(Emit(w) for w in words)
        if name == REFERENCE.name:
            raise RuleError(f"{path}: {name!r} is verify's own reference run, not a mode")
        texts = {key: _need(table, key, str, path) for key in _MODE_TEXTS}
        verify = table.get("verify", {})
        if not isinstance(verify, dict):
            raise RuleError(f"{path}: [{name}.verify] must be a table")
        modes[name] = Mode(name=name, emit=emit, **texts, verify=verify)
    return modes


_modes_in = functools.cache(_read_modes)

MODES = tuple(_modes_in(RULES_DIR))
"""The names of the migration modes, as chosen with ``--mode``, in the order offered (the first
is the default; ``rules/modes.toml``)."""

DEFAULT_MODE = MODES[0]


def all_modes(directory: Path | None = None) -> tuple[Mode, ...]:
    """The migration modes (:class:`Mode`), in the order of :data:`MODES` (the first is the
    default). Reads ``modes.toml`` alone (once), not the other rule files."""
    return tuple(_modes_in(directory or RULES_DIR).values())


def mode_named(name: str, directory: Path | None = None) -> Mode:
    """The :class:`Mode` called ``name`` (or :data:`REFERENCE`); ``ValueError`` naming the modes
    for any other name. Reads ``modes.toml`` alone (once), not the other rule files."""
    if name == REFERENCE.name:
        return REFERENCE
    modes = _modes_in(directory or RULES_DIR)
    if name not in modes:
        raise ValueError(f"unknown mode {name!r}; choose one of {', '.join(modes)}")
    return modes[name]


@functools.cache
def variable_names(directory: Path = RULES_DIR) -> tuple[str, ...]:
    """The names of the legacy variables, sorted: the stems of ``XLA_*.toml`` in ``directory``.

    Cheap (one directory listing, no file parsed), for the byte prefilter that runs before
    anything else: :func:`load_rules` checks that each file's ``name`` is its stem, so these
    are the names of ``load_rules().variables``. Raises :class:`RuleError` when there is none.
    """
    names = sorted(path.stem for path in directory.glob(VARIABLE_GLOB))
    if not names:
        raise RuleError(f"{directory}: no variable rules ({VARIABLE_GLOB}) found")
    return tuple(names)


STOCHASTIC_ROUNDING_VAR = "NEURON_RT_STOCHASTIC_ROUNDING_EN"

EMIT_MARKS = {
    Emit.STOCHASTIC_ROUNDING: STOCHASTIC_ROUNDING_VAR,
    Emit.MODEL_CAST: ".to(torch.bfloat16)",
    Emit.FP32_MASTER_WEIGHTS: "with_fp32_master_weights",
    Emit.AUTOCAST: "torch.autocast(",
}
"""The text the codemod writes for an emitted change, found in a script only because it was
migrated with it (the names of its own snippets: :mod:`bf16_migrate.python.snippets`,
:mod:`bf16_migrate.python.autocast`); the changes that write nothing this distinct have none.
A mode's :attr:`Mode.marks` are read from them."""


@dataclass(frozen=True)
class VariableRule:
    """What a legacy precision variable does.

    ``f32_becomes`` / ``f64_becomes`` are the device dtypes an f32 / f64 tensor gets while the
    variable is on (``"bf16"``, ``"f16"``, ``"f32"``, ``"f64"``); ``effective`` is False for the
    variables torch-xla >= 2.5 ignores (the FP16 pair). What a mode emits for it:
    :meth:`emits`.
    """

    name: str
    low_precision: str
    f32_becomes: str
    f64_becomes: str
    effective: bool
    deprecated_since: str
    neuron_stochastic_rounding: bool
    source: Path

    def emits(self, mode: Mode) -> frozenset[Emit]:
        """The changes ``mode`` makes for this variable: the mode's, when the variable still
        takes effect (the modes replace bf16, the only low precision an effective variable has:
        checked at load); none for one torch-xla ignores."""
        return mode.emit if self.effective else frozenset()


FIX_KINDS = ("fixed automatically", "fixed automatically, review", "needs a hand")
"""A diagnostic's fix safety, as the ``fix`` key of its rule page begins (then ``": "`` and a
sentence): the change is safe, the change is made but wants a look, or nothing is changed."""

DIAGNOSTIC_KEYS = frozenset(
    {"title", "what", "why", "example", "instead", "fix", "todo", "message", "variants"}
    | {"invalid", "valid", "tested_by"}
)
"""The keys of a rule page in ``rules/diagnostics*.toml``; all but ``variants`` and the examples'
keys (``invalid``, ``valid``, ``tested_by``: see the module docstring) are required."""

EXAMPLE_KEYS = frozenset({"use", "files", "mode", "options", "fixed", "holds"})
"""The keys of one runnable example of a rule page (``[[BFMnnn.invalid]]``, ``[[BFMnnn.valid]]``)."""

EXAMPLE_OPTIONS = {
    "fp32_optimizer_state": bool,
    "helpers_module": str,
    "legacy_env": dict,
    "exclude": list,
    "extend_select": list,
}
"""The options an example may give its run (``options``), with their types: what the command
line's ``--fp32-optimizer-state``, ``--helpers-module``, ``--legacy-env`` and ``--exclude`` give
:func:`bf16_migrate.project.migrate_paths`, and ``--extend-select`` the selection of the findings
(:class:`bf16_migrate.suppress.Selection`, for the opt-in BFM900). A list is passed as a tuple."""

EXAMPLE_HEADER = "import os\nimport torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n"
"""The imports put before a page's ``example`` or ``instead`` run as ``train.py`` (``use``)."""


@dataclass(frozen=True)
class RuleExample:
    """One runnable example of a rule page: the tree ``files`` (path -> text) migrated in
    ``mode``. ``invalid``: the code must be produced (``fixed`` says whether reported fixed, and
    each migrated file of ``holds`` must hold its line); otherwise the code must not be."""

    invalid: bool
    files: Mapping[str, str]
    mode: Mode
    fixed: bool = False
    holds: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    """The run's options (:data:`EXAMPLE_OPTIONS`)."""


@dataclass(frozen=True)
class DiagnosticRule:
    """One diagnostic code's rule page, as ruff documents its rules: what it finds and does
    (``what``), why it matters (``why``), a legacy ``example`` and what to use ``instead``, the
    fix safety (``fix``, one of :data:`FIX_KINDS`, and ``fix_note``, its sentence), the to-do line
    of an unfixed finding, and the finding's ``message``: a ``str.format`` template with named
    fields, ``variants`` the templates of the other situations the code covers."""

    code: str
    title: str
    what: str
    why: str
    example: str
    instead: str
    fix: str
    fix_note: str
    todo: str
    message: str
    variants: Mapping[str, str] = field(default_factory=dict)
    invalid: tuple[RuleExample, ...] = ()
    """Runnable examples that produce the code (see the module docstring)."""
    valid: tuple[RuleExample, ...] = ()
    """Runnable examples near the code's situation that must not produce it."""
    tested_by: str | None = None
    """A trace code's test that produces it (``tests/<file>.py::<test>``)."""

    @property
    def fixable(self) -> bool:
        """Whether a finding of this code may be reported fixed (its fix is not "needs a hand")."""
        return self.fix != "needs a hand"

    def template(self, variant: str | None = None) -> str:
        """The message template of ``variant`` (the main ``message`` when None)."""
        if variant is None:
            return self.message
        try:
            return self.variants[variant]
        except KeyError:
            raise KeyError(f"{self.code} has no message variant {variant!r} (it has {sorted(self.variants)})") from None

    def format(self, variant: str | None = None, **fields: object) -> str:
        """The message of ``variant`` with ``fields``; a field missing from or unknown to the
        template is a ``KeyError`` (a call site and its catalogue entry disagree). A message is
        one line (one finding per line in the text output, a GitHub workflow command ends at
        the line's end): a line break inside a field's text (code quoted from a file) is
        written ``\\n``."""
        template = self.template(variant)
        wanted = template_fields(template)
        if set(fields) != wanted:
            raise KeyError(
                f"{self.code}{f' ({variant})' if variant else ''}: the template wants fields {sorted(wanted)}, got "
                f"{sorted(fields)}"
            )
        return template.format(**{name: _one_line(value) for name, value in fields.items()})


def _one_line(value: object) -> object:
    if isinstance(value, str) and ("\n" in value or "\r" in value):
        return value.replace("\r", "\\r").replace("\n", "\\n")
    return value


def template_fields(template: str) -> set[str]:
    """The named fields of a ``str.format`` template (a positional or empty field raises
    ``ValueError``)."""
    names = set()
    for _text, name, _spec, _conversion in string.Formatter().parse(template):
        if name is None:
            continue
        if not name or name.isdigit() or not name.isidentifier():
            raise ValueError(f"field {name!r} is not a name")
        names.add(name)
    return names


def _load_variable(path: Path) -> VariableRule:
    data = _read(path)
    name = _need(data, "name", str, path)
    if name != path.stem:
        raise RuleError(f"{path}: name {name!r} does not match the file name")
    if "modes" in data:
        raise RuleError(f"{path}: what a mode emits is the mode's (rules/modes.toml), not the variable's")
    effective = _need(data, "effective", bool, path)
    low_precision = _need(data, "low_precision", str, path)
    if effective and low_precision != "bf16":
        raise RuleError(f"{path}: the modes replace bf16 only; an effective {low_precision} variable has no migration")
    return VariableRule(
        name=name,
        low_precision=low_precision,
        f32_becomes=_need(data, "f32_becomes", str, path),
        f64_becomes=_need(data, "f64_becomes", str, path),
        effective=effective,
        deprecated_since=_need(data, "deprecated_since", str, path),
        neuron_stochastic_rounding=_need(data, "neuron_stochastic_rounding", bool, path),
        source=path,
    )


def _load_diagnostics(path: Path, data: dict) -> dict[str, DiagnosticRule]:
    out = {}
    for code, entry in data.items():
        if not (code.startswith("BFM") and code[3:].isdigit()):
            raise RuleError(f"{path}: diagnostic code {code!r} is not of the form BFMnnn")
        if not isinstance(entry, dict):
            raise RuleError(f"{path}: [{code}] must be a table")
        unknown = set(entry) - DIAGNOSTIC_KEYS
        if unknown:
            raise RuleError(f"{path}: [{code}] has unknown keys {sorted(unknown)}")
        where = Path(f"{path} [{code}]")
        fix = _need(entry, "fix", str, where)
        kind, _, note = fix.partition(": ")
        if kind not in FIX_KINDS or not note.strip():
            raise RuleError(f"{where}: 'fix' must be one of {list(FIX_KINDS)}, then ': ' and a sentence, got {fix!r}")
        variants = entry.get("variants", {})
        if not isinstance(variants, dict) or not all(isinstance(v, str) for v in variants.values()):
            raise RuleError(f"{where}: 'variants' must be a table of message templates")
        for name, template in [
            ("message", _need(entry, "message", str, where)),
            *((f"variants.{k}", v) for k, v in variants.items()),
        ]:
            try:
                reserved = template_fields(template) & {"fixed", "variant"}
            except ValueError as e:
                raise RuleError(f"{where}: {name} is not a template with named fields: {e}") from None
            if reserved:
                raise RuleError(f"{where}: {name} uses the reserved field names {sorted(reserved)}")
        out[code] = DiagnosticRule(
            code=code,
            title=_need(entry, "title", str, where),
            what=_need(entry, "what", str, where),
            why=_need(entry, "why", str, where),
            example=_need(entry, "example", str, where),
            instead=_need(entry, "instead", str, where),
            fix=kind,
            fix_note=note.strip(),
            todo=_need(entry, "todo", str, where),
            message=entry["message"],
            variants=variants,
            invalid=_examples(entry, "invalid", where, example=entry["example"], instead=entry["instead"], kind=kind),
            valid=_examples(entry, "valid", where, example=entry["example"], instead=entry["instead"], kind=kind),
            tested_by=_tested_by(entry, where),
        )
    return out


def _tested_by(entry: dict, where: Path) -> str | None:
    value = entry.get("tested_by")
    if value is None:
        return None
    if not isinstance(value, str) or not re.fullmatch(r"tests/\w+\.py::test_\w+", value):
        raise RuleError(f"{where}: 'tested_by' must be 'tests/<file>.py::test_<name>', got {value!r}")
    return value


def _examples(entry: dict, key: str, where: Path, example: str, instead: str, kind: str) -> tuple[RuleExample, ...]:
    """The page's runnable examples under ``key`` (``invalid`` or ``valid``), validated."""
    tables = entry.get(key, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise RuleError(f"{where}: '{key}' must be an array of tables ([[{where.name.strip('[]')}.{key}]])")
    out = []
    for number, table in enumerate(tables, 1):
        at = f"{where}: {key} example {number}"
        unknown = set(table) - EXAMPLE_KEYS
        if key == "valid":
            unknown |= set(table) & {"fixed", "holds"}
        if unknown:
            raise RuleError(f"{at} has unknown keys {sorted(unknown)}")
        if ("use" in table) == ("files" in table):
            raise RuleError(f"{at} needs exactly one of 'use' and 'files'")
        if "use" in table:
            if table["use"] not in ("example", "instead"):
                raise RuleError(f"{at}: 'use' must be 'example' or 'instead', got {table['use']!r}")
            files = {"train.py": EXAMPLE_HEADER + (example if table["use"] == "example" else instead) + "\n"}
        else:
            files = table["files"]
            if not files or not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
                raise RuleError(f"{at}: 'files' must be a table of file paths to their texts")
        mode = table.get("mode", DEFAULT_MODE)
        if mode not in MODES:
            raise RuleError(f"{at}: 'mode' must be one of {list(MODES)}, got {mode!r}")
        fixed = table.get("fixed", kind != "needs a hand") if key == "invalid" else False
        if not isinstance(fixed, bool):
            raise RuleError(f"{at}: 'fixed' must be true or false")
        if fixed and kind == "needs a hand":
            raise RuleError(f"{at}: 'fixed' cannot be true for a page whose fix is 'needs a hand'")
        holds = table.get("holds", {})
        if not isinstance(holds, dict) or not all(isinstance(v, str) and k in files for k, v in holds.items()):
            raise RuleError(f"{at}: 'holds' must be a table of the example's file paths to a line")
        if key == "invalid" and fixed and not holds:
            raise RuleError(f"{at}: a fixed finding needs 'holds', a line the migrated text must hold")
        options = table.get("options", {})
        if not isinstance(options, dict) or not all(
            name in EXAMPLE_OPTIONS and isinstance(value, EXAMPLE_OPTIONS[name]) for name, value in options.items()
        ):
            raise RuleError(f"{at}: 'options' must be a table of {sorted(EXAMPLE_OPTIONS)} with their types")
        out.append(
            RuleExample(
                invalid=key == "invalid",
                files=dict(files),
                mode=mode_named(mode),
                fixed=fixed,
                holds=dict(holds),
                options={name: tuple(v) if isinstance(v, list) else v for name, v in options.items()},
            )
        )
    return tuple(out)


def variable_rules(directory: Path | None = None) -> Mapping[str, VariableRule]:
    """The legacy variables' rules by name (``XLA_*.toml`` in ``directory``, by default
    :data:`RULES_DIR`; one file per variable), read and checked once per directory.
    :class:`RuleError` naming the file for a malformed one, or when there is none."""
    return _variables_in(directory or RULES_DIR)


def diagnostic_rules(directory: Path | None = None) -> Mapping[str, DiagnosticRule]:
    """The diagnostics catalogue by code (``diagnostics*.toml`` in ``directory``, by default
    :data:`RULES_DIR`; one file per concern), read and checked once per directory, without the
    codemod's rule files: what the output, the suppressions and ``explain`` read.
    :class:`RuleError` naming the file for a malformed page, a code defined twice, or no
    catalogue of the core codes."""
    return _diagnostics_in(directory or RULES_DIR)


@functools.cache
def _variables_in(directory: Path) -> Mapping[str, VariableRule]:
    variables: dict[str, VariableRule] = {}
    for path in sorted(directory.glob(VARIABLE_GLOB)):
        rule = _load_variable(path)
        variables[rule.name] = rule
    if not variables:
        raise RuleError(f"{directory}: no variable rules ({VARIABLE_GLOB}) found")
    return variables


@functools.cache
def _diagnostics_in(directory: Path) -> Mapping[str, DiagnosticRule]:
    # one catalogue per concern, each file read once
    catalogues = [(path, _read(path)) for path in sorted(directory.glob("diagnostics*.toml"))]
    defined: set[str] = set()
    for path, data in catalogues:  # codes first: a page's examples left under a renamed code are not its page
        for code in data:
            if code in defined:
                raise RuleError(f"{path}: diagnostic code {code} is defined twice")
            defined.add(code)
    diagnostics: dict[str, DiagnosticRule] = {}
    for path, data in catalogues:
        diagnostics.update(_load_diagnostics(path, data))
    if "BFM001" not in diagnostics:
        raise RuleError(f"{directory}: no diagnostics.toml with the core codes")
    return diagnostics


def is_truthy(value: str) -> bool:
    """How torch-xla parses a boolean variable: ``"true"`` is on, ``"false"`` off, otherwise
    the leading integer (C ``atoi``) is on when non-zero, so ``"1"`` is on and ``""``, ``"0"``,
    ``"yes"`` are off. Source: ``torch_xla/csrc/runtime/sys_util.cc`` ``GetEnvBool``; checked on
    the XLA CPU device with torch-xla 2.9 (measured: ``XLA_USE_BF16=<v>``, then the element type
    of a device op in its HLO)."""
    if value == "true":
        return True
    if value == "false":
        return False
    digits = value.lstrip()
    sign = 1
    if digits[:1] in "+-" and digits:
        sign = -1 if digits[0] == "-" else 1
        digits = digits[1:]
    number = ""
    for ch in digits:
        if not ch.isdigit():
            break
        number += ch
    return bool(number) and sign * int(number) != 0
