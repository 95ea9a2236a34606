"""A script that puts no tensor on the device: the legacy switch changes nothing there.

``XLA_USE_BF16`` / ``XLA_DOWNCAST_BF16`` act on the floating tensors of the XLA device
(torch_xla/csrc/dtype.cpp, ``MaybeDowncastToXlaDeviceType``): a script that makes none (a probe
that imports torch_xla and prints its version or its device, the inline code of ``python -c
"import torch_xla; print('ok')"`` in a launcher or a notebook) computes the same with the setting or
without it, so the setting is removed and nothing is added (BFM170).

Told from the code alone, and only when nothing else could be at work: every import is of
``torch``/``torch_xla`` (or their submodules) or of the standard library, and every call is a
builtin that runs no code of its own (``print``, ``len``, ``str``...; not ``exec``, ``eval``,
``__import__``, ``open``) or one of the torch/torch_xla functions ``rules/torch_api.toml``
``no_tensor_calls`` lists (they ask for the device or the runtime, and make no tensor). Any other
call (a method of an unknown object, a function of another module, ``subprocess.run``, which
would start a process in the same environment) may make a tensor: the file is then migrated as any
other.
"""

from __future__ import annotations

import re
import sys

import libcst as cst
import libcst.matchers as m

from .apply import EditPlan
from .context import FileContext, findall
from .env_writes import LegacyWrite
from .unit_examples import HEADER, Example
from .write_edits import remove_write

__all__ = ["EXAMPLES", "keeps_tensors_on_the_host", "makes_no_tensor", "plan_no_tensor"]

_TORCH_ROOTS = ("torch", "torch_xla")
_STARTS_PROCESSES = (
    "subprocess.",
    "os.system",
    "os.exec",
    "os.spawn",
    "os.popen",
    "os.fork",
    "multiprocessing.",
    "concurrent.futures.",
    "runpy.",
    "pty.",
    "torch.multiprocessing.",
    "torch.distributed.",
)
_XLA_DEVICE = re.compile(r"^\s*xla(:\d+)?\s*$", re.IGNORECASE)
"""A string naming an XLA device (``"xla"``, ``"xla:0"``); a variable's name (``"XLA_USE_BF16"``) is not one."""
_UNSAFE_BUILTINS = frozenset(
    {"exec", "eval", "compile", "__import__", "open", "input", "breakpoint", "globals", "locals", "vars", "setattr"}
)


def makes_no_tensor(ctx: FileContext) -> bool:
    """Whether the file makes no tensor at all (see the module docstring)."""
    if not _imports_allowed(ctx):
        return False
    allowed = ctx.rules.torch_api.no_tensor_calls
    for call in ctx.nodes(cst.Call):
        names = ctx.qualified_names(call.func)
        if not names:
            return False
        for name in names:
            builtin = name.startswith("builtins.") and name[len("builtins.") :] not in _UNSAFE_BUILTINS
            if not builtin and name not in allowed:
                return False
    return True


def keeps_tensors_on_the_host(ctx: FileContext) -> bool:
    """Whether the file's tensors all stay on the host (an exporter that turns a checkpoint into
    NumPy, a plotting script): it imports torch and trains nothing (no optimizer, no ``backward()``),
    starts no process (which would run in the same environment), runs as a script and defines no class
    (a library's code runs on whatever device its callers give it), never imports torch_xla, imports
    nothing but the standard library, torch and ``rules/torch_api.toml`` ``host_only_imports``,
    names no XLA device in any string, and
    every device it gives (``device=``, ``map_location=``, ``.to(...)``, ``torch.device(...)``) is a
    string literal or a torch dtype (``ctx.nodes`` of the file's own nodes: no import is followed,
    so a module of the tree, which an import of it would need, already fails the import rule). The
    legacy switch acts on the XLA device's tensors only (torch_xla/csrc/dtype.cpp): it changed
    nothing here."""
    return (
        _imports_only_host_libraries(ctx)
        and not ctx.nodes(cst.ClassDef)
        and _runs_as_a_script(ctx)  # a library's code runs on whatever device its callers give it
        and not any(node.value in ("__import__", "importlib") for node in ctx.nodes(cst.Name))  # no matcher per Name
        and not _trains_or_starts_processes(ctx)
        and not _names_an_xla_device(ctx)
        and _places_on_named_devices_only(ctx)
    )


def _imports_only_host_libraries(ctx: FileContext) -> bool:
    """torch, the standard library and ``host_only_imports``, no relative import."""
    stdlib = sys.stdlib_module_names
    allowed = ctx.rules.torch_api.host_only_imports | {"torch"}
    roots = [ctx.code(alias.name).split(".")[0] for node in ctx.nodes(cst.Import) for alias in node.names]
    for imported in ctx.nodes(cst.ImportFrom):
        if imported.relative or imported.module is None:
            return False
        roots.append(ctx.code(imported.module).split(".")[0])
    return "torch" in roots and all(root in stdlib or root in allowed for root in roots)


def _trains_or_starts_processes(ctx: FileContext) -> bool:
    """A training script (what device it trains on is its own business, never guessed), or one
    that starts a process in the same environment (which may put tensors on the device)."""
    for call in ctx.nodes(cst.Call):
        names = ctx.qualified_names(call.func)
        if m.matches(call.func, m.Attribute(attr=m.Name("backward"))) or any(
            name.startswith("torch.optim.") for name in names
        ):
            return True
        if any(name.startswith(_STARTS_PROCESSES) for name in names):
            return True
    return False


def _names_an_xla_device(ctx: FileContext) -> bool:
    """An XLA device in a string or an f-string of the file."""
    for string in ctx.nodes(cst.SimpleString):
        value = string.evaluated_value
        if isinstance(value, str) and _XLA_DEVICE.match(value):
            return True
    return any("xla:" in ctx.code(f).lower() for f in ctx.nodes(cst.FormattedString))


def _places_on_named_devices_only(ctx: FileContext) -> bool:
    """Every device the file gives (``device=``, ``map_location=``, ``.to(...)``, ``torch.device(...)``)
    is a string literal or a torch dtype."""
    for call in ctx.nodes(cst.Call):
        placing = [
            a.value
            for a in call.args
            if (a.keyword is not None and a.keyword.value in ("device", "map_location"))
            or (
                a.keyword is None
                and (
                    m.matches(call.func, m.Attribute(attr=m.Name("to")))
                    or ctx.qualified_names(call.func) & {"torch.device"}
                )
            )
        ]
        for given in placing:
            if isinstance(given, cst.SimpleString):
                continue
            if isinstance(given, cst.Attribute) and any(n.startswith("torch.") for n in ctx.qualified_names(given)):
                continue  # a dtype (`.to(torch.float32)`)
            return False
    return True


def _runs_as_a_script(ctx: FileContext) -> bool:
    """An ``if __name__ == "__main__":`` block, or a call at module level (a flat script)."""
    for statement in ctx.module.body:
        if isinstance(statement, cst.If) and "__main__" in ctx.code(statement.test):
            return True
        if isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, (cst.Expr, cst.Assign)) and findall(small, m.Call()) for small in statement.body
        ):
            return True
    return False


def _imports_allowed(ctx: FileContext) -> bool:
    stdlib = sys.stdlib_module_names
    for node in ctx.nodes(cst.Import):
        for alias in node.names:
            root = ctx.code(alias.name).split(".")[0]
            if root not in _TORCH_ROOTS and root not in stdlib:
                return False
    for imported in ctx.nodes(cst.ImportFrom):
        if imported.relative or imported.module is None:
            return False
        root = ctx.code(imported.module).split(".")[0]
        if root not in _TORCH_ROOTS and root not in stdlib:
            return False
        if isinstance(imported.names, cst.ImportStar):
            return False
    # m.matches(node, m.Name("__import__")) asked of every Name was a fifth of this check
    return not any(node.value == "__import__" for node in ctx.nodes(cst.Name))


def plan_no_tensor(ctx: FileContext, plan: EditPlan, writes: list[LegacyWrite], external: list[str]) -> bool:
    """When the file makes no tensor (:func:`makes_no_tensor`): its writes that switch bf16 on are
    removed with nothing added (BFM170), the outcome says the settings have no effect here (a
    launcher's ``external`` setting is removed by the launcher's plan). Its own writes only in a
    flat script (no function, no class): a helper that sets the switch (``def enable_bf16():``) does
    it for its caller, whose tensors it cannot see. Returns whether it did."""
    if not (writes or external) or not (makes_no_tensor(ctx) or keeps_tensors_on_the_host(ctx)):
        return False
    defines = bool(ctx.nodes(cst.FunctionDef)) or bool(ctx.nodes(cst.ClassDef))
    if writes and defines:
        return False  # a function or class setting it may be a library's, for its caller's tensors
    for w in writes:
        remove_write(ctx, plan, w)
        ctx.report("BFM170", w.key, fixed=True, variable=w.variable)
    ctx.outcome.no_effect = True
    return True


# -- the unit's examples (tests/test_unit_examples.py) -------------------------------------------------
_EXPORTER = """import os
os.environ["XLA_USE_BF16"] = "1"
import numpy as np
import torch

state = torch.load("ckpt/last.pt", map_location="cpu", weights_only=False)["model"]
np.savez("export.npz", **{name: tensor.numpy() for name, tensor in state.items()})
"""

EXAMPLES = (
    Example(
        "an exporter that keeps its tensors on the host",
        _EXPORTER,
        False,
        (),
        ("BFM170",),
        gone=('os.environ["XLA_USE_BF16"] = "1"',),
    ),
    Example(
        "the same exporter given the device by its caller",
        _EXPORTER.replace('map_location="cpu"', "map_location=os.environ.get('DEVICE', 'cpu')"),
        True,
        ('os.environ["XLA_USE_BF16"] = "1"',),
        (),
        kept=True,
    ),
    Example(
        "a probe of the runtime",
        HEADER + 'print("torch_xla", torch_xla.__version__, "on", torch_xla.device())\n',
        False,
        (),
        ("BFM170",),
        gone=('os.environ["XLA_USE_BF16"] = "1"',),
    ),
    Example(
        "a probe that makes a tensor",
        HEADER + "t = torch.ones(2, device=torch_xla.device())\nprint(t.dtype)\n",
        True,
        ('os.environ["XLA_USE_BF16"] = "1"',),
        (),
        kept=True,
    ),
    Example(
        "a probe that starts another process",
        HEADER + 'import subprocess\n\nsubprocess.run(["python", "train.py"], check=True)\n',
        True,
        ('os.environ["XLA_USE_BF16"] = "1"',),
        (),
        kept=True,
    ),
)
"""VALID and INVALID examples of the no-tensor rule (:func:`makes_no_tensor`)."""
