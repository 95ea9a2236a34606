"""What every carrier reports about one file: the entries that name a legacy variable, the
Python launches they reach, and how to render the file once the entries are decided.

A *carrier* is a file that sets environment variables for a process it (or something reading
it) starts: a shell script, a Dockerfile, a YAML manifest, a ``.env`` file, a notebook. Each
carrier module parses its file with a real parser (never a regular expression over the file),
records every :class:`Entry` (a place the file sets, unsets or passes a legacy variable) with
the exact character spans that carry it, and every :class:`Launch` (a Python process started
with the entry in its environment). The cross-file planner (:mod:`.link`) then decides per
entry: ``remove``, ``replace`` (by ``NEURON_RT_STOCHASTIC_ROUNDING_EN=1``, stochastic mode) or
``keep`` (with a diagnostic), and the carrier renders the new text by editing only those spans.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias

# PASS, SET, UNSET, Action, Target: re-exported, the carriers name them from here
from ..command_lines import PASS as PASS
from ..command_lines import SET as SET
from ..command_lines import UNSET as UNSET
from ..command_lines import Action as Action
from ..command_lines import Target as Target
from ..command_lines import _Word
from ..diagnostics import message
from ..rules import STOCHASTIC_ROUNDING_VAR, is_truthy
from .error import CarrierError as CarrierError  # re-exported: the carriers name it from here

if TYPE_CHECKING:
    from ..diagnostics import Diagnostic


class Decision(_Word):
    """What the plan does with an :class:`Entry`: remove it, replace it by
    ``NEURON_RT_STOCHASTIC_ROUNDING_EN=1`` (stochastic mode), or keep it (with a diagnostic)."""

    REMOVE = "remove"
    REPLACE = "replace"
    KEEP = "keep"


class Resolution(_Word):
    """What the plan resolved a launch to (:class:`Resolved`); ``PY`` and ``KERNEL`` also tag
    the plan's Python nodes (:data:`PlanNode`)."""

    PY = "py"
    KERNEL = "kernel"
    INLINE = "inline"
    SHELL = "shell"
    NONE = "none"
    IGNORED = "ignored"


REMOVE, REPLACE, KEEP = Decision.REMOVE, Decision.REPLACE, Decision.KEEP


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` (character offsets) by ``new``."""

    start: int
    end: int
    new: str


def apply_edits(text: str, edits: list[Edit]) -> str:
    """``text`` with every edit applied. Edits must not overlap (an :class:`AssertionError`
    otherwise: that would be a bf16-migrate bug, never a user error); identical edits count once."""
    out, pos = [], 0
    for edit in sorted(set(edits), key=lambda e: (e.start, e.end)):
        assert edit.start >= pos, f"overlapping edits at {edit.start} (bf16-migrate bug)"
        out.append(text[pos : edit.start])
        out.append(edit.new)
        pos = edit.end
    out.append(text[pos:])
    return "".join(out)


@dataclass(frozen=True)
class Note:
    """A diagnostic a carrier finds on its own while parsing (a read of the variable, a name in
    a heredoc or a message it does not rewrite): ``code`` (``BFMnnn``), the 1-based ``line`` and
    ``col`` in the file, the ``message``, whether the file's change ``fixed`` it, and ``where``
    in the file it is (appended to the path: ``#cell3`` in a notebook, ``""`` elsewhere).

    Indexing reads it as the tuple ``(code, line, col, message, fixed, where)``
    (``note[:4]``)."""

    code: str
    line: int
    col: int
    message: str
    fixed: bool = False
    where: str = ""

    def __getitem__(self, index: int | slice) -> object:
        return (self.code, self.line, self.col, self.message, self.fixed, self.where)[index]

    @classmethod
    def of(
        cls,
        code: str,
        line: int,
        col: int,
        variant: str | None = None,
        /,
        *,
        fixed: bool = False,
        at: str = "",
        **fields: object,
    ) -> Note:
        """The note ``code`` at ``line``/``col``, its message the catalogue's template
        (``message``, or ``variants.<variant>``) formatted with ``fields``
        (:func:`bf16_migrate.diagnostics.message`, as :func:`bf16_migrate.diagnostics.report`
        words a finding); ``at`` is the note's ``where`` (a template may have a field of that name)."""
        return cls(code, line, col, message(code, variant, **fields), fixed, at)


class Blocker(Enum):
    """Why a legacy setting is kept, in the order a kept setting's finding leads with them
    (deepest first, so the user starts where the work is): the setting never takes effect (dead
    code, or set again before anything runs), the script it launches cannot take the change, the
    launch cannot be resolved, the script's own flag cannot be passed on it, no launch at all, its
    value is computed, its form is one the carrier does not rewrite. The value is the code of the
    finding that words it."""

    NEVER_IN_FORCE = "BFM092"
    SCRIPT_REFUSES = "BFM112"
    LAUNCH_UNRESOLVED = "BFM111"
    FLAG_NOT_PASSED = "BFM034"
    """amp through the script's own flag, which cannot be passed where the setting was."""
    NO_LAUNCH = "BFM110"
    COMPUTED_VALUE = "BFM130"
    UNREWRITTEN_FORM = "BFM131"

    @property
    def code(self) -> str:
        """The diagnostic code that words this reason (``rules/diagnostics.toml``)."""
        return self.value

    @property
    def depth(self) -> int:
        """0 for the deepest reason."""
        return list(Blocker).index(self)


@dataclass
class Entry:
    """One place a carrier names a legacy variable.

    ``action`` is :data:`SET` (``export X=1``, ``ENV X=1``, an ``env:`` item...), :data:`UNSET`
    (``unset X``, ``env -u X``) or :data:`PASS` (``docker run -e X``: passes the value the
    launcher's own environment holds). Entries with the same ``group`` are decided together
    (an ``export X=1`` and the ``unset X`` of the other branch). ``where`` is appended to the
    file's path in diagnostics (``#cell3`` in a notebook). ``noop`` says why a setting never
    had an effect (it is removed, BFM140). ``value`` is the static value set (``None`` when it is
    computed, e.g. ``$FLAG`` or ``valueFrom``). ``line``/``col`` (1-based) point at the
    variable's name. ``sr_scope`` is where a stochastic-rounding replacement would live (two
    legacy entries of one scope get one replacement). ``problem``, when set, says why the entry
    cannot be rewritten safely; it is then kept and reported, as its ``blocker`` says:
    :attr:`Blocker.COMPUTED_VALUE` or :attr:`Blocker.UNREWRITTEN_FORM`.
    ``data`` is the carrier's own.
    """

    id: int
    variable: str
    action: Action
    value: str | None
    line: int
    col: int
    sr_scope: Hashable = None
    problem: str | None = None
    blocker: Blocker = field(default_factory=lambda: Blocker.UNREWRITTEN_FORM)
    data: object = None
    group: Hashable = None
    where: str = ""
    noop: str | None = None


@dataclass
class InlineCode:
    """The code of ``python -c CODE``, read as the script the launch runs. ``line``/``col``
    (1-based, in the host file) are where its first character is (a line of the code is reported
    at its line there); ``why_not(new)`` says why ``new`` cannot be written in its place, None when
    it can (the carrier renders it from :attr:`Analysis.inline_code`); None where the carrier
    never rewrites it."""

    code: str
    line: int
    col: int
    why_not: Callable[[str], str | None] | None = None
    one_line: bool = False
    """The code is written in one line of its host (a notebook's ``!`` line, a Dockerfile
    instruction): a migrated code of several lines goes back joined with ``; `` where it can
    (:func:`bf16_migrate.python.inline_code.one_line`)."""

    def cannot_write(self, new: str) -> str | None:
        """Why ``new`` cannot replace the code where it is written (None when it can)."""
        if self.why_not is None:
            return "bf16-migrate does not rewrite code written in this form"
        return self.why_not(new)


@dataclass
class Launch:
    """A process started by the carrier, with the entries in force for it.

    ``target`` is a :class:`Target` and a word: ``("script", "src/train.py")``, ``("module",
    "pkg.train")``, ``("shell", "run.sh")`` or ``("kernel", "")`` (a notebook's own Python);
    ``problem`` says why a Python launch cannot be resolved (``$SCRIPT``, ``python -c``, the
    image's default command...).
    ``reached_by`` maps entry ids to True when the entry is in force on every path to the
    launch, False when only on some (a guarded ``export``). ``base_dirs`` are extra directories
    (inside the tree) to resolve a relative path against; ``line``/``col`` are 1-based.
    """

    line: int
    col: int
    text: str
    target: tuple[Target, str] | None = None
    problem: str | None = None
    reached_by: dict[int, bool] = field(default_factory=dict)
    where: str = ""
    captured: bool = False
    """Started inside ``$(...)`` for its output (a helper that prints a host list): when its
    script is not in the tree it is not training code of the tree, and does not hold the
    setting back."""
    args: list[str | None] = field(default_factory=list)
    """The words passed to the script (``None`` where computed): read for a framework's own
    precision flag (``--bf16``)."""
    forwards: list[int] = field(default_factory=list)
    """Indices into :attr:`args` of the words that are the launcher's own arguments
    (``"$@"``, ``$*``; each ``None`` in ``args``): what ``./run.sh ARGS`` passes on to the
    script (``verify run.sh -- ARGS`` puts ARGS there)."""
    isolated: bool = False
    """Started with an empty environment (``env -i``, Slurm's ``--export=NONE``): no setting of
    the launcher reaches it, only those on its own command line after the ``-i``."""
    inline: InlineCode | None = None
    """For ``python -c CODE`` (target :attr:`Target.INLINE`): where the code is and whether its
    migrated text can be written back there."""
    batch: bool = False
    """A Slurm batch script submitted by ``sbatch`` without an ``--export`` of its own: the
    script's ``#SBATCH`` directives decide what of the launcher's environment it gets
    (:attr:`Analysis.batch_isolated`)."""
    resolve_args: Callable[[Mapping[str, str], Sequence[str]], object] | None = field(
        default=None, compare=False, repr=False
    )
    """``resolve_args(environ, argv)``: :attr:`args` as the shell would expand them in the
    environment ``environ`` with the launcher's own arguments ``argv`` (a
    :class:`~.shell.launch_args.ResolvedArgs`); None where the carrier cannot (only a shell
    script's own launch lines can)."""


@dataclass
class Include:
    """The carrier loads another file's settings (``source env.sh``, ``--env-file .env``,
    compose ``env_file:``): that file's entries reach ``launches`` (indices into
    :attr:`Analysis.launches`). ``path`` is as written."""

    path: str
    line: int
    col: int
    launches: list[int] = field(default_factory=list)
    node: object = None
    local: bool = False
    resolved: int | None = field(default=None, compare=False, repr=False)
    """The index of the included file's carrier in the plan (set by :class:`.link.LinkPlanner`;
    None while it is not found in the tree)."""


@dataclass
class ComputedInclude:
    """A file the carrier loads (``source "$CONF_DIR/env.sh"``) through a path that stays
    computed: ``path`` as written, at ``line``; ``computed`` names what is computed (``$CONF_DIR
    (from the environment)``). Its settings cannot be followed to the launches after it."""

    path: str
    line: int
    computed: str


class Render(Protocol):
    """How an :class:`Analysis` renders its file: ``render(decisions, python=None) -> str``.

    ``decisions`` maps entry ids to a :class:`Decision` (a missing id is kept); ``python`` is the
    migrated source of the file's own Python (:attr:`Analysis.python`; a notebook's code cells),
    ``None`` to leave it as it is (and for a file without any). Returns the new text of the
    whole file, byte for byte the old one outside the edited spans."""

    def __call__(self, decisions: Mapping[int, Decision], python: str | None = None, /) -> str: ...


class EmbeddedPython(Protocol):
    """A carrier's own Python, migrated as one module (a notebook's code cells: see
    ``notebook.NotebookPython``): its ``source`` and the way back from a line of it."""

    source: str

    def map_diagnostic(self, d: Diagnostic) -> Diagnostic: ...


@dataclass
class Analysis:
    """Everything one carrier file holds for the planner.

    ``sr_present`` are the ``sr_scope`` keys in which the file already sets
    ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` (kept as is, BFM070). ``notes`` are the diagnostics the
    carrier found on its own (:class:`Note`). ``render`` maps the
    decisions (entry id -> remove/replace/keep) to the new text; ``handled`` are the character
    spans of the entries (anything naming a legacy variable outside them is reported)."""

    kind: str
    text: str
    entries: list[Entry] = field(default_factory=list)
    launches: list[Launch] = field(default_factory=list)
    includes: list[Include] = field(default_factory=list)
    computed_includes: list[ComputedInclude] = field(default_factory=list)
    sr_present: set = field(default_factory=set)
    notes: list[Note] = field(default_factory=list)
    handled: list[tuple[int, int]] = field(default_factory=list)
    render: Render | None = None
    """Set by the carrier's ``analyze`` (:class:`Render`)."""
    sr_covered: Callable[[Hashable], bool] | None = None
    python: EmbeddedPython | None = None  # notebook: the Python part (see notebook.py)
    launch_flags: Callable[[int, int, str, bool], list[Edit] | str] | None = None
    """``launch_flags(entry, launch, flag, sure)``: the edits that pass ``flag`` to the launch
    (an index into :attr:`launches`) on the paths where the entry (an id) is in force (every
    path when ``sure``), or why they cannot be made; None for a carrier that cannot
    (:mod:`.shell.flags` for shell scripts)."""
    added: list[Edit] = field(default_factory=list)
    """Edits the plan adds besides the entries' decisions (the flags of ``launch_flags``),
    rendered with them by a carrier that offers ``launch_flags``."""
    inline_code: dict[int, str] = field(default_factory=dict)
    """The migrated code of ``python -c`` launches (launch index -> code), set by the plan for
    the launches whose code changes and can be written back (:attr:`InlineCode.why_not`); the
    shell fragments render it (:mod:`.shell.inline`)."""
    batch_isolated: bool = False
    """A Slurm batch script whose ``#SBATCH --export`` list holds no ``ALL``: submitted by
    ``sbatch`` (a launch with :attr:`Launch.batch`), it gets none of the submitter's
    environment, so no setting of a launcher that submits it reaches its launches."""

    def new_entry(self, **kwargs) -> Entry:
        entry = Entry(id=len(self.entries), **kwargs)
        self.entries.append(entry)
        return entry


STOCHASTIC = STOCHASTIC_ROUNDING_VAR


class LineIndex:
    """Character offset <-> 1-based (line, column) for one text."""

    def __init__(self, text: str) -> None:
        self.starts = [0]
        for i, ch in enumerate(text):
            if ch == "\n":
                self.starts.append(i + 1)

    def pos(self, offset: int) -> tuple[int, int]:
        """1-based line and column of character ``offset``."""
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, offset - self.starts[lo] + 1

    def offset(self, line: int, col: int = 1) -> int:
        """Character offset of 1-based ``line``/``col``."""
        return self.starts[line - 1] + col - 1


class ByteMap:
    """Byte offsets of a UTF-8 encoding -> character offsets (tree-sitter works in bytes)."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8")
        self.ascii = len(self.data) == len(text)
        if not self.ascii:
            self.table = [0] * (len(self.data) + 1)
            b = 0
            for i, ch in enumerate(text):
                n = len(ch.encode("utf-8"))
                for k in range(n):
                    self.table[b + k] = i
                b += n
            self.table[b] = len(text)

    def char(self, byte_offset: int) -> int:
        """The character offset of ``byte_offset`` (an offset past the end maps to the end)."""
        if self.ascii:
            return min(byte_offset, len(self.data))
        return self.table[min(byte_offset, len(self.data))]


def line_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The span of the whole lines holding ``text[start:end]`` (through the newline) when
    nothing but blanks shares those lines with it (a trailing ``#`` comment also goes);
    ``None`` otherwise."""
    ls = text.rfind("\n", 0, start) + 1
    if text[ls:start].strip():
        return None
    le = text.find("\n", end)
    le = len(text) if le < 0 else le + 1
    rest = text[end:le].strip()
    if rest and not rest.startswith("#"):
        return None
    return ls, le


# -- the cross-file plan (:mod:`.link`) ----------------------------------------------------------
@dataclass
class CarrierFile:
    """A carrier to plan: its path, the root of the tree it was found in, its decoded text and
    encoding, and its :class:`Analysis`. ``render`` is False for a file loaded only to follow a
    launch or an include (it holds no legacy setting of its own)."""

    path: Path
    root: Path
    text: str
    encoding: str
    analysis: Analysis
    render: bool = True


@dataclass
class FileResult:
    """The outcome for one file: its new text (== ``old`` when unchanged) and diagnostics."""

    path: Path
    old: str
    new: str
    encoding: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    legacy_env: dict[str, str] = field(default_factory=dict)
    """For a migrated Python script, the legacy settings that were in force for it (what the
    modules of the tree it imports ran under; see :mod:`bf16_migrate.tree_modules`)."""
    helpers: list[str] = field(default_factory=list)
    """The helper functions the migrated script imports from ``--helpers-module``."""
    factory_changes: list = field(default_factory=list)
    """What the migrated script asks of the optimizer factories of its tree
    (:class:`bf16_migrate.python.FactoryChange`; carried out by :mod:`bf16_migrate.tree_modules`)."""
    switched: dict[str, str] = field(default_factory=dict)
    """For a migrated Python script, the legacy settings whose change it took, under a condition
    or not: the modules it imports get the audit of their model code for them."""
    loss_code: list[str] = field(default_factory=list)
    """For a migrated Python script, the qualified names of the imported functions and classes its
    step applies as its loss (``MigrationResult.loss_code``): audited in the tree's modules."""
    not_examined: list[str] = field(default_factory=list)
    """For a Python script that took the change, what its migration did not examine
    (:meth:`bf16_migrate.python.outcome.Outcome.unexamined`), each as ``path:line: what``
    (``path: what`` for the whole file): the run's summary names them."""
    f32_islands: list = field(default_factory=list)
    """The deliberate f32 islands the migration kept as written (``Outcome.f32_islands``,
    :class:`bf16_migrate.python.outcome.F32Island`): verify's dtype trace does not count them."""
    sets_on_import: dict[str, str] = field(default_factory=dict)
    """For a Python file refused for want of a model that sets legacy variables at module level (an
    ``env_setup.py``): those settings, followed to the scripts that import it
    (:mod:`bf16_migrate.env_modules`)."""
    sets_on_call: tuple[str, ...] = ()
    """With ``sets_on_import``, the functions that make them when called (``Outcome.sets_on_call``):
    only the importers that call one are followed."""
    launches: tuple = ()
    """For a Python launcher, the scripts it starts in a process of its own with legacy settings in the
    environment it hands them (:class:`bf16_migrate.python.outcome.LaunchedScript`), which the project
    follows (:func:`bf16_migrate.env_modules.migrate_launched`)."""
    handoffs: list = field(default_factory=list)
    """For a Python script migrated in amp, the functions of imported modules it hands its model to
    (:class:`bf16_migrate.python.ModelHandoff`, ``MigrationResult.handoffs``): their forward passes go under
    autocast in the tree's modules."""
    with_scripts: tuple[Path, ...] = ()
    """The Python scripts whose change this file's change goes with: for a launcher (or a file it
    loads), the scripts its legacy settings reach, decided together with them; for a module of the
    tree, the scripts that import it. What a ``# noqa`` that keeps one of them keeps with it
    (:func:`bf16_migrate.suppress.hold_noqa_writes`)."""


PlanNode: TypeAlias = tuple[Resolution, Path | int | tuple[int, int]]
"""A Python node of the plan: ``("py", resolved script path)``, ``("kernel", carrier index)`` or
``("inline", (carrier index, launch index))`` (the code of a ``python -c`` launch)."""


@dataclass
class Resolved:
    """What a launch starts, as the plan resolved it: ``kind`` ``"py"`` (a script of the tree
    that uses torch, at ``path``), ``"kernel"`` (a notebook's own Python), ``"inline"`` (the code
    of ``python -c``, ``path`` the carrier's), ``"shell"`` (a shell
    script of the tree, followed as a carrier), ``"none"`` (a Python launch that cannot be
    resolved: ``problem`` says why) or ``"ignored"`` (nothing of the tree's training code)."""

    kind: Resolution
    path: Path | None = None
    problem: str | None = None


def same_effect(a: Entry, b: Entry) -> bool:
    """Whether two settings of one variable leave it meaning the same to torch-xla (both set, to
    values ``GetEnvBool`` reads alike: ``1`` and ``true``), so that neither hides the other."""
    if a.action != SET or b.action != SET or a.value is None or b.value is None:
        return False
    return is_truthy(a.value) == is_truthy(b.value)


def decide_together(entries: list[Entry], a: int, b: int) -> None:
    """Entries ``a`` and ``b`` of one analysis put in one ``group`` (decided together: one hides
    the other where a process starts, so removing only the later one would put the earlier
    value in force), merging the groups they were in."""
    key = entries[a].group or entries[b].group or ("override", id(entries), b)
    for old in {entries[a].group, entries[b].group} - {None, key}:
        for entry in entries:
            if entry.group == old:
                entry.group = key
    entries[a].group = entries[b].group = key
