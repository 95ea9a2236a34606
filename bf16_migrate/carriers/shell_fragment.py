"""Reading shell: a script (the shell carrier, :mod:`.shell`) or the shell fragments other carriers
hold (Dockerfile ``RUN``/``CMD``, notebook ``!`` lines, YAML ``run:`` blocks), into the entries
and launches of an :class:`~.model.Analysis`. Rendering is :mod:`.shell_render`.

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

from collections.abc import Callable, Hashable, Mapping

import tree_sitter

from ..command_lines import Command, read_command
from ..diagnostics import message
from . import dotenv, shell_render
from .model import (
    PASS,
    SET,
    STOCHASTIC,
    UNSET,
    Action,
    Analysis,
    Blocker,
    ByteMap,
    CarrierError,
    Decision,
    Edit,
    Include,
    Launch,
    LineIndex,
    Note,
)
from .shell_calls import expanded, follow_calls, forwards_arguments, inside_function
from .shell_dead import uncalled_functions
from .shell_expand import Expander, mentions_expansion
from .shell_reach import Ctx, Event, context, link, sr_covered
from .shell_render import EntryData
from .shell_words import first_error, heredoc_target, is_env_file_name, parser, static_value
from .text import find_mentions, legacy_names


class ShellFragment:
    """Analyse one shell text (a script, or a fragment of another file) into ``analysis``.

    ``pos`` maps a character offset of ``text`` to the 1-based (line, col) reported in the
    host file; ``embedded`` fragments report parse errors as diagnostics instead of raising.
    After construction, :meth:`edits` maps decisions to :class:`Edit` objects in ``text``
    coordinates. Raises :class:`CarrierError` for a script that does not parse."""

    def __init__(
        self,
        text: str,
        path: str,
        analysis: Analysis,
        pos: Callable[[int], tuple[int, int]] | None = None,
        embedded: bool = False,
        base: int = 0,
    ) -> None:
        self.text = text
        self.base = base
        self.path = path
        self.analysis = analysis
        self.bm = ByteMap(text)
        self.data = self.bm.data
        self.pos = pos or LineIndex(text).pos
        self.legacy = legacy_names()
        # bash takes a `\` line continuation right before the end of the file as joining the
        # line with nothing; tree-sitter-bash reports an error there, so it gets one more newline
        # (after every byte of the text: no offset moves)
        tail = self.data.rstrip(b"\n")
        continued = tail.endswith(b"\\") and (len(tail) - len(tail.rstrip(b"\\"))) % 2 == 1
        self.tree = parser().parse(self.data + (b"\n" if continued else b""))
        self.entry_data: dict[int, EntryData] = {}
        self.my_entries: list[int] = []
        self.my_launches: list[int] = []
        self.events: list[Event] = []
        self.launch_ctx: dict[int, Ctx] = {}
        self.include_ctx: list[tuple[Include, Ctx]] = []
        self.heredocs: list[tuple[str, list[int], Ctx]] = []
        self.functions: dict[str, tree_sitter.Node] = {}
        self.calls: dict[str, tree_sitter.Node] = {}
        self.dead_functions: dict[str, tuple[Blocker, str]] = {}  # functions nothing calls (shell_dead)
        self.sr_scopes: list[tuple] = []
        self.ctx_cache: dict[int, Ctx] = {}
        self.ok = True
        root = self.tree.root_node
        if root.has_error:
            bad = first_error(root)
            line, col = self.pos(self.bm.char(bad.start_byte))
            msg = f"{path}:{line}:{col}: cannot parse as a shell script (bash syntax error or unsupported construct)"
            if not embedded:
                raise CarrierError(msg)
            self.ok = False
            self._note_mentions(0, len(text), "BFM131", where="in a shell command bf16-migrate cannot parse")
            return
        self._index_functions(root)
        self.allexport = False
        self.expander = Expander(self)
        self.prefix_entries: dict[int, list[int]] = {}
        self.function_calls: list = []
        self.launch_of_node: dict[int, int] = {}
        self.launch_node: dict[int, tree_sitter.Node] = {}  # launch index -> its command
        self._walk(root)
        follow_calls(self)
        self._check_exports()
        link(self)

    # -- helpers ------------------------------------------------------------------------------
    def t(self, node_or_span) -> str:
        s, e = (node_or_span.start_byte, node_or_span.end_byte) if hasattr(node_or_span, "start_byte") else node_or_span
        return self.data[s:e].decode("utf-8")

    def at(self, byte: int) -> tuple[int, int]:
        return self.pos(self.bm.char(byte))

    def _note(self, code: str, byte: int, variant: str | None = None, /, **fields: object) -> None:
        """The note ``code`` at ``byte``, worded by the catalogue's template
        (:func:`bf16_migrate.diagnostics.message`)."""
        line, col = self.at(byte)
        self.analysis.notes.append(Note(code, line, col, message(code, variant, **fields)))

    def _handled(self, start: int, end: int) -> None:
        self.analysis.handled.append((self.base + self.bm.char(start), self.base + self.bm.char(end)))

    def _note_mentions(
        self, start_char: int, end_char: int, code: str, variant: str | None = None, /, **fields: object
    ) -> None:
        """A note ``code`` at each legacy name in ``text[start_char:end_char]``, worded by the
        catalogue's template with ``variable`` (the name) and ``fields`` (:func:`bf16_migrate.diagnostics.message`)."""
        for var, off in find_mentions(self.text[start_char:end_char], self.legacy):
            line, col = self.pos(start_char + off)
            self.analysis.notes.append(Note(code, line, col, message(code, variant, variable=var, **fields)))
            self.analysis.handled.append((self.base + start_char + off, self.base + start_char + off + len(var)))

    def ctx(self, node) -> Ctx:
        """Order key, guard path and subshell containers of ``node`` (:func:`.shell_reach.context`)."""
        return context(self, node)

    def sr_covered(self, scope: Hashable) -> bool:
        """True when a ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` setting of this fragment is in force
        wherever ``scope`` is (:func:`.shell_reach.sr_covered`)."""
        return sr_covered(self, scope)

    def edits(self, decisions: Mapping[int, Decision]) -> list[Edit]:
        """The edits (character offsets of ``text``) that carry out ``decisions`` for this
        fragment's entries (:func:`.shell_render.edits`)."""
        return shell_render.edits(self, decisions)

    def _index_functions(self, root) -> None:
        stack = [root]
        nodes = []
        while stack:
            n = stack.pop()
            nodes.append(n)
            stack.extend(reversed(n.children))
        for n in nodes:
            if n.type == "function_definition":
                name = n.child_by_field_name("name")
                if name is not None:
                    self.functions[self.t(name)] = n
        for n in nodes:
            if n.type == "command":
                name = n.child_by_field_name("name")
                if name is not None:
                    fname = self.t(name)
                    fn = self.functions.get(fname)
                    if fn is not None and not (fn.start_byte <= n.start_byte < fn.end_byte) and fname not in self.calls:
                        self.calls[fname] = n
        uncalled = {n: f for n, f in self.functions.items() if n not in self.calls}
        self.dead_functions = uncalled_functions(root, self.data, uncalled, lambda byte: self.at(byte)[0])

    # -- the walk -------------------------------------------------------------------------------
    def _walk(self, root) -> None:
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

    def _check_exports(self) -> None:
        """``X=1`` reaches child processes only once exported (``export X``, ``set -a``); a
        bare ``export X`` or ``docker run -e X`` passes a value set elsewhere."""
        entries = [self.analysis.entries[i] for i in self.my_entries]
        exported = {e.variable for e in entries if self.entry_data[e.id].kind == "decl-name" and e.problem is None}
        assigned = {e.variable for e in entries if e.action == SET and self.entry_data[e.id].kind in ("decl", "assign")}
        for e in entries:
            kind = self.entry_data[e.id].kind
            if kind == "assign" and e.variable not in exported and not self.allexport and e.problem is None:
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

    def statement_of(self, node):
        """The statement holding ``node``, with its redirections."""
        s = node
        while s.parent is not None and s.parent.type == "redirected_statement":
            s = s.parent
        return s

    def _scope(self, node, cmd=None) -> tuple:
        c = self.ctx(node)
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
        line, col = self.at(name_byte)
        entry = self.analysis.new_entry(
            variable=variable,
            action=action,
            value=value,
            line=line,
            col=col,
            sr_scope=scope,
            problem=problem,
            data=("shell", id(self)),
        )
        entry.group = ("var", self.path, variable) if group else None
        self.entry_data[entry.id] = data
        self.my_entries.append(entry.id)
        self._handled(name_byte, name_byte + len(variable.encode()))
        if event_node is not None:
            self.events.append(Event(entry.id, variable, action, self.ctx(event_node)))
        return entry.id

    def _declared_legacy(self, name: str, exported: bool, node) -> bool:
        """Whether a declared name is a legacy variable; an exported stochastic-rounding
        setting is remembered for its scope on the way (BFM070: not set twice)."""
        kind = self._legacy_or_sr(name)
        if kind == "sr" and exported:
            self.sr_scopes.append(self._scope(node))
        return kind == "legacy"

    def _declaration(self, node) -> None:
        keyword = node.children[0].type if node.children else ""
        words = [c for c in node.children[1:] if c.is_named]
        flags = [self.t(w) for w in words if w.type == "word" and self.t(w).startswith("-")]
        exported = keyword == "export" or any("x" in f for f in flags if f.startswith("-") and not f.startswith("--"))
        unexport = any(f == "-n" for f in flags)
        stmt = self.statement_of(node)
        for w in words:
            if w.type == "variable_assignment":
                name_node = w.child_by_field_name("name")
                value_node = w.child_by_field_name("value")
                name = self.t(name_node)
                if not self._declared_legacy(name, exported, node):
                    continue
                problem = None
                if not exported or unexport:
                    problem = (
                        f"`{keyword} {' '.join(flags)}` does not export {name}"
                        if flags
                        else f"`{keyword}` does not export {name} to the processes the script starts"
                    )
                value = "" if value_node is None else static_value(value_node, self.data)
                data = EntryData(
                    "decl",
                    [w],
                    stmt,
                    (name_node.start_byte, name_node.end_byte),
                    None if value_node is None else (value_node.start_byte, value_node.end_byte),
                )
                data.decl = node
                self._add(
                    name, SET, value, name_node.start_byte, data, problem, event_node=node, scope=self._scope(node)
                )
            elif w.type == "variable_name":
                name = self.t(w)
                if not self._declared_legacy(name, exported, node):
                    continue
                data = EntryData("decl-name", [w], stmt, (w.start_byte, w.end_byte))
                data.decl = node
                problem = (
                    None
                    if exported and not unexport
                    else (
                        f"`{keyword} -n` takes {name} out of the environment: edit it by hand"
                        if unexport
                        else f"`{keyword}` here does not export {name}"
                    )
                )
                self._add(name, PASS, None, w.start_byte, data, problem, event_node=None, scope=self._scope(node))

    def _unset(self, node) -> None:
        stmt = self.statement_of(node)
        for w in node.named_children:
            if w.type == "variable_name" or (w.type == "word" and not self.t(w).startswith("-")):
                name = self.t(w)
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
        stmt = self.statement_of(node)
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
        name = self.t(name_node)
        kind = self._legacy_or_sr(name)
        if kind == "sr":
            self.sr_scopes.append(scope)
        if kind != "legacy":
            return None
        value = "" if value_node is None else static_value(value_node, self.data)
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
        assignments = [c for c in node.children if c.type == "variable_assignment"]
        name = node.child_by_field_name("name")
        word_nodes = ([name] if name is not None else []) + [c for c in node.children_by_field_name("argument")]
        words = [
            self._word(w if w.type != "command_name" else (w.named_children[0] if w.named_children else w))
            for w in word_nodes
        ]
        cmd = read_command(words)
        scope = self._scope(node, node.id)
        entry_ids = self._prefix_settings(node, assignments, word_nodes, scope)
        if cmd.isolated:  # `X=1 env -i python ...`: the prefix goes to env, which drops it
            entry_ids = []
        entry_ids += self._wrapper_settings(node, cmd, assignments, word_nodes, scope)
        self._loads_and_mentions(node, cmd, words, word_nodes)
        base = words[0] if words else None
        self.prefix_entries[node.id] = list(entry_ids)
        if base is not None and base in self.functions and not inside_function(self, node, base):
            self.function_calls.append((node, base, word_nodes[1:]))
            return
        if forwards_arguments(self, node, word_nodes):
            return  # `python3 "$@"` in a function body: read at each call (shell_calls.follow_calls)
        if (cmd.problem or not (cmd.python or cmd.target)) and any(mentions_expansion(w) for w in word_nodes):
            through = expanded(self, word_nodes, node)
            if through is not None:
                cmd = through
        if base == "set" and any(
            w in ("-a", "allexport")
            or (w or "").startswith("-")
            and "a" in (w or "")
            and not (w or "").startswith("--")
            for w in words[1:]
        ):
            self.allexport = True
        if base in ("source", ".") and len(words) > 1 and words[1] is not None:
            inc = Include(words[1], *self.at(node.start_byte))
            self.analysis.includes.append(inc)
            self.include_ctx.append((inc, self.ctx(node)))
            inc.node = None
        if cmd.python or cmd.target is not None:
            self._launch(node, cmd, entry_ids)

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
                self.sr_scopes.append(scope)
            if kind != "legacy":
                continue
            vnode = word_nodes[ew.value_word]
            vnode_word = vnode.named_children[0] if vnode.type == "command_name" and vnode.named_children else vnode
            raw = self.t(vnode_word)
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
                self.events.append(Event(eid, ew.name, UNSET, self.ctx(node)))  # env -u: this command only
                self.analysis.entries[eid].group = None
            else:
                entry_ids.append(eid)
        return entry_ids

    def _loads_and_mentions(self, node, cmd: Command, words: list[str | None], word_nodes: list) -> None:
        """The env files the command loads (``--env-file``), and the names in a ``sh -c``
        string or a message it prints (reported, not rewritten)."""
        if cmd.inner is not None:
            inner_node = word_nodes[cmd.inner]
            inner_text = self.t(inner_node)
            if any(v in inner_text for v in self.legacy):
                self._note_mentions(
                    self.bm.char(inner_node.start_byte),
                    self.bm.char(inner_node.end_byte),
                    "BFM131",
                    where="inside a `sh -c` string",
                )
        for f in cmd.env_files:
            inc = Include(f, *self.at(node.start_byte))
            self.analysis.includes.append(inc)
            self.include_ctx.append((inc, self.ctx(node)))
            inc.node = node
        if words and words[0] in ("echo", "printf"):
            for arg in word_nodes[1:]:
                self._note_mentions(self.bm.char(arg.start_byte), self.bm.char(arg.end_byte), "BFM091", "echo")

    def _launch(self, node, cmd: Command, entry_ids: list[int]) -> None:
        """The Python launch of ``node``, reached by its own prefix and wrapper settings."""
        line, col = self.at(node.start_byte)
        text = self.t(node).split("\n", 1)[0].strip().rstrip("\\").rstrip()
        launch = Launch(
            line,
            col,
            text[:100],
            cmd.target,
            cmd.problem,
            args=list(cmd.args),
            captured=self._captured(node),
            isolated=cmd.isolated,
        )
        idx = self.add_launch(launch, entry_ids, node)
        self.launch_of_node[node.id] = idx
        for inc, _ in self.include_ctx:
            if getattr(inc, "node", None) is node:
                inc.launches.append(idx)

    def add_launch(self, launch: Launch, entry_ids, node) -> int:
        """Record ``launch`` (started at the syntax ``node``) as this fragment's, reached by the
        settings ``entry_ids`` made for its command alone (``X=1 cmd``); returns its index."""
        for eid in entry_ids:
            launch.reached_by[eid] = True
        self.analysis.launches.append(launch)
        idx = len(self.analysis.launches) - 1
        self.my_launches.append(idx)
        self.launch_ctx[idx] = self.ctx(node)
        self.launch_node[idx] = node
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
        """A comment sets nothing: its mentions of a variable are not settings."""
        self._handled(node.start_byte, node.end_byte)

    def _word(self, node) -> str | None:
        """A command word's static value; an option whose value is computed
        (``--nproc_per_node="$n"``) keeps its static ``--name=`` with a NUL for the value, so
        the command can still be read."""
        value = static_value(node, self.data)
        if value is None and node.type == "concatenation" and node.named_children:
            head = static_value(node.named_children[0], self.data)
            if head is not None and head.startswith("-") and "=" in head:
                return head + "\0"
        return value

    def _heredoc(self, node) -> None:
        """A heredoc naming a variable: read as an env file (:func:`.dotenv.parse`) when it
        writes one, its lines then entries in force where that file is loaded; else reported."""
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return
        body_text = self.t(body)
        if not any(v in body_text for v in self.legacy):
            return
        target = heredoc_target(node, self.data)
        start_c, end_c = self.bm.char(body.start_byte), self.bm.char(body.end_byte)
        if target is None or not is_env_file_name(target):
            self._note_mentions(start_c, end_c, "BFM131", "heredoc")
            return
        delim = next((c for c in node.children if c.type == "heredoc_start"), None)
        quoted = delim is not None and self.t(delim)[:1] in ("'", '"', "\\")
        parsed = dotenv.parse(
            self.text[start_c:end_c], self.path, lambda off: self.pos(start_c + off), expand=not quoted
        )
        ids = []
        for item in parsed.items:
            kind = self._legacy_or_sr(item.name)
            if kind == "sr":
                self.sr_scopes.append(("heredoc", node.id))
            if kind != "legacy":
                continue
            line, col = self.pos(start_c + item.name_span[0])
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
            entry.group = ("heredoc", self.path, node.id)
            data = EntryData("dotenv", [], None)
            data.dotenv = (start_c, item)
            self.entry_data[entry.id] = data
            self.my_entries.append(entry.id)
            self.analysis.handled.append(
                (self.base + start_c + item.name_span[0], self.base + start_c + item.name_span[1])
            )
            ids.append(entry.id)
        self.heredocs.append((target, ids, self.ctx(node)))

    def _read(self, node) -> None:
        var = next((c for c in node.named_children if c.type == "variable_name"), None)
        if var is None:
            return
        name = self.t(var)
        if name in self.legacy:
            self._handled(var.start_byte, var.end_byte)
            self._note("BFM132", var.start_byte, variable=name)

    # -- who reaches what -----------------------------------------------------------------------
