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
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for statement in ast.parse(path.read_text(encoding="utf-8")).body:
        if not anywhere and isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if not anywhere and isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    return {m for m in found if m in modules and m != name}


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


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


LAYERS = {
    # the knowledge and the plumbing every part uses
    "bf16_migrate": 0,
    "rules": 0,
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
