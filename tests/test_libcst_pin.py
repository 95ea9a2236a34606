"""bf16-migrate uses two private names of libcst (python/metadata.py: ``CodegenState``, the base of
its light position state, and ``_ASSIGNMENT_LIKE_NODES``, which ScopeVisitor.on_leave tests
against): pyproject.toml pins libcst to the minor release they were checked on. A newer libcst
fails here, loudly, before anything subtler breaks: check the two names against its source, run
tests/test_context_metadata.py (which holds our metadata equal to libcst's providers), then move
the pin."""

from __future__ import annotations

import importlib.metadata
import inspect
import re
import sys

from conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib


def _pin() -> tuple[tuple[int, int], tuple[int, int]]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [spec] = [d for d in deps if d.startswith("libcst")]
    low = re.search(r">=(\d+)\.(\d+)", spec)
    high = re.search(r"<(\d+)\.(\d+)", spec)
    assert low and high, f"libcst must be pinned to a range with an upper bound: {spec!r}"
    return (int(low[1]), int(low[2])), (int(high[1]), int(high[2]))


def test_the_installed_libcst_is_the_pinned_one():
    low, high = _pin()
    installed = tuple(int(x) for x in importlib.metadata.version("libcst").split(".")[:2])
    assert low <= installed < high, (
        f"libcst {installed} is outside the range bf16-migrate's private uses were checked on ({low} to {high}): "
        "see this module's docstring before moving the pin"
    )
    assert high == (low[0], low[1] + 1), "the pin spans one minor release, the one checked"


def test_the_private_names_are_what_metadata_py_relies_on():
    import libcst as cst
    from libcst._nodes.internal import CodegenState
    from libcst.metadata.scope_provider import _ASSIGNMENT_LIKE_NODES, ScopeVisitor

    assert isinstance(_ASSIGNMENT_LIKE_NODES, tuple) and all(issubclass(k, cst.CSTNode) for k in _ASSIGNMENT_LIKE_NODES)
    assert "_ASSIGNMENT_LIKE_NODES" in inspect.getsource(ScopeVisitor.on_leave)
    fields = {name for name in CodegenState.__dataclass_fields__}
    assert {"default_indent", "default_newline", "indent_tokens", "tokens"} <= fields
    for method in ("add_token", "add_indent_tokens", "pop_trailing_newline", "before_codegen", "after_codegen"):
        assert callable(getattr(CodegenState, method)), method
    assert "record_syntactic_position" in inspect.getsource(CodegenState)
