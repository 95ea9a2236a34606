"""YAML: Kubernetes manifests, docker compose files, CI configurations.

Parser: ruamel.yaml. Its composer gives every node with its exact start and end marks
(character offsets), so the entries are *found* on the parsed document while the file is
*edited* as text: a removed entry takes its own lines (its trailing comment with it), a
replaced one has only its name and value scalars rewritten; comments, quoting, key order,
anchors and blank lines everywhere else stay byte for byte (a round-trip dump would re-indent
and re-quote).

What is read:

* environment containers: a key ``env``, ``environment`` or ``variables`` whose value is
  - a list of ``{name: X, value: "1"}`` items (Kubernetes ``containers[].env``; ``valueFrom``
    is a computed value),
  - a mapping ``X: "1"`` (docker compose ``environment``, GitHub Actions ``env`` at workflow,
    job or step level, GitLab CI ``variables``; ``X:`` with no value passes the host's value),
  - a list of ``X=1`` strings (docker compose; a bare ``X`` passes the host's value);
* launches, in the mapping that holds the container and every mapping below it: ``command``
  and ``args`` lists (Kubernetes: the container runs ``command + args``; ``args`` alone runs
  the image's entrypoint, which cannot be resolved), ``command``/``entrypoint`` strings or
  lists (compose; a string is split like a shell would, without running one), and the shell
  scripts of ``run`` (GitHub Actions), ``script``/``before_script`` (GitLab CI), ``cmds``
  (Task's Taskfile.yml: "Taskfile Schema Reference", a task's list of shell commands), ``sh -c``
  arguments (through :mod:`.shell`);
* includes: compose ``env_file`` (a ``.env`` file whose entries reach the service's command).

When every entry of a container is removed, ``[]`` (or ``{}``) is written after its key, so the
key keeps a valid empty value instead of becoming ``null``. Flow-style containers
(``env: [{name: X, value: "1"}]``) and multi-line scalars are reported (BFM131), not edited.
"""

from __future__ import annotations

import dataclasses
import shlex
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, ReusedAnchorWarning, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .. import escaped_bytes
from ..command_lines import read_command
from ..diagnostics import message
from .model import (
    KEEP,
    PASS,
    REMOVE,
    REPLACE,
    SET,
    STOCHASTIC,
    Analysis,
    Blocker,
    CarrierError,
    Decision,
    Edit,
    Include,
    Launch,
    LineIndex,
    Note,
    Target,
    apply_edits,
    decide_together,
    line_span,
    same_effect,
)
from .shell import ShellFragment
from .text import legacy_names

if TYPE_CHECKING:
    from pathlib import Path

    from ..diagnostics import Diagnostic

# the Carrier protocol (bf16_migrate.carriers): its kind and how the planner treats its files
KIND = "yaml"
INCLUDES = True
INCLUDED_ONLY = False
OWN_COVERAGE = False

ENV_KEYS = {"env", "environment", "variables"}
SHELL_KEYS = {"run", "script", "before_script", "after_script", "cmds"}


def _container_words(cmd, args, ep) -> tuple[list[str | None], Node]:
    """The words a container runs, ``entrypoint`` then ``command`` then ``args`` (each item a
    ``(key, value)`` pair or None), None for a word that is not a plain scalar; and the value node
    the launch is reported at (the first present). A string ``command``/``entrypoint`` is split as
    a shell would split it, without running one (docker compose), a string that cannot be split
    is one computed word; ``args`` counts only as a list (Kubernetes)."""
    words: list[str | None] = []
    anchor = None
    for item in (ep, cmd):
        if item is None:
            continue
        v = item[1]
        anchor = anchor or v
        if isinstance(v, SequenceNode):
            words += _sequence_words(v)
        elif isinstance(v, ScalarNode):
            try:
                words += shlex.split(v.value)
            except ValueError:
                words.append(None)
    if args is not None:
        v = args[1]
        anchor = anchor or v
        if isinstance(v, SequenceNode):
            words += _sequence_words(v)
    assert anchor is not None, "command, args or entrypoint is present (checked by the caller)"
    return words, anchor


def _sequence_words(node: SequenceNode) -> list[str | None]:
    """The words of a YAML list: each scalar's text, None for an item that is not a scalar."""
    return [_scalar_text(x) if isinstance(x, ScalarNode) else None for x in node.value]


def _inner_script_node(words: list[str | None], inner: int | None, items) -> ScalarNode | None:
    """The list scalar holding the ``sh -c`` script at word ``inner`` (the last one of ``items``'
    list values whose text is that word), or None when there is no such script or it is not a
    list item (a split string: its text is not one node)."""
    if inner is None or inner >= len(words):
        return None
    node = None
    for item in items:
        if item is not None and isinstance(item[1], SequenceNode):
            for x in item[1].value:
                if isinstance(x, ScalarNode) and x.value == words[inner]:
                    node = x
    return node


def _scalar_text(node) -> str | None:
    if isinstance(node, ScalarNode):
        if node.tag is not None and node.tag.endswith(":null"):  # a composed node always has its tag
            return None
        return node.value
    return None


class _Yaml:
    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.index = LineIndex(text)
        self.analysis = Analysis(KIND, text)
        self.legacy = legacy_names()
        self.items: dict[int, dict] = {}  # entry id -> how to edit it
        self.containers: list[dict] = []
        self.sr_containers: set = set()
        # every node is read once, however many aliases and merge keys reach it: a YAML alias is
        # the same node object (ruamel's composer), so the work stays linear in the file's size
        # instead of exponential in the depth of nested aliases (`&a [*b, *b, ...]`)
        self.walked: dict[int, list[int]] = {}
        self.read_containers: dict[int, list[int]] = {}
        self.read_shells: dict[int, list[int]] = {}
        self.read_commands: dict[tuple, list[int]] = {}
        # a variable set twice where the later value wins (the same `env:` list; an inner
        # container over an outer one): the entry it overrides, and their shared group
        self.overridden: dict[int, int] = {}

    def pos(self, offset: int) -> tuple[int, int]:
        return self.index.pos(offset)

    # -- walk ------------------------------------------------------------------------------------
    def walk(self, node) -> list[int]:
        """Launch indices found in ``node``'s subtree (environment containers of ``node``'s
        mappings reach them). Each node is walked once (:attr:`walked`)."""
        done = self.walked.get(id(node))
        if done is not None:
            return done
        self.walked[id(node)] = []  # a node that holds an alias to itself ends here
        if isinstance(node, SequenceNode):
            out: list[int] = []
            for item in node.value:
                out.extend(self.walk(item))
        elif isinstance(node, MappingNode):
            out = self._walk_mapping(node)
        else:
            out = []
        self.walked[id(node)] = out
        return out

    def _walk_mapping(self, node: MappingNode) -> list[int]:
        launches: list[int] = []
        envs = []
        pairs = _merged_pairs(node)
        keys = {}
        for k, v in pairs:
            if isinstance(k, ScalarNode):
                keys[k.value] = (k, v)
        for k, v in pairs:
            name = k.value if isinstance(k, ScalarNode) else None
            if name in ENV_KEYS:
                envs.append(self.container(k, v))
            elif name in SHELL_KEYS:
                scripts = (
                    [v]
                    if isinstance(v, ScalarNode)
                    else [x for x in getattr(v, "value", []) if isinstance(x, ScalarNode)]
                    if isinstance(v, SequenceNode)
                    else []
                )
                for s in scripts:
                    launches.extend(self.shell_launches(s))
            elif name in ("command", "args", "entrypoint", "env_file"):
                continue
            else:
                launches.extend(self.walk(v))
        launches.extend(self.container_command(keys))
        if "env_file" in keys:
            k, v = keys["env_file"]
            files = (
                [v] if isinstance(v, ScalarNode) else [x for x in getattr(v, "value", []) if isinstance(x, ScalarNode)]
            )
            for f in files:
                line, col = self.pos(f.start_mark.index)
                self.analysis.includes.append(Include(f.value, line, col, list(launches)))
        for ids in envs:
            for li in launches:
                for eid in ids:
                    self._reach(li, eid)
        return launches

    def _reach(self, li: int, eid: int) -> None:
        """Entry ``eid`` of an environment container reaches launch ``li`` unless a later entry
        of its own list sets the same variable, or a container nearer the launch (walked first)
        already does: the nearer value is the one the process gets."""
        if eid in self.overridden:
            return
        entries = self.analysis.entries
        launch = self.analysis.launches[li]
        if launch.isolated:
            return  # `env -i`: no container setting reaches it
        variable = entries[eid].variable
        nearer = next((e for e in launch.reached_by if e != eid and entries[e].variable == variable), None)
        if nearer is not None and not same_effect(entries[eid], entries[nearer]):
            self.overridden.setdefault(eid, nearer)
            decide_together(entries, eid, nearer)
            return
        launch.reached_by.setdefault(eid, True)

    def container_command(self, keys: dict) -> list[int]:
        cmd = keys.get("command")
        args = keys.get("args")
        ep = keys.get("entrypoint")
        if cmd is None and args is None and ep is None:
            return []
        nodes = tuple(id(item[1]) if item is not None else None for item in (cmd, args, ep))
        if nodes not in self.read_commands:
            self.read_commands[nodes] = self._container_command(cmd, args, ep)
        return self.read_commands[nodes]

    def _container_command(self, cmd, args, ep) -> list[int]:
        """The launches of a container's ``command``/``args``/``entrypoint`` items (each a
        ``(key, value)`` pair or None; one at least is present): the program they run together
        (Kubernetes "Define a Command and Arguments for a Container": the container runs
        ``command + args``; docker compose: ``entrypoint + command``), a ``sh -c`` script read as
        shell, or, for ``args`` alone, the image's own entrypoint (unresolvable)."""
        words, anchor = _container_words(cmd, args, ep)
        start = anchor.start_mark.index
        line, col = self.pos(start)
        raw = self.text[start : anchor.end_mark.index].split("\n")[0][:100]
        if cmd is None and ep is None:
            return self._entrypoint_launch(words, line, col, raw)
        command = read_command(words)
        inner = _inner_script_node(words, command.inner, (ep, cmd, args))
        if inner is not None:
            return self.shell_launches(inner)
        if not (command.python or command.target is not None):
            return []
        self.analysis.launches.append(
            Launch(line, col, raw, command.target, command.problem, args=list(command.args), isolated=command.isolated)
        )
        return [len(self.analysis.launches) - 1]

    def _entrypoint_launch(self, words: list[str | None], line: int, col: int, raw: str) -> list[int]:
        """``args`` without ``command`` runs the image's entrypoint with them (Kubernetes "Define a
        Command and Arguments for a Container"): a launch of an unknown script when an argument
        names a ``.py`` file, none otherwise."""
        if not any(w and w.endswith(".py") for w in words):
            return []
        self.analysis.launches.append(
            Launch(
                line,
                col,
                raw,
                (Target.SCRIPT, "?"),
                "the container runs the image's entrypoint with these args",
            )
        )
        return [len(self.analysis.launches) - 1]

    def shell_launches(self, node: ScalarNode) -> list[int]:
        """Launches of a shell script held in a scalar; settings inside it are reported (the
        coverage check), not edited."""
        if id(node) not in self.read_shells:
            self.read_shells[id(node)] = self._shell_launches(node)
        return self.read_shells[id(node)]

    def _shell_launches(self, node: ScalarNode) -> list[int]:
        scratch = Analysis("shell", node.value)
        start = node.start_mark.index
        frag = ShellFragment(node.value, self.path, scratch, pos=lambda off: self.pos(start), embedded=True)
        out = []
        for li in frag.launches:
            launch = scratch.launches[li]
            on = [scratch.entries[e] for e in launch.reached_by]
            launch.reached_by = {}
            if launch.inline is not None:  # the shell inside YAML is read, never edited
                launch.inline = dataclasses.replace(launch.inline, why_not=None)
            if on:
                launch.problem = (
                    launch.problem
                    or f"{on[0].variable} is set inside this script, which bf16-migrate does not edit in YAML"
                )
                if launch.target is None:
                    launch.target = (Target.SCRIPT, "?")
            self.analysis.launches.append(launch)
            out.append(len(self.analysis.launches) - 1)
        return out

    # -- environment containers -------------------------------------------------------------------
    def container(self, key: ScalarNode, value) -> list[int]:
        """The legacy settings of one ``env:`` container (a mapping, or a list of ``name:``/
        ``value:`` items or ``NAME=VALUE`` strings), each an entry; returns their ids. A
        container reached again (through an alias or a merge key) is the same entries."""
        if id(value) in self.read_containers:
            return self.read_containers[id(value)]
        ids: list[int] = []
        self.read_containers[id(value)] = ids
        record = {"key": key, "value": value, "entries": [], "kind": None, "count": 0}
        self.containers.append(record)
        scope = ("env", len(self.containers) - 1)
        if isinstance(value, MappingNode):
            record["kind"] = "map"
            record["count"] = len(value.value)
            for k, v in value.value:
                self._map_entry(value, k, v, scope, record, ids)
        elif isinstance(value, SequenceNode):
            record["kind"] = "seq"
            record["count"] = len(value.value)
            for item in value.value:
                if isinstance(item, MappingNode):
                    self._item_entry(value, item, scope, record, ids)
                elif isinstance(item, ScalarNode):
                    self._string_entry(value, item, scope, record, ids)
        last: dict[str, int] = {}
        for eid in reversed(ids):  # the same name twice in one container: the later value wins
            entry = self.analysis.entries[eid]
            if entry.variable in last and same_effect(entry, self.analysis.entries[last[entry.variable]]):
                decide_together(self.analysis.entries, eid, last[entry.variable])
            elif entry.variable in last:
                self.overridden[eid] = last[entry.variable]
                decide_together(self.analysis.entries, eid, last[entry.variable])
            else:
                last[entry.variable] = eid
        shared = _shared(key, value)
        for eid in ids:
            entry = self.analysis.entries[eid]
            shared_here = shared or _shared_entry(self.items[eid], value)
            if shared_here and entry.problem is None:
                entry.problem = (
                    f"{entry.variable} is in YAML shared through an anchor or alias ({shared_here}): edit it by hand"
                )
        return ids

    def _map_entry(self, value: MappingNode, k, v, scope: tuple, record: dict, ids: list[int]) -> None:
        """``NAME: VALUE`` of an env mapping (docker compose ``environment:``, GitHub Actions ``env:``)."""
        name = _scalar_text(k)
        if name == STOCHASTIC:
            self.sr_containers.add(scope)
        if name not in self.legacy:
            return
        problem = None
        if value.flow_style:
            problem = f"{name} is in a flow-style mapping: edit it by hand"
        action, val = SET, None
        if isinstance(v, ScalarNode):
            if v.tag is not None and v.tag.endswith(":null"):
                action = PASS
            else:
                val = v.value
                if "$" in val:
                    val = None
                if v.style in ("|", ">") or "\n" in self.text[v.start_mark.index : v.end_mark.index]:
                    problem = problem or f"{name} has a multi-line value: edit it by hand"
        else:
            problem = problem or f"{name} has a structured value: edit it by hand"
        end = v.end_mark.index if isinstance(v, ScalarNode) else k.end_mark.index
        ids.append(
            self.entry(
                name,
                action,
                val,
                k,
                problem,
                scope,
                {
                    "kind": "map",
                    "key": k,
                    "value": v if isinstance(v, ScalarNode) else None,
                    "span": (k.start_mark.index, end),
                    "container": record,
                },
            )
        )

    def _item_entry(self, value: SequenceNode, item: MappingNode, scope: tuple, record: dict, ids: list[int]) -> None:
        """``- name: NAME`` / ``value:`` (or ``valueFrom:``) of an env list (Kubernetes)."""
        fields = {k.value: v for k, v in item.value if isinstance(k, ScalarNode)}
        name_node = fields.get("name")
        name = _scalar_text(name_node) if name_node is not None else None
        if name == STOCHASTIC:
            self.sr_containers.add(scope)
        if name not in self.legacy:
            return
        problem = None
        if value.flow_style or item.flow_style:
            problem = f"{name} is in a flow-style list: edit it by hand"
        vnode = fields.get("value")
        val = _scalar_text(vnode) if vnode is not None else None
        computed = problem is None and "valueFrom" in fields  # BFM130, not BFM131
        if "valueFrom" in fields:
            problem = problem or f"{name} takes its value from valueFrom, which is computed: edit it by hand"
        if val is not None and "$" in val:
            val = None
        if vnode is None and "valueFrom" not in fields:
            val = ""
        end = _end(item)
        ids.append(
            self.entry(
                name,
                SET,
                val,
                name_node,
                problem,
                scope,
                {
                    "kind": "item",
                    "key": name_node,
                    "value": vnode,
                    "span": (self._dash(item), end),
                    "container": record,
                },
            )
        )
        if computed:
            self.analysis.entries[ids[-1]].blocker = Blocker.COMPUTED_VALUE

    def _string_entry(self, value: SequenceNode, item: ScalarNode, scope: tuple, record: dict, ids: list[int]) -> None:
        """``- NAME=VALUE`` (or ``- NAME``, passed on) of an env list (docker compose)."""
        raw = item.value
        name, eq, val = raw.partition("=")
        name = name.strip()
        if name == STOCHASTIC:
            self.sr_containers.add(scope)
        if name not in self.legacy:
            return
        problem = f"{name} is in a flow-style list: edit it by hand" if value.flow_style else None
        action = SET if eq else PASS
        value_text = val if eq else None
        if value_text is not None and "$" in value_text:
            value_text = None
        ids.append(
            self.entry(
                name,
                action,
                value_text,
                item,
                problem,
                scope,
                {
                    "kind": "str",
                    "key": item,
                    "value": None,
                    "span": (self._dash(item), item.end_mark.index),
                    "container": record,
                },
                name_offset=self._name_offset(item, name),
            )
        )

    def _name_offset(self, node: ScalarNode, name: str) -> int:
        raw = self.text[node.start_mark.index : node.end_mark.index]
        return node.start_mark.index + max(raw.find(name), 0)

    def _dash(self, node) -> int:
        k = node.start_mark.index
        while k > 0 and self.text[k - 1] in " \t":
            k -= 1
        if k > 0 and self.text[k - 1] == "-":
            return k - 1
        return node.start_mark.index

    def entry(self, name, action, value, key_node, problem, scope, record, name_offset=None) -> int:
        offset = name_offset if name_offset is not None else key_node.start_mark.index
        line, col = self.pos(offset)
        entry = self.analysis.new_entry(
            variable=name, action=action, value=value, line=line, col=col, sr_scope=scope, problem=problem
        )
        record["name_offset"] = offset
        self.items[entry.id] = record
        record["container"]["entries"].append(entry.id)
        self.analysis.handled.append((offset, offset + len(name)))
        return entry.id

    # -- rendering -------------------------------------------------------------------------------
    def render(self, decisions: Mapping[int, Decision], python: str | None = None) -> str:
        """The new text for ``decisions`` (a YAML file holds no Python of its own: ``python`` is unused)."""
        edits: list[Edit] = []
        for record in self.containers:
            removed = 0
            for eid in record["entries"]:
                d = decisions.get(eid, KEEP)
                item = self.items[eid]
                if d == REMOVE:
                    span = line_span(self.text, *item["span"])
                    if span is None:
                        raise AssertionError("entry shares its line; should have been reported (bf16-migrate bug)")
                    edits.append(Edit(*span, ""))
                    removed += 1
                elif d == REPLACE:
                    edits.extend(self.rename(item))
            if removed and removed == record["count"]:
                colon = self.text.find(":", record["key"].end_mark.index)
                edits.append(Edit(colon + 1, colon + 1, " []" if record["kind"] != "map" else " {}"))
        new = apply_edits(self.text, edits)
        if edits:
            try:  # every edit keeps the file valid YAML; a failure here is a bug, never written
                _compose(new)
            except YAMLError as exc:
                raise CarrierError(
                    f"{self.path}:1:1: cannot migrate: the edited YAML would not parse "
                    f"({str(exc).splitlines()[0]}); this is a bf16-migrate bug, please report it"
                ) from None
        return new

    def rename(self, item: dict) -> list[Edit]:
        t = self.text
        key = item["key"]
        off = item["name_offset"]
        if item["kind"] == "str":
            raw = t[key.start_mark.index : key.end_mark.index]
            q = raw[0] if raw[:1] in ("'", '"') else ""
            return [Edit(key.start_mark.index, key.end_mark.index, f"{q}{STOCHASTIC}=1{q}")]
        out = [Edit(off, off + len(_scalar_text(key) or ""), STOCHASTIC)]
        v = item["value"]
        if v is not None:
            raw = t[v.start_mark.index : v.end_mark.index]
            q = raw[0] if raw[:1] in ("'", '"') else ('"' if item["kind"] == "item" else "")
            out.append(Edit(v.start_mark.index, v.end_mark.index, f"{q}1{q}"))
        return out


MERGE_TAG = "tag:yaml.org,2002:merge"


def _compose(text: str) -> list:
    """The documents of ``text`` as ruamel.yaml's round-trip composer builds them (nodes with
    their marks). An anchor defined twice is valid YAML (an alias names the latest definition,
    YAML 1.2 section 3.2.2.2): ruamel's warning about it, a multi-line Python warning on stderr,
    is not shown."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ReusedAnchorWarning)
        return list(YAML(typ="rt").compose_all(text))


def _merged_pairs(node: MappingNode) -> list[tuple]:
    """The key/value pairs of ``node`` with its merge keys (``<<: *base``, ``<<: [*a, *b]``)
    expanded, as YAML's merge key type defines them (https://yaml.org/type/merge.html): the
    mapping's own keys win, then the merged mappings' in order. The merged mappings' pairs are the
    nodes themselves (an environment container found through a merge is the same container)."""
    return _merged_pairs_once(node, {id(node)})


def _merged_pairs_once(node: MappingNode, visited: set[int]) -> list[tuple]:
    """:func:`_merged_pairs` of a merged mapping, each mapping taken once (``visited``)."""
    own = [(k, v) for k, v in node.value if not _is_merge(k)]
    seen = {k.value for k, _ in own if isinstance(k, ScalarNode)}
    out = list(own)
    for k, v in node.value:
        if not _is_merge(k):
            continue
        for merged in (
            [v] if isinstance(v, MappingNode) else [x for x in getattr(v, "value", []) if isinstance(x, MappingNode)]
        ):
            if id(merged) in visited:
                continue
            visited.add(id(merged))
            for mk, mv in _merged_pairs_once(merged, visited):
                if isinstance(mk, ScalarNode) and mk.value in seen:
                    continue
                if isinstance(mk, ScalarNode):
                    seen.add(mk.value)
                out.append((mk, mv))
    return out


def _is_merge(key) -> bool:
    return isinstance(key, ScalarNode) and (key.tag == MERGE_TAG or (key.value == "<<" and key.style is None))


def _shared(key, value) -> str | None:
    """How an environment container is shared with other places of the file: its value is an
    alias (``env: *common``: the value's text is elsewhere) or carries an anchor others may use."""
    if value.start_mark.index < key.end_mark.index:
        return "an alias"
    if getattr(value, "anchor", None):
        return f"anchor &{value.anchor}"
    return None


def _shared_entry(item: dict, container) -> str | None:
    """Whether an entry's own nodes are an alias (``- *bf``, ``X: *on``: their text is
    elsewhere) or carry an anchor (``X: &on "1"``) another place may refer to."""
    lo, hi = container.start_mark.index, container.end_mark.index
    for node in (item.get("key"), item.get("value")):
        if node is None:
            continue
        if not lo <= node.start_mark.index <= hi:
            return "an alias"
        if getattr(node, "anchor", None):
            return f"anchor &{node.anchor}"
    return None


def _never_in_force(y: _Yaml) -> None:
    """An entry overridden wherever it would reach (set again later in its list, or nearer the
    launch) never took effect: kept and reported (BFM092), with the entry that overrides it."""
    reached = {eid for launch in y.analysis.launches for eid in launch.reached_by}
    for eid, by in y.overridden.items():
        entry = y.analysis.entries[eid]
        if eid in reached or entry.problem is not None:
            continue
        other = y.analysis.entries[by]
        entry.problem = (
            f"{entry.variable} is set again at line {other.line} ({other.variable}={other.value}), whose value is the "
            "one in force: this setting never took effect"
        )
        entry.blocker = Blocker.NEVER_IN_FORCE


def _end(node) -> int:
    if isinstance(node, ScalarNode):
        return node.end_mark.index
    if isinstance(node, MappingNode):
        return max((_end(v) for k, v in node.value), default=node.start_mark.index)
    if isinstance(node, SequenceNode):
        return max((_end(v) for v in node.value), default=node.start_mark.index)
    return node.end_mark.index


def _unique_keys(node, path: str) -> None:
    """Raise :class:`CarrierError` at the first mapping key that repeats one of its mapping's
    (YAML 1.2, 3.2.1.1: "each of the keys is unique"; ruamel.yaml's composer does not check it,
    its constructor does). Scalar keys are compared by value; a merge key ``<<`` may repeat."""
    stack = [node]
    visited: set[int] = set()
    while stack:
        current = stack.pop()
        if id(current) in visited:
            continue  # an alias is the node it names: checked once
        visited.add(id(current))
        if isinstance(current, MappingNode):
            seen = set()
            for key, value in current.value:
                if isinstance(key, ScalarNode) and key.tag != "tag:yaml.org,2002:merge" and key.value != "<<":
                    if key.value in seen:
                        mark = key.start_mark
                        raise CarrierError(
                            f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: duplicate key {key.value!r}"
                        )
                    seen.add(key.value)
                stack.extend((key, value))
        elif isinstance(current, SequenceNode):
            stack.extend(current.value)


def analyze(text: str, path: str) -> Analysis:
    """Analyse a YAML file. Raises :class:`CarrierError` (``path:line:col``) when it is not
    valid YAML."""
    escaped = next((i for i, ch in enumerate(text) if escaped_bytes.holds_escape_characters(ch)), None)
    if escaped is not None:
        # read as bytes (write.read_carrier) where not UTF-8, but a YAML stream is Unicode (YAML 1.2, 5.2): ruamel.yaml
        # and PyYAML refuse such a file, and so would whatever reads the migrated one
        line, col = LineIndex(text).pos(escaped)
        raise CarrierError(f"{path}:{line}:{col}: not valid YAML: a byte that is not UTF-8 (YAML streams are Unicode)")
    y = _Yaml(text, path)
    try:
        docs = _compose(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{mark.line + 1}:{mark.column + 1}" if mark is not None else "1:1"
        raise CarrierError(f"{path}:{where}: not valid YAML: {exc.problem or exc.context}") from None
    except YAMLError as exc:
        raise CarrierError(f"{path}:1:1: not valid YAML: {str(exc).splitlines()[0]}") from None
    for doc in docs:
        if doc is not None:
            _unique_keys(doc, path)
    for doc in docs:
        if doc is not None:
            y.walk(doc)
            _note_config_map(y, doc)
    _never_in_force(y)
    # an entry sharing its lines with something else (flow style) cannot be removed by lines
    for eid, item in y.items.items():
        entry = y.analysis.entries[eid]
        if entry.problem is None and line_span(text, *item["span"]) is None:
            entry.problem = f"{entry.variable} shares its line with other YAML content: edit it by hand"
    y.analysis.sr_present = y.sr_containers
    y.analysis.sr_covered = lambda scope: scope in y.sr_containers
    y.analysis.render = y.render
    return y.analysis


def _note_config_map(y: _Yaml, doc: Node) -> None:
    """A BFM131 note at each legacy name among the ``data`` keys of a Kubernetes ConfigMap (``kind: ConfigMap``),
    naming the ConfigMap: its pods read it through ``envFrom: configMapRef`` or ``configMapKeyRef`` (Kubernetes
    docs, "Configure a Pod to Use a ConfigMap"), which bf16-migrate does not follow to their commands, so the
    entry is left for a hand. The coverage check's words named neither the ConfigMap nor what to migrate."""
    if not isinstance(doc, MappingNode):
        return
    fields = {k.value: v for k, v in doc.value if isinstance(k, ScalarNode)}
    kind, data, metadata = fields.get("kind"), fields.get("data"), fields.get("metadata")
    if not (isinstance(kind, ScalarNode) and kind.value == "ConfigMap" and isinstance(data, MappingNode)):
        return
    names = (
        {k.value: v for k, v in metadata.value if isinstance(k, ScalarNode)}
        if isinstance(metadata, MappingNode)
        else {}
    )
    name = names.get("name")
    called = f"`{name.value}`" if isinstance(name, ScalarNode) else "without a name"
    for key, value in data.value:
        if not (isinstance(key, ScalarNode) and key.value in y.legacy):
            continue
        setting = f"{key.value}={value.value}" if isinstance(value, ScalarNode) else f"{key.value}=1"
        offset = key.start_mark.index
        line, col = y.pos(offset)
        said = message("BFM131", "configmap", variable=key.value, name=called, setting=setting)
        y.analysis.notes.append(Note("BFM131", line, col, said))
        y.analysis.handled.append((offset, offset + len(key.value)))


def reported_text(path: Path, text: str) -> list[Diagnostic]:
    """Findings for the parts of the file read but never rewritten: none, every mention in a
    yaml file is an entry, a note or the planner's coverage check."""
    return []
