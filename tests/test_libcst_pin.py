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


def test_the_private_attributes_the_scope_visitor_uses_are_there():
    """python/metadata.py's ScopeVisitor reads and sets libcst's name-mangled attributes
    (``PRIVATE_ATTRIBUTES``) and copies two of its methods' logic (``visit_Call``'s typing
    names, ``infer_accesses``): both must still be what libcst does, or the tests of
    test_context_metadata.py (which compare every scope, referent and reference with
    ScopeProvider's) are the next to fail."""
    import libcst as cst
    from libcst.metadata import ScopeProvider
    from libcst.metadata.scope_provider import Access, BaseAssignment, ScopeVisitor, _gen_dotted_names

    from bf16_migrate.python.metadata import _TYPING_CALLS, PRIVATE_ATTRIBUTES

    visitor = ScopeVisitor(ScopeProvider())
    access = Access(cst.Name("x"), visitor.scope, is_annotation=False, is_type_hint=False)
    holders = {"ScopeVisitor": visitor, "Access": access, "BaseAssignment": None}
    for name in PRIVATE_ATTRIBUTES:
        owner = name[1:].split("__", 1)[0]
        if holders[owner] is not None:
            assert hasattr(holders[owner], name), name
    assert "_BaseAssignment__accesses" in PRIVATE_ATTRIBUTES
    assert "self.__accesses" in inspect.getsource(BaseAssignment)
    source = inspect.getsource(ScopeVisitor.visit_Call)
    assert all(f'"{name}"' in source for name in _TYPING_CALLS), "visit_Call looks for other names"
    infer = inspect.getsource(ScopeVisitor.infer_accesses)
    for step in ("_gen_dotted_names", "record_assignments(name)", "record_access(name, access)", "record_accesses("):
        assert step in infer, step
    assert callable(_gen_dotted_names)
