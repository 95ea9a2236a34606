"""Reading shell, in one walk of its tree: a script (the shell carrier) or the shell fragments
other carriers hold (Dockerfile ``RUN``/``CMD``, notebook ``!`` lines, YAML ``run:`` blocks),
into the entries and launches of an :class:`~..model.Analysis` and the plain data of
:class:`~.parsed.ParsedFragment`. Which settings reach which launch is :mod:`.reach`;
rendering is :mod:`.render`.

Parser: tree-sitter with the tree-sitter-bash grammar, chosen over bashlex after trying both on
the shapes launch scripts use. bashlex (a port of bash's own yacc grammar, last release 2023)
raised on ``[[ -n $X ]]``, ``$((1+0))``, quoted heredoc delimiters, ``case`` items and arrays;
tree-sitter-bash parsed all of them, is maintained by the tree-sitter organisation, ships
binary wheels for every platform (no compiler), and gives exact byte ranges for every node
(variable names, values, each word of a command, heredoc bodies), which is what a byte-exact
edit needs. A script tree-sitter cannot parse without error is reported (one line naming the
file and line), never edited.

What is read (every rule below is bash semantics, ``man bash``, unless said otherwise):

* ``export X=1`` / ``declare -x X=1`` anywhere (top level, functions, ``if``/``case``
  branches, ``&&`` lists), ``X=1`` followed by ``export X``, ``unset X`` and ``env -u X``:
  the variable is in force for the Python launches that follow it in execution order (a
  function's body runs where the function is first called), unless a subshell, a pipeline
  element or ``$(...)`` holds the export. An export on some paths only (a branch the launch is
  not in) reaches the launch *partially* (reported, BFM120).
* ``X=1 python t.py``, ``time X=1 torchrun ...``, ``env X=1 python ...``, ``docker run -e X=1
  IMAGE python ...`` (and ``--env``, ``--env=``), ``mpirun -x X=1``: in force for that command.
* heredocs that write an env file (``cat > .env <<EOF``, ``| tee x.env``): their ``KEY=VALUE``
  lines are entries, in force where the script loads that file (``source``, ``--env-file``).
  Any other heredoc naming a variable is reported, not edited.
* ``source F`` / ``. F`` / ``--env-file F``: includes (``F``'s entries reach what follows).
* ``$X`` / ``${X:-...}``: reads, reported (BFM132).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import tree_sitter

from ...command_lines import Command, read_command
from ...diagnostics import message
from .. import dotenv
from ..model import (
    PASS,
    SET,
    STOCHASTIC,
    UNSET,
    Action,
    Analysis,
    Blocker,
    CarrierError,
    ComputedInclude,
    Include,
    Launch,
    LineIndex,
    Note,
    Target,
)
from ..text import find_mentions, legacy_names
from .branches import coverings
from .calls import (
    CallLaunch,
    describe_computed,
    enclosing_function,
    expanded,
    follow_calls,
    forwards_arguments,
    inside_function,
)
from .context import Contexts, index_functions
from .expand import COMPUTED, Expander, mentions_expansion
from .inline import IPYTHON_EXPANDS, inline_code
from .launch_args import resolve_args
from .parsed import (
    EntryData,
    Event,
    FunctionCall,
    Heredoc,
    IncludeSite,
    ParsedFragment,
    ShellSource,
    read_source,
    statement_of,
)
from .slurm import (
    UNEDITABLE,
    ExportSite,
    computed_word,
    directive_block_end,
    directive_exports,
    is_directive,
    other_scheduler,
    site_in_word,
)
from .words import first_error, heredoc_target, is_env_file_name, positional_all, static_value


def read_fragment(
    text: str,
    path: str,
    analysis: Analysis,
    pos: Callable[[int], tuple[int, int]] | None = None,
    embedded: bool = False,
    base: int = 0,
    one_line: bool = False,
    ipython: bool = False,
    batch: bool = False,
) -> ParsedFragment:
    """Read one shell text (a script, or a fragment of another file at character ``base`` of
    it) in one walk of its tree: its entries, launches, includes and notes are added to
    ``analysis`` and listed, with their places in the tree, in the returned
    :class:`~.parsed.ParsedFragment`. The launches its functions start are found at their calls
    (:func:`.calls.follow_calls`). Who reaches which launch is :func:`.reach.link`'s.

    ``pos`` maps a character offset of ``text`` to the 1-based (line, col) reported in the host
    file (default: ``text``'s own). A text tree-sitter-bash cannot parse raises
    :class:`CarrierError` (``path:line:col: ...``), or, ``embedded`` (a fragment of another
    file), is noted (BFM131 at each legacy name) and returned with ``ok`` False. ``one_line``: the
    text is one line of its host; ``ipython``: a notebook's ``!`` line (:mod:`.inline`). ``batch``:
    a whole script, whose ``#SBATCH`` directives are read as settings of its environment
    (:mod:`.slurm`)."""
    source = read_source(text, path, pos or LineIndex(text).pos, base)
    parsed = ParsedFragment(source, one_line=one_line, ipython=ipython)
    root = source.tree.root_node
    if root.has_error:
        bad = first_error(root)
        line, col = source.at(bad.start_byte)
        msg = f"{path}:{line}:{col}: cannot parse as a shell script (bash syntax error or unsupported construct)"
        if not embedded:
            raise CarrierError(msg)
        parsed.ok = False
        _note_mentions(source, analysis, 0, len(text), "BFM131", where="in a shell command bf16-migrate cannot parse")
        return parsed
    parsed.functions = index_functions(source)
    reader = _Reader(parsed, analysis)
    reader.directives_end = directive_block_end(source.data) if batch else None
    reader.walk(root)
    for found in follow_calls(parsed, reader.expander):
        reader.add_call_launch(found)
    reader.check_exports()
    reader.settle_directives()
    parsed.coverings = coverings(reader.set_nodes, reader.contexts)
    return parsed


def _note_mentions(
    source: ShellSource,
    analysis: Analysis,
    start_char: int,
    end_char: int,
    code: str,
    variant: str | None = None,
    /,
    **fields: object,
) -> None:
    """A note ``code`` at each legacy name in ``text[start_char:end_char]``, worded by the
    catalogue's template with ``variable`` (the name) and ``fields``
    (:func:`bf16_migrate.diagnostics.message`); the name's span is handled."""
    for var, off in find_mentions(source.text[start_char:end_char], legacy_names()):
        line, col = source.pos(start_char + off)
        analysis.notes.append(Note(code, line, col, message(code, variant, variable=var, **fields)))
        analysis.handled.append((source.base + start_char + off, source.base + start_char + off + len(var)))


def command_words(node: tree_sitter.Node) -> list[tree_sitter.Node]:
    """The name and argument word nodes of a ``command`` node, in order."""
    name = node.child_by_field_name("name")
    return ([name] if name is not None else []) + list(node.children_by_field_name("argument"))


def _word_node(node: tree_sitter.Node) -> tree_sitter.Node:
    """The word itself of a command's name (``command_name`` holds it)."""
    if node.type == "command_name" and node.named_children:
        return node.named_children[0]
    return node


def _sets_allexport(args: list[str | None]) -> bool:
    """Whether ``set`` with these words turns on allexport: ``-a``, ``-o allexport``, or a
    cluster of short options holding ``a`` (bash(1), "SHELL BUILTIN COMMANDS", ``set``)."""
    for word in args:
        if word in ("-a", "allexport"):
            return True
        flag = word or ""
        if flag.startswith("-") and "a" in flag and not flag.startswith("--"):
            return True
    return False


class _Reader:
    """The walk of one parsed fragment: each node kind read by its own method into ``parsed``
    (and the entries, launches, includes and notes into ``analysis``)."""

    def __init__(self, parsed: ParsedFragment, analysis: Analysis) -> None:
        self.parsed = parsed
        self.source = parsed.source
        self.analysis = analysis
        self.legacy = legacy_names()
        self.contexts = Contexts(parsed.source, parsed.functions)
        self.expander = Expander(parsed.source, self.contexts)
        self.directives_end: int | None = None  # a batch script's #SBATCH directives lie before this byte
        self.export_sites: dict[tuple[int, int], ExportSite] = {}
        self.directive_sites: list[tuple[int, ExportSite]] = []  # (line, site) of each #SBATCH --export
        self.set_nodes: list[tuple[int, str, str, tree_sitter.Node]] = []  # (entry, variable, value, node)

    # -- helpers ------------------------------------------------------------------------------
    def _note(self, code: str, byte: int, variant: str | None = None, /, **fields: object) -> None:
        """The note ``code`` at ``byte``, worded by the catalogue's template
        (:func:`bf16_migrate.diagnostics.message`)."""
        line, col = self.source.at(byte)
        self.analysis.notes.append(Note(code, line, col, message(code, variant, **fields)))

    def _handled(self, start: int, end: int) -> None:
        bm, base = self.source.bm, self.source.base
        self.analysis.handled.append((base + bm.char(start), base + bm.char(end)))

    def _note_mentions(
        self, start_char: int, end_char: int, code: str, variant: str | None = None, /, **fields: object
    ) -> None:
        _note_mentions(self.source, self.analysis, start_char, end_char, code, variant, **fields)

    def add_call_launch(self, found: CallLaunch) -> None:
        """Record what following a call found (:func:`.calls.follow_calls`): a launch at the
        call, or more settings reaching a launch of the function's body."""
        if found.launch is not None:
            self.add_launch(found.launch, found.entries, found.call)
            return
        assert found.inner is not None, "a call launch without its own launch names the body's"
        for eid in found.entries:
            self.analysis.launches[found.inner].reached_by.setdefault(eid, True)

    # -- the walk -------------------------------------------------------------------------------
    def walk(self, root) -> None:
        """Read every node of the tree, in document order."""
        stack = [root]
        while stack:
            node = stack.pop()
            kind = node.type
            if kind == "declaration_command":
                self._declaration(node)
            elif kind == "unset_command":
                self._unset(node)
            elif (
                kind in ("variable_assignment", "variable_assignments")
                and node.parent is not None
                and node.parent.type not in ("declaration_command", "command", "variable_assignments")
            ):
                self._bare_assignments(node)
            elif kind == "command":
                self._command(node)
            elif kind == "heredoc_redirect":
                self._heredoc(node)
            elif kind in ("simple_expansion", "expansion"):
                self._read(node)
            elif kind == "comment":
                self._comment(node)
            stack.extend(reversed(node.children))

    def check_exports(self) -> None:
        """``X=1`` reaches child processes only once exported (``export X``, ``set -a``); a
        bare ``export X`` or ``docker run -e X`` passes a value set elsewhere."""
        entries = [self.analysis.entries[i] for i in self.parsed.entries]
        exported = {
            e.variable for e in entries if self.parsed.entry_data[e.id].kind == "decl-name" and e.problem is None
        }
        assigned = {
            e.variable for e in entries if e.action == SET and self.parsed.entry_data[e.id].kind in ("decl", "assign")
        }
        for e in entries:
            kind = self.parsed.entry_data[e.id].kind
            if kind == "assign" and e.variable not in exported and not self.parsed.allexport and e.problem is None:
                e.problem = (
                    f"{e.variable} is assigned but not exported here, so the processes this script starts see it only "
                    "if the environment already exported it: edit it by hand"
                )
            if e.action == PASS and e.variable not in assigned and e.problem is None:
                e.problem = (
                    f"{e.variable} is passed on with the value it has in the environment this runs in: remove it by "
                    "hand where that value is set"
                )

    def _legacy_or_sr(self, name: str) -> str | None:
        if name in self.legacy:
            return "legacy"
        if name == STOCHASTIC:
            return "sr"
        return None

    def _scope(self, node, cmd=None) -> tuple:
        c = self.contexts.of(node)
        return (c.guard, c.containers, cmd)

    def _add(
        self,
        variable: str,
        action: Action,
        value: str | None,
        name_byte: int,
        data: EntryData,
        problem: str | None = None,
        event_node=None,
        group: bool = True,
        scope: tuple | None = None,
    ) -> int:
        line, col = self.source.at(name_byte)
        entry = self.analysis.new_entry(
            variable=variable,
            action=action,
            value=value,
            line=line,
            col=col,
            sr_scope=scope,
            problem=problem,
            data=("shell", id(self.parsed)),
        )
        entry.group = ("var", self.source.path, variable) if group else None
        self.parsed.entry_data[entry.id] = data
        self.parsed.entries.append(entry.id)
        self._handled(name_byte, name_byte + len(variable.encode()))
        if event_node is not None:
            self.parsed.events.append(Event(entry.id, variable, action, self.contexts.of(event_node)))
            if action == SET and value is not None:
                self.set_nodes.append((entry.id, variable, value, event_node))
        return entry.id

    def _declared_legacy(self, name: str, exported: bool, node) -> bool:
        """Whether a declared name is a legacy variable; an exported stochastic-rounding
        setting is remembered for its scope on the way (BFM070: not set twice)."""
        kind = self._legacy_or_sr(name)
        if kind == "sr" and exported:
            self.parsed.sr_scopes.append(self._scope(node))
        return kind == "legacy"

    def _declaration(self, node) -> None:
        """``export``/``declare``/``local``/``readonly``/``typeset`` with its options: each
        ``X=1`` it makes and each bare ``X`` it exports (``export X``: the value set elsewhere)."""
        keyword = node.children[0].type if node.children else ""
        words = [c for c in node.children[1:] if c.is_named]
        flags = [self.source.t(w) for w in words if w.type == "word" and self.source.t(w).startswith("-")]
        exported = keyword == "export" or any("x" in f for f in flags if f.startswith("-") and not f.startswith("--"))
        unexport = any(f == "-n" for f in flags)
        for w in words:
            if w.type == "variable_assignment":
                self._declared_assignment(node, w, keyword, flags, exported, unexport)
            elif w.type == "variable_name":
                self._declared_name(node, w, keyword, exported, unexport)

    def _declared_assignment(self, node, w, keyword: str, flags: list[str], exported: bool, unexport: bool) -> None:
        """``export X=1`` (``declare X=1``, ``export -n X=1``: the value stays in the shell)."""
        name_node = w.child_by_field_name("name")
        value_node = w.child_by_field_name("value")
        name = self.source.t(name_node)
        if not self._declared_legacy(name, exported, node):
            return
        problem = None
        if not exported or unexport:
            problem = (
                f"`{keyword} {' '.join(flags)}` does not export {name}"
                if flags
                else f"`{keyword}` does not export {name} to the processes the script starts"
            )
        value = "" if value_node is None else static_value(value_node, self.source.data)
        data = EntryData(
            "decl",
            [w],
            statement_of(node),
            (name_node.start_byte, name_node.end_byte),
            None if value_node is None else (value_node.start_byte, value_node.end_byte),
        )
        data.decl = node
        self._add(name, SET, value, name_node.start_byte, data, problem, event_node=node, scope=self._scope(node))

    def _declared_name(self, node, w, keyword: str, exported: bool, unexport: bool) -> None:
        """``export X``: passes on the value ``X`` has (``export -n X`` takes it out)."""
        name = self.source.t(w)
        if not self._declared_legacy(name, exported, node):
            return
        data = EntryData("decl-name", [w], statement_of(node), (w.start_byte, w.end_byte))
        data.decl = node
        problem = None
        if unexport:
            problem = f"`{keyword} -n` takes {name} out of the environment: edit it by hand"
        elif not exported:
            problem = f"`{keyword}` here does not export {name}"
        self._add(name, PASS, None, w.start_byte, data, problem, event_node=None, scope=self._scope(node))

    def _unset(self, node) -> None:
        stmt = statement_of(node)
        for w in node.named_children:
            if w.type == "variable_name" or (w.type == "word" and not self.source.t(w).startswith("-")):
                name = self.source.t(w)
                if name in self.legacy:
                    data = EntryData("unset", [w], stmt)
                    data.decl = node
                    self._add(name, UNSET, None, w.start_byte, data, event_node=node, scope=self._scope(node))

    def _bare_assignments(self, node) -> None:
        items = (
            [node]
            if node.type == "variable_assignment"
            else [c for c in node.named_children if c.type == "variable_assignment"]
        )
        stmt = statement_of(node)
        scope = self._scope(node)
        for w in items:
            legacy = self._legacy_assignment(w, scope)
            if legacy is None:
                continue
            name, value, name_span, value_span = legacy
            data = EntryData("assign", [w], stmt, name_span, value_span)
            data.decl = node
            self._add(name, SET, value, name_span[0], data, event_node=node, scope=scope)

    def _legacy_assignment(
        self, a, scope: tuple
    ) -> tuple[str, str | None, tuple[int, int], tuple[int, int] | None] | None:
        """A ``NAME=VALUE`` assignment node that sets a legacy variable: ``(name, static value,
        name's byte span, value's byte span or None)``; None for any other variable (the scope
        is noted when it sets NEURON_RT_STOCHASTIC_ROUNDING_EN)."""
        name_node = a.child_by_field_name("name")
        value_node = a.child_by_field_name("value")
        name = self.source.t(name_node)
        kind = self._legacy_or_sr(name)
        if kind == "sr":
            self.parsed.sr_scopes.append(scope)
        if kind != "legacy":
            return None
        value = "" if value_node is None else static_value(value_node, self.source.data)
        return (
            name,
            value,
            (name_node.start_byte, name_node.end_byte),
            None if value_node is None else (value_node.start_byte, value_node.end_byte),
        )

    def _command(self, node) -> None:
        """A simple command: its prefix settings (``X=1 python ...``), the settings its
        wrapper words carry (``env X=1``, ``docker run -e X``), the files it loads, and the
        Python it starts (directly, through a function of the script, or through expansions)."""
        word_nodes = command_words(node)
        words = [self._word(_word_node(w)) for w in word_nodes]
        cmd = read_command(words)
        entry_ids = self._command_settings(node, cmd, word_nodes)
        self._loads_and_mentions(node, cmd, words, word_nodes)
        self.parsed.prefix_entries[node.id] = list(entry_ids)
        base = words[0] if words else None
        if self._calls_function(node, base, word_nodes):
            return  # followed at each call (calls.follow_calls)
        if forwards_arguments(self.source, node, word_nodes, self.contexts):
            return  # `python3 "$@"` in a function body: read at each call (calls.follow_calls)
        read = cmd
        cmd = self._through_expansions(node, cmd, word_nodes)
        if cmd is not read:
            word_nodes = []  # the words came from the script's variables: none of them is written here
        if base == "set" and _sets_allexport(words[1:]):
            self.parsed.allexport = True
        if base in ("source", ".") and len(words) > 1:
            path = words[1] if words[1] is not None else self._expanded_path(word_nodes[1], node)
            if path is not None:
                self._include(path, node, command=None)
            else:
                self._computed_include(word_nodes[1], node)
        if cmd.python or cmd.target is not None:
            self._launch(node, cmd, entry_ids, word_nodes if len(words) == len(word_nodes) else None)

    def _command_settings(self, node, cmd: Command, word_nodes: list) -> list[int]:
        """The entries in force for this command only: its ``X=1`` prefix (dropped by ``env
        -i``, which clears the environment the prefix gave it) and its wrapper words' settings."""
        assignments = [c for c in node.children if c.type == "variable_assignment"]
        scope = self._scope(node, node.id)
        entry_ids = self._prefix_settings(node, assignments, word_nodes, scope)
        if cmd.isolated:  # `X=1 env -i python ...`: the prefix goes to env, which drops it
            entry_ids = []
        return entry_ids + self._wrapper_settings(node, cmd, assignments, word_nodes, scope)

    def _calls_function(self, node, base: str | None, word_nodes: list) -> bool:
        """Whether the command calls a function of the script from outside its body: then the
        call is recorded, to be followed (:func:`.calls.follow_calls`)."""
        functions = self.parsed.functions
        if base is None or base not in functions.definitions or inside_function(functions, node, base):
            return False
        self.parsed.function_calls.append(FunctionCall(node, base, word_nodes[1:]))
        return True

    def _through_expansions(self, node, cmd: Command, word_nodes: list) -> Command:
        """``cmd`` read through the variables its words expand (:func:`.calls.expanded`) when,
        as written, it starts no script that can be named."""
        if not (cmd.problem or not (cmd.python or cmd.target)):
            return cmd
        if not any(mentions_expansion(w) for w in word_nodes):
            return cmd
        through = expanded(self.expander, word_nodes, node)
        return cmd if through is None else through

    def _expanded_path(self, word_node, node) -> str | None:
        """The one path the word ``word_node`` of the command ``node`` expands to through the
        script's variables (:mod:`.expand`: ``"$HERE/config/env.sh"`` with ``HERE`` the script's
        own directory), or None when it is computed or can be more than one path."""
        if not mentions_expansion(word_node):
            return None
        expansions = self.expander.words([word_node], node)
        paths = {tuple(e.words) for e in expansions or ()}
        if len(paths) != 1:
            return None
        (words,) = paths
        if len(words) != 1 or words[0] is None or COMPUTED in words[0]:
            return None
        return words[0]

    def _computed_include(self, word_node, node) -> None:
        """``source "$CONF_DIR/env.sh"`` whose path stays computed: recorded with what is computed,
        for the finding of the file it may load (BFM110)."""
        expansions = self.expander.words([word_node], node) or []
        names: dict[str, int] = {}
        for expansion in expansions:
            names.update(expansion.computed)
        paths = sorted({" ".join(w or COMPUTED for w in e.words) for e in expansions})
        computed = ", ".join(describe_computed(n, line) for n, line in sorted(names.items())) or (
            f"one of {', '.join(paths)}, by the branch taken" if len(paths) > 1 else "its value"
        )
        line = self.source.at(node.start_byte)[0]
        self.analysis.computed_includes.append(ComputedInclude(self.source.t(word_node), line, computed))

    def _include(self, path: str, node, command) -> None:
        """The file ``path`` loaded at ``node``: for every launch after it (``source``), or for
        the launch of ``command`` alone (``--env-file``)."""
        inc = Include(path, *self.source.at(node.start_byte))
        self.analysis.includes.append(inc)
        self.parsed.includes.append(IncludeSite(inc, self.contexts.of(node), command))

    def _prefix_settings(self, node, assignments: list, word_nodes: list, scope: tuple) -> list[int]:
        """``X=1 cmd``: entries in force for this command only."""
        entry_ids = []
        for a in assignments:
            legacy = self._legacy_assignment(a, scope)
            if legacy is None:
                continue
            var, value, name_span, value_span = legacy
            data = EntryData("prefix", [a], node, name_span, value_span)
            data.all_words = assignments + word_nodes
            entry_ids.append(self._add(var, SET, value, name_span[0], data, group=False, scope=scope))
        return entry_ids

    def _wrapper_settings(self, node, cmd: Command, assignments: list, word_nodes: list, scope: tuple) -> list[int]:
        """Settings carried by wrapper words (:attr:`.launch.Command.env`): the entries set or
        passed for this command (an ``env -u`` unsets for it only, and is no launch's entry)."""
        entry_ids = []
        for ew in cmd.env:
            kind = self._legacy_or_sr(ew.name)
            if kind == "sr" and ew.action == SET:
                self.parsed.sr_scopes.append(scope)
            if kind != "legacy":
                continue
            vnode = word_nodes[ew.value_word]
            vnode_word = vnode.named_children[0] if vnode.type == "command_name" and vnode.named_children else vnode
            if ew.listed is not None:
                entry_ids.append(self._export_item(node, cmd, ew, vnode_word, scope))
                continue
            raw = self.source.t(vnode_word)
            quote = raw[0] if raw[:1] in ("'", '"') else ""
            name_start = vnode_word.start_byte + len(quote.encode()) + len(ew.prefix.encode())
            data = EntryData(
                "envword",
                [word_nodes[k] for k in ew.words],
                node,
                whole=(vnode_word.start_byte, vnode_word.end_byte),
                prefix=ew.prefix,
            )
            data.all_words = assignments + word_nodes
            data.quote = quote
            if raw[len(quote) :].startswith(ew.prefix + ew.name):
                data.name = (name_start, name_start + len(ew.name.encode()))
            if ew.action == PASS:
                eid = self._add(ew.name, PASS, None, name_start, data, scope=scope)
            else:
                eid = self._add(ew.name, ew.action, ew.value, name_start, data, group=ew.action == UNSET, scope=scope)
            if ew.action == UNSET:
                self.parsed.events.append(
                    Event(eid, ew.name, UNSET, self.contexts.of(node))
                )  # env -u: this command only
                self.analysis.entries[eid].group = None
            else:
                entry_ids.append(eid)
        return entry_ids

    def _loads_and_mentions(self, node, cmd: Command, words: list[str | None], word_nodes: list) -> None:
        """The env files the command loads (``--env-file``), and the names in a ``sh -c``
        string or a message it prints (reported, not rewritten)."""
        if cmd.inner is not None:
            inner_node = word_nodes[cmd.inner]
            inner_text = self.source.t(inner_node)
            if any(v in inner_text for v in self.legacy):
                self._note_mentions(
                    self.source.bm.char(inner_node.start_byte),
                    self.source.bm.char(inner_node.end_byte),
                    "BFM131",
                    where="inside a `sh -c` string",
                )
        for f in cmd.env_files:
            self._include(f, node, command=node)
        # `--env-file "$(dirname "$0")/xla.env"`: a path the script's variables or its own directory give
        # (:meth:`_expanded_path`), as `source` reads one (found by a hunt: the file was said to reach no script)
        for i, word in enumerate(words[:-1]):
            if word == "--env-file" and words[i + 1] is None and i + 1 < len(word_nodes):
                path = self._expanded_path(word_nodes[i + 1], node)
                if path is not None:
                    self._include(path, node, command=node)
                else:
                    self._computed_include(word_nodes[i + 1], node)
        if words and words[0] in ("echo", "printf"):
            for arg in word_nodes[1:]:
                self._note_mentions(
                    self.source.bm.char(arg.start_byte), self.source.bm.char(arg.end_byte), "BFM091", "echo"
                )

    def _launch(self, node, cmd: Command, entry_ids: list[int], word_nodes: list | None = None) -> None:
        """The Python launch of ``node``, reached by its own prefix and wrapper settings;
        ``word_nodes``: the command's word nodes, one per word read (None when the words came
        from an expansion): the script's arguments are their tail, and those that are the
        launcher's own arguments (``"$@"``) are marked in ``Launch.forwards``."""
        line, col = self.source.at(node.start_byte)
        text = self.source.t(node).split("\n", 1)[0].strip().rstrip("\\").rstrip()
        launch = Launch(
            line,
            col,
            text[:100],
            cmd.target,
            cmd.problem,
            args=list(cmd.args),
            captured=self._captured(node),
            isolated=cmd.isolated,
            batch=cmd.batch and not cmd.export_lists,
        )
        if word_nodes is not None and cmd.args:
            tail = word_nodes[len(word_nodes) - len(cmd.args) :]
            launch.forwards = [
                i for i, w in enumerate(tail) if cmd.args[i] is None and positional_all(w, self.source.data)
            ]
            if (
                any(arg is None for arg in cmd.args) and enclosing_function(node, self.contexts) is None
            ):  # a body: its caller's args
                launch.resolve_args = functools.partial(resolve_args, self.expander, tail, node)
        if cmd.target is not None and cmd.target[0] == Target.INLINE:
            self._inline(launch, cmd, word_nodes)
        idx = self.add_launch(launch, entry_ids, node)
        self.parsed.launch_of_node[node.id] = idx
        if launch.inline is not None and launch.inline.why_not is not None and cmd.inline is not None and word_nodes:
            self.parsed.inline_words[idx] = word_nodes[cmd.inline]
        for site in self.parsed.includes:
            if site.command is node:
                site.include.launches.append(idx)

    def _inline(self, launch: Launch, cmd: Command, word_nodes: list | None) -> None:
        """``python -c CODE``: the code, where it is and how it is written back (:mod:`.inline`);
        in a ``!`` line, code IPython would expand cannot be told (a problem)."""
        assert cmd.target is not None, "an inline launch has its code"
        code = cmd.target[1]
        parsed = self.parsed
        if parsed.ipython and any(c in code for c in IPYTHON_EXPANDS):
            launch.problem = "IPython expands the `{`, `}` or `$` of the code in this `!` line before the shell runs it"
            return
        word = word_nodes[cmd.inline] if word_nodes and cmd.inline is not None else None
        launch.inline = inline_code(self.source, word, cmd.inline_attached, code, parsed.one_line, parsed.ipython)

    def add_launch(self, launch: Launch, entry_ids, node) -> int:
        """Record ``launch`` (started at the syntax ``node``) as this fragment's, reached by the
        settings ``entry_ids`` made for its command alone (``X=1 cmd``); returns its index."""
        for eid in entry_ids:
            launch.reached_by[eid] = True
        self.analysis.launches.append(launch)
        idx = len(self.analysis.launches) - 1
        self.parsed.launches.append(idx)
        self.parsed.launch_ctx[idx] = self.contexts.of(node)
        self.parsed.launch_node[idx] = node
        return idx

    @staticmethod
    def _captured(node) -> bool:
        anc = node.parent
        while anc is not None:
            if anc.type == "command_substitution":
                return True
            if anc.type == "function_definition":
                return False
            anc = anc.parent
        return False

    def _comment(self, node) -> None:
        """A comment sets nothing: its mentions of a variable are not settings; but a batch
        script's ``#SBATCH`` directive is read by sbatch (:meth:`_directive`)."""
        at_line_start = node.start_byte == 0 or self.source.data[node.start_byte - 1 : node.start_byte] == b"\n"
        line = self.source.data[node.start_byte : node.end_byte]
        scheduler = other_scheduler(line) if self.directives_end is not None and at_line_start else None
        if scheduler is not None:  # a PBS, Grid Engine, LSF... directive: read by that scheduler, not rewritten
            self._note_mentions(
                self.source.bm.char(node.start_byte), self.source.bm.char(node.end_byte), "BFM115", scheduler=scheduler
            )
        if self.directives_end is not None and is_directive(line):
            if node.start_byte < self.directives_end and at_line_start:
                self._directive(node, line)
                return
            # sbatch reads none of it: the variable it seems to set is not set (BFM114)
            why = "it does not start the line" if not at_line_start else "it comes after the script's first command"
            self._note_mentions(
                self.source.bm.char(node.start_byte), self.source.bm.char(node.end_byte), "BFM114", why=why
            )
        self._handled(node.start_byte, node.end_byte)

    def _directive(self, node, line: bytes) -> None:
        """A ``#SBATCH`` line: the legacy items of its ``--export`` lists are settings of the
        environment the whole script runs in, as an ``export`` at its start (:mod:`.slurm`); a
        list without ``ALL`` isolates the job from the environment sbatch runs in. Any other
        legacy name on the line is left to the coverage check (reported, never silent)."""
        found = directive_exports(line, node.start_byte)
        if isinstance(found, str):  # sbatch refuses the whole script (fatal): so does the rewrite
            at = self.source.at(node.start_byte)
            raise CarrierError(f"{self.source.path}:{at[0]}:{at[1]}: {found}")
        for directive in found:
            site = directive.site
            self.directive_sites.append((self.source.at(node.start_byte)[0], site))
            for index, item in enumerate(site.listed.items):
                kind = self._legacy_or_sr(item.name or "")
                if kind == "sr" and item.value is not None:
                    self.parsed.sr_scopes.append(self._scope(node))
                if kind == "legacy":
                    self._list_entry(node, site, index, self._scope(node), event=True)

    def settle_directives(self) -> None:
        """sbatch takes the last ``--export`` it reads (a later option replaces an earlier one,
        as getopt_long reads options): the job's environment is that list's. The items of an
        earlier ``#SBATCH --export`` never take effect (kept and reported, BFM092: their events
        are dropped), and whether the job gets the submitter's environment is the last list's."""
        if not self.directive_sites:
            return
        last_line, last = self.directive_sites[-1]
        self.parsed.batch_isolated = last.listed.isolates
        overridden = {eid for _, site in self.directive_sites[:-1] for eid in site.entries.values()}
        if not overridden:
            return
        self.parsed.events = [ev for ev in self.parsed.events if ev.entry not in overridden]
        for eid in overridden:
            entry = self.analysis.entries[eid]
            entry.problem = (
                f"the #SBATCH --export on line {last_line} replaces this one (sbatch takes the last): it never takes "
                "effect"
            )
            entry.blocker = Blocker.NEVER_IN_FORCE

    def _export_item(self, node, cmd: Command, ew, word_node, scope: tuple) -> int:
        """The entry of one legacy item of a command's Slurm ``--export`` list (``sbatch``,
        ``srun``), in force for that command alone; the list is one :class:`.slurm.ExportSite`
        shared by its items."""
        key = (node.id, ew.value_word)
        site = self.export_sites.get(key)
        if site is None:
            listed = next(found for index, found in cmd.export_lists if index == ew.value_word)
            site = site_in_word(self.source.t(word_node), listed, word_node.start_byte)
            self.export_sites[key] = site
        index = site.listed.items.index(ew.listed)
        return self._list_entry(node, site, index, scope, event=False)

    def _list_entry(self, node, site: ExportSite, index: int, scope: tuple, event: bool) -> int:
        """The entry of item ``index`` of the ``--export`` list ``site`` (``event``: a setting of
        the whole script's environment, a directive's; else of its command alone)."""
        item = site.listed.items[index]
        assert item.name is not None, "a variable item"
        if site.start is not None:
            name_byte = site.item_byte(index)
        else:  # the list is not edited in place: the name as found in its command or directive
            found = self.source.data.find(item.name.encode(), node.start_byte, node.end_byte)
            name_byte = found if found >= 0 else node.start_byte
        action = SET if item.value is not None else PASS
        value = None if item.value is None or COMPUTED in item.value else item.value
        problem = site.problem
        if problem is None and not site.written_as_read(index):
            problem = UNEDITABLE
        if problem is None and action == SET and value is None:
            problem = f"the value of {item.name} is computed when the job is submitted: edit it by hand"
        if problem is None and event and value is not None and "$" in value:
            value, problem = (
                None,
                (
                    f"Slurm does not expand an #SBATCH line: {item.name} is set to the text {item.value} itself: "
                    "edit it by hand"
                ),
            )
        if problem is None and action == PASS:
            problem = (
                f"{item.name} is passed on with the value it has where the job is submitted: remove it by hand "
                "where that value is set"
            )
        data = EntryData("exportitem", [], node)
        data.export = site
        eid = self._add(
            item.name, action, value, name_byte, data, problem, event_node=node if event else None, scope=scope
        )
        if action == SET and value is None:
            self.analysis.entries[eid].blocker = Blocker.COMPUTED_VALUE
        site.entries[index] = eid
        return eid

    def _word(self, node) -> str | None:
        """A command word's static value; an option whose value is computed
        (``--nproc_per_node="$n"``) keeps its static ``--name=`` with a NUL for the value, so
        the command can still be read."""
        value = static_value(node, self.source.data)
        if value is None and (listed := computed_word(node, self.source.data, static_value)) is not None:
            return listed  # a Slurm --export list with computed items: its static ones are still read
        if value is None and node.type == "concatenation" and node.named_children:
            head = static_value(node.named_children[0], self.source.data)
            if head is not None and head.startswith("-") and "=" in head:
                return head + "\0"
        return value

    def _heredoc(self, node) -> None:
        """A heredoc naming a variable: read as an env file (:func:`.dotenv.parse`) when it
        writes one, its lines then entries in force where that file is loaded; else reported."""
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return
        body_text = self.source.t(body)
        if not any(v in body_text for v in self.legacy):
            return
        target = heredoc_target(node, self.source.data)
        start_c, end_c = self.source.bm.char(body.start_byte), self.source.bm.char(body.end_byte)
        if target is None or not is_env_file_name(target):
            self._note_mentions(start_c, end_c, "BFM131", "heredoc")
            return
        delim = next((c for c in node.children if c.type == "heredoc_start"), None)
        quoted = delim is not None and self.source.t(delim)[:1] in ("'", '"', "\\")
        parsed = dotenv.parse(
            self.source.text[start_c:end_c],
            self.source.path,
            lambda off: self.source.pos(start_c + off),
            expand=not quoted,
        )
        ids = []
        for item in parsed.items:
            kind = self._legacy_or_sr(item.name)
            if kind == "sr":
                self.parsed.sr_scopes.append(("heredoc", node.id))
            if kind != "legacy":
                continue
            line, col = self.source.pos(start_c + item.name_span[0])
            entry = self.analysis.new_entry(
                variable=item.name,
                action=SET,
                value=item.value,
                line=line,
                col=col,
                sr_scope=("heredoc", node.id),
                problem=item.problem,
                blocker=Blocker.COMPUTED_VALUE if item.computed else Blocker.UNREWRITTEN_FORM,
            )
            entry.group = ("heredoc", self.source.path, node.id)
            data = EntryData("dotenv", [], None)
            data.dotenv = (start_c, item)
            self.parsed.entry_data[entry.id] = data
            self.parsed.entries.append(entry.id)
            self.analysis.handled.append(
                (self.source.base + start_c + item.name_span[0], self.source.base + start_c + item.name_span[1])
            )
            ids.append(entry.id)
        self.parsed.heredocs.append(Heredoc(target, ids, self.contexts.of(node)))

    def _read(self, node) -> None:
        var = next((c for c in node.named_children if c.type == "variable_name"), None)
        if var is None:
            return
        name = self.source.t(var)
        if name in self.legacy:
            self._handled(var.start_byte, var.end_byte)
            self._note("BFM132", var.start_byte, variable=name)
