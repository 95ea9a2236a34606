"""The codemod's own metadata (``bf16_migrate.python.context``) is libcst's: for every node it
indexes, the span is what libcst's PositionProvider gives, the expression context what
ExpressionContextProvider gives, and the scope the same scope (same kind, same node, the same
assignments and accesses) as ScopeProvider's. The fast paths drive libcst's own visitors and
code generation without node rebuilds; these tests hold them to the slow paths on every
Python fixture, on real modules of the standard library (large, with every statement kind),
and on hypothesis-generated programs."""

from __future__ import annotations

import sys
import sysconfig
import warnings
from pathlib import Path

import libcst as cst
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from libcst.metadata import ExpressionContextProvider, MetadataWrapper, PositionProvider, ScopeProvider

from bf16_migrate.python.context import FileContext, _qualified_names
from bf16_migrate.python.metadata import SHARED_FROM, _expression_contexts, _scopes, _spans
from bf16_migrate.python.walk import _index, _is_trivia
from bf16_migrate.rules import load_rules

from conftest import FIXTURES

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# large modules with classes, closures, comprehensions, global/nonlocal, decorators, lambdas,
# match statements, f-strings, walrus, star-args, async
REAL_MODULES = [
    "argparse.py",
    "dataclasses.py",
    "inspect.py",
    "typing.py",
    "asyncio/tasks.py",
    "re/_parser.py",
    "json/decoder.py",
    "pydoc.py",
]


def _libcst_metadata(module: cst.Module):
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)  # the same node objects as ours
    return wrapper.resolve(PositionProvider), wrapper.resolve(ExpressionContextProvider), wrapper.resolve(ScopeProvider)


def _scope_key(scope) -> tuple:
    """A scope as comparable data: its kind, its node's identity, its assignments and accesses."""
    if scope is None:
        return (None,)
    assignments = sorted((a.name, id(a.node)) for a in scope.assignments)
    accesses = sorted(
        (a.node.value if isinstance(a.node, cst.Name) else type(a.node).__name__, id(a.node)) for a in scope.accesses
    )
    # what each binding's accesses are, and what each access's bindings are (by node identity)
    references = sorted(
        (a.name, id(a.node), tuple(sorted(id(r.node) for r in a.references)))
        for a in scope.assignments
        if hasattr(a, "node")
    )
    referents = sorted(
        (id(a.node), tuple(sorted(id(getattr(r, "node", r)) if hasattr(r, "node") else r.name for r in a.referents)))
        for a in scope.accesses
    )
    return (
        type(scope).__name__,
        id(getattr(scope, "node", None)),
        tuple(assignments),
        tuple(accesses),
        tuple(references),
        tuple(referents),
    )


def assert_same_metadata(source: str) -> int:
    """Compares both ways of computing the metadata of ``source``; returns the nodes compared."""
    module = cst.parse_module(source)
    positions, contexts, scopes = _libcst_metadata(module)
    spans = _spans(module)
    kids: dict = {}  # as FileContext walks: the children the index read, for the other walks
    parents, by_type = _index(module, None, kids)
    our_contexts = _expression_contexts(module, kids)
    our_scopes = _scopes(module, our_contexts, kids)
    assert dict(_expression_contexts(module)) == dict(our_contexts)  # the same without the children read
    nodes = [node for kind_nodes in by_type.values() for node in kind_nodes]
    assert len(nodes) == len(parents)
    scope_keys: dict[int, tuple] = {}
    known_names: dict = {}  # FileContext's cache of qualified names, shared by the whole module
    for node in nodes:
        assert not _is_trivia(type(node))
        where = positions[node]
        assert spans[id(node)] == ((where.start.line, where.start.column), (where.end.line, where.end.column)), (
            type(node).__name__,
            module.code_for_node(node)[:60],
        )
        assert our_contexts.get(node) == contexts.get(node), (type(node).__name__, module.code_for_node(node)[:60])
        theirs, ours = scopes.get(node), our_scopes.get(node)
        if theirs is None or ours is None:
            assert theirs is ours, type(node).__name__
            continue
        key = scope_keys.get(id(theirs))
        if key is None:
            key = scope_keys[id(theirs)] = _scope_key(theirs)
        assert _scope_key(ours) == key, (type(node).__name__, module.code_for_node(node)[:60])
        assert [q.name for q in sorted(ours.get_qualified_names_for(node), key=lambda q: q.name)] == [
            q.name for q in sorted(theirs.get_qualified_names_for(node), key=lambda q: q.name)
        ]
        in_import = isinstance(node, cst.Attribute) and isinstance(parents.get(id(node)), cst.ImportAlias)
        assert _qualified_names(ours, node, in_import, known_names) == {
            q.name for q in theirs.get_qualified_names_for(node)
        }, (type(node).__name__, module.code_for_node(node)[:60])
    ctx = FileContext("t.py", MetadataWrapper(module, unsafe_skip_copy=True), load_rules(), source=source)
    for node in nodes:  # an expression's code sliced from the text is libcst's rendering of it
        if isinstance(node, cst.BaseExpression):
            assert ctx.code(node) == module.code_for_node(node), (type(node).__name__, ctx.code(node)[:60])
    return len(nodes)


PYTHON_FIXTURES = sorted(p for p in FIXTURES.rglob("*.py") if "expected" not in p.parts)


@pytest.mark.parametrize("path", PYTHON_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixtures(path):
    assert assert_same_metadata(path.read_text()) > 0


@pytest.mark.parametrize("name", REAL_MODULES)
def test_standard_library_modules(name):
    path = STDLIB / name
    if not path.is_file():  # pragma: no cover - another Python layout
        pytest.skip(f"{path} is not in this Python ({sys.version.split()[0]})")
    assert assert_same_metadata(path.read_text(encoding="utf-8")) > 1000


def test_many_bindings_of_one_name():
    """From SHARED_FROM bindings of a name on, the accesses of other scopes share their
    referents and the bindings their references (a file of many pasted scripts, each importing
    torch): still what ScopeProvider gives, accesses in the bindings' own scope (before and
    after each binding), in nested functions, classes and comprehensions, shadowed names, and
    the aliases ScopeVisitor's typing.cast and TypeVar handling looks for."""
    copy = (
        "import os\nimport torch\nimport torch.nn as nn\nfrom typing import cast as as_type, TypeVar\n"
        "print(torch.zeros(1), os.environ)\n"
        "T{k} = TypeVar('T{k}')\n"
        "class Net{k}(nn.Module):\n    scale = torch.ones(1)\n"
        "    def forward(self, x):\n        return as_type('torch.Tensor', x) * torch.ones(1)\n"
        "def main{k}(torch_=torch):\n    model = Net{k}()\n    nn = [torch.zeros(i) for i in range(2)]\n"
        "    def inner():\n        nonlocal model\n        model = torch.compile(model)\n"
        "    return nn, os.getenv('X')\n"
    )
    assert SHARED_FROM <= 12
    assert assert_same_metadata("".join(copy.format(k=k) for k in range(12))) > 1000


def test_positions_of_tricky_layouts():
    """Parentheses around expressions, statements after a form of indentation, decorators,
    backslash continuations, CRLF and CR line ends, semicolons, comments and trailing
    whitespace: where PositionProvider's syntactic positions differ from the code's extent."""
    sources = [
        "x = ((a + (b)))  # c\nif (x):\n    y = [ (1) , 2 ]; z = (3)\n",
        "@dec\n@(other)\ndef f(a, *, b=(1)):\n    return (yield (a))\n",
        "s = 'a' \\\n    'b'\r\nt = f'{(x)!r:>{w}}'\r\n",
        "class A(B, metaclass=M):\r    x: int = (1)\r    def g(self): return (self)\r",
        "match p:\n    case [1, (2 | 3) as y, *rest] if (y):\n        pass\n    case {'k': v, **kw}:\n        pass\n",
        "async def h():\n    async with (a as b, c):\n        await (x)\n    return [i async for i in (y)]\n",
        "lambda: (yield)\n(x := (1))\nglobal g\ndel (a), [b]\n",
    ]
    for source in sources:
        assert_same_metadata(source)


# -- generated programs --------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "x", "model", "opt", "os", "torch"])
_ATOMS = st.one_of(_NAMES, st.integers(0, 9).map(str), st.sampled_from(['"s"', "f'{a}'", "None", "(a)"]))


@st.composite
def _expr(draw, depth=0):
    if depth > 2 or draw(st.booleans()):
        return draw(_ATOMS)
    shape = draw(st.sampled_from(["call", "attr", "binop", "paren", "sub", "comp", "lambda", "list", "walrus"]))
    inner = draw(_expr(depth + 1))
    other = draw(_expr(depth + 1))
    return {
        "call": f"{inner}({other}, k={other})",
        "attr": f"({inner}).to",
        "binop": f"{inner} + {other}",
        "paren": f"({inner})",
        "sub": f"{inner}[{other}]",
        "comp": f"[{inner} for a in {other} if a]",
        "lambda": f"(lambda a, *b: {inner})",
        "list": f"[{inner}, *{other}]",
        "walrus": f"(b := {inner})",
    }[shape]


@st.composite
def _block(draw, indent="", depth=0):
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(
            st.sampled_from(
                ["assign", "aug", "expr", "def", "class", "if", "for", "with", "import", "global", "try"]
                if depth < 2
                else ["assign", "aug", "expr", "import"]
            )
        )
        e = draw(_expr())
        target = draw(_NAMES)
        if kind == "assign":
            lines.append(f"{indent}{target} = {e}")
        elif kind == "aug":
            lines.append(f"{indent}{target} += {e}")
        elif kind == "expr":
            lines.append(f"{indent}{e}")
        elif kind == "import":
            imports = ["import os", "import torch.nn as nn", "from os import environ as env", "from . import x"]
            lines.append(f"{indent}{draw(st.sampled_from(imports))}")
        elif kind == "global":
            lines.append(f"{indent}def g():\n{indent}    global {target}\n{indent}    {target} = 1")
        else:
            head = {
                "def": f"def f(a, b={e}, *args, **kw):",
                "class": f"class C({draw(_NAMES)}):",
                "if": f"if {e}:",
                "for": f"for {target}, b in {e}:",
                "with": f"with {e} as {target}:",
                "try": "try:",
            }[kind]
            lines.append(f"{indent}{head}")
            lines.append(draw(_block(indent + "    ", depth + 1)))
            if kind == "try":
                lines.append(f"{indent}except Exception as {target}:\n{indent}    pass")
    return "\n".join(lines)


@settings(
    max_examples=200, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(_block())
def test_generated_programs(source):
    source += "\n"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # "'int' object is not callable": valid all the same
        try:
            compile(source, "<generated>", "exec")
        except SyntaxError:  # a few combinations are not Python (a walrus in a comprehension's iterable)
            assume(False)
    assert_same_metadata(source)
