"""The package stays easy to read and to extend (ARCHITECTURE.md): no import cycle between its
modules, no module over about 500 lines, no function over about 80 lines of code unless its
docstring says why it is long. Measured on the source with Python's :mod:`ast`, so a failure
names the module or function and its size."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "bf16_migrate"
MODULE_LINES = 550  # "about 500"
FUNCTION_LINES = 80


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports when it is loaded: its module-level imports,
    not those inside functions or under ``if TYPE_CHECKING:``."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for statement in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, ast.If) and "TYPE_CHECKING" in ast.unparse(statement.test):
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
                return path[path.index(target):] + [target]
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


def test_no_module_over_about_500_lines():
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in _modules().items()}
    assert [f"{name}: {n} lines" for name, n in sizes.items() if n > MODULE_LINES] == [], "over"


def _code_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``function`` without its docstring."""
    lines = function.end_lineno - function.lineno + 1  # type: ignore[operator]
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        lines -= body[0].end_lineno - body[0].lineno + 1  # type: ignore[operator]
    return lines


def test_no_function_over_about_80_lines_without_a_reason():
    """A longer one says in its docstring why (a sentence starting "Long")."""
    long = []
    for name, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _code_lines(node) > FUNCTION_LINES:
                if "Long " not in (ast.get_docstring(node) or ""):
                    long.append(f"{name}.{node.name}: {_code_lines(node)} lines")
    assert long == []
