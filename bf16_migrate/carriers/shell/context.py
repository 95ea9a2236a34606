"""Where a node of a shell fragment runs: execution order, the branches it needs and the
subshells around it (bash(1), "COMMAND EXECUTION ENVIRONMENT": a subshell, a pipeline element
and ``$(...)`` get a copy of the environment).

Each node gets a :class:`~.parsed.Ctx`: an order key (a function's body runs where the function
is first called), its guard path (the ``if``/``case``/``&&`` branches that must be taken) and its
containers (subshells, pipeline elements), and why it never runs when it never does
(:mod:`.dead`).
"""

from __future__ import annotations

import tree_sitter

from ..model import Blocker
from .dead import dead_branch, uncalled_functions
from .parsed import Ctx, Functions, ShellSource

CONDITIONAL = {
    "if_statement",
    "elif_clause",
    "else_clause",
    "case_item",
    "while_statement",
    "for_statement",
    "c_style_for_statement",
    "list",
}
SUBSHELLS = {"subshell", "command_substitution", "process_substitution"}
_DEAD_HOLDERS = ("program", "if_statement", "list", "while_statement", "case_statement")


def index_functions(source: ShellSource) -> Functions:
    """The functions the script defines, the first call of each outside its own body, and those
    nothing calls (:func:`.dead.uncalled_functions`)."""
    root = source.tree.root_node
    stack = [root]
    nodes = []
    while stack:
        n = stack.pop()
        nodes.append(n)
        stack.extend(reversed(n.children))
    found = Functions()
    for n in nodes:
        name = n.child_by_field_name("name") if n.type == "function_definition" else None
        if name is not None:
            found.definitions[source.t(name)] = n
    for n in nodes:
        name = n.child_by_field_name("name") if n.type == "command" else None
        fname = source.t(name) if name is not None else None
        fn = found.definitions.get(fname) if fname is not None else None
        if fn is None or fname is None or fname in found.first_calls:
            continue
        if not (fn.start_byte <= n.start_byte < fn.end_byte):
            found.first_calls[fname] = n
    uncalled = {n: f for n, f in found.definitions.items() if n not in found.first_calls}
    found.dead = uncalled_functions(root, source.data, uncalled, lambda byte: source.at(byte)[0])
    return found


_Above = tuple[tuple, tuple, "tuple[Blocker, str] | None", "Ctx | None"]
"""What a node's ancestors give it (:meth:`Contexts._above`): guard, containers, dead, outer."""


class Contexts:
    """The :class:`~.parsed.Ctx` of the nodes of one fragment (``source``, with its
    ``functions``), each computed once."""

    def __init__(self, source: ShellSource, functions: Functions) -> None:
        self.source = source
        self.functions = functions
        self._cache: dict[int, Ctx] = {}
        self._above_cache: dict[int, _Above] = {}
        self._function_cache: dict[int, tree_sitter.Node | None] = {}

    def of(self, node: tree_sitter.Node) -> Ctx:
        """Order key, guard path and subshell containers of ``node`` (a function's body inlined
        at its first call)."""
        cached = self._cache.get(node.id)
        if cached is None:
            cached = self._cache[node.id] = self._context(node)
        return cached

    def _context(self, node: tree_sitter.Node) -> Ctx:
        guard, containers, dead, outer = self._above(node)
        key = (node.start_byte,)
        if outer is None:
            return Ctx(key, guard, containers, dead)
        return Ctx(outer.key + key, outer.guard + guard, outer.containers + containers, dead or outer.dead)

    def _above(self, node: tree_sitter.Node) -> _Above:
        """What the ancestors of ``node`` give it: the guard path and containers they make
        (outermost first), why it never runs (the nearest reason), and the context of the first
        call of the function it is in (the ancestors above that function give nothing). Built
        from the parent's, each once: a long ``&&`` list is a tree as deep as it is long, and
        walking every ancestor of every node of it was quadratic."""
        chain = []
        current = node
        while current.id not in self._above_cache:
            parent = current.parent
            if parent is None:
                self._above_cache[current.id] = ((), (), None, None)
                break
            chain.append((parent, current))
            current = parent
        for anc, child in reversed(chain):
            self._above_cache[child.id] = self._step(self._above_cache[anc.id], anc, child)
        return self._above_cache[node.id]

    def function_of(self, node: tree_sitter.Node) -> tree_sitter.Node | None:
        """The ``function_definition`` around ``node`` (None at the top level), each node's
        found once from its parent's (see :meth:`_above`)."""
        chain = []
        current = node
        while current.id not in self._function_cache:
            parent = current.parent
            if parent is None:
                self._function_cache[current.id] = None
                break
            chain.append((parent, current))
            current = parent
        for anc, child in reversed(chain):
            self._function_cache[child.id] = anc if anc.type == "function_definition" else self._function_cache[anc.id]
        return self._function_cache[node.id]

    def _step(self, above: _Above, anc: tree_sitter.Node, child: tree_sitter.Node) -> _Above:
        """``child``'s :meth:`_above`, from its parent ``anc``'s."""
        guard, containers, dead, outer = above
        here: tuple[Blocker, str] | None = None
        if anc.type == "function_definition":
            call = self._first_call(anc)
            if call is not None:
                body = anc.child_by_field_name("body")
                return (), ((body.id,) if body is not None and body.type == "subshell" else ()), None, self.of(call)
            here = self._dead_function(anc)
        if here is None and anc.type in _DEAD_HOLDERS:
            branch = dead_branch(anc, child, self.source.data)
            here = (Blocker.NEVER_IN_FORCE, branch) if branch is not None else None
        tag = _branch_tag(anc, child) if anc.type in CONDITIONAL else None
        return (
            guard + (((anc.id, tag),) if tag is not None else ()),
            containers + tuple(_containers(anc, child)),
            here or dead,
            outer,
        )

    def _first_call(self, function: tree_sitter.Node) -> tree_sitter.Node | None:
        name = function.child_by_field_name("name")
        return self.functions.first_calls.get(self.source.t(name)) if name is not None else None

    def _dead_function(self, function: tree_sitter.Node) -> tuple[Blocker, str] | None:
        name = function.child_by_field_name("name")
        return self.functions.dead.get(self.source.t(name)) if name is not None else None


def _containers(anc: tree_sitter.Node, child: tree_sitter.Node) -> list:
    """The environments ``anc`` gives ``child`` a copy of, outermost first: a ``&`` after it
    (run in a subshell of its own), a subshell, a pipeline element."""
    found: list = []
    following = _next_sibling(anc, child)
    if following is not None and following.type == "&":  # `cmd &`: run in a subshell of its own
        found.insert(0, ("background", child.id))
    if anc.type in SUBSHELLS:
        found.insert(0, anc.id)
    if anc.type == "pipeline" and anc.named_child_count > 1:
        found.insert(0, (anc.id, child.id))
    return found


def _next_sibling(anc, child):
    found = False
    for c in anc.children:
        if found:
            return c
        found = c.id == child.id
    return None


def _branch_tag(anc, child) -> str | None:
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
