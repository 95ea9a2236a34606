"""The package stays easy to read and to extend (docs/architecture.md): no import cycle between its
modules, measured on the source with Python's :mod:`ast` so that a failure names the modules.
A module is as long as its one concern needs; how tangled a function may be is ruff's C901
(pyproject.toml's ``max-complexity``, checked with the lint in tests/test_lint.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "bf16_migrate"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path], anywhere: bool = False) -> set[str]:
    """The package's modules that ``name`` imports when it is loaded: its module-level imports,
    not those inside functions or under ``if TYPE_CHECKING:``; with ``anywhere``, every import
    of the module, those inside functions and for type checking included."""
    found: set[str] = set()
    for statement in ast.parse(path.read_text(encoding="utf-8")).body:
        if not anywhere and isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if not anywhere and isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            continue
        for node in ast.walk(statement):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update(_targets(name, path, node, modules))
    return {m for m in found if m in modules and m != name}


def _targets(name: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> list[str]:
    """What the import statement ``node`` of the module ``name`` loads, by its absolute name: a
    module of the package where the name imported is one (``from . import scan``), else the
    module named (a relative one resolved), as written for any other (``rich.console``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    if node.level:
        base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    return [f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target for alias in node.names]


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (module -> the modules it imports), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state and (found := visit(module)) is not None:
            return found
    return None


def test_no_import_cycle():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert sum(map(len, graph.values())) > 50  # the graph was read
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_no_import_cycle_even_through_a_function():
    """An import inside a function, or for type checking alone, is a cycle all the same (it only
    runs later, or only for mypy): the modules that import each other that way are one concern
    split in two, or a type that belongs a floor lower."""
    modules = _modules()
    graph = {name: _imports(name, path, modules, anywhere=True) for name, path in modules.items()}
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


LAYERS = {
    # the knowledge and the plumbing every part uses
    "bf16_migrate": 0,
    "rules": 0,
    "rule_files": 0,
    "diagnostics": 0,
    "wording": 0,
    "mentions": 0,
    "command_lines": 0,
    "workers": 0,
    "commit": 0,
    "bounds": 0,
    "write": 0,
    "escaped_bytes": 0,
    "ignore": 0,
    "config": 0,
    "prefilter_fork": 0,
    "console": 0,
    "patch": 0,
    "shebang": 0,
    # the codemod: source text in, source text out (it knows nothing of files)
    "python": 1,
    "repairs": 1,  # the trace's repairs: text in, text out
    # one file's plan: the carriers, and the Python migrations they and the project ask for
    "carriers": 2,
    "migrations": 2,
    "helpers_module": 2,
    "tree_modules": 2,
    "env_modules": 2,  # the scripts an env module's settings reach, migrated with them
    "trace_repairs": 2,  # a stored trace's repairs applied to the rewrite's results
    # the tree: discovery, suppressions, the whole run's plan and its output
    "prefilter": 3,
    "scan": 3,
    "suppress": 3,
    "project": 3,
    "output": 3,
    "output_human": 3,
    "output_markdown": 3,
    "walk_progress": 3,
    # the proof, which reuses the rewrite
    "verify": 4,
    # the command line
    "run": 5,
    "next_steps": 5,  # names verify commands: reads the launchers with verify's reading
    "cli": 5,
    "__main__": 5,  # python -m bf16_migrate: the command line
}
"""The layers of the package, lowest first (docs/architecture.md): a module imports only from its
own layer or a lower one. ``python``, ``carriers`` and ``verify`` are packages, placed whole."""


def _layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def test_no_upward_import_even_inside_a_function():
    modules = _modules()
    unplaced = sorted({_layer_of(name) for name in modules} - set(LAYERS))
    assert unplaced == [], f"place these in a layer of LAYERS: {unplaced}"
    upward = [
        f"{name} ({LAYERS[_layer_of(name)]}) imports {target} ({LAYERS[_layer_of(target)]})"
        for name, path in modules.items()
        for target in sorted(_imports(name, path, modules, anywhere=True))
        if LAYERS[_layer_of(target)] > LAYERS[_layer_of(name)]
    ]
    assert upward == []


def test_the_upward_check_sees_an_import_inside_a_function(tmp_path):
    module = tmp_path / "codemod.py"
    module.write_text("def f():\n    from bf16_migrate.carriers import link\n")
    modules = {"bf16_migrate.python.codemod": module, "bf16_migrate.carriers.link": module}
    assert _imports("bf16_migrate.python.codemod", module, modules) == set()
    assert _imports("bf16_migrate.python.codemod", module, modules, anywhere=True) == {"bf16_migrate.carriers.link"}


SHELL_LAYERS = {
    "words": 0,  # the parser and a word's static value
    "slurm": 0,  # Slurm's --export lists and #SBATCH directives: their data and edits
    "dead": 1,
    "parsed": 1,  # the data one walk produces
    "context": 2,
    "inline": 2,  # `python -c` code: where it is, and its migrated text written back in its quotes
    "expand": 3,
    "branches": 3,  # the conditionals that set a variable on every path (read by the walk, for reach)
    "calls": 4,
    "launch_args": 4,  # a launch's arguments expanded with a known environment and arguments
    "walk": 5,  # the one walk that fills the data
    "reach": 6,  # the passes over the data: they read it and return values
    "render": 6,
    "flags": 6,
    "fragment": 7,  # the passes run in order
    "bf16_migrate.carriers.shell": 8,  # the carrier
}
"""The modules of the shell carrier's package (docs/architecture.md), lowest first: a module
imports only from a lower layer; the passes over the parsed data (reach, render, flags) import
neither the walk nor each other."""


def test_the_shell_carrier_imports_one_way():
    modules = _modules()
    package = "bf16_migrate.carriers.shell"
    inside = {name for name in modules if name == package or name.startswith(package + ".")}
    layer = {name: SHELL_LAYERS[name.rsplit(".", 1)[-1] if name != package else package] for name in inside}
    upward = [
        f"{name} ({layer[name]}) imports {target} ({layer[target]})"
        for name in sorted(inside)
        for target in sorted(_imports(name, modules[name], modules, anywhere=True) & inside)
        if layer[target] >= layer[name]
    ]
    assert len(inside) == len(SHELL_LAYERS)
    assert upward == []


CHANGES = "bf16_migrate.python.changes"
CHANGES_LAYERS = {
    "migration": 0,  # what every unit takes and hands back (Migration, Planned, Unit)
    "unit": 1,  # one module per emitted change (and common.py, the steps every migration takes)
    CHANGES: 2,  # the registry, in the order of the edits, and the loops over it
}
"""The modules of the emitted changes' package (docs/architecture.md, "Adding an emitted change"),
lowest first: a unit imports ``migration`` and the codemod's modules, never another unit nor the
registry; only the Planner (``python/precision.py``) imports the package from outside it, and the
codemod's entry (``python/__init__.py``), which plans a file again on its ``GuardDoesNotTravel``."""


def test_the_emitted_changes_import_one_way():
    modules = _modules()
    inside = {name for name in modules if name == CHANGES or name.startswith(CHANGES + ".")}
    assert {f"{CHANGES}.migration", f"{CHANGES}.model_cast", f"{CHANGES}.common"} <= inside

    def layer(name: str) -> int:
        short = name.rsplit(".", 1)[-1]
        return CHANGES_LAYERS[name] if name == CHANGES else CHANGES_LAYERS.get(short, CHANGES_LAYERS["unit"])

    sideways = [
        f"{name} ({layer(name)}) imports {target} ({layer(target)})"
        for name in sorted(inside)
        for target in sorted(_imports(name, modules[name], modules, anywhere=True) & inside)
        if layer(target) >= layer(name)
    ]
    importers = sorted(
        name
        for name, path in modules.items()
        if name not in inside and _imports(name, path, modules, anywhere=True) & inside
    )
    assert sideways == []
    assert importers == [
        "bf16_migrate.python",
        "bf16_migrate.python.precision",
    ]  # the codemod catches GuardDoesNotTravel


def _mode_name_literals(source: str, names: frozenset[str]) -> list[int]:
    """Lines of ``source`` holding a string literal equal to a mode's name, docstrings aside."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings
    ]


def test_no_module_names_a_mode_but_the_rules_loader():
    """Code asks the mode (``rules.Mode``: casts_model, autocast, master_weights, its verify
    table), never compares its name: a mode's name is written only where modes are loaded."""
    from bf16_migrate.rules import MODES

    names = frozenset(MODES)
    found = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != PACKAGE / "rules.py" and (lines := _mode_name_literals(path.read_text(), names))
    }
    assert found == {}


def test_the_mode_name_check_sees_a_comparison():
    assert _mode_name_literals('def f(mode):\n    """amp"""\n    return mode == "amp"\n', frozenset({"amp"})) == [3]


_LIBCST = "loads libcst (0.35-0.55 s): a run over files that name nothing never does (tests/test_fast_path.py)"
_OFF_CLEAN = "kept off the clean path (a run over files that name nothing: bench/RESULTS.md, its 0.15 s goal)"
_VERIFY = "the verify package loads libcst through its trace findings (0.43 s): only when verify runs"
_CODEMOD = "the codemod's modules (150-220 ms beyond verify's own): only where a migration is made"
_HELP = "the run's modules (45 ms) kept off --help, explain and verify"
_CHILD = (
    "the verify child's start-up hook, loaded into every Python process the script starts: os and sys until it records"
)
_TORCH = "torch or torch-xla: imported by the verify child only once the script has imported it"
_RICH = "rich: optional (the test extra), 30 ms, for a progress display on a terminal"
FUNCTION_IMPORTS: dict[str, dict[str, str]] = {
    "bf16_migrate": {"importlib.metadata": "12 ms of CPU for every run; read only when the version is asked for"},
    "bf16_migrate.carriers": {"bf16_migrate.python.guard": _LIBCST},
    "bf16_migrate.cli": {
        "bf16_migrate.carriers": _HELP,
        "bf16_migrate.next_steps": _HELP,
        "bf16_migrate.run": _HELP,
        "bf16_migrate.scan": _HELP,
        **dict.fromkeys(
            [
                "bf16_migrate.verify",
                "bf16_migrate.verify.markdown",
                "bf16_migrate.verify.plot",
                "bf16_migrate.verify.report",
                "bf16_migrate.verify.run",
                "bf16_migrate.verify.summary",
                "bf16_migrate.verify.tree",
            ],
            _VERIFY,
        ),
    },
    "bf16_migrate.ignore": {"pathspec": "15 ms; only where a .gitignore exists (tests/test_fast_path.py)"},
    "bf16_migrate.migrations": {"concurrent.futures.process": "the process pool (11 ms) only from 32 KB of source on"},
    "bf16_migrate.next_steps": {
        "bf16_migrate.verify.launchers": f"{_OFF_CLEAN}: {_VERIFY}",
        "bf16_migrate.verify.tree": f"{_OFF_CLEAN}: {_VERIFY}",
    },
    "bf16_migrate.project": {"bf16_migrate.trace_repairs": "the trace's repairs (10 ms) only with --trace"},
    "bf16_migrate.python._matchers": {"libcst.matchers": "libcst's matchers loaded without their signatures"},
    "bf16_migrate.run": {
        "bf16_migrate": "bf16_migrate.__version__ reads importlib.metadata (12 ms) when asked for",
        "bf16_migrate.helpers_module": _LIBCST,
        "bf16_migrate.project": _LIBCST,
        "bf16_migrate.trace_repairs": "the trace's repairs (10 ms) only with --trace",
        "bf16_migrate.verify.after_rewrite": f"--verify only: {_VERIFY}",
        "bf16_migrate.verify.package": f"--verify only: {_VERIFY}",
        "bf16_migrate.verify.preflight": f"--verify only: {_VERIFY}",
        "bf16_migrate.verify.records": f"--verify only: {_VERIFY}",
        "bf16_migrate.verify.runner": f"--verify only: {_VERIFY}",
        "bf16_migrate.write": f"{_OFF_CLEAN}: 13 ms with commit",
    },
    "bf16_migrate.scan": {
        "bf16_migrate.carriers.resolve": f"{_OFF_CLEAN}: 15 ms with commit",
        "bf16_migrate.commit": f"{_OFF_CLEAN}: 10 ms",
    },
    "bf16_migrate.suppress": {
        "bf16_migrate.carriers.dockerfile": f"{_OFF_CLEAN}: tree-sitter and dockerfile-parse, 47 ms",
        "bf16_migrate.carriers.notebook": _LIBCST,
        "bf16_migrate.carriers.vscode": f"{_OFF_CLEAN}: json5, 40 ms",
        "bf16_migrate.write": f"{_OFF_CLEAN}: 13 ms with commit",
    },
    "bf16_migrate.verify": {
        "bf16_migrate.carriers.delegate": f"{_CODEMOD}: read only for an entry that sets the switch and hands over",
        "bf16_migrate.carriers.resolve": f"{_CODEMOD}: read only for a script that names no legacy variable",
        "bf16_migrate.env_modules": f"{_CODEMOD}: read only where a module's function sets the switch",
        "bf16_migrate.python": _CODEMOD,
        "bf16_migrate.python.outcome": _CODEMOD,
        "bf16_migrate.python.test_or_script": _CODEMOD,
        "bf16_migrate.tree_modules": _CODEMOD,
    },
    "bf16_migrate.verify._child.dtype_trace": {"torch.optim.optimizer": _TORCH, "torch.overrides": _TORCH},
    "bf16_migrate.verify._child.sitecustomize": {
        **dict.fromkeys(
            [
                "_collections_abc",
                "atexit",
                "functools",
                "importlib.machinery",
                "importlib.util",
                "json",
                "threading",
                "time",
                "types",
            ],
            _CHILD,
        ),
        "torch.optim.optimizer": _TORCH,
        "torch_xla.debug.metrics": _TORCH,
    },
    "bf16_migrate.verify.launchers": {"bf16_migrate.carriers.link": _CODEMOD, "bf16_migrate.project": _CODEMOD},
    "bf16_migrate.verify.migration": {"bf16_migrate.python": _CODEMOD},
    "bf16_migrate.verify.plot": dict.fromkeys(
        ["matplotlib", "matplotlib.lines", "matplotlib.pyplot", "matplotlib.ticker"],
        "matplotlib: optional, --plot only",
    ),
    "bf16_migrate.verify.progress": {"rich.console": _RICH, "rich.progress": _RICH},
    "bf16_migrate.verify.run": {"bf16_migrate.project": f"--fix's write only: {_CODEMOD}"},
    "bf16_migrate.verify.tree": {"bf16_migrate.python": _CODEMOD, "bf16_migrate.tree_modules": _CODEMOD},
    "bf16_migrate.walk_progress": {"rich.console": _RICH, "rich.progress": _RICH, "rich.table": _RICH},
    "bf16_migrate.workers": {
        "concurrent.futures": "the process pool (concurrent.futures.process, 11 ms) only from 32 KB of source on",
        "ctypes": f"{_OFF_CLEAN}: 2 ms, for the forked workers and the prefilter's child only",
        "multiprocessing": f"{_OFF_CLEAN}: for the process pool only",
    },
}
"""The imports made inside functions, by module, each with why it waits (docs/architecture.md): a
heavy or optional library a run may not need (libcst, tree-sitter, rich, matplotlib, torch,
torch-xla), or a module whose import would slow the run over files that name nothing (CPU figures
on this machine, ``python -X importtime``). Any other import is made at the top of its module."""


def _function_imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """For each module of the package, what the import statements inside its functions (and
    methods) load: :func:`_targets` of each."""
    found: dict[str, set[str]] = {}
    for name, path in modules.items():
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(function):
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        found.setdefault(name, set()).update(_targets(name, path, node, modules))
    return found


def test_imports_inside_functions_are_the_listed_ones():
    """A new import inside a function fails here: make it at the top of the module, or list it in
    :data:`FUNCTION_IMPORTS` with the figure that says why it waits. A listed one that is gone
    fails too, so that the list stays the house's."""
    found = _function_imports(_modules())
    listed = {name: set(targets) for name, targets in FUNCTION_IMPORTS.items()}
    new = sorted(f"{name}: {t}" for name, targets in found.items() for t in targets - listed.get(name, set()))
    gone = sorted(f"{name}: {t}" for name, targets in listed.items() for t in targets - found.get(name, set()))
    assert (new, gone) == ([], [])


def test_the_function_import_finder_sees_a_method(tmp_path):
    module, scan = tmp_path / "codemod.py", tmp_path / "scan.py"
    module.write_text("import os\n\nclass A:\n    def f(self):\n        from . import scan\n        import json\n")
    scan.write_text("import os\n")
    modules = {"bf16_migrate.codemod": module, "bf16_migrate.scan": scan}
    assert _function_imports(modules) == {"bf16_migrate.codemod": {"bf16_migrate.scan", "json"}}


MODE_NAME_EDGES = {
    ("bf16_migrate.cli", ""): "the command line: --mode's choices",
    ("bf16_migrate.config", "Config"): "the configuration file's text",
    ("bf16_migrate.run", "RunOptions"): "the command line as given",
    ("bf16_migrate.run", "resolve_settings"): "the one place the run's mode is looked up (Settings.mode)",
    ("bf16_migrate.python", "migrate_source"): "the codemod's API (docs/usage.md): a Mode or its name",
    ("bf16_migrate.project", "migrate_paths"): "the project's API (docs/usage.md): a Mode or its name",
    ("bf16_migrate.verify", "verify_script"): "verify's API (docs/verify.md): a Mode or its name",
    ("bf16_migrate.verify.summary", "Row"): "a row of the tree's table, read back from stored JSON documents too",
    ("bf16_migrate.trace_repairs", "StoredTrace"): "the mode names a stored verify document holds",
    ("bf16_migrate.rules", ""): "the loader of rules/modes.toml",
    ("bf16_migrate.rule_files", "_examples"): "a rule page's runnable example names its mode in the rules file",
}
"""Where a mode may be a name (docs/architecture.md, "Types at the edge"): ``(module, function or
class)``, an empty second part for the whole module (and its submodules). Everywhere else a mode
is a :class:`bf16_migrate.rules.Mode`, made once at the edge."""


def _mode_names(source: str) -> list[tuple[str, int, str]]:
    """Where ``source`` takes a mode by its name: a parameter or field called ``mode`` (``modes``,
    ``mode_name``) annotated with ``str``, and each call of ``mode_named``; as ``(function or
    class qualified name, line, what)``, the name empty at module level."""
    found: list[tuple[str, int, str]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{where}.{child.name}" if where else child.name
            named, annotation = None, None
            if isinstance(child, ast.arg):
                named, annotation = child.arg, child.annotation
            elif isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
                named, annotation = child.target.id, child.annotation
            if named in ("mode", "modes", "mode_name") and annotation is not None:
                assert isinstance(child, (ast.arg, ast.AnnAssign))
                if "str" in ast.unparse(annotation):
                    found.append((inner, child.lineno, f"{named}: {ast.unparse(annotation)}"))
            if isinstance(child, ast.Call) and ast.unparse(child.func).split(".")[-1] == "mode_named":
                found.append((inner, child.lineno, ast.unparse(child)))
            visit(child, inner)

    visit(ast.parse(source), "")
    return found


def _at_an_edge(module: str, where: str) -> bool:
    for edge_module, edge in MODE_NAME_EDGES:
        inside = module == edge_module or module.startswith(edge_module + ".")
        if inside and (edge == "" or where == edge or where.startswith(edge + ".")):
            return True
    return False


def test_no_mode_name_below_the_edge():
    """Below the command line, the configuration and the library's entry points, a mode is a
    ``Mode``: no ``mode: str`` and no ``mode_named(...)`` (each would be a lookup by name that a
    misspelt or new mode passes through unchecked)."""
    modules = _modules()
    found = [
        f"{path.relative_to(ROOT)}:{line}: {where or '<module>'}: {what}"
        for name, path in modules.items()
        for where, line, what in _mode_names(path.read_text(encoding="utf-8"))
        if not _at_an_edge(name, where)
    ]
    assert found == []


def test_the_mode_name_scan_sees_an_annotation_a_field_and_a_lookup():
    source = (
        "from dataclasses import dataclass\n"
        "@dataclass\nclass Job:\n    mode: str\n"
        "def run(job, mode: str | None = None):\n    return mode_named(job.mode)\n"
        "def fine(mode: Mode, summary_of_mode: str):\n    return mode\n"
    )
    assert _mode_names(source) == [
        ("Job", 4, "mode: str"),
        ("run", 5, "mode: str | None"),
        ("run", 6, "mode_named(job.mode)"),
    ]
    assert _at_an_edge("bf16_migrate.run", "resolve_settings") and not _at_an_edge("bf16_migrate.run", "Settings")
    assert _at_an_edge("bf16_migrate.verify", "verify_script") and not _at_an_edge(
        "bf16_migrate.verify.tree", "plan_tree"
    )


def test_no_module_binds_a_module_level_name_twice():
    """A second ``_VIEWS = ...`` further down a module silently replaces the first for every function that reads it
    (one did: a view list meant for one pass changed another's, and an arrival was no longer cast). Overloads
    (``@overload`` stubs before the definition) are the exception."""
    twice = []
    for path in sorted(PACKAGE.rglob("*.py")):
        seen: dict[str, int] = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                if any(isinstance(d, ast.Name) and d.id == "overload" for d in getattr(node, "decorator_list", [])):
                    continue
                names = [node.name]
            elif isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            else:
                continue
            for name in names:
                if name in seen and name != "__all__":
                    twice.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name} (first at line {seen[name]})")
                seen.setdefault(name, node.lineno)
    assert twice == []
