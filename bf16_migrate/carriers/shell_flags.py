"""Passing a launched script's own flag where a shell launcher set a legacy variable.

In amp mode a script whose own autocast is switched by a flag (``--enable_pt_autocast``) needs
that flag on every path where its launcher set the legacy variable, in place of the setting
(:class:`~bf16_migrate.python.MigrationResult` ``launch_flag``). Two shapes are rewritten, each
equivalent path by path to the setting it replaces (bash(1): an unquoted ``$V`` is split into
words; a launch's arguments are the words after the script):

* the setting is in force on every path to the launch (``export X=1`` before it, ``X=1 torchrun
  train.py ...``): the flag goes right after the script's word on the launch line;
* the setting is made in one branch of an ``if``/``case`` (the paths through it), and that
  branch assigns a variable the launch expands unquoted among the script's arguments
  (``ADD_ARGS=""`` ... ``torchrun train.py $ADD_ARGS``), assigned nowhere between the branch
  and the launch: the flag is appended to that assignment's value, as the launchers of the AWS
  Neuron BERT sample pass ``--enable_pt_autocast`` on their amp path.

Anything else is not guessed: :func:`flag_edits` says why, and the plan keeps the setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .model import Edit

if TYPE_CHECKING:
    from .shell_fragment import ShellFragment

_BRANCHES = ("if_statement", "elif_clause", "else_clause", "case_item")
_EXPANSIONS = ("simple_expansion", "expansion")


def flag_edits(frag: ShellFragment, entry_id: int, launch_index: int, flag: str, sure: bool) -> list[Edit] | str:
    """The edits that pass ``flag`` to the launch ``launch_index`` of ``frag`` on the paths
    where the entry ``entry_id`` is in force (on every path to it when ``sure``), or why they
    cannot be made (one clause, for a diagnostic)."""
    node = frag.launch_node.get(launch_index)
    words = _words(node) if node is not None else []
    if node is None or _inside(node, "function_definition") or (words and frag.t(words[0]) in frag.functions):
        return "it runs inside a shell function"
    script = _script_word(frag, words, frag.analysis.launches[launch_index].target)
    if script is None:
        return "the script's path is not written on the launch line"
    if any(frag.t(word) == flag for word in words[script + 1 :]):
        return []  # passed already, on every path
    if sure:
        at = frag.bm.char(words[script].end_byte)
        return [Edit(at, at, f" {flag}")]
    owner = frag.entry_data[entry_id].owner
    branch = _branch_of(owner)
    if branch is None:
        return "the setting is made on some paths only, outside an if or case branch"
    for k in range(script + 1, len(words)):
        name = _expanded_name(frag, words[k])
        if name is None:
            continue
        found = _branch_assignment(frag, branch, owner, name)
        if isinstance(found, str):
            continue
        container = _container(branch)
        if container.end_byte > node.start_byte or _assigned_between(frag, name, container, node):
            continue
        return [_append_to_value(frag, found, flag)]
    return (
        "the setting is made on some paths only, and its branch assigns no variable the launch expands "
        "unquoted among the script's arguments"
    )


def _inside(node, kind: str) -> bool:
    anc = node.parent
    while anc is not None:
        if anc.type == kind:
            return True
        anc = anc.parent
    return False


def _words(command) -> list:
    """The command's name and argument words, in order."""
    name = command.child_by_field_name("name")
    return ([name] if name is not None else []) + list(command.children_by_field_name("argument"))


def _script_word(frag: ShellFragment, words: list, target) -> int | None:
    """The index of the first word naming the launched script: spelled as the launch's target,
    or ending in ``/`` and its file name (``"$(dirname "$0")/train.py"``, read as ``./train.py``)."""
    if target is None:
        return None
    name = "/" + target[1].rsplit("/", 1)[-1]
    for k, word in enumerate(words[1:], start=1):
        text = frag.t(word).strip("'\"")
        if text == target[1] or text.endswith(name):
            return k
    return None


def _expanded_name(frag: ShellFragment, word) -> str | None:
    """``V`` for an unquoted ``$V`` / ``${V}`` word, else None."""
    if word.type not in _EXPANSIONS:
        return None
    names = [c for c in word.named_children if c.type == "variable_name"]
    if len(names) != 1 or len(word.named_children) != 1:
        return None
    return frag.t(names[0])


def _branch_of(statement):
    """The branch node (an ``if`` body, ``elif``/``else`` clause, ``case`` item) whose own
    statements include ``statement``, or None."""
    parent = statement.parent if statement is not None else None
    return parent if parent is not None and parent.type in _BRANCHES else None


def _branch_statements(branch) -> list:
    """The statements of ``branch`` itself: for an ``if_statement``, those of its ``then`` body."""
    children = list(branch.children)
    if branch.type in ("if_statement", "elif_clause"):
        then = next((k for k, c in enumerate(children) if c.type == "then"), None)
        if then is None:
            return []
        body = []
        for c in children[then + 1 :]:
            if c.type in ("elif_clause", "else_clause", "fi"):
                break
            body.append(c)
        return body
    return children


def _branch_assignment(frag: ShellFragment, branch, owner, name: str):
    """The one plain ``name=...`` statement of ``branch``'s own body, or why there is none."""
    found = [
        c
        for c in _branch_statements(branch)
        if c.type == "variable_assignment" and frag.t(c.child_by_field_name("name")) == name
    ]
    if len(found) != 1:
        return f"{name} is assigned {len(found)} times in the branch"
    value = found[0].child_by_field_name("value")
    if value is not None and value.type not in ("string", "raw_string", "word"):
        return f"{name}'s value is not a plain word or string"
    return found[0]


def _container(branch):
    """The ``if`` or ``case`` statement a branch belongs to."""
    node = branch
    while node.type not in ("if_statement", "case_statement") and node.parent is not None:
        node = node.parent
    return node


def _assigned_between(frag: ShellFragment, name: str, container, launch) -> bool:
    """Whether ``name`` is assigned (or declared, or read into) after ``container`` and before
    ``launch``, where the launch would see another value."""
    stack = [frag.tree.root_node]
    while stack:
        node = stack.pop()
        if container.end_byte <= node.start_byte < launch.start_byte and node.type == "variable_assignment":
            if frag.t(node.child_by_field_name("name")) == name:
                return True
        if (
            node.type == "command"
            and container.end_byte <= node.start_byte < launch.start_byte
            and any(frag.t(w) == name for w in _words(node)[1:])
        ):
            return True  # read NAME, export -n NAME...: anything naming it as a word
        stack.extend(node.children)
    return False


def _append_to_value(frag: ShellFragment, assignment, flag: str) -> Edit:
    """The edit appending ``flag`` (one more word) to the value of ``assignment``."""
    value = assignment.child_by_field_name("value")
    if value is None:
        at = frag.bm.char(assignment.end_byte)
        return Edit(at, at, f'"{flag}"')
    text = frag.t(value)
    start, end = frag.bm.char(value.start_byte), frag.bm.char(value.end_byte)
    if value.type in ("string", "raw_string"):
        inner = text[1:-1]
        return Edit(end - 1, end - 1, f" {flag}" if inner.strip() else flag)
    return Edit(start, end, f'"{text} {flag}"')
