"""Shell scripts (``*.sh``, ``*.bash``, extensionless scripts with a shell shebang) and the
shell fragments other carriers hold (Dockerfile ``RUN``/``CMD``, notebook ``!`` lines).

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

Edits: a removed word takes the blanks (and ``\\`` continuations) up to the next word with it,
so ``XLA_USE_BF16=1 \\`` + newline + ``  torchrun ...`` becomes ``  torchrun ...`` on its line;
a statement left empty is deleted with its line, or becomes ``:`` where bash needs a command
(``then``/``else``/``do``/``{ }`` bodies, ``&&`` lists).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

import tree_sitter
import tree_sitter_bash

from ..rules import load_rules
from . import dotenv
from .dotenv import Item as DotenvItem
from .launch import Command, read_command
from .model import (
    KEEP,
    PASS,
    REPLACE,
    SET,
    STOCHASTIC,
    UNSET,
    Analysis,
    ByteMap,
    CarrierError,
    Edit,
    Include,
    Launch,
    LineIndex,
    line_span,
)
from .shell_expand import Expander, mentions_expansion


@functools.lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def legacy_names() -> frozenset[str]:
    """The legacy variable names (``rules/XLA_*.toml``)."""
    return frozenset(load_rules().variables)


STATEMENTS = {
    "command", "declaration_command", "unset_command", "variable_assignment", "variable_assignments",
    "redirected_statement", "list", "pipeline", "subshell", "compound_statement", "if_statement",
    "while_statement", "for_statement", "c_style_for_statement", "case_statement", "function_definition",
    "negated_command", "test_command",
}
NEEDS_COMMAND = {"if_statement", "elif_clause", "else_clause", "while_statement", "do_group", "compound_statement", "subshell"}
KEYWORDS = {"if", "then", "elif", "else", "fi", "do", "done", "{", "}", "(", ")", "in", "esac", "case", "while", "until", "for"}
CONDITIONAL = {"if_statement", "elif_clause", "else_clause", "case_item", "while_statement", "for_statement", "c_style_for_statement", "list"}
SUBSHELLS = {"subshell", "command_substitution", "process_substitution"}


def is_env_file_name(name: str) -> bool:
    """``.env``, ``train.env``, ``.env.local``: the names docker compose and dotenv tools read."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    return base == ".env" or base.endswith(".env") or base.startswith(".env.") or base == "env.list"


def _unescape(text: str, escapable: str | None) -> str:
    """Bash backslash removal: outside quotes (``escapable=None``) a backslash escapes any
    character; inside double quotes only ``"``, ``\\``, ``$``, `` ` `` and newline. An escaped
    newline is a line continuation and disappears."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and (escapable is None or text[i + 1] in escapable):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def static_value(node: tree_sitter.Node, data: bytes) -> str | None:
    """The value of a shell word node when it holds no expansion, ``None`` otherwise.

    ``word``/``number``: backslash escapes removed; ``"..."``: only literal content (``\\"``,
    ``\\\\``, ``\\$``, ``\\```` unescaped); ``'...'`` verbatim; concatenations of those."""
    kind = node.type
    text = data[node.start_byte:node.end_byte].decode("utf-8")
    if kind in ("word", "number"):
        if any(c in text for c in "$`*?["):
            return None
        return _unescape(text, escapable=None)
    if kind == "raw_string":
        return text[1:-1]
    if kind == "string":
        parts = []
        for child in node.children:
            if child.type == '"':
                continue
            if child.type != "string_content":
                return None
            parts.append(data[child.start_byte:child.end_byte].decode("utf-8"))
        return _unescape("".join(parts), escapable='"\\$`\n')
    if kind == "concatenation":
        pieces = [static_value(c, data) for c in node.named_children]
        static = [p for p in pieces if p is not None]
        if len(static) != len(pieces):
            return None
        return "".join(static)
    return None


@dataclass
class _Ctx:
    key: tuple
    guard: tuple
    containers: tuple


@dataclass
class _Event:
    entry: int
    variable: str
    action: str
    ctx: _Ctx


@dataclass
class _Data:
    """Where an entry lives in the tree: ``words`` the nodes (or (start, end) byte spans)
    removed with it, ``owner`` the statement or command holding them, ``name`` the byte span of
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


class ShellFragment:
    """Analyse one shell text (a script, or a fragment of another file) into ``analysis``.

    ``pos`` maps a character offset of ``text`` to the 1-based (line, col) reported in the
    host file; ``embedded`` fragments report parse errors as diagnostics instead of raising.
    After construction, :meth:`edits` maps decisions to :class:`Edit` objects in ``text``
    coordinates. Raises :class:`CarrierError` for a script that does not parse."""

    def __init__(self, text: str, path: str, analysis: Analysis, pos: Callable[[int], tuple[int, int]] | None = None, embedded: bool = False, base: int = 0) -> None:
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
        self.tree = _parser().parse(self.data + (b"\n" if continued else b""))
        self.entry_data: dict[int, _Data] = {}
        self.my_entries: list[int] = []
        self.my_launches: list[int] = []
        self.events: list[_Event] = []
        self.launch_ctx: dict[int, _Ctx] = {}
        self.include_ctx: list[tuple[Include, _Ctx]] = []
        self.heredocs: list[tuple[str, list[int], _Ctx]] = []
        self.functions: dict[str, tree_sitter.Node] = {}
        self.calls: dict[str, tree_sitter.Node] = {}
        self.sr_scopes: list[tuple] = []
        self._ctx_cache: dict[int, _Ctx] = {}
        self.ok = True
        root = self.tree.root_node
        if root.has_error:
            bad = _first_error(root)
            line, col = self.pos(self.bm.char(bad.start_byte))
            msg = f"{path}:{line}:{col}: cannot parse as a shell script (bash syntax error or unsupported construct)"
            if not embedded:
                raise CarrierError(msg)
            self.ok = False
            self._note_mentions(0, len(text), "BFM131", "{var} is named in a shell command bf16-migrate cannot parse: edit it by hand")
            return
        self._index_functions(root)
        self.allexport = False
        self.expander = Expander(self)
        self.prefix_entries: dict[int, list[int]] = {}
        self.function_calls: list = []
        self.launch_of_node: dict[int, int] = {}
        self._walk(root)
        self._follow_calls()
        self._check_exports()
        self._link()

    # -- helpers ------------------------------------------------------------------------------
    def t(self, node_or_span) -> str:
        s, e = (node_or_span.start_byte, node_or_span.end_byte) if hasattr(node_or_span, "start_byte") else node_or_span
        return self.data[s:e].decode("utf-8")

    def at(self, byte: int) -> tuple[int, int]:
        return self.pos(self.bm.char(byte))

    def _note(self, code: str, byte: int, message: str, fixed: bool = False) -> None:
        line, col = self.at(byte)
        self.analysis.notes.append((code, line, col, message, fixed))

    def _handled(self, start: int, end: int) -> None:
        self.analysis.handled.append((self.base + self.bm.char(start), self.base + self.bm.char(end)))

    def _note_mentions(self, start_char: int, end_char: int, code: str, template: str) -> None:
        for var, off in find_mentions(self.text[start_char:end_char], self.legacy):
            line, col = self.pos(start_char + off)
            self.analysis.notes.append((code, line, col, template.format(var=var), False))
            self.analysis.handled.append((self.base + start_char + off, self.base + start_char + off + len(var)))

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

    def ctx(self, node) -> _Ctx:
        """Order key, guard path and subshell containers of ``node`` (functions inlined at their
        first call)."""
        cached = self._ctx_cache.get(node.id)
        if cached is not None:
            return cached
        guard: list = []
        containers: list = []
        child = node
        anc = node.parent
        outer: _Ctx | None = None
        while anc is not None:
            if anc.type == "function_definition":
                name = anc.child_by_field_name("name")
                call = self.calls.get(self.t(name)) if name is not None else None
                if call is not None:
                    outer = self.ctx(call)
                    body = anc.child_by_field_name("body")
                    if body is not None and body.type == "subshell":
                        containers.insert(0, body.id)
                    break
            if anc.type in SUBSHELLS:
                containers.insert(0, anc.id)
            if anc.type == "pipeline" and anc.named_child_count > 1:
                containers.insert(0, (anc.id, child.id))
            if anc.type in CONDITIONAL:
                tag = self._branch_tag(anc, child)
                if tag is not None:
                    guard.insert(0, (anc.id, tag))
            child = anc
            anc = anc.parent
        key = (node.start_byte,)
        if outer is not None:
            result = _Ctx(outer.key + key, outer.guard + tuple(guard), outer.containers + tuple(containers))
        else:
            result = _Ctx(key, tuple(guard), tuple(containers))
        self._ctx_cache[node.id] = result
        return result

    @staticmethod
    def _branch_tag(anc, child):
        if anc.type == "list":
            return None if anc.children and anc.children[0].id == child.id else "rhs"
        if anc.type in ("if_statement", "elif_clause"):
            seg = 0
            for c in anc.children:
                if c.id == child.id:
                    break
                if c.type == "then":
                    seg = 1
            if child.type in ("elif_clause", "else_clause"):
                return None  # the clause node carries its own tag
            return "then" if seg else None  # the condition runs whenever the statement does
        if anc.type == "else_clause":
            return "else"
        if anc.type == "case_item":
            return "item"
        if anc.type in ("while_statement", "for_statement", "c_style_for_statement"):
            return "body" if child.type == "do_group" else None
        return None

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
            elif kind in ("variable_assignment", "variable_assignments") and node.parent is not None and node.parent.type not in ("declaration_command", "command", "variable_assignments"):
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
                e.problem = f"{e.variable} is assigned but not exported here, so the processes this script starts see it only if the environment already exported it: edit it by hand"
            if e.action == PASS and e.variable not in assigned and e.problem is None:
                e.problem = f"{e.variable} is passed on with the value it has in the environment this runs in: remove it by hand where that value is set"

    def _legacy_or_sr(self, name: str) -> str | None:
        if name in self.legacy:
            return "legacy"
        if name == STOCHASTIC:
            return "sr"
        return None

    def _statement_of(self, node):
        s = node
        while s.parent is not None and s.parent.type == "redirected_statement":
            s = s.parent
        return s

    def _scope(self, node, cmd=None) -> tuple:
        c = self.ctx(node)
        return (c.guard, c.containers, cmd)

    def _add(self, variable: str, action: str, value: str | None, name_byte: int, data: _Data, problem: str | None = None, event_node=None, group: bool = True, scope: tuple | None = None) -> int:
        line, col = self.at(name_byte)
        entry = self.analysis.new_entry(variable=variable, action=action, value=value, line=line, col=col, sr_scope=scope, problem=problem, data=("shell", id(self)))
        entry.group = ("var", self.path, variable) if group else None
        self.entry_data[entry.id] = data
        self.my_entries.append(entry.id)
        self._handled(name_byte, name_byte + len(variable.encode()))
        if event_node is not None:
            self.events.append(_Event(entry.id, variable, action, self.ctx(event_node)))
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
        stmt = self._statement_of(node)
        for w in words:
            if w.type == "variable_assignment":
                name_node = w.child_by_field_name("name")
                value_node = w.child_by_field_name("value")
                name = self.t(name_node)
                if not self._declared_legacy(name, exported, node):
                    continue
                problem = None
                if not exported or unexport:
                    problem = f"`{keyword} {' '.join(flags)}` does not export {name}" if flags else f"`{keyword}` does not export {name} to the processes the script starts"
                value = "" if value_node is None else static_value(value_node, self.data)
                data = _Data("decl", [w], stmt, (name_node.start_byte, name_node.end_byte), None if value_node is None else (value_node.start_byte, value_node.end_byte))
                data.decl = node
                self._add(name, SET, value, name_node.start_byte, data, problem, event_node=node, scope=self._scope(node))
            elif w.type == "variable_name":
                name = self.t(w)
                if not self._declared_legacy(name, exported, node):
                    continue
                data = _Data("decl-name", [w], stmt, (w.start_byte, w.end_byte))
                data.decl = node
                problem = None if exported and not unexport else (f"`{keyword} -n` takes {name} out of the environment: edit it by hand" if unexport else f"`{keyword}` here does not export {name}")
                self._add(name, PASS, None, w.start_byte, data, problem, event_node=None, scope=self._scope(node))

    def _unset(self, node) -> None:
        stmt = self._statement_of(node)
        for w in node.named_children:
            if w.type == "variable_name" or (w.type == "word" and not self.t(w).startswith("-")):
                name = self.t(w)
                if name in self.legacy:
                    data = _Data("unset", [w], stmt)
                    data.decl = node
                    self._add(name, UNSET, None, w.start_byte, data, event_node=node, scope=self._scope(node))

    def _bare_assignments(self, node) -> None:
        items = [node] if node.type == "variable_assignment" else [c for c in node.named_children if c.type == "variable_assignment"]
        stmt = self._statement_of(node)
        for w in items:
            name_node = w.child_by_field_name("name")
            value_node = w.child_by_field_name("value")
            name = self.t(name_node)
            kind = self._legacy_or_sr(name)
            if kind == "sr":
                self.sr_scopes.append(self._scope(node))
            if kind != "legacy":
                continue
            value = "" if value_node is None else static_value(value_node, self.data)
            data = _Data("assign", [w], stmt, (name_node.start_byte, name_node.end_byte), None if value_node is None else (value_node.start_byte, value_node.end_byte))
            data.decl = node
            self._add(name, SET, value, name_node.start_byte, data, event_node=node, scope=self._scope(node))

    def _command(self, node) -> None:
        assignments = [c for c in node.children if c.type == "variable_assignment"]
        name = node.child_by_field_name("name")
        word_nodes = ([name] if name is not None else []) + [c for c in node.children_by_field_name("argument")]
        words = [self._word(w if w.type != "command_name" else (w.named_children[0] if w.named_children else w)) for w in word_nodes]
        cmd = read_command(words)
        scope = self._scope(node, node.id)
        entry_ids = []
        for a in assignments:
            name_node = a.child_by_field_name("name")
            value_node = a.child_by_field_name("value")
            var = self.t(name_node)
            kind = self._legacy_or_sr(var)
            if kind == "sr":
                self.sr_scopes.append(scope)
            if kind != "legacy":
                continue
            value = "" if value_node is None else static_value(value_node, self.data)
            data = _Data("prefix", [a], node, (name_node.start_byte, name_node.end_byte), None if value_node is None else (value_node.start_byte, value_node.end_byte))
            data.all_words = assignments + word_nodes
            entry_ids.append(self._add(var, SET, value, name_node.start_byte, data, group=False, scope=scope))
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
            data = _Data("envword", [word_nodes[k] for k in ew.words], node, whole=(vnode_word.start_byte, vnode_word.end_byte), prefix=ew.prefix)
            data.all_words = assignments + word_nodes
            data.quote = quote
            if raw[len(quote):].startswith(ew.prefix + ew.name):
                data.name = (name_start, name_start + len(ew.name.encode()))
            if ew.action == PASS:
                eid = self._add(ew.name, PASS, None, name_start, data, scope=scope)
            else:
                eid = self._add(ew.name, ew.action, ew.value, name_start, data, group=ew.action == UNSET, scope=scope)
            if ew.action == UNSET:
                self.events.append(_Event(eid, ew.name, UNSET, self.ctx(node)))  # env -u: this command only
                self.analysis.entries[eid].group = None
            else:
                entry_ids.append(eid)
        if cmd.inner is not None:
            inner_node = word_nodes[cmd.inner]
            inner_text = self.t(inner_node)
            if any(v in inner_text for v in self.legacy):
                self._note_mentions(self.bm.char(inner_node.start_byte), self.bm.char(inner_node.end_byte), "BFM131", "{var} is named inside a `sh -c` string: edit it by hand")
        for f in cmd.env_files:
            inc = Include(f, *self.at(node.start_byte))
            self.analysis.includes.append(inc)
            self.include_ctx.append((inc, self.ctx(node)))
            inc.node = node
        base = words[0] if words else None
        self.prefix_entries[node.id] = list(entry_ids)
        if base in ("echo", "printf"):
            for arg in word_nodes[1:]:
                self._note_mentions(self.bm.char(arg.start_byte), self.bm.char(arg.end_byte), "BFM091", "{var} is named in a message this script prints: update the text by hand")
        if base is not None and base in self.functions and not self._inside_function(node, base):
            self.function_calls.append((node, base, word_nodes[1:]))
            return
        if self._forwards_arguments(node, word_nodes):
            return  # `python3 "$@"` in a function body: read at each call (_follow_calls)
        if (cmd.problem or not (cmd.python or cmd.target)) and any(mentions_expansion(w) for w in word_nodes):
            expanded = self._expanded(word_nodes, node)
            if expanded is not None:
                cmd = expanded
        if base == "set" and any(w in ("-a", "allexport") or (w or "").startswith("-") and "a" in (w or "") and not (w or "").startswith("--") for w in words[1:]):
            self.allexport = True
        if base in ("source", ".") and len(words) > 1 and words[1] is not None:
            inc = Include(words[1], *self.at(node.start_byte))
            self.analysis.includes.append(inc)
            self.include_ctx.append((inc, self.ctx(node)))
            inc.node = None
        if cmd.python or cmd.target is not None:
            line, col = self.at(node.start_byte)
            text = self.t(node).split("\n", 1)[0].strip().rstrip("\\").rstrip()
            launch = Launch(line, col, text[:100], cmd.target, cmd.problem, args=list(cmd.args), captured=self._captured(node))
            for eid in entry_ids:
                launch.reached_by[eid] = True
            self.analysis.launches.append(launch)
            idx = len(self.analysis.launches) - 1
            self.my_launches.append(idx)
            self.launch_ctx[idx] = self.ctx(node)
            self.launch_of_node[node.id] = idx
            for inc, _ in self.include_ctx:
                if getattr(inc, "node", None) is node:
                    inc.launches.append(idx)

    # -- expansions and shell functions ----------------------------------------------------------
    def _inside_function(self, node, name: str) -> bool:
        fn = self.functions[name]
        return fn.start_byte <= node.start_byte < fn.end_byte

    def _enclosing_function(self, node):
        anc = node.parent
        while anc is not None:
            if anc.type == "function_definition":
                return anc
            anc = anc.parent
        return None

    def _forwards_arguments(self, node, word_nodes) -> bool:
        """A command of a function body whose words hold ``"$@"``, ``$*`` or ``$1``...: what
        it starts depends on each call's arguments."""
        if self._enclosing_function(node) is None:
            return False
        for w in word_nodes:
            stack = [w]
            while stack:
                n = stack.pop()
                if n.type in ("simple_expansion", "expansion"):
                    var = next((c for c in n.named_children if c.type in ("variable_name", "special_variable_name")), None)
                    if var is not None and (self.t(var) in ("@", "*") or (self.t(var).isdigit() and self.t(var) != "0")):
                        return True
                stack.extend(n.children)
        return False

    def _expanded(self, word_nodes, node, positional=None) -> Command | None:
        """The command read through its expansions (:mod:`.shell_expand`): the script every
        expansion starts, or a problem naming what stays computed; ``None`` when no expansion
        starts Python."""
        expansions = self.expander.words(word_nodes, node, positional)
        if expansions is None:
            return None
        reads = [(read_command(e.words), e) for e in expansions]
        launching = [(r, e) for r, e in reads if r.python or r.target is not None]
        if not launching:
            return None
        resolved = {r.target for r, _ in launching if r.problem is None and r.target is not None}
        out = Command(python=any(r.python for r, _ in launching))
        if len(resolved) > 1:
            out.problem = "it starts a different script depending on " + ", ".join(f"${n}" for n in sorted({n for _, e in launching for n in e.computed} or {"its variables"})) + f" ({', '.join(sorted(t[1] for t in resolved))})"
            return out
        unresolved = [(r, e) for r, e in launching if r.problem is not None or r.target is None]
        if resolved and not unresolved:
            out.target = next(iter(resolved))
            out.args = next(r.args for r, _ in launching if r.target == out.target)
            return out
        r, e = unresolved[0]
        computed = ", ".join(_describe(n, line) for n, line in sorted(e.first_unknown().items()))
        out.target = r.target
        out.problem = (r.problem or "no training script found") + (f"; computed at run time: {computed}" if computed else "")
        return out

    def _follow_calls(self) -> None:
        """Each call of a function defined in the script: the commands of its body that
        forward the call's arguments (``python3 "$@"``, ``run_test "$@"``, through further
        functions) are launches at the call, reached by the prefix settings along the way
        (``XLA_USE_BF16=1 run_test "$@"``)."""
        for call, name, args in self.function_calls:
            if self._enclosing_function(call) is not None and any(self._forwards_arguments(call, [a]) for a in args):
                continue  # a forwarding call inside a function: followed from the outer calls
            positional = self.expander.words(args, call)
            if positional is None:
                continue
            found: list = []
            self._launches_of(name, positional, list(self.prefix_entries.get(call.id, [])), found, depth=0)
            line, col = self.at(call.start_byte)
            text = self.t(call).split("\n", 1)[0].strip().rstrip("\\").rstrip()
            for cmd, entries, inner in found:
                if cmd is None:  # a launch of the body itself: the call's prefix settings reach it
                    for eid in entries:
                        self.analysis.launches[inner].reached_by.setdefault(eid, True)
                    continue
                launch = Launch(line, col, text[:100], cmd.target, cmd.problem, args=list(cmd.args))
                for eid in entries:
                    launch.reached_by[eid] = True
                self.analysis.launches.append(launch)
                idx = len(self.analysis.launches) - 1
                self.my_launches.append(idx)
                self.launch_ctx[idx] = self.ctx(call)

    def _launches_of(self, name: str, positional, entries: list[int], found: list, depth: int) -> None:
        if depth > 8:
            return
        body = self.functions[name]
        stack = [body]
        while stack:
            n = stack.pop()
            if n.type == "function_definition" and n.id != body.id:
                continue
            if n.type == "command":
                nm = n.child_by_field_name("name")
                words = ([nm] if nm is not None else []) + list(n.children_by_field_name("argument"))
                if not self._forwards_arguments(n, words):
                    if n.id in self.launch_of_node and entries:
                        found.append((None, entries, self.launch_of_node[n.id]))
                    callee = self.t(nm) if nm is not None else None
                    if callee in self.functions and callee != name and entries:
                        self._launches_of(callee, None, entries + self.prefix_entries.get(n.id, []), found, depth + 1)
                    stack.extend(n.children)
                    continue
                here = entries + self.prefix_entries.get(n.id, [])
                callee = self.t(nm) if nm is not None else None
                if callee in self.functions and callee != name:
                    inner = self.expander.words(words[1:], n, positional)
                    if inner is not None:
                        self._launches_of(callee, inner, here, found, depth + 1)
                    continue
                cmd = self._expanded(words, n, positional)
                if cmd is not None:
                    found.append((cmd, here, n))
                continue
            stack.extend(n.children)

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
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return
        body_text = self.t(body)
        if not any(v in body_text for v in self.legacy):
            return
        stmt = node.parent
        target = None
        if stmt is not None and stmt.type == "redirected_statement":
            for r in stmt.children:
                if r.type == "file_redirect":
                    dest = r.child_by_field_name("destination")
                    if dest is not None:
                        target = static_value(dest, self.data)
        for c in node.children:
            if c.type == "pipeline":
                for cmdn in c.named_children:
                    if cmdn.type == "command":
                        nm = cmdn.child_by_field_name("name")
                        if nm is not None and self.t(nm) == "tee":
                            args = [static_value(a, self.data) for a in cmdn.children_by_field_name("argument")]
                            args = [a for a in args if a is not None and not a.startswith("-")]
                            if args:
                                target = args[0]
        start_c, end_c = self.bm.char(body.start_byte), self.bm.char(body.end_byte)
        if target is None or not is_env_file_name(target):
            self._note_mentions(start_c, end_c, "BFM131", "{var} is set in a heredoc that does not write an env file: edit it by hand")
            return
        delim = next((c for c in node.children if c.type == "heredoc_start"), None)
        quoted = delim is not None and self.t(delim)[:1] in ("'", '"', "\\")
        parsed = dotenv.parse(self.text[start_c:end_c], self.path, lambda off: self.pos(start_c + off), expand=not quoted)
        ids = []
        for item in parsed.items:
            kind = self._legacy_or_sr(item.name)
            if kind == "sr":
                self.sr_scopes.append(("heredoc", node.id))
            if kind != "legacy":
                continue
            line, col = self.pos(start_c + item.name_span[0])
            entry = self.analysis.new_entry(variable=item.name, action=SET, value=item.value, line=line, col=col, sr_scope=("heredoc", node.id), problem=item.problem)
            entry.group = ("heredoc", self.path, node.id)
            data = _Data("dotenv", [], None)
            data.dotenv = (start_c, item)
            self.entry_data[entry.id] = data
            self.my_entries.append(entry.id)
            self.analysis.handled.append((self.base + start_c + item.name_span[0], self.base + start_c + item.name_span[1]))
            ids.append(entry.id)
        for problem_off, message in parsed.problems:
            line, col = self.pos(start_c + problem_off)
            self.analysis.notes.append(("BFM131", line, col, message, False))
        self.heredocs.append((target, ids, self.ctx(node)))

    def _read(self, node) -> None:
        var = next((c for c in node.named_children if c.type == "variable_name"), None)
        if var is None:
            return
        name = self.t(var)
        if name in self.legacy:
            self._handled(var.start_byte, var.end_byte)
            self._note("BFM132", var.start_byte, f"{name} is read here; once it is no longer set the read no longer tells whether bf16 is on: test the precision your script uses instead")

    # -- who reaches what -----------------------------------------------------------------------
    def _link(self) -> None:
        launches = self.analysis.launches
        by_var: dict[str, list[_Event]] = {}
        for ev in self.events:
            by_var.setdefault(ev.variable, []).append(ev)
        for events in by_var.values():
            events.sort(key=lambda e: e.ctx.key)
            for idx in self.my_launches:
                lc = self.launch_ctx[idx]
                state, on = "off", []
                for ev in events:
                    if not (ev.ctx.key < lc.key or ev.ctx.key == lc.key):
                        break
                    if lc.containers[: len(ev.ctx.containers)] != ev.ctx.containers:
                        continue  # exported inside a subshell the launch is not in
                    sure = lc.guard[: len(ev.ctx.guard)] == ev.ctx.guard
                    is_cmd_local = self.entry_data[ev.entry].kind == "envword" and ev.action == UNSET
                    if is_cmd_local and ev.ctx.key != lc.key:
                        continue
                    if ev.action == SET:
                        if sure:
                            state, on = "on", [(ev.entry, True)]
                        else:
                            state = "on" if state == "on" else "maybe"
                            on.append((ev.entry, False))
                    else:
                        if sure:
                            state, on = "off", []
                        elif state != "off":
                            state = "maybe"
                            on = [(e, False) for e, _ in on]
                if on:
                    for eid, sure in on:
                        prev = launches[idx].reached_by.get(eid)
                        launches[idx].reached_by[eid] = sure if prev is None else (prev or sure)
        # `X=1; export X`: the bare export travels with the assignment
        # env-file heredocs reach the launches of the includes that load that file
        for target, ids, _hctx in self.heredocs:
            norm = _norm(target)
            for inc, ictx in self.include_ctx:
                if _norm(inc.path) == norm:
                    inc.local = True
                    reach = list(inc.launches) if getattr(inc, "node", None) is not None else [
                        idx for idx in self.my_launches if self.launch_ctx[idx].key > ictx.key
                    ]
                    for idx in reach:
                        for eid in ids:
                            launches[idx].reached_by.setdefault(eid, True)
        for inc, ictx in self.include_ctx:
            if getattr(inc, "node", None) is None:
                inc.launches.extend(idx for idx in self.my_launches if self.launch_ctx[idx].key > ictx.key and idx not in inc.launches)

    def sr_covered(self, scope) -> bool:
        """True when a ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` setting of this fragment is in
        force wherever ``scope`` is (its branch and subshell enclose ``scope``'s)."""
        if scope is None:
            return False
        for present in self.sr_scopes:
            if present[0] == "heredoc" or scope[0] == "heredoc":
                if present == scope:
                    return True
                continue
            g, c, cmd = present
            if scope[0][: len(g)] == g and scope[1][: len(c)] == c and (cmd is None or cmd == scope[2]):
                return True
        return False

    # -- rendering ------------------------------------------------------------------------------
    def edits(self, decisions: dict[int, str]) -> list[Edit]:
        """The edits (character offsets of ``text``) that carry out ``decisions`` for this
        fragment's entries (missing or ``keep``: left as is)."""
        remove_words: dict[int, list] = {}  # owner id -> word nodes removed
        owners: dict[int, tuple[tree_sitter.Node, _Data]] = {}
        edits: list[Edit] = []
        for eid in self.my_entries:
            decision = decisions.get(eid, KEEP)
            if decision == KEEP:
                continue
            d = self.entry_data[eid]
            if d.kind == "dotenv":
                assert d.dotenv is not None, "a dotenv entry carries its item"
                start_c, item = d.dotenv
                edits.extend(Edit(start_c + e.start, start_c + e.end, e.new) for e in dotenv.item_edits(item, decision))
                continue
            if decision == REPLACE:
                edits.extend(self._rename(d))
                continue
            owner = d.decl if d.kind in ("decl", "decl-name", "unset", "assign") else d.owner
            assert owner is not None, "every entry but a dotenv one has its statement or command"
            owners[owner.id] = (owner, d)
            remove_words.setdefault(owner.id, []).extend(d.words)
        statements_removed = []
        for oid, (owner, d) in owners.items():
            gone = {w.id for w in remove_words[oid]}
            if d.kind in ("decl", "decl-name", "unset", "assign"):
                all_words = [c for c in owner.named_children if c.type in ("variable_assignment", "variable_name") or (c.type == "word" and not self.t(c).startswith("-"))] if owner.type != "variable_assignment" else [owner]
                keepers = [w for w in all_words if w.id not in gone]
                if not keepers:
                    statements_removed.append(self._statement_of(owner))
                    continue
                seq = [c for c in owner.named_children] if owner.type != "variable_assignment" else [owner]
            else:
                seq = sorted(d.all_words, key=lambda n: n.start_byte)
            edits.extend(self._remove_words(seq, gone))
        edits.extend(self._remove_statements(statements_removed))
        return edits

    def _span(self, a: int, b: int, new: str) -> Edit:
        return Edit(self.bm.char(a), self.bm.char(b), new)

    def _rename(self, d: _Data) -> list[Edit]:
        out = []
        if d.kind == "envword" and d.whole is not None and d.name is None:
            return [self._span(*d.whole, f"{d.quote}{d.prefix}{STOCHASTIC}=1{d.quote}")]
        if d.name is not None:
            out.append(self._span(*d.name, STOCHASTIC))
        if d.kind == "envword" and d.value is None and d.whole is not None:
            raw = self.t(d.whole)
            eq = raw.find("=", len(d.quote) + len(d.prefix))
            if eq >= 0:
                tail_quote = d.quote if raw.endswith(d.quote) and d.quote else ""
                start = d.whole[0] + len(raw[: eq + 1].encode())
                end = d.whole[1] - len(tail_quote.encode())
                value_raw = self.data[start:end].decode("utf-8")
                q = value_raw[:1] if value_raw[:1] in ("'", '"') and len(value_raw) >= 2 and value_raw.endswith(value_raw[:1]) else ""
                out.append(self._span(start, end, f"{q}1{q}"))
        if d.value is not None:
            raw = self.t(d.value)
            q = raw[:1] if raw[:1] in ("'", '"') and raw.endswith(raw[:1]) and len(raw) >= 2 else ""
            out.append(self._span(*d.value, f"{q}1{q}"))
        elif d.kind in ("decl", "assign", "prefix"):
            assert d.name is not None, "these kinds always carry the name's span"
            end = d.name[1] + 1  # `X=` with no value
            out.append(self._span(end, end, "1"))
        return out

    def _remove_words(self, seq: list, gone: set) -> list[Edit]:
        out = []
        i = 0
        while i < len(seq):
            if seq[i].id not in gone:
                i += 1
                continue
            j = i
            while j + 1 < len(seq) and seq[j + 1].id in gone:
                j += 1
            start, end = seq[i].start_byte, seq[j].end_byte
            if j + 1 < len(seq):
                out.append(self._span(start, seq[j + 1].start_byte, ""))
            elif i > 0:
                out.append(self._span(seq[i - 1].end_byte, end, ""))
            else:
                out.append(self._span(start, end, ":"))
            i = j + 1
        return out

    def _remove_statements(self, stmts: list) -> list[Edit]:
        out = []
        gone = {s.id for s in stmts}
        colon_done: set = set()
        for s in stmts:
            parent = s.parent
            if parent is None:
                continue
            if parent.type in ("list", "pipeline", "negated_command") or parent.type not in STATEMENT_PARENTS:
                out.append(self._span(s.start_byte, s.end_byte, ":"))
                continue
            segment = _segment(parent, s)
            if parent.type in NEEDS_COMMAND and all(x.id in gone for x in segment):
                first = segment[0]
                if first.id not in colon_done:
                    colon_done.add(first.id)
                    if first.id == s.id:
                        out.append(self._span(s.start_byte, s.end_byte, ":"))
                        continue
            out.append(self._delete_statement(s))
        return out

    def _delete_statement(self, s) -> Edit:
        text = self.text
        a, b = self.bm.char(s.start_byte), self.bm.char(s.end_byte)
        span = line_span(text, a, b)
        if span is not None:
            return Edit(span[0], span[1], "")
        j = b
        while j < len(text) and text[j] in " \t":
            j += 1
        if j < len(text) and text[j] in ";&" and text[j:j + 2] not in (";;", "&&", ";&"):
            j += 1
            while j < len(text) and text[j] in " \t":
                j += 1
            return Edit(a, j, "")
        k = a
        while k > 0 and text[k - 1] in " \t":
            k -= 1
        if k > 0 and text[k - 1] in ";&" and text[k - 2:k] not in (";;", "&&"):
            return Edit(k - 1, b, "")
        return Edit(a, j, "")


STATEMENT_PARENTS = {"program", "compound_statement", "do_group", "if_statement", "elif_clause", "else_clause", "case_item", "subshell"}


def _segment(parent, stmt) -> list:
    """The statements of ``parent`` between the same keywords as ``stmt`` (a ``then`` body, an
    ``else`` body, a ``{ }`` group)."""
    segments: list[list] = [[]]
    found = 0
    for c in parent.children:
        if not c.is_named and c.type in KEYWORDS:
            segments.append([])
            continue
        if c.is_named and c.type in STATEMENTS:
            segments[-1].append(c)
            if c.id == stmt.id:
                found = len(segments) - 1
    return segments[found]


def _describe(name: str, line: int) -> str:
    """How a computed piece of a launch line is named in a message."""
    shown = name if name.startswith(("$", "`")) else f"${name}"
    if line:
        return f"{shown} (set at line {line})" if not name.startswith(("$", "`")) else f"{shown} (line {line})"
    return f"{shown} (from the environment)" if not name.isdigit() and name not in ("@", "*") else f"{shown} (the script's arguments)"


def _first_error(node):
    if node.type == "ERROR" or node.is_missing:
        return node
    for c in node.children:
        if c.has_error or c.type == "ERROR" or c.is_missing:
            return _first_error(c)
    return node


def _norm(path: str) -> str:
    while path.startswith("./"):
        path = path[2:]
    return path


def find_mentions(text: str, names) -> list[tuple[str, int]]:
    """``(name, offset)`` of each whole-word occurrence of the legacy ``names`` in ``text``
    (a coverage check, so nothing naming a variable goes unreported)."""
    out = []
    for name in names:
        start = 0
        while True:
            k = text.find(name, start)
            if k < 0:
                break
            before = text[k - 1] if k > 0 else " "
            after = text[k + len(name)] if k + len(name) < len(text) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                out.append((name, k))
            start = k + len(name)
    return sorted(out, key=lambda x: x[1])


def analyze(text: str, path: str) -> Analysis:
    """Analyse a whole shell script. Raises :class:`CarrierError` when it does not parse, by
    tree-sitter-bash or by bash itself (:func:`bash_syntax_error`)."""
    error = bash_syntax_error(text)
    if error is not None:
        raise CarrierError(f"{path}:{error[0]}:1: cannot parse as a shell script: bash -n says: {error[1]}")
    analysis = Analysis("shell", text)
    frag = ShellFragment(text, path, analysis)
    analysis.sr_covered = frag.sr_covered
    analysis.render = lambda decisions: _apply(text, frag.edits(decisions))
    return analysis


def bash_syntax_error(text: str) -> tuple[int, str] | None:
    """bash's own verdict on ``text``: ``(line, message)`` when ``bash -n`` (read commands
    without executing them, bash(1)) rejects it, else None; also None where no bash is installed.
    tree-sitter-bash recovers from errors it does not mark (``f { export X=1; }`` after a
    ``&``, a stray ``else``), and a file bash cannot run is not one to rewrite."""
    bash = shutil.which("bash")
    if bash is None:
        return None
    try:
        proc = subprocess.run([bash, "-n"], input=text.encode("utf-8", "surrogateescape"), capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode == 0:
        return None
    first = next((line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip()), "syntax error")
    found = re.search(r"line (\d+): (.*)", first)
    return (int(found.group(1)), found.group(2)) if found else (1, first)


def _apply(text: str, edits: list[Edit]) -> str:
    from .model import apply_edits

    return apply_edits(text, edits)
