"""Expand the words of a shell command the way bash would, as far as the script itself says.

A launch line such as ``torchrun $DISTRIBUTED_ARGS train.py``, ``$MAYBE_COMPILE torchrun ...``
or ``$TORCH_RUN_COMMAND --steps 10`` only shows which script it starts once its variables are
expanded. :class:`Expander` gives the words a command can have, from the assignments of the same
script (and of the files it ``source``s, when the caller passes their assignments):

* The value of ``$X`` at a command is that of the last assignment of ``X`` before it in
  execution order (a function body runs where the function is first called). An assignment in a
  branch the command is not sure to follow adds an alternative instead of replacing it, so
  ``if ...; then M=neuron_parallel_compile; fi`` gives ``{<environment>,
  "neuron_parallel_compile"}``; an ``if/elif/else`` that assigns it in every branch gives the
  branches' values only.
  Before any assignment on a path, the variable holds what the environment gave: computed. So
  ``$M torchrun ...`` with ``M`` set in one branch only is read as ``neuron_parallel_compile
  torchrun ...`` on that path and as an unknown command elsewhere.
* An unquoted expansion is split into words on blanks, and an empty one gives no word (bash
  word splitting, ``man bash`` "Word Splitting"); a quoted one (``"$X"``) is one word.
* ``"$@"``, ``$1``... are the arguments of the function call being followed, when there is
  one (see :meth:`Expander.words`).
* ``${X:-word}`` / ``${X-word}``: the default where ``X`` is empty (unset); other operators,
  command and arithmetic substitutions and ``for``/``read`` variables are computed.
* An indexed array assigned a literal list, ``CMD=(torchrun --nproc_per_node 2 train.py)``: ``"${CMD[@]}"``
  is its elements, one word each, ``${CMD[@]}`` the same split again on blanks, ``$CMD`` / ``${CMD[0]}``
  its first element (``man bash`` "Arrays"); another index, an append (``CMD+=(...)``) or an element that
  is not a literal makes it computed.
  One exception: the idioms for the directory of the script itself (``$(dirname "$0")``,
  ``$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)``, ``$(dirname "$(readlink -f "$0")")``,
  ``${BASH_SOURCE%/*}``) are that directory (``.``), which a launched or sourced path is
  resolved from (:func:`~bf16_migrate.carriers.resolve.resolve_script`).

A computed piece is kept as one word (NUL, so the reader sees "computed" there). That is an
assumption (``--nproc_per_node $N`` with ``N`` a number or a host name); it is stated wherever a
launch was read through it. At most :data:`MAX_ALTERNATIVES` expansions of a command are read;
a word that would make more is read as one computed word.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import tree_sitter

from .context import Contexts
from .parsed import ShellSource
from .words import static_value

COMPUTED = "\0"
_ELEMENTS = "\x1f"
"""Between the elements of an array's value (:meth:`Expander._value`): split into words where the array
is expanded whole (``"${CMD[@]}"``), cut at the first where its first element is (``$CMD``)."""
MAX_ALTERNATIVES = 16
MAX_DEPTH = 8
SCRIPT_DIR_COMMANDS = {"cd", "dirname", "pwd", "realpath", "readlink"}
SCRIPT_PATH_WORDS = {
    "$0",
    "${0}",
    "${BASH_SOURCE[0]}",
    "$BASH_SOURCE",
    "${BASH_SOURCE}",
    '"$0"',
    '"${BASH_SOURCE[0]}"',
    '"$BASH_SOURCE"',
}


@dataclass
class Expansion:
    """One way a command's words can expand: ``words`` (``None`` for a computed word, or
    ``--name=`` + NUL for an option whose value is computed) and the names whose value stayed
    computed on the way (``computed``: name -> 1-based line of the assignment, 0 when the
    variable comes from the environment)."""

    words: list[str | None]
    computed: dict[str, int] = field(default_factory=dict)
    origins: list[dict[str, int]] = field(default_factory=list)
    """For each word, the computed names it came from (empty for a word known as written)."""

    def first_unknown(self) -> dict[str, int]:
        """The computed names behind the first computed word (where a reader has to stop)."""
        for word, origin in zip(self.words, self.origins):
            if word is None or (word.endswith(COMPUTED) and not word.startswith("-")):
                return origin
        return {}


def _finish(text: str) -> str | None:
    if COMPUTED not in text:
        return text
    head = text.split(COMPUTED, 1)[0]
    if head.startswith("-") and "=" in head:
        return head[: head.index("=") + 1] + COMPUTED
    return None


class Expander:
    """The expansions of command words of one shell fragment (``source``), each node placed in
    execution order by ``contexts`` (:class:`.context.Contexts`)."""

    def __init__(self, source: ShellSource, contexts: Contexts) -> None:
        self.source = source
        self.contexts = contexts
        self.assignments: dict[str, list] = {}
        self._index(source.tree.root_node)
        self.environ: Mapping[str, str] | None = None
        """The environment the script starts in, when it is known (a launcher verified as the user
        runs it: :func:`.launch_args.resolve_args`); None: what the environment gives is computed."""
        self.argv: Sequence[str] | None = None
        """The script's own arguments (``$1``...), when known; None: computed."""
        self.used: dict[str, str | None] = {}
        """What :attr:`environ` and :attr:`argv` gave while expanding: name -> value, None where
        the variable is unset and its default was taken."""

    # -- where variables get their values -----------------------------------------------------
    def _index(self, root) -> None:
        stack = [root]
        while stack:
            n = stack.pop()
            if n.type == "variable_assignment" and n.parent is not None and n.parent.type != "command":
                name = n.child_by_field_name("name")
                value = n.child_by_field_name("value")
                appends = any(c.type == "+=" for c in n.children)
                if name is not None and name.type == "variable_name":
                    entry = "computed" if appends and value is not None and value.type == "array" else value
                    self.assignments.setdefault(self.source.t(name), []).append((n, entry))
            elif n.type == "for_statement":
                var = n.child_by_field_name("variable")
                if var is not None:
                    self.assignments.setdefault(self.source.t(var), []).append((n, "computed"))
            elif n.type == "unset_command":
                for w in n.named_children:
                    if w.type in ("variable_name", "word"):
                        self.assignments.setdefault(self.source.t(w), []).append((n, None))
            elif n.type == "command":
                name = n.child_by_field_name("name")
                if name is not None and self.source.t(name) in ("read", "mapfile", "readarray", "getopts"):
                    for a in n.children_by_field_name("argument"):
                        if a.type == "word" and not self.source.t(a).startswith("-"):
                            self.assignments.setdefault(self.source.t(a), []).append((n, "computed"))
            stack.extend(n.children)

    def values(self, name: str, at, depth: int = 0) -> list[tuple[str, dict[str, int]]]:
        """The values ``$name`` can have at node ``at``: ``(text, computed)`` pairs, NUL in
        ``text`` where a piece is computed."""
        assigns = self.assignments.get(name)
        if depth > MAX_DEPTH:
            return [(COMPUTED, {name: 0})]
        if not assigns:
            return [self._from_environment(name)]
        at_ctx = self.contexts.of(at)
        events = [(self.contexts.of(n), n, v) for n, v in assigns]
        events += [(self.contexts.of(stmt), stmt, "branches") for stmt in self._covering_ifs(assigns)]
        ordered = sorted(events, key=lambda x: x[0].key)
        # before its first assignment on a path, the variable holds what the environment gave
        state: list[tuple[str, dict[str, int]]] = [self._from_environment(name)]
        for c, node, value in ordered:
            if not c.key < at_ctx.key:
                break
            if at_ctx.containers[: len(c.containers)] != c.containers:
                continue  # assigned in a subshell the command is not in
            line = self.source.at(node.start_byte)[0]
            if value == "branches":  # every branch assigns it: the old value is gone
                if at_ctx.guard[: len(c.guard)] == c.guard and node.end_byte <= at.start_byte:
                    state = []
                continue
            if value == "computed":
                vals = [(COMPUTED, {name: line})]
            elif value is None:
                vals = [("", {})]
            else:
                vals = self._value(value, node, depth + 1)
                vals = [(t, {**comp, name: line} if COMPUTED in t and not comp else comp) for t, comp in vals]
            if at_ctx.guard[: len(c.guard)] == c.guard:
                state = vals
            else:
                state = state + vals
        return _dedupe(state)[:MAX_ALTERNATIVES]

    def _from_environment(self, name: str) -> tuple[str, dict[str, int]]:
        """What ``$name`` holds before the script assigns it: the known environment's value
        (:attr:`environ`), else computed (``{name: 0}``; also when it is unset there, which a
        default, ``${name:-word}``, then replaces: :meth:`_parameter`)."""
        if self.environ is not None and name in self.environ:
            self.used[name] = self.environ[name]
            return self.environ[name], {}
        return COMPUTED, {name: 0}

    def _unset(self, name: str, text: str, computed: dict[str, int]) -> bool:
        """Whether ``(text, computed)``, a value of ``$name``, is the variable unset in a known
        environment or argument list (so a default applies)."""
        if text != COMPUTED or computed != {name: 0}:
            return False
        if name.isdigit():
            return self.argv is not None and int(name) > len(self.argv)
        return self.environ is not None and name not in self.environ

    def _covering_ifs(self, assigns) -> list:
        """The ``if ... elif ... else ... fi`` statements each of whose branches assigns the
        variable among its own statements: after them the value before them is gone."""
        branches: dict[int, set[int]] = {}
        stmts: dict[int, tree_sitter.Node] = {}
        for node, _ in assigns:
            stmt = (
                node.parent
                if node.parent is not None and node.parent.type in ("declaration_command", "variable_assignments")
                else node
            )
            holder = stmt.parent
            if holder is None:
                continue
            if holder.type == "if_statement":
                branch, top = holder.id, holder
            elif holder.type in ("elif_clause", "else_clause") and holder.parent is not None:
                branch, top = holder.id, holder.parent
            else:
                continue
            branches.setdefault(top.id, set()).add(branch)
            stmts[top.id] = top
        out = []
        for tid, seen in branches.items():
            top = stmts[tid]
            clauses = [c for c in top.children if c.type in ("elif_clause", "else_clause")]
            if any(c.type == "else_clause" for c in clauses) and seen >= {top.id, *(c.id for c in clauses)}:
                out.append(top)
        return out

    def _value(self, node, at, depth: int) -> list[tuple[str, dict[str, int]]]:
        """The text of an assignment's value (no word splitting: ``man bash`` "PARAMETERS")."""

        static = static_value(node, self.source.data)
        if static is not None:
            return [(static, {})]
        kind = node.type
        if kind in ("string", "concatenation"):
            parts: list[list[tuple[str, dict[str, int]]]] = []
            for child in node.children:
                if child.type == '"':
                    continue
                if child.type == "string_content":
                    parts.append(
                        [(self.source.t(child).replace('\\"', '"').replace("\\$", "$").replace("\\\\", "\\"), {})]
                    )
                else:
                    parts.append(self._value(child, at, depth))
            return _join(parts)
        if kind in ("simple_expansion", "expansion"):
            return self._parameter(node, at, depth)
        if kind == "array":
            elements = [self._value(c, at, depth) for c in node.named_children]
            if elements and all(len(alts) == 1 and COMPUTED not in alts[0][0] for alts in elements):
                return [(_ELEMENTS.join(alts[0][0] for alts in elements), {})]
        if kind == "command_substitution" and self._is_script_dir(node):
            return [(".", {})]
        line = self.source.at(node.start_byte)[0]
        return [(COMPUTED, {self.source.t(node)[:40]: line})]

    def _parameter(self, node, at, depth: int) -> list[tuple[str, dict[str, int]]]:
        subscript = next((c for c in node.named_children if c.type == "subscript"), None)
        if subscript is not None and node.type == "expansion" and len(node.named_children) == 1:
            return self._element(subscript, at, depth)
        var = next((c for c in node.named_children if c.type in ("variable_name", "special_variable_name")), None)
        if var is None:
            return [(COMPUTED, {self.source.t(node): 0})]
        name = self.source.t(var)
        if self._strips_script_name(node, name):
            return [(".", {})]
        if name.isdigit() and name != "0" and self.argv is not None:
            found = self._argument(name)
        elif var.type == "special_variable_name" or name.isdigit():
            return [(COMPUTED, {name: 0})]
        else:
            found = None
        if node.type == "expansion":
            rest = [c for c in node.children if c.type not in ("${", "}") and c.id != var.id]
            if rest:
                op = self.source.t(rest[0])
                default = rest[1] if len(rest) > 1 else None
                if op in (":-", "-") and default is not None:
                    dvals = self._value(default, at, depth + 1)
                    out = []
                    for t, comp in found or self.values(name, at, depth + 1):
                        unset = self._unset(name, t, comp)
                        if unset:
                            self.used[name] = None
                        out.extend(dvals if t == "" or unset else [(t, comp)])
                    return out
                return [(COMPUTED, {name: 0})]
        return [(_first_element(t), comp) for t, comp in found or self.values(name, at, depth + 1)]

    def _element(self, subscript, at, depth: int) -> list[tuple[str, dict[str, int]]]:
        """``${CMD[@]}`` (every element, kept apart for :meth:`_word`), ``${CMD[0]}`` (the first); another
        index is computed."""
        var = next((c for c in subscript.named_children if c.type == "variable_name"), None)
        index = subscript.child_by_field_name("index")
        text = self.source.t(subscript)
        if var is None or index is None or self.source.t(index) not in ("@", "*", "0"):
            return [(COMPUTED, {text: 0})]
        values = self.values(self.source.t(var), at, depth + 1)
        if self.source.t(index) == "0":
            return [(_first_element(t), comp) for t, comp in values]
        return values

    def _argument(self, name: str) -> list[tuple[str, dict[str, int]]]:
        """``$N`` from the script's own arguments (:attr:`argv`): computed-unset past their end."""
        assert self.argv is not None, "called with the arguments known"
        k = int(name)
        if k > len(self.argv):
            return [(COMPUTED, {name: 0})]
        self.used[f"${name}"] = self.argv[k - 1]
        return [(self.argv[k - 1], {})]

    def _strips_script_name(self, node, name: str) -> bool:
        """``${BASH_SOURCE%/*}`` / ``${0%/*}``: the script's own path with its last ``/name``
        removed (``man bash`` "Parameter Expansion", ``${parameter%word}``), the directory of the
        script as it was started by a path (``bash dir/run.sh``, ``./run.sh``). Started as a bare
        name from its own directory it is the name itself; the idiom means the directory, and is
        read so."""
        if node.type != "expansion" or name not in ("0", "BASH_SOURCE"):
            return False
        rest = [self.source.t(c) for c in node.children if c.type not in ("${", "}", "variable_name")]
        return rest == ["%", "/*"]

    def _is_script_path(self, node) -> bool:
        """A word that is the script's own path: one of :data:`SCRIPT_PATH_WORDS`, or that path
        with its links resolved (``"$(readlink -f "$0")"``, ``$(realpath "${BASH_SOURCE[0]}")``:
        coreutils readlink(1) ``-f``/``-e``, realpath(1)), whose directory holds the file the
        launcher's own ``$0`` names, the tree's copy of it."""
        if self.source.t(node) in SCRIPT_PATH_WORDS:
            return True
        inner = [c for c in node.children if c.type != '"'] if node.type == "string" else [node]
        if len(inner) != 1 or inner[0].type != "command_substitution":
            return False
        commands = [c for c in inner[0].named_children if c.type != "comment"]
        if len(commands) != 1 or commands[0].type != "command":
            return False
        command = commands[0]
        tool = command.child_by_field_name("name")
        args = command.children_by_field_name("argument")
        if tool is None or not args or self.source.t(args[-1]) not in SCRIPT_PATH_WORDS:
            return False
        options = {self.source.t(a) for a in args[:-1]}
        if self.source.t(tool) == "realpath":
            return not options
        return self.source.t(tool) == "readlink" and options in ({"-f"}, {"-e"})

    def _is_script_dir(self, node) -> bool:
        """``$(dirname "$0")`` and its ``cd ...; pwd`` wrappings: only commands from
        :data:`SCRIPT_DIR_COMMANDS`, and a ``dirname`` of the script's own path
        (:meth:`_is_script_path`: also ``"$(readlink -f "$0")"``)."""
        names, saw_dirname = [], False
        stack = list(node.named_children)
        while stack:
            n = stack.pop()
            if n.type == "command":
                nm = n.child_by_field_name("name")
                if nm is None:
                    return False
                name = self.source.t(nm)
                names.append(name)
                if name == "dirname":
                    args = n.children_by_field_name("argument")
                    if args and self._is_script_path(args[-1]):
                        saw_dirname = True
                    else:
                        return False
            stack.extend(n.named_children)
        return saw_dirname and all(nm in SCRIPT_DIR_COMMANDS for nm in names)

    # -- command words --------------------------------------------------------------------------
    def words(self, nodes: list, at, positional: list[Expansion] | None = None) -> list[Expansion] | None:
        """The expansions of the word ``nodes`` of the command ``at``; ``positional`` holds the
        expansions of the arguments of the function call being followed (for ``"$@"``,
        ``$1``...). A word that would take the count past :data:`MAX_ALTERNATIVES` is read as
        one computed word."""
        per_word = []
        total = 1
        for n in nodes:
            alts = self._word(n, at, positional)
            if total * max(1, len(alts)) > MAX_ALTERNATIVES:
                # too many ways: this word is read as one computed word (the words after the
                # script, which come last, are the ones that usually end here)
                alts = [([None], {self.source.t(n)[:40]: self.source.at(n.start_byte)[0]})]
            total *= max(1, len(alts))
            per_word.append(alts)
        out = []
        for combo in itertools.product(*per_word):
            words: list[str | None] = []
            computed: dict[str, int] = {}
            origins: list[dict[str, int]] = []
            for w, comp in combo:
                words.extend(w)
                origins.extend([comp] * len(w))
                computed.update(comp)
            out.append(Expansion(words, computed, origins))
        return out

    def _word(self, node, at, positional) -> list[tuple[list[str | None], dict[str, int]]]:

        if node.type == "command_name" and node.named_children:
            node = node.named_children[0]
        static = static_value(node, self.source.data)
        if static is not None:
            return [([static], {})]
        kind = node.type
        if kind in ("simple_expansion", "expansion"):
            forwarded = self._positional(node, positional, quoted=False)
            if forwarded is not None:
                return forwarded
            return [(_split(t), comp) for t, comp in self._parameter(node, at, 0)]
        if kind == "string":
            inner = [c for c in node.children if c.type != '"']
            if len(inner) == 1 and inner[0].type in ("simple_expansion", "expansion"):
                forwarded = self._positional(inner[0], positional, quoted=True)
                if forwarded is not None:
                    return forwarded
                if any(c.type == "subscript" for c in inner[0].named_children):  # "${CMD[@]}": a word an element
                    return [
                        ([_finish(w) for w in t.split(_ELEMENTS)], comp) for t, comp in self._parameter(inner[0], at, 0)
                    ]
        if kind in ("string", "concatenation", "raw_string", "word", "number"):
            return [([_finish(t)], comp) for t, comp in self._value(node, at, 0)]
        return [([None], {self.source.t(node)[:40]: self.source.at(node.start_byte)[0]})]

    def _positional(self, node, positional, quoted: bool):
        """``"$@"`` / ``$*`` / ``$N`` of a function body, from the call's arguments."""
        var = next((c for c in node.named_children if c.type in ("variable_name", "special_variable_name")), None)
        if var is None or positional is None:
            return None
        name = self.source.t(var)
        if name in ("@", "*"):
            if name == "*" and quoted:
                return [
                    ([None if any(w is None for w in e.words) else " ".join(e.words)], e.computed) for e in positional
                ]
            return [(list(e.words), e.computed) for e in positional]
        if name.isdigit() and name != "0":
            k = int(name) - 1
            return [([e.words[k]] if k < len(e.words) else [], e.computed) for e in positional]
        return None


def _split(text: str) -> list[str | None]:
    """Word splitting of an unquoted expansion's result (default IFS: blanks and newlines)."""
    return [_finish(w) for w in text.replace(_ELEMENTS, " ").split()]


def _first_element(text: str) -> str:
    """The first element of an array's value (``$CMD`` of ``CMD=(a b)`` is ``a``); a scalar's value as it is."""
    return text.split(_ELEMENTS, 1)[0]


def _dedupe(values: list[tuple[str, dict[str, int]]]) -> list[tuple[str, dict[str, int]]]:
    """One alternative per text (``--n <computed>`` from two branches is one reading), with
    the computed names of all of them."""
    merged: dict[str, dict[str, int]] = {}
    for text, comp in values:
        merged.setdefault(text, {}).update(comp)
    return list(merged.items())


def _join(parts: list[list[tuple[str, dict[str, int]]]]) -> list[tuple[str, dict[str, int]]]:
    out: list[tuple[str, dict[str, int]]] = [("", {})]
    for alts in parts:
        out = _dedupe([(a + b, {**ca, **cb}) for (a, ca), (b, cb) in itertools.product(out, alts)])
        if len(out) > MAX_ALTERNATIVES:
            return [(COMPUTED, {})]
    return out


def mentions_expansion(node: tree_sitter.Node) -> bool:
    """Whether a word node holds a parameter expansion or a command substitution."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("simple_expansion", "expansion", "command_substitution"):
            return True
        stack.extend(n.children)
    return False
