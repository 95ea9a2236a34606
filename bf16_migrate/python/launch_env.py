"""The environment a Python launcher hands the script it starts in a process of its own.

``subprocess.run([sys.executable, "train.py"], env={**os.environ, "XLA_USE_BF16": "1"})``: the
legacy switch is set for ``train.py`` only, as ``XLA_USE_BF16=1 python train.py`` sets it in a shell
launcher. Each such launch (``[process_launchers]`` of ``rules/torch_api.toml``: Python's docs,
subprocess, "Frequently Used Arguments": ``env`` is the mapping the child's environment is made of)
is read here into a :class:`ProcessLaunch`: the script its argument list starts (the words read as a
shell launcher's, :func:`bf16_migrate.command_lines.read_command`) and the legacy entries of its
``env``, each a :class:`~.env_writes.LegacyWrite` so that it is rewritten the way a write of
``os.environ`` is (:mod:`.write_edits`).

The ``env`` forms followed: a dict display (``{**os.environ, "XLA_USE_BF16": "1"}``), ``dict(os.environ,
XLA_USE_BF16="1")``, ``os.environ | {"XLA_USE_BF16": "1"}``, or a name bound once before the call in the same
function to one of those, to ``os.environ.copy()`` or ``dict(os.environ)``, then given entries by
``env["XLA_USE_BF16"] = "1"`` statements of the same block before the call (where ``env.setdefault``, ``env.pop``
and ``env.update`` of other variables, named by literals, may change it too). The argument list: a list or tuple
display (or a name bound once to one) whose words are string literals, ``sys.executable`` (the interpreter),
or a path joined to the launcher's own directory (``os.path.join(os.path.dirname(os.path.abspath(__file__)),
"train.py")``, ``str(Path(__file__).parent / "train.py")``). Anything else (a command run through a shell, a
computed value, an ``env`` built by other code or changed elsewhere) gives the launch a ``problem``: its
settings are kept and reported (BFM042 ``launches``), never guessed at.

A training job a launcher starts elsewhere (``[job_launchers]``: a SageMaker estimator's ``entry_point``,
``source_dir`` and ``environment``) is read the same way, its script the entry point in its folder.

The launcher's settings go only together with the change of the script they reach
(:func:`bf16_migrate.env_modules.migrate_launched`, the link planner's rule for shell launchers): a
first migration of the launcher records the launches to follow (``Outcome.launches``), and a second,
once each script took the change under them, rewrites them (``launches_migrated``).
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import Assignment

from ..command_lines import Target, read_command
from ..rules import STOCHASTIC_ROUNDING_VAR, Mode
from .apply import EditPlan
from .bindings import assigned_values
from .context import FileContext
from .env_writes import LegacyWrite, is_environ, string_value
from .outcome import LaunchedScript
from .write_edits import rename_to_stochastic_rounding

__all__ = ["ProcessLaunch", "launch_holding", "launch_of", "plan_launches", "process_launches"]


@dataclass
class ProcessLaunch:
    """One call that starts a process (``subprocess.run(cmd, env=env)``).

    ``script``: the Python script its argument list starts, as written (None when it starts none
    that can be read); ``beside``: that path is joined to the launcher's own directory. ``writes``:
    the legacy entries of its ``env`` (truthy literals, the only ones followed); ``scope``: the id of
    the mapping they are in (one stochastic-rounding entry per mapping); ``sr_present``: that mapping
    sets ``NEURON_RT_STOCHASTIC_ROUNDING_EN`` already. ``problem``: why its settings cannot be
    followed (None when they can)."""

    call: cst.Call
    script: str | None = None
    beside: bool = False
    writes: list[LegacyWrite] = field(default_factory=list)
    scope: int = 0
    sr_present: bool = False
    problem: str | None = None

    @property
    def settings(self) -> dict[str, str]:
        """The legacy settings the launch hands its script (variable -> value)."""
        return {w.variable: w.literal or "1" for w in self.writes}


def process_launches(ctx: FileContext) -> list[ProcessLaunch]:
    """Every call of a ``[process_launchers]`` function of the file, in source order (computed once
    per file)."""
    return ctx.memo(("process_launches",), lambda: _process_launches(ctx))


def _process_launches(ctx: FileContext) -> list[ProcessLaunch]:
    launchers = ctx.rules.torch_api.process_launchers
    jobs = ctx.rules.torch_api.job_launchers
    found = []
    for call in ctx.nodes(cst.Call):
        names = ctx.qualified_names(call.func) if call.args else set()
        if names & launchers:
            found.append(_read_launch(ctx, call))
        elif jobs is not None and names & jobs.functions:
            found.append(_read_job(ctx, call))
    return found


def plan_launches(ctx: FileContext, plan: EditPlan, mode: Mode, migrated: Mapping[str, str] | None) -> set[int]:
    """The launches whose settings are followed: each script every launch of which in the file hands
    the same legacy settings, read without a problem (:class:`ProcessLaunch`), recorded in
    ``ctx.outcome.launches``. ``migrated`` (script as written -> its path as the findings name it)
    are the scripts that took the change under them: the entries that reach only those go, as a shell
    launcher's settings go (stochastic mode: the first of each environment becomes
    ``NEURON_RT_STOCHASTIC_ROUNDING_EN``, unless it sets that already), each reported as BFM001
    ``carrier``. Returns the ids of the keys rewritten."""
    launches = process_launches(ctx)
    groups: dict[tuple[str, bool], list[ProcessLaunch]] = {}
    for launch in launches:
        if launch.script is not None:
            groups.setdefault((launch.script, launch.beside), []).append(launch)
    followed: list[ProcessLaunch] = []
    for (script, beside), group in groups.items():
        settings = {tuple(sorted(launch.settings.items())) for launch in group}
        if any(launch.problem or not launch.writes for launch in group) or len(settings) != 1:
            continue
        line = ctx.pos(group[0].call)[0]
        entries = tuple(sorted({ctx.pos(w.key)[0] for launch in group for w in launch.writes}))
        ctx.outcome.launches.append(LaunchedScript(script, beside, settings.pop(), line, entries))
        followed.extend(group)
    if not migrated:
        return set()
    reaching: dict[int, list[ProcessLaunch]] = {}
    for launch in launches:
        for w in launch.writes:
            reaching.setdefault(id(w.key), []).append(launch)
    done: set[int] = set()
    used_scopes: set[int] = set()
    for launch in followed:
        for w in launch.writes:
            those = reaching[id(w.key)]
            if id(w.key) in done or not all(x in followed and x.script in migrated for x in those):
                continue
            done.add(id(w.key))
            scripts = sorted({migrated[x.script] for x in those if x.script is not None})
            change = "removed"
            if mode.stochastic_rounding and not launch.sr_present and launch.scope not in used_scopes:
                used_scopes.add(launch.scope)
                rename_to_stochastic_rounding(plan, w)
                change = f"replaced by {STOCHASTIC_ROUNDING_VAR}=1"
            elif w.element is not None:
                plan.drop_elements.add(id(w.element))
            else:
                plan.remove.add(id(w.statement))
            setting = f"{w.variable}={w.literal}"
            verify = ", ".join(
                f"`{shlex.join(['bf16-migrate', 'verify', s, '--legacy-env', setting])}`" for s in scripts
            )
            ctx.report(
                "BFM001",
                w.key,
                fixed=True,
                variant="carrier",
                variable=w.variable,
                change=change,
                scripts=", ".join(scripts),
                have="have" if len(scripts) > 1 else "has",
                what=mode.script_change,
                verify=verify,
            )
    return done


def launch_of(ctx: FileContext, key: cst.CSTNode) -> ProcessLaunch | None:
    """The launch whose environment ``key`` is an entry of, when its script is known."""
    return next(
        (x for x in process_launches(ctx) if x.script is not None and any(w.key is key for w in x.writes)), None
    )


def launch_holding(ctx: FileContext, key: cst.CSTNode) -> ProcessLaunch | None:
    """The launch whose environment ``key`` is an entry of, whether or not its script is known."""
    return next((x for x in process_launches(ctx) if any(w.key is key for w in x.writes)), None)


def _keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _read_launch(ctx: FileContext, call: cst.Call) -> ProcessLaunch:
    launch = ProcessLaunch(call)
    shell = _keyword(call, "shell")
    if shell is not None and not (isinstance(shell.value, cst.Name) and shell.value.value == "False"):
        launch.problem = "its command runs through a shell (shell=...)"
        return launch
    first = call.args[0] if call.args[0].keyword is None else _keyword(call, "args")
    if first is None:
        launch.problem = "its command cannot be read"
        return launch
    script = _script(ctx, first.value)
    if isinstance(script, str):
        launch.problem = script
    else:
        launch.script, launch.beside = script
    env = _keyword(call, "env")
    if env is not None:
        problem = _read_env(ctx, call, env.value, launch)
        launch.problem = launch.problem or problem
    return launch


def _read_job(ctx: FileContext, call: cst.Call) -> ProcessLaunch:
    """A training job's launch (``[job_launchers]``: ``PyTorch(entry_point="train.py", source_dir="src",
    environment={"XLA_USE_BF16": "1"}, ...)``): its script is ``source_dir``/``entry_point``, looked up as a
    shell launcher's relative path is (:func:`bf16_migrate.carriers.resolve.resolve_script`); its environment is
    read as a process launch's ``env=`` is."""
    jobs = ctx.rules.torch_api.job_launchers
    assert jobs is not None
    launch = ProcessLaunch(call)
    entry, folder = _keyword(call, jobs.script), _keyword(call, jobs.folder)
    word = _literal_word(ctx, entry.value) if entry is not None else None
    where = _literal_word(ctx, folder.value) if folder is not None else ""
    if word is None or where is None:
        launch.problem = f"its {jobs.script if word is None else jobs.folder} is not a string the codemod can read"
    elif "://" in where or "://" in word or not word.endswith(".py"):
        launch.problem = f"{jobs.script}={word!r} in {jobs.folder}={where!r} is no Python script of the tree"
    else:
        launch.script = posixpath.normpath(posixpath.join(where, word))
    env = _keyword(call, jobs.environment)
    if env is not None:
        problem = _read_env(ctx, call, env.value, launch)
        launch.problem = launch.problem or problem
    return launch


def _literal_word(ctx: FileContext, value: cst.BaseExpression) -> str | None:
    """The string ``value`` is, directly or through a name bound once to a string literal; None when computed."""
    if isinstance(value, cst.Name):
        values = assigned_values(ctx, value)
        value = values[0] if len(values) == 1 else value
    return string_value(value)


def _environment_keyword(ctx: FileContext, call: cst.CSTNode | None) -> str | None:
    """The keyword a launch ``call`` is given its script's environment by: ``env`` for a process launcher,
    ``environment`` for a job launcher (``[job_launchers]``); None for any other call."""
    if not isinstance(call, cst.Call):
        return None
    names = ctx.qualified_names(call.func)
    if names & ctx.rules.torch_api.process_launchers:
        return "env"
    jobs = ctx.rules.torch_api.job_launchers
    return jobs.environment if jobs is not None and names & jobs.functions else None


# -- the argument list -------------------------------------------------------------------------------
def _script(ctx: FileContext, command: cst.BaseExpression) -> tuple[str, bool] | str:
    """The Python script the argument list ``command`` starts and whether it is joined to the
    launcher's directory, or why it cannot be told."""
    if isinstance(command, cst.Name):
        values = assigned_values(ctx, command)
        if len(values) != 1:
            return f"its command `{command.value}` is bound more than once or computed"
        command = values[0]
    if not isinstance(command, (cst.List, cst.Tuple)):
        return "its command is not a list of words the codemod can read"
    words: list[str | None] = []
    beside: set[str] = set()
    plain: set[str] = set()
    for element in command.elements:
        word, joined = _word(ctx, element)
        words.append(word)
        if word is not None:
            (beside if joined else plain).add(word)
    read = read_command(words)
    if read.problem is not None:
        return read.problem
    if read.target is None or read.target[0] != Target.SCRIPT:
        return "its command starts no Python script of a file"
    name = read.target[1]
    if name in beside and name in plain:
        return f"its command names {name} twice"
    return name, name in beside


def _word(ctx: FileContext, element: cst.BaseElement) -> tuple[str | None, bool]:
    """A word of the argument list: its string (None when computed) and whether it is a path joined
    to the launcher's own directory."""
    if isinstance(element, cst.StarredElement):
        return None, False
    value = element.value
    literal = string_value(value)
    if literal is not None:
        return literal, False
    if "sys.executable" in ctx.qualified_names(value):
        return "python", False
    if isinstance(value, cst.Call) and len(value.args) == 1 and value.args[0].keyword is None:
        if ctx.qualified_names(value.func) & {"builtins.str", "os.fspath"}:
            value = value.args[0].value  # str(HERE / "train.py")
    if isinstance(value, cst.Call) and "os.path.join" in ctx.qualified_names(value.func) and len(value.args) == 2:
        base, leaf = value.args[0].value, string_value(value.args[1].value)
        if leaf is not None and "/" not in leaf and _own_dir(ctx, base):
            return leaf, True
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Divide):
        leaf = string_value(value.right)
        if leaf is not None and "/" not in leaf and _own_dir(ctx, value.left, path=True):
            return leaf, True
    return None, False


def _own_dir(ctx: FileContext, expr: cst.BaseExpression, path: bool = False, hops: int = 0) -> bool:
    """Whether ``expr`` is the launcher's own directory: ``os.path.dirname(<__file__>)`` (``path``
    False) or ``Path(<__file__>).parent`` (``path`` True), directly or through a name bound once."""
    if isinstance(expr, cst.Name) and hops < 3:
        values = assigned_values(ctx, expr)
        return len(values) == 1 and _own_dir(ctx, values[0], path, hops + 1)
    if not path:
        return (
            isinstance(expr, cst.Call)
            and "os.path.dirname" in ctx.qualified_names(expr.func)
            and len(expr.args) == 1
            and _this_file(ctx, expr.args[0].value)
        )
    return isinstance(expr, cst.Attribute) and expr.attr.value == "parent" and _this_path(ctx, expr.value)


def _this_file(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """``__file__``, or it made absolute (``os.path.abspath``, ``os.path.realpath``)."""
    if isinstance(expr, cst.Name):
        return expr.value == "__file__"
    return (
        isinstance(expr, cst.Call)
        and bool(ctx.qualified_names(expr.func) & {"os.path.abspath", "os.path.realpath"})
        and len(expr.args) == 1
        and _this_file(ctx, expr.args[0].value)
    )


def _this_path(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """``Path(__file__)``, or it made absolute (``.resolve()``, ``.absolute()``)."""
    if not isinstance(expr, cst.Call):
        return False
    if "pathlib.Path" in ctx.qualified_names(expr.func):
        return len(expr.args) == 1 and _is_file_name(expr.args[0].value)
    func = expr.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value in ("resolve", "absolute")
        and not expr.args
        and _this_path(ctx, func.value)
    )


def _is_file_name(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "__file__"


# -- the environment --------------------------------------------------------------------------------
def _read_env(ctx: FileContext, call: cst.Call, env: cst.BaseExpression, launch: ProcessLaunch) -> str | None:
    """Fill ``launch``'s writes from the ``env`` mapping; the problem that keeps them, or None."""
    if isinstance(env, cst.Name):
        return _held_env(ctx, call, env, launch)
    launch.scope = id(env)
    return _mapping(ctx, env, launch) or _values(launch)


def _mapping(ctx: FileContext, env: cst.BaseExpression, launch: ProcessLaunch) -> str | None:
    """The entries of a dict display or a ``dict(...)`` call; the problem when ``env`` is neither."""
    statement = _line(ctx, env)
    if isinstance(env, cst.Dict):
        for el in env.elements:
            if isinstance(el, cst.DictElement):
                _entry(ctx, launch, string_value(el.key), el.key, el.value, statement, el, "update-dict", env)
        return None
    if isinstance(env, cst.Call) and "builtins.dict" in ctx.qualified_names(env.func):
        for arg in env.args:
            if arg.keyword is not None:
                _entry(ctx, launch, arg.keyword.value, arg.keyword, arg.value, statement, arg, "update-kwarg", env)
        return None
    if isinstance(env, cst.Call) and isinstance(env.func, cst.Attribute) and not env.args:
        if env.func.attr.value == "copy" and is_environ(ctx, env.func.value):
            return None  # os.environ.copy(): entries come from the statements after it
    if isinstance(env, cst.BinaryOperation) and isinstance(env.operator, cst.BitOr) and isinstance(env.right, cst.Dict):
        # `os.environ | {"XLA_USE_BF16": "1"}` (PEP 584's dict union, which os.environ has since Python 3.9):
        # the right-hand entries win
        if is_environ(ctx, env.left) or _mapping(ctx, env.left, launch) is None:
            return _mapping(ctx, env.right, launch)
    return "its environment is built by code the codemod does not follow"


def _entry(
    ctx: FileContext,
    launch: ProcessLaunch,
    variable: str | None,
    key: cst.CSTNode,
    value: cst.BaseExpression,
    statement: cst.SimpleStatementLine | None,
    element: cst.CSTNode | None,
    form: str,
    container: cst.CSTNode | None,
) -> None:
    """One entry of the environment: a legacy variable's is a write of the launch."""
    if variable == STOCHASTIC_ROUNDING_VAR:
        launch.sr_present = True
    rule = ctx.rules.variables.get(variable) if variable is not None else None
    if variable is None or rule is None or not rule.effective or statement is None:
        return  # an fp16 variable's entry is reported where it is (BFM042 noop), not followed
    small = statement.body[0]
    siblings = 0
    if isinstance(container, cst.Dict):
        siblings = len(container.elements) - 1
    elif isinstance(container, cst.Call):
        siblings = len(container.args) - 1
    launch.writes.append(
        LegacyWrite(variable, form, key, value, string_value(value), statement, small, element, siblings)
    )


def _values(launch: ProcessLaunch) -> str | None:
    """Why the legacy entries found cannot be followed (a value not a literal that switches bf16 on), or None."""
    for w in launch.writes:
        if w.literal is None:
            return f"the value of {w.variable} is computed"
        if not w.truthy:
            return f"{w.variable} is set to {w.literal!r}, which switches nothing on"
    return None


def _held_env(ctx: FileContext, call: cst.Call, name: cst.Name, launch: ProcessLaunch) -> str | None:
    """The environment held in ``name``: bound once, before the call, in the same block as the
    statements that give it entries (``env["XLA_USE_BF16"] = "1"``), used nowhere but in those and in
    the ``env=`` of process launches."""
    scope = ctx.scopes.get(name)
    bindings = list(scope[name.value]) if scope is not None else []
    if len(bindings) != 1 or not isinstance(bindings[0], Assignment):
        return f"its environment `{name.value}` is bound more than once or not by an assignment"
    binding = bindings[0]
    target = ctx.parent(binding.node)
    assign = ctx.parent(target)
    if not (isinstance(target, cst.AssignTarget) and isinstance(assign, cst.Assign) and len(assign.targets) == 1):
        return f"its environment `{name.value}` is not bound by a plain assignment"
    bound_at = _line(ctx, assign)
    if bound_at is None or ctx.pos(assign) > ctx.pos(call):
        return f"its environment `{name.value}` is not bound on a line of its own before the call"
    block = ctx.parent(bound_at)
    launch.scope = id(assign)
    problem = _mapping(ctx, assign.value, launch)
    if problem is not None:
        return problem
    for access in binding.references:
        node = access.node
        parent = ctx.parent(node)
        if isinstance(parent, cst.Arg) and parent.keyword is not None:
            if parent.keyword.value == _environment_keyword(ctx, ctx.parent(parent)):
                continue
        change = _other_variables_change(ctx, node, parent)
        if change is not None and ctx.parent(change) is block and ctx.pos(change) < ctx.pos(call):
            continue  # `env.setdefault("PJRT_DEVICE", "TPU")`: no legacy entry, nothing of the switch
        entry = _entry_statement(ctx, node, parent)
        if entry is None or ctx.parent(entry[0]) is not block or ctx.pos(entry[0]) > ctx.pos(call):
            line = ctx.pos(node)[0]
            return f"its environment `{name.value}` is used or changed elsewhere (line {line})"
        statement, key, value = entry
        _entry(ctx, launch, string_value(key), key, value, statement, None, "subscript", None)
    return _values(launch)


_MAPPING_CHANGES = frozenset({"setdefault", "update", "pop"})
"""The dict methods that change a mapping by key (Python docs, "Mapping Types — dict")."""


def _other_variables_change(
    ctx: FileContext, node: cst.CSTNode, parent: cst.CSTNode | None
) -> cst.SimpleStatementLine | None:
    """``env.setdefault("PJRT_DEVICE", "TPU")``, ``env.pop("CUDA_VISIBLE_DEVICES", None)``, ``env.update({"A": "1"},
    B="2")`` alone on its line, ``node`` its ``env``, when every key it names is a string literal of no variable the
    codemod follows (a legacy variable, the stochastic-rounding one): the line (a hunt's launcher set a default
    device between the copy and the switch, and was refused); None for any other use."""
    call = ctx.parent(parent) if isinstance(parent, cst.Attribute) and parent.value is node else None
    if not (isinstance(call, cst.Call) and isinstance(parent, cst.Attribute) and parent.attr.value in _MAPPING_CHANGES):
        return None
    keys: list[str | None] = []
    if parent.attr.value == "update":
        for arg in call.args:
            if arg.keyword is not None:
                keys.append(arg.keyword.value)
            elif isinstance(arg.value, cst.Dict) and not arg.star:
                keys.extend(string_value(e.key) if isinstance(e, cst.DictElement) else None for e in arg.value.elements)
            else:
                keys.append(None)
    else:
        keys.append(string_value(call.args[0].value) if call.args and not call.args[0].keyword else None)
    followed = {*ctx.rules.variables, STOCHASTIC_ROUNDING_VAR}
    if not keys or any(key is None or key in followed for key in keys):
        return None
    return _line(ctx, call)


def _entry_statement(
    ctx: FileContext, node: cst.CSTNode, parent: cst.CSTNode | None
) -> tuple[cst.SimpleStatementLine, cst.BaseExpression, cst.BaseExpression] | None:
    """``env["KEY"] = value`` alone on its line, ``node`` its ``env``: (the line, the key, the value)."""
    if not (isinstance(parent, cst.Subscript) and parent.value is node and len(parent.slice) == 1):
        return None
    index = parent.slice[0].slice
    target = ctx.parent(parent)
    assign = ctx.parent(target)
    if not (
        isinstance(index, cst.Index)
        and string_value(index.value) is not None
        and isinstance(target, cst.AssignTarget)
        and isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
    ):
        return None
    line = _line(ctx, assign)
    return (line, index.value, assign.value) if line is not None else None


def _line(ctx: FileContext, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
    """The line statement holding ``node`` when it holds that statement alone (no ``a; b``), else None."""
    for anc in [node, *ctx.ancestors(node)]:
        if isinstance(anc, cst.SimpleStatementLine):
            return anc if len(anc.body) == 1 else None
        if isinstance(anc, (cst.BaseCompoundStatement, cst.SimpleStatementSuite)):
            return None
    return None
