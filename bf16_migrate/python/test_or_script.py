"""Whether a Python file is a test module or a training script: by what it does, not its name.

The one place the rewrite (the codemod, ``--legacy-env``) and ``verify`` decide it. pytest
collects ``test_*.py`` and ``*_test.py`` files and, in them, top-level ``test*`` functions and
``Test*`` classes; unittest collects ``TestCase`` subclasses (docs.pytest.org "Conventions for
Python test discovery"; docs.python.org, unittest). But a file may carry a test's name and be a
training script: pytorch/xla's examples are ``test/test_train_mp_mnist.py`` and its siblings,
run by ``python test_train_mp_mnist.py`` (an ``if __name__ == "__main__":`` entry point) with a
training loop and no test in them. Such a file is migrated like any script; a test module keeps
the test path (reported, never rewritten).

Read with the standard library's :mod:`ast` (a file that does not parse is a test by its name:
the codemod reports the parse error itself). Plain values in and out.
"""

from __future__ import annotations

import ast

_TEST_RUNNERS = {"main"}  # unittest.main(), pytest.main(), absltest.main() in the entry point: a test module
_STEP_CALLS = {"step", "optimizer_step"}  # optimizer.step(), xm.optimizer_step(optimizer)


def test_name(path: str) -> bool:
    """Whether ``path`` names a file pytest collects by default (``test_*.py``, ``*_test.py``)
    or ``conftest.py``."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def is_test_module(source: str, path: str, launched: bool = False) -> bool:
    """Whether the Python file ``path`` with text ``source`` is a test module (True) rather than
    a training script (False).

    A file whose name is not a test's (:func:`test_name`) is not a test module (test functions
    inside it are still tests, :mod:`.in_tests`). ``conftest.py`` always is. Any other
    test-named file is a training script when all of these hold, else a test module:

    * it collects no test: no top-level ``test*`` function, no top-level ``Test*`` class, no
      class deriving from a ``...TestCase``;
    * it runs as a program: ``launched`` (a launcher of the tree, ``--legacy-env`` or ``verify``
      starts it), or an ``if __name__ == "__main__":`` block that does not hand over to a test
      runner (``unittest.main()``, ``pytest.main()``);
    * it trains: it calls ``.backward()`` and an optimizer step (``.step()`` or
      ``optimizer_step(...)``).
    """
    if not test_name(path):
        return False
    if path.replace("\\", "/").rsplit("/", 1)[-1] == "conftest.py":
        return True
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    if any(_collected(node) for node in tree.body):
        return True
    if not (launched or _main_block(tree)):
        return True
    called = {_called_name(node) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    return not ("backward" in called and called & _STEP_CALLS)


def _collected(node: ast.stmt) -> bool:
    """A top-level test pytest or unittest collects."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name.startswith("test")
    if isinstance(node, ast.ClassDef):
        return node.name.startswith("Test") or any(_dotted(base).endswith("TestCase") for base in node.bases)
    return False


def _main_block(tree: ast.Module) -> bool:
    """An ``if __name__ == "__main__":`` block at the top level that runs the file itself, not a
    test runner."""
    for node in tree.body:
        if not (isinstance(node, ast.If) and _is_main_test(node.test)):
            continue
        runners = [
            call
            for call in ast.walk(node)
            if isinstance(call, ast.Call) and _called_name(call) in _TEST_RUNNERS and _runner_module(call)
        ]
        return not runners
    return False


def _is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides) and any(
        isinstance(s, ast.Constant) and s.value == "__main__" for s in sides
    )


def _runner_module(call: ast.Call) -> bool:
    """``unittest.main()``, ``pytest.main()``, ``absltest.main()``: the receiver names a test
    framework."""
    receiver = _dotted(call.func.value) if isinstance(call.func, ast.Attribute) else ""
    return receiver.rsplit(".", 1)[-1] in {"unittest", "pytest", "absltest", "googletest"}


def _called_name(call: ast.Call) -> str:
    """The last name of the callee (``optimizer.step`` -> ``step``)."""
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    if isinstance(call.func, ast.Name):
        return call.func.id
    return ""


def _dotted(expr: ast.expr) -> str:
    """``a.b.c`` for a chain of names, else ``""``."""
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        inner = _dotted(expr.value)
        return f"{inner}.{expr.attr}" if inner else ""
    return ""
