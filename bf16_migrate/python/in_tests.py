"""Where test code is: tests name the legacy variables to exercise the legacy path, and are
reported, never rewritten (BFM052).

Test files are pytest's default discovery patterns (``python_files = test_*.py *_test.py``,
docs.pytest.org "Conventions for Python test discovery") and ``conftest.py``; test code is
also a ``test*`` function, a unittest/pytest set-up or tear-down hook, or a method of a
``TestCase`` class (docs.python.org, unittest).
"""

from __future__ import annotations

import libcst as cst

from .context import FileContext

HOOKS = ("setUp", "tearDown", "setUpClass", "tearDownClass", "setup_method", "teardown_method")


def is_test_file(path: str) -> bool:
    """Whether the file at ``path`` is a test module (by its name)."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"


def is_test_function(func: cst.FunctionDef | None) -> bool:
    """A ``test*`` function or a set-up / tear-down hook."""
    return func is not None and (func.name.value.startswith("test") or func.name.value in HOOKS)


def in_test(ctx: FileContext, node: cst.CSTNode) -> bool:
    """In a test file, or inside a test function / hook, or a method of a TestCase."""
    if is_test_file(ctx.path):
        return True
    for anc in ctx.ancestors(node):
        if isinstance(anc, cst.FunctionDef) and is_test_function(anc):
            return True
        if isinstance(anc, cst.ClassDef) and any(ctx.code(b.value).endswith("TestCase") for b in anc.bases):
            return True
    return False
