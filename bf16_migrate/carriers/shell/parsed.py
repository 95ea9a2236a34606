"""A shell fragment as read, in plain data: the parsed text (:class:`ShellSource`), the script's
functions (:class:`Functions`) and what the walk found (:class:`ParsedFragment`: entries,
launches, includes, env-file heredocs, the settings' events in execution order). The walk
(:mod:`.walk`) fills it; the passes (:mod:`.reach`, :mod:`.render`, :mod:`.flags`) read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter

from ..dotenv import Item as DotenvItem
from ..model import Action, Blocker, ByteMap, Include
from .slurm import ExportSite
from .words import parse


@dataclass(frozen=True)
class ShellSource:
    """One shell text and its tree-sitter-bash tree: ``text`` (as in the host file), ``data``
    (its UTF-8 bytes, which the tree's byte offsets index) and ``bm`` (bytes -> characters),
    ``path`` (the host file, for messages), ``pos`` (a character offset of ``text`` -> the
    1-based (line, col) of the host file) and ``base`` (where ``text`` starts in the host
    file, in characters)."""

    text: str
    path: str
    data: bytes
    bm: ByteMap
    pos: Callable[[int], tuple[int, int]]
    base: int
    tree: tree_sitter.Tree

    def t(self, node_or_span) -> str:
        """The text of a node, or of a ``(start, end)`` byte span."""
        s, e = (node_or_span.start_byte, node_or_span.end_byte) if hasattr(node_or_span, "start_byte") else node_or_span
        return self.data[s:e].decode("utf-8")

    def at(self, byte: int) -> tuple[int, int]:
        """The 1-based (line, col) in the host file of byte ``byte`` of ``data``."""
        return self.pos(self.bm.char(byte))


def read_source(text: str, path: str, pos: Callable[[int], tuple[int, int]], base: int = 0) -> ShellSource:
    """Parse ``text`` with tree-sitter-bash (:func:`.words.parser`); the tree may hold errors
    (``tree.root_node.has_error``), which the caller reports."""
    bm = ByteMap(text)
    data = bm.data
    # bash takes a `\` line continuation right before the end of the file as joining the line
    # with nothing (bash(1), "QUOTING"); tree-sitter-bash reports an error there, so it gets one
    # more newline (after every byte of the text: no offset moves)
    tail = data.rstrip(b"\n")
    continued = tail.endswith(b"\\") and (len(tail) - len(tail.rstrip(b"\\"))) % 2 == 1
    tree = parse(data + (b"\n" if continued else b""))
    return ShellSource(text, path, data, bm, pos, base, tree)


def statement_of(node: tree_sitter.Node) -> tree_sitter.Node:
    """The statement holding ``node``, with its redirections (``redirected_statement``)."""
    s = node
    while s.parent is not None and s.parent.type == "redirected_statement":
        s = s.parent
    return s


@dataclass
class Functions:
    """The script's functions: ``definitions`` (name -> ``function_definition`` node),
    ``first_calls`` (name -> the first command outside its body that calls it: where its body
    runs, bash(1) "FUNCTIONS") and ``dead`` (name -> why a setting in a function nothing calls
    is kept, and the reason worded for a message: :func:`.dead.uncalled_functions`)."""

    definitions: dict[str, tree_sitter.Node] = field(default_factory=dict)
    first_calls: dict[str, tree_sitter.Node] = field(default_factory=dict)
    dead: dict[str, tuple[Blocker, str]] = field(default_factory=dict)


@dataclass
class Ctx:
    """Where a node runs: ``key`` orders nodes in execution order, ``guard`` the branches
    ``(node id, tag)`` it needs, ``containers`` the subshells and pipeline elements around it."""

    key: tuple
    guard: tuple
    containers: tuple
    dead: tuple[Blocker, str] | None = None
    """Why the node never runs, or may not (:mod:`.dead`: a function nothing calls, a
    constant condition): why a setting there is kept (:attr:`Blocker.NEVER_IN_FORCE`: never
    runs; :attr:`Blocker.UNREWRITTEN_FORM`: when it runs cannot be told) and the reason, worded
    for a message; None when it runs as its place says."""


@dataclass
class Event:
    """Entry ``entry`` sets or unsets ``variable`` (``action``) at ``ctx``."""

    entry: int
    variable: str
    action: Action
    ctx: Ctx


@dataclass(frozen=True)
class Covering:
    """An ``if ... else ... fi`` (or a ``case`` with a ``*)`` item) each of whose branches sets
    ``variable`` to the same value among its own statements (``entries``): after it, the variable
    is set on every path, whichever branch ran. ``guard``: the guard path of the statement itself;
    ``branches``: the guard element of each branch (``(node id, tag)``, :mod:`.context`)."""

    variable: str
    entries: frozenset[int]
    guard: tuple
    branches: frozenset


@dataclass
class EntryData:
    """Where an entry of a shell fragment lives in its tree, what rendering needs of it: ``kind``
    (``decl``, ``decl-name``, ``unset``, ``assign``, ``prefix``, ``envword``, ``dotenv``), ``words``
    the nodes (or (start, end) byte spans) removed with it, ``owner`` the statement or command
    holding them, ``name`` the byte span of
    the variable's name, ``value`` the byte span of its value (both ``None`` when not renamed
    in place), ``whole`` a node replaced as a whole on rename (``-e "X=1"``)."""

    kind: str
    words: list
    owner: tree_sitter.Node | None
    name: tuple[int, int] | None = None
    value: tuple[int, int] | None = None
    whole: tuple[int, int] | None = None
    prefix: str = ""
    dotenv: tuple[int, DotenvItem] | None = None
    """For a ``dotenv`` entry (a heredoc line): the heredoc's start (characters) and its item."""
    decl: tree_sitter.Node | None = None
    all_words: list = field(default_factory=list)
    quote: str = ""
    export: ExportSite | None = None
    """For an ``exportitem`` entry (an item of a Slurm ``--export`` list): the list it is in."""


@dataclass
class IncludeSite:
    """An include of the fragment (``source F``, ``--env-file F``) at ``ctx``; ``command`` is
    the command node whose own launch it feeds (``docker run --env-file F ...``), None for a
    ``source`` that reaches every launch after it."""

    include: Include
    ctx: Ctx
    command: tree_sitter.Node | None = None


@dataclass
class Heredoc:
    """A heredoc that writes the env file ``target``, whose lines are the entries ``entries``."""

    target: str
    entries: list[int]
    ctx: Ctx


@dataclass
class FunctionCall:
    """A command ``node`` calling the script's function ``name`` with the argument words
    ``arguments``."""

    node: tree_sitter.Node
    name: str
    arguments: list[tree_sitter.Node]


@dataclass
class ParsedFragment:
    """What one walk of a shell fragment found (:func:`.walk.read_fragment`). Entries and
    launches are indices into the host's :class:`~..model.Analysis`: ``entries`` (in the order
    found, with their tree places in ``entry_data``), ``launches`` (with ``launch_ctx``,
    ``launch_node`` their command, and ``launch_of_node`` command node id -> launch), the
    ``events`` (settings in execution order, read by :mod:`.reach`), ``includes``,
    ``heredocs`` (env files written by the fragment), ``sr_scopes`` (where
    ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` is set: :func:`.reach.sr_covered`), ``prefix_entries``
    (command node id -> the entries of its ``X=1 cmd`` prefix), ``function_calls``. ``ok`` is
    False for a fragment that does not parse (then nothing else is read)."""

    source: ShellSource
    functions: Functions = field(default_factory=Functions)
    ok: bool = True
    entries: list[int] = field(default_factory=list)
    entry_data: dict[int, EntryData] = field(default_factory=dict)
    launches: list[int] = field(default_factory=list)
    launch_ctx: dict[int, Ctx] = field(default_factory=dict)
    launch_node: dict[int, tree_sitter.Node] = field(default_factory=dict)
    launch_of_node: dict[int, int] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    includes: list[IncludeSite] = field(default_factory=list)
    heredocs: list[Heredoc] = field(default_factory=list)
    sr_scopes: list[tuple] = field(default_factory=list)
    coverings: list[Covering] = field(default_factory=list)
    """The conditionals every branch of which sets a variable alike (:mod:`.reach`: in force on
    every path after them)."""
    prefix_entries: dict[int, list[int]] = field(default_factory=dict)
    function_calls: list[FunctionCall] = field(default_factory=list)
    allexport: bool = False
    inline_words: dict[int, tree_sitter.Node] = field(default_factory=dict)
    """Launch index -> the word holding the code of its ``python -c`` (:mod:`.inline`)."""
    one_line: bool = False
    """The fragment is one line of its host (a notebook's ``!`` line, a Dockerfile instruction)."""
    ipython: bool = False
    """The fragment is a notebook's ``!`` line, which IPython expands before the shell runs it."""
    batch_isolated: bool = False
    """A batch script whose ``#SBATCH --export`` list holds no ``ALL``: the job gets none of the
    environment ``sbatch`` was run in (:mod:`.slurm`)."""
