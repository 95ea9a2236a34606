"""Where test code is: tests name the legacy variables to exercise the legacy path, and are
reported, never rewritten (BFM052): :func:`report_tests` reports the writes, reads and other
names of the variables in test code.

A test file is a test module (:func:`.test_or_script.is_test_module`: a file with a test's name
that is not a training script); test code is also a ``test*`` function, a unittest/pytest
set-up or tear-down hook, or a method of a ``TestCase`` class (docs.python.org, unittest).
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from .context import FileContext
from .env_writes import LegacyWrite, Mention
from .outcome import Refusal

HOOKS = ("setUp", "tearDown", "setUpClass", "tearDownClass", "setup_method", "teardown_method")


def is_test_function(func: cst.FunctionDef | None) -> bool:
    """A ``test*`` function or a set-up / tear-down hook."""
    return func is not None and (func.name.value.startswith("test") or func.name.value in HOOKS)


def in_test(ctx: FileContext, node: cst.CSTNode) -> bool:
    """In a test module, or inside a test function / hook, or a method of a TestCase."""
    if ctx.test_module:
        return True
    for anc in ctx.ancestors(node):
        if isinstance(anc, cst.FunctionDef) and is_test_function(anc):
            return True
        if isinstance(anc, cst.ClassDef) and any(ctx.code(b.value).endswith("TestCase") for b in anc.bases):
            return True
    return False


def report_tests(ctx: FileContext, writes: list[LegacyWrite], mentions: list[Mention]) -> tuple[bool, set[int]]:
    """Tests set the variable to exercise the legacy path (``monkeypatch.setenv``,
    ``mock.patch.dict(os.environ, ...)``, ``setUp``, ``test_*`` functions, ``test_*.py``
    files) and read it to choose what to expect (``os.getenv(X)``, a helper such as
    ``check_env_flag(X)``, ``print(os.getenv(X))``): report, never rewrite. In a
    test, a keyword argument named like a legacy variable (``self._set_env(XLA_USE_BF16="1")``,
    ``mock.patch.dict(os.environ, XLA_USE_BF16="1")``) sets it too. Returns whether the file
    is only tests' business (a test file, or every write is a test's: the file is then left
    alone) and the ids of the mentions reported here."""
    test_file = ctx.test_module
    handled = set[int]()
    # four passes, each reporting (in this order) and each run whatever the others found
    in_writes = _report_test_writes(ctx, writes)
    in_setters = _report_setter_calls(ctx, mentions, handled)
    in_mentions = _report_test_mentions(ctx, mentions, handled)
    in_keywords = _report_test_keywords(ctx, writes, handled)
    found = in_writes or in_setters or (test_file and (in_mentions or in_keywords))
    tests_only = found and (
        test_file or not writes or all(is_test_function(ctx.enclosing(w.statement, cst.FunctionDef)) for w in writes)
    )
    return tests_only, handled


def _report_test_writes(ctx: FileContext, writes: list[LegacyWrite]) -> bool:
    """Report the writes in a test module or a test function (BFM052); whether there was one."""
    found = False
    for w in writes:
        if ctx.test_module or is_test_function(ctx.enclosing(w.statement, cst.FunctionDef)):
            ctx.outcome.refuse(Refusal.TEST, ctx.report("BFM052", w.key, fixed=False, variable=w.variable))
            found = True
    return found


def _report_setter_calls(ctx: FileContext, mentions: list[Mention], handled: set[int]) -> bool:
    """Report the mentions (not keyword arguments) in a call that sets the environment for a
    test (``monkeypatch.setenv``/``delenv`` wherever they are, ``mock.patch.dict`` in a test: BFM052),
    adding their ids to ``handled``; whether there was one. A script's own ``mock.patch.dict`` around
    its ``main()`` is no test's (BFM042, a form not rewritten: a hunt's evaluation script was told it
    was a test)."""
    found = False
    for mention in mentions:
        if isinstance(mention.node, cst.Name):
            continue  # a keyword argument (`set_env(XLA_USE_BF16="1")`): with the keywords, _report_test_keywords
        call = ctx.enclosing(mention.node, cst.Call)
        patch = call is not None and ctx.code(call.func).endswith("patch.dict")
        if patch and not in_test(ctx, mention.node):
            continue  # a script's own `with mock.patch.dict(os.environ, {...}): main()`: a form not rewritten
        if call is not None and (m.matches(call.func, m.Attribute(attr=m.Name("setenv") | m.Name("delenv"))) or patch):
            ctx.outcome.refuse(
                Refusal.TEST,
                ctx.report(
                    "BFM052",
                    mention.node,
                    fixed=False,
                    variant="sets_through",
                    variable=mention.variable,
                    callee=ctx.code(call.func),
                ),
            )
            handled.add(id(mention.node))
            found = True
    return found


def _report_test_mentions(ctx: FileContext, mentions: list[Mention], handled: set[int]) -> bool:
    """Report the reads and other names of the variable in a test not ``handled`` yet
    (:func:`_report_test_mention`), adding their ids to ``handled``; whether there was one.
    In a test file they alone make the file a test's business, so nothing of it is migrated;
    elsewhere they are reported here and the rest of the file is migrated as usual."""
    found = False
    for mention in mentions:
        if id(mention.node) in handled or isinstance(mention.node, cst.Name) or not in_test(ctx, mention.node):
            continue
        _report_test_mention(ctx, mention)
        handled.add(id(mention.node))
        found = True
    return found


def _report_test_mention(ctx: FileContext, mention: Mention) -> None:
    """BFM052 for one mention in a test: a read; an argument of a helper whose name says it sets
    (``set``/``put``/``patch``, without ``get``) or else reads the variable; or a name."""
    parent = ctx.parent(mention.node)
    helper = ctx.parent(parent) if isinstance(parent, cst.Arg) else None
    fields: dict[str, str] = {}
    if mention.is_read:
        variant = "reads"
    elif isinstance(helper, cst.Call):
        callee = ctx.code(helper.func)
        verb = callee.rsplit(".", 1)[-1].lower()
        sets = any(word in verb for word in ("set", "put", "patch")) and "get" not in verb
        variant, fields = ("sets_through" if sets else "reads_through"), {"callee": callee}
    else:
        variant = "names"
    ctx.outcome.refuse(
        Refusal.TEST,
        ctx.report("BFM052", mention.node, fixed=False, variant=variant, variable=mention.variable, **fields),
    )


def _report_test_keywords(ctx: FileContext, writes: list[LegacyWrite], handled: set[int]) -> bool:
    """Report the keyword arguments named like a legacy variable in a test's calls, other than
    the writes' own keys (BFM052, ``sets_through``), adding their ids to ``handled``; whether
    there was one."""
    found = False
    keys = {id(w.key) for w in writes}
    for call in ctx.nodes(cst.Call):
        for arg in call.args:
            keyword = arg.keyword
            if (
                keyword is None
                or keyword.value not in ctx.rules.variables
                or id(keyword) in keys
                or not in_test(ctx, call)
            ):
                continue
            ctx.outcome.refuse(
                Refusal.TEST,
                ctx.report(
                    "BFM052",
                    keyword,
                    fixed=False,
                    variant="sets_through",
                    variable=keyword.value,
                    callee=f"{ctx.code(call.func)}({keyword.value}=...)",
                ),
            )
            handled.add(id(keyword))
            found = True
    return found
