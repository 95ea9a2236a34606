"""Properties of the Python codemod on generated training scripts (hypothesis).

A strategy builds realistic PyTorch/XLA training scripts: imports in several spellings, a legacy
write in every spelling and position (module top, after the imports, start of ``main()``, behind
``if args.bf16:``, in the ``__main__`` guard), reads, a model (``nn.Linear``, ``nn.Sequential``,
a small ``nn.Module`` subclass), an optimizer built from ``model.parameters()``, a training loop
(forward, loss, backward, step, ``xm.mark_step()``), sometimes a DataLoader, sometimes nothing
legacy at all; with random formatting: blank lines, comments, trailing comments, semicolons,
parenthesized and backslash continuations, tabs or spaces, CRLF (or mixed) newlines, a missing
final newline, non-ASCII identifiers and strings, docstrings.

Every line is generated with a role: ``KEEP`` lines (comments, blank lines, docstrings, unrelated
statements, the model's class body...) are not something the migration has any reason to touch,
so they must come out byte for byte (line ending included) and in order; ``TOUCH`` lines (the
legacy writes and reads, the model/optimizer construction, the forward pass and loss...) may
change. A blank line directly above a removed write may go with it (``apply.py`` drops the blank
lines of a removed statement's leading trivia and keeps its comments, by design).

Properties, for every mode:

(a) a valid script never raises ParseError and its migration compiles (CPython ``compile()``);
    a mutated (possibly invalid) script raises ParseError only when it does not compile, and
    otherwise its migration compiles;
(b) idempotence: migrating the output again gives the same code;
(c) every KEEP line is in the output, byte-identical, in order; the output of a CRLF input has no
    bare ``\\n`` (and that of an LF input no ``\\r``);
(d) no exception other than ParseError;
(e) a switch is never removed without its replacement: if the input has an effective write
    (XLA_USE_BF16 / XLA_DOWNCAST_BF16 set to a true value) that the output no longer has, the
    output adds the mode's code (stochastic / gpu-compatible: a bfloat16 cast; amp:
    ``torch.autocast``), or a diagnostic is left unfixed;
(f) the converse, on its own generator: a write that never took effect (undone before the device
    was used, in a function nobody calls, after the training) adds no bf16 code, and one in force
    only under a flag adds it only under that flag (or a diagnostic is left unfixed).

Each (property, mode) is its own test, so a failure of one does not hide the others. All tests
draw the same seeded examples and the migrations are cached, so each script is migrated once per
mode. ``BF16_MIGRATE_FUZZ_EXAMPLES`` (default 60) sets the number of examples per test.
"""

from __future__ import annotations

import ast
import os
import re
import tempfile
import traceback
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from bf16_migrate.python import MigrationResult, ParseError, migrate_source
from bf16_migrate.rules import is_truthy, load_rules

from conftest import LEGACY, MODES

EXAMPLES = int(os.environ.get("BF16_MIGRATE_FUZZ_EXAMPLES", "60"))
SEED = int(os.environ.get("BF16_MIGRATE_FUZZ_SEED", "20240611"))
# Shrinking a failure costs minutes (hundreds of migrations): off by default so the file stays
# under a minute; BF16_MIGRATE_FUZZ_SHRINK=1 turns it on to get a minimal script.
SHRINK = os.environ.get("BF16_MIGRATE_FUZZ_SHRINK", "") not in ("", "0")
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # the same examples on every run; failures are reported with their script
    phases=[Phase.explicit, Phase.generate] + ([Phase.shrink] if SHRINK else []),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
    # hypothesis writes constants and failure patches under its home directory: keep them out of the work tree
    set_hypothesis_home_dir(os.path.join(tempfile.gettempdir(), "bf16-migrate-hypothesis"))

KEEP, TOUCH, WRITE, AMP = "keep", "touch", "write", "amp"  # AMP: kept, except in amp mode (inside the autocast block)
EFFECTIVE = tuple(
    name for name, rule in load_rules().variables.items() if rule.effective
)  # the switches still read by torch-xla


# -- the script model ----------------------------------------------------------------------------------
@dataclass
class Line:
    level: int  # indentation level (in units of the file's indent)
    text: str  # without indentation and newline; "" for a blank line
    role: str = KEEP
    raw: bool = False  # inside a string literal or a continuation: the text is taken as is after the indent


class Script:
    """A generated script: its ``source``, per mode the indices (into ``split_lines(source)``)
    of the lines that must survive (``keep[mode]``), its ``newline`` style ("\\n", "\\r\\n" or "mixed") and
    ``notes`` on what was generated (the spellings and layout)."""

    def __init__(self, source: str, keep: dict[str, list[int]], newline: str, notes: list[str]) -> None:
        self.source, self.keep, self.newline, self.notes = source, keep, newline, notes

    def __repr__(self) -> str:  # what hypothesis prints for a falsifying example
        return (
            f"Script(notes={self.notes!r}, newline={self.newline!r}, "
            f"keep={ {m: len(k) for m, k in self.keep.items()} } lines, source=\n"
            f"{self.source!r}\n)"
        )


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\n|\r)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines with their endings, split on \\n, \\r\\n and \\r only (not on \\f, \\x1c, \\u2028:
    str.splitlines would)."""
    return _LINE.findall(text)


class Builder:
    def __init__(self) -> None:
        self.lines: list[Line] = []

    def add(self, level: int, text: str, role: str = KEEP, raw: bool = False) -> None:
        self.lines.append(Line(level, text, role, raw))

    def extend(self, level: int, texts: list[str], role: str = KEEP) -> None:
        """A statement over several lines: the first at ``level``, the others continuation lines
        (their text carries their own extra indentation)."""
        for k, text in enumerate(texts):
            self.add(level, text, role, raw=k > 0)


# -- pieces ---------------------------------------------------------------------------------------------
NON_ASCII = ["é", "über", "日本語", "Ω", "naïve", "ñ", "✓", "😀"]
COMMENTS = [
    "# set up",
    "# TODO: tune",
    "#",
    "# bf16 is tricky here",
    "# noqa",
    "#!not a shebang",
    "# ümlaut ß",
    "# 日本語のコメント",
    "#\ttabbed comment",
    "# type: ignore",
]


def _comment(draw) -> str:
    return draw(st.sampled_from(COMMENTS))


def _trailing(draw) -> str:
    """An optional trailing comment (with its leading spaces)."""
    if draw(st.booleans()):
        return ""
    return draw(st.sampled_from(["  ", " ", "\t", "    "])) + _comment(draw)


def _q(draw) -> str:
    return draw(st.sampled_from(['"', "'"]))


def _filler(draw, b: Builder, level: int, names: dict, role: str = KEEP) -> None:
    """Zero or more statements and lines the migration has no reason to touch (``role``)."""
    start = len(b.lines)
    _filler_lines(draw, b, level)
    for line in b.lines[start:]:
        line.role = role


def _filler_lines(draw, b: Builder, level: int) -> None:
    for _ in range(draw(st.integers(0, 2))):
        k = draw(st.integers(0, 11))
        q = _q(draw)
        if k == 0:
            b.add(level, "")
        elif k == 1:
            b.add(level, _comment(draw))
        elif k == 2:
            b.add(
                level,
                f"print({q}{draw(st.sampled_from(NON_ASCII))} "
                f"{draw(st.sampled_from(['step', 'ok', 'XLA']))}{q}){_trailing(draw)}",
            )
        elif k == 3:
            b.add(
                level,
                f"seed_{draw(st.integers(0, 9))} = {draw(st.integers(0, 99))}; "
                f"verbose = {draw(st.booleans())}{_trailing(draw)}",
            )
        elif k == 4:
            b.extend(level, ["total_steps = 10 + \\", "    5" + _trailing(draw)])
        elif k == 5:
            b.extend(level, ["shape = (", "    8,  # rows", "    4,", ")"])
        elif k == 6:
            b.add(level, "")
            b.add(level, "")
        elif k == 7:
            b.add(
                level,
                f"{draw(st.sampled_from(['données', 'étape', 'Δt', 'λ']))} = "
                f"{draw(st.integers(0, 9))}{_trailing(draw)}",
            )
        elif k == 8:
            b.add(level, f"msg = f{q}{{{draw(st.integers(0, 9))}}} {draw(st.sampled_from(NON_ASCII))}{q}  # f-string")
        elif k == 9:
            b.add(level, "pass" + _trailing(draw))
        elif k == 10:
            b.extend(level, ['text = ("first "', '        "second")'])
        else:
            b.add(level, f"assert True, {q}message{q};")


def _write_lines(draw, names: dict, variable: str, value: str, where: str, one_line: bool = False) -> list[str]:  # noqa: C901  (a strategy: one branch per way of writing)
    """One legacy write, in one of its spellings: its lines (continuation lines carry their own
    extra indentation)."""
    q = _q(draw)
    os_name, environ = names["os"], names["environ"]
    spellings = []
    if os_name:
        spellings += ["subscript", "setdefault", "update-dict", "update-multi", "update-kwarg", "putenv"]
        if not one_line:
            spellings += ["update-lines", "subscript-backslash"]
        if names["const"] and variable == "XLA_USE_BF16" and where != "top":
            spellings += ["const", "const"]
    if environ:
        spellings += ["environ-subscript", "environ-setdefault", "environ-update"]
    form = draw(st.sampled_from(spellings))
    key, val = f"{q}{variable}{q}", f"{q}{value}{q}"
    if value == "1" and form not in ("update-kwarg",) and draw(st.integers(0, 7)) == 0:
        computed = ["str(1)"] + (
            ['"1" if args.bf16 else "0"', "str(int(args.bf16))"]
            if where in ("guarded", "body") and names["args"]
            else []
        )
        val = draw(st.sampled_from(computed))
    t = _trailing(draw)
    names["notes"].append(f"write:{form}:{variable}={value}@{where}")
    if form == "subscript":
        return [f"{os_name}.environ[{key}] = {val}{t}"]
    if form == "setdefault":
        return [f"{os_name}.environ.setdefault({key}, {val}){t}"]
    if form == "update-dict":
        return [f"{os_name}.environ.update({{{key}: {val}}}){t}"]
    if form == "update-multi":
        return [f"{os_name}.environ.update({{{key}: {val}, {q}PJRT_DEVICE{q}: {q}CPU{q}}}){t}"]
    if form == "update-kwarg":
        return [f"{os_name}.environ.update({variable}={val}){t}"]
    if form == "putenv":
        return [f"{os_name}.putenv({key}, {val}){t}"]
    if form == "update-lines":
        return [f"{os_name}.environ.update(", "    {", f"        {key}: {val},{t}", "    }", ")"]
    if form == "subscript-backslash":
        return [f"{os_name}.environ[{key}] = \\", f"    {val}{t}"]
    if form == "const":
        return [f"{os_name}.environ[BF16_FLAG] = {val}{t}"]
    if form == "environ-subscript":
        return [f"{environ}[{key}] = {val}{t}"]
    if form == "environ-setdefault":
        return [f"{environ}.setdefault({key}, {val}){t}"]
    return [f"{environ}.update({{{key}: {val}}}){t}"]


def _writes(draw, b: Builder, level: int, names: dict, where: str) -> None:
    if names["unset"] == where and names["os"]:
        # a clean slate before the writes (as fixtures/shapes/spellings.py does)
        q = _q(draw)
        variable = draw(st.sampled_from(LEGACY))
        b.add(
            level,
            draw(
                st.sampled_from(
                    [
                        f"{names['os']}.environ.pop({q}{variable}{q}, None)",
                        f"del {names['os']}.environ[{q}{variable}{q}]",
                    ]
                )
            ),
            WRITE,
        )
        names["notes"].append(f"unset:{variable}@{where}")
    for variable, value in names["writes"].get(where, []):
        if draw(st.booleans()):
            b.add(level, _comment(draw))
        wrap = draw(st.integers(0, 9)) if where != "guarded" else 9
        if wrap == 0:  # inside a try: the codemod must keep it (BFM041)
            b.add(level, "try:")
            b.extend(level + 1, _write_lines(draw, names, variable, value, where), WRITE)
            b.add(level, "except KeyError:")
            b.add(level + 1, "pass")
        else:
            b.extend(level, _write_lines(draw, names, variable, value, where), WRITE)


def _guarded(draw, b: Builder, level: int, names: dict) -> None:
    """The writes behind ``if args.bf16:`` (a block, a one-line suite, or with an else)."""
    form = draw(st.sampled_from(["block", "block", "suite", "else"]))
    names["notes"].append(f"guard:{form}")
    test = draw(st.sampled_from(["args.bf16", "args.bf16", "args.bf16 and not args.cpu", "(args.bf16)"]))
    if form == "suite" and len(names["writes"]["guarded"]) == 1:
        variable, value = names["writes"]["guarded"][0]
        line = _write_lines(draw, names, variable, value, "guarded", one_line=True)[0]
        b.add(level, f"if {test}: {line}", WRITE)
        return
    b.add(level, f"if {test}:" + _trailing(draw), WRITE)
    _writes(draw, b, level + 1, names, "guarded")
    if form == "else":
        b.add(level, "else:", WRITE)
        variable = names["writes"]["guarded"][0][0]
        b.extend(level + 1, _write_lines(draw, names, variable, "0", "guarded"), WRITE)


def _read(draw, b: Builder, level: int, names: dict) -> None:
    if not names["reads"]:
        return
    variable = draw(st.sampled_from(LEGACY[:2]))
    q = _q(draw)
    os_name = names["os"]
    if os_name:
        form = draw(st.integers(0, 3))
        if form == 0:
            b.add(
                level, f"use_bf16 = {os_name}.environ.get({q}{variable}{q}, {q}0{q}) == {q}1{q}{_trailing(draw)}", TOUCH
            )
        elif form == 1:
            b.add(level, f"print({q}bf16:{q}, {os_name}.getenv({q}{variable}{q})){_trailing(draw)}", TOUCH)
        elif form == 2:
            b.add(level, f"if {os_name}.getenv({q}{variable}{q}) == {q}1{q}:", TOUCH)
            b.add(level + 1, f"print({q}running in bf16 ✓{q})")
        else:
            b.add(level, f"flag = {q}{variable}{q} in {os_name}.environ", TOUCH)
    elif names["environ"]:
        b.add(level, f"use_bf16 = {names['environ']}.get({q}{variable}{q}){_trailing(draw)}", TOUCH)
    names["notes"].append(f"read:{variable}")


def _imports(draw, b: Builder, names: dict) -> None:
    """The imports, shuffled, in several spellings; the os spelling the writes use."""
    items: list[list[str]] = []
    os_form = names["os_form"]
    if os_form == "import os":
        items.append(["import os" + _trailing(draw)])
    elif os_form == "import os as _os":
        items.append(["import os as _os"])
    elif os_form == "from os import environ":
        items.append(["from os import environ"])
    elif os_form == "both":
        items.append(["import os, sys"])
        items.append(["from os import environ"])
    items.append(["import torch"])
    nn_form = names["nn_form"]
    items.append(["import torch.nn as nn"] if nn_form == "import" else ["from torch import nn" + _trailing(draw)])
    items.append(["import torch_xla"])
    items.append(["import torch_xla.core.xla_model as xm"])
    if names["args"]:
        items.append(["import argparse"])
    if names["loader"]:
        items.append(["import torch_xla.distributed.parallel_loader as pl"])
    if names["spawn"]:
        items.append(["import torch_xla.distributed.xla_multiprocessing as xmp"])
    if names["loader"]:
        if draw(st.booleans()):
            items.append(["from torch.utils.data import DataLoader, TensorDataset"])
        else:
            items.append(["from torch.utils.data import (", "    DataLoader,", "    TensorDataset,  # in memory", ")"])
    order = draw(st.permutations(range(len(items))))
    for index in order:
        # torch after os when a write sits between them: keep "import os" first
        b.extend(0, items[index])
        if draw(st.integers(0, 5)) == 0:
            _filler(draw, b, 0, names)


def _model_class(draw, b: Builder, names: dict) -> None:
    cls = names["cls"]
    b.add(0, f"class {cls}(nn.Module):")
    if draw(st.booleans()):
        b.add(1, f'"""A small MLP ({draw(st.sampled_from(NON_ASCII))})."""')
    b.add(1, "")
    b.add(1, "def __init__(self, d_in=IN, hidden=16, d_out=OUT):")
    b.add(2, "super().__init__()")
    b.add(2, "self.fc1 = nn.Linear(d_in, hidden)" + _trailing(draw))
    b.add(2, "self.act = nn.ReLU()")
    b.add(2, "self.fc2 = nn.Linear(hidden, d_out)")
    b.add(1, "")
    b.add(1, "def forward(self, x):")
    if draw(st.booleans()):
        b.add(2, "return self.fc2(self.act(self.fc1(x)))")
    else:
        b.add(2, "h = self.act(self.fc1(x))")
        b.add(2, "return self.fc2(h)")


def _train(draw, b: Builder, level: int, names: dict) -> None:  # noqa: C901  (a strategy: one branch per loop shape)
    """device, model, optimizer, loss function, data and the loop, at ``level``."""
    model, opt, x, y, loss = names["model"], names["opt"], names["x"], names["y"], names["loss"]
    if names["args"]:
        b.add(level, "parser = argparse.ArgumentParser(description=__doc__)")
        b.add(level, 'parser.add_argument("--bf16", action="store_true")')
        b.add(level, 'parser.add_argument("--steps", type=int, default=3)')
        b.add(level, 'parser.add_argument("--amp", action="store_true")')
        if draw(st.booleans()):
            b.add(level, 'parser.add_argument("--cpu", action="store_true")')
        b.add(level, "args = parser.parse_args()")
    if names["guarded"]:
        _guarded(draw, b, level, names)
    if "setup" in names["writes"]:
        b.add(level, "setup_env()" + _trailing(draw))
    _writes(draw, b, level, names, "body")
    _read(draw, b, level, names)
    _filler(draw, b, level, names)
    b.add(level, draw(st.sampled_from(["device = xm.xla_device()", "device = torch_xla.device()"])) + _trailing(draw))
    form = draw(st.integers(0, 5))
    if form == 0 and names["cls"]:
        b.add(level, f"{model} = {names['cls']}().to(device){_trailing(draw)}", TOUCH)
    elif form == 1 and names["cls"]:
        b.add(level, f"{model} = {names['cls']}(IN, 32, OUT)", TOUCH)
        b.add(level, f"{model}.to(device)", TOUCH)
    elif form == 2:
        b.extend(
            level,
            [
                f"{model} = nn.Sequential(",
                "    nn.Linear(IN, 8),",
                "    nn.ReLU(),",
                "    nn.Linear(8, OUT),",
                ").to(device)",
            ],
            TOUCH,
        )
    elif form == 3:
        b.add(level, f"{model}: nn.Module = nn.Linear(IN, OUT).to(device){_trailing(draw)}", TOUCH)
    else:
        b.add(level, f"{model} = nn.Linear(IN, OUT).to(device){_trailing(draw)}", TOUCH)
    _filler(draw, b, level, names)
    classify = names["classify"]
    b.add(level, f"loss_fn = nn.{'CrossEntropyLoss' if classify else 'MSELoss'}()")
    optim = draw(st.sampled_from(["SGD", "AdamW", "Adam"]))
    lr = draw(st.sampled_from(["0.01", "1e-3", "3e-4"]))
    opt_form = draw(st.integers(0, 5))
    if opt_form <= 1:
        b.add(level, f"{opt} = torch.optim.{optim}({model}.parameters(), lr={lr}){_trailing(draw)}", TOUCH)
    elif opt_form <= 3:
        b.extend(level, [f"{opt} = torch.optim.{optim}(", f"    {model}.parameters(),", f"    lr={lr},", ")"], TOUCH)
    elif opt_form == 4:
        b.add(
            level,
            f'{opt} = torch.optim.{optim}([{{"params": {model}.parameters(), "lr": {lr}}}]){_trailing(draw)}',
            TOUCH,
        )
    else:
        b.add(level, f"{opt}: torch.optim.Optimizer = torch.optim.{optim}({model}.parameters(), lr={lr})", TOUCH)
    _filler(draw, b, level, names)
    accumulate = draw(st.booleans())
    if accumulate:
        b.add(level, "total = 0.0", TOUCH)
    nested = draw(st.integers(0, 4)) == 0  # the loop in a nested function (torch_xla's train_loop_fn)
    loop_level = level + 1 if nested else level
    if nested:
        b.add(level, "def train_loop_fn():" + _trailing(draw))
        b.add(loop_level, f"{model}.train()")
        names["notes"].append("nested-loop")
    target = "torch.randint(0, OUT, (N,))" if classify else "torch.randn(N, OUT)"
    if names["loader"]:
        b.add(loop_level, f"dataset = TensorDataset(torch.randn(N, IN), {target})")
        b.add(loop_level, "loader = DataLoader(dataset, batch_size=BATCH, shuffle=True)")
        loop = draw(st.integers(0, 2))
        if loop == 0:
            b.add(loop_level, f"for {x}, {y} in loader:")
        elif loop == 1:
            b.add(loop_level, f"for step, ({x}, {y}) in enumerate(loader):{_trailing(draw)}")
        else:
            b.add(loop_level, "device_loader = pl.MpDeviceLoader(loader, device)")
            b.add(loop_level, f"for {x}, {y} in device_loader:")
        inner = loop_level + 1
        if loop != 2:
            b.add(inner, f"{x}, {y} = {x}.to(device), {y}.to(device)")
    else:
        steps = "args.steps" if names["args"] else "STEPS"
        b.add(loop_level, f"for step in range({steps}):{_trailing(draw)}")
        inner = loop_level + 1
        b.add(inner, f"{x} = torch.randn(BATCH, IN).to(device)")
        batch_target = "torch.randint(0, OUT, (BATCH,))" if classify else "torch.randn(BATCH, OUT)"
        b.add(inner, f"{y} = {batch_target}.to(device)")
    _filler(draw, b, inner, names)
    shape = draw(st.integers(0, 9))
    zero = f"{opt}.zero_grad()"
    if shape == 7 and not names["args"]:
        shape = 0
    if shape == 7:  # the script's own autocast under a flag
        b.add(inner, zero)
        b.add(inner, 'with torch.autocast("xla", dtype=torch.bfloat16, enabled=args.amp):', TOUCH)
        b.add(inner + 1, f"out = {model}({x})", TOUCH)
        b.add(inner + 1, f"{loss} = loss_fn(out, {y})", TOUCH)
        b.add(inner, f"{loss}.backward()")
        b.add(inner, f"{opt}.step()")
    elif shape == 8:  # a one-line loop body in the loop (a nested one-line for)
        b.add(inner, zero)
        b.add(inner, f"for _ in range(1): out = {model}({x}); {loss} = loss_fn(out, {y})", TOUCH)
        b.add(inner, f"{loss}.backward()")
        b.add(inner, f"{opt}.step()")
    elif shape == 9:  # the forward pass in both branches of an if
        b.add(inner, zero)
        b.add(inner, f"if {x}.shape[0] % 2 == 0:" + _trailing(draw), TOUCH)
        b.add(inner + 1, f"out = {model}({x})", TOUCH)
        b.add(inner, "else:", TOUCH)
        b.add(inner + 1, f"out = {model}({x} * 2)", TOUCH)
        b.add(inner, f"{loss} = loss_fn(out, {y})", TOUCH)
        b.add(inner, f"{loss}.backward()")
        b.add(inner, f"{opt}.step()")
    elif shape == 0:  # the plain sequence
        b.add(inner, zero)
        b.add(inner, f"out = {model}({x}){_trailing(draw)}", TOUCH)
        if draw(st.booleans()):
            _filler(draw, b, inner, names, AMP)  # between forward and loss: inside the autocast block in amp mode
        b.add(inner, f"{loss} = loss_fn(out, {y}){_trailing(draw)}", TOUCH)
        b.add(inner, f"{loss}.backward()")
        b.add(inner, f"{opt}.step()")
    elif shape == 1:  # semicolons
        b.add(inner, f"{zero};")
        b.add(inner, f"out = {model}({x})", TOUCH)
        b.add(inner, f"{loss} = loss_fn(out, {y})", TOUCH)
        b.add(inner, f"{loss}.backward(); {opt}.step()")
    elif shape == 2:  # parenthesized continuation of the loss
        b.add(inner, zero)
        b.add(inner, f"out = {model}({x})", TOUCH)
        b.extend(inner, [f"{loss} = loss_fn(", "    out,", f"    {y},{_trailing(draw)}", ")"], TOUCH)
        b.add(inner, f"{loss}.backward()")
        b.add(inner, f"{opt}.step()")
    elif shape == 3:  # backslash continuation
        b.add(inner, zero)
        b.extend(inner, ["out = \\", f"    {model}({x})"], TOUCH)
        b.extend(inner, [f"{loss} = loss_fn(out, \\", f"                  {y})"], TOUCH)
        b.add(inner, f"{loss}.backward()")
        b.add(inner, f"{opt}.step()")
    elif shape == 4:  # forward inside the loss call
        b.add(inner, zero)
        b.add(inner, f"{loss} = loss_fn({model}({x}), {y})", TOUCH)
        b.add(inner, f"{loss}.backward()")
        b.add(inner, f"xm.optimizer_step({opt})")
    elif shape == 5:  # forward, loss and backward in one expression
        b.add(inner, zero)
        b.add(inner, f"loss_fn({model}({x}), {y}).backward()", TOUCH)
        b.add(inner, f"{opt}.step()")
        accumulate = False
    else:  # one statement per line, the zero_grad after the step
        b.add(inner, f"out = {model}({x})", TOUCH)
        b.add(inner, f"{loss} = loss_fn(out, {y})", TOUCH)
        b.add(inner, f"{loss}.backward()")
        b.add(inner, f"{opt}.step()")
        b.add(inner, zero)
    b.add(inner, draw(st.sampled_from(["xm.mark_step()", "torch_xla.sync()", "xm.mark_step()  # sync"])))
    if accumulate:
        b.add(inner, f"total += {loss}.item()", TOUCH)
    if draw(st.booleans()) and shape != 5:
        b.add(inner, f'print(f"étape: {{{loss}.item():.3f}}")')
    _filler(draw, b, inner, names)
    if nested:
        b.add(level, "train_loop_fn()")
    if draw(st.integers(0, 3)) == 0:  # an evaluation pass
        b.add(level, f"{model}.eval()")
        b.add(level, "with torch.no_grad():")
        b.add(level + 1, f"val = {model}(torch.randn(BATCH, IN).to(device))", TOUCH)
        b.add(level + 1, 'print("val", val.float().mean().item())', TOUCH)  # the upcast of a device tensor: bf16
    if names["evaluate"]:
        b.add(level, f"print(evaluate({model}, torch.randn(BATCH, IN).to(device)))", TOUCH)


@st.composite
def scripts(draw) -> Script:  # noqa: C901  (a strategy: one branch per script shape)
    b = Builder()
    names: dict = {"notes": []}
    legacy = draw(st.integers(0, 9)) != 0  # sometimes nothing legacy at all
    layout = draw(st.sampled_from(["main", "main", "flat"]))
    names["args"] = draw(st.booleans())
    names["loader"] = draw(st.booleans())
    names["classify"] = draw(st.booleans())
    names["nn_form"] = draw(st.sampled_from(["import", "from"]))
    names["cls"] = draw(st.sampled_from([None, "Net", "Modèle", "TinyMLP"]))
    names["model"] = draw(st.sampled_from(["model", "net", "modèle", "m"]))
    names["opt"] = draw(st.sampled_from(["optimizer", "opt", "optimiseur"]))
    names["x"] = draw(st.sampled_from(["x", "inputs", "données"]))
    names["y"] = draw(st.sampled_from(["y", "target", "étiquettes"]))
    names["loss"] = draw(st.sampled_from(["loss", "perte"]))
    names["spawn"] = layout == "main" and draw(st.integers(0, 3)) == 0
    os_form = draw(
        st.sampled_from(["import os", "import os", "import os as _os", "from os import environ", "both", "none"])
    )
    if not legacy and os_form == "none":
        pass
    elif os_form == "none":
        os_form = "import os"
    names["os_form"] = os_form
    names["os"] = {"import os": "os", "import os as _os": "_os", "both": "os"}.get(os_form)
    names["environ"] = "environ" if os_form in ("from os import environ", "both") else None
    names["reads"] = legacy and draw(st.integers(0, 3)) == 0
    names["const"] = legacy and names["os"] is not None and draw(st.integers(0, 4)) == 0

    # where the writes go
    writes: dict[str, list[tuple[str, str]]] = {}
    positions = (
        ["top", "after_imports", "body", "main_guard", "setup"] if layout == "main" else ["top", "after_imports"]
    )
    names["guarded"] = False
    if legacy:
        for _ in range(draw(st.integers(1, 2))):
            variable = draw(st.sampled_from([*EFFECTIVE, *LEGACY]))  # the effective ones twice as often
            value = draw(st.sampled_from(["1", "1", "1", "0", "true"]))
            where = draw(st.sampled_from(positions + (["guarded"] if names["args"] else [])))
            if where == "guarded":
                names["guarded"] = True
            if where == "top" and os_form not in ("import os", "import os as _os", "both"):
                where = "after_imports"
            writes.setdefault(where, []).append((variable, value))
    names["writes"] = writes
    names["unset"] = draw(st.sampled_from(positions)) if legacy and draw(st.integers(0, 5)) == 0 else None
    if names["unset"] == "top" and os_form not in ("import os", "import os as _os", "both"):
        names["unset"] = None
    if names["unset"] == "top" and "top" not in writes:
        writes["top"] = []
    names["notes"].append(f"layout:{layout}")

    # the file
    if draw(st.integers(0, 3)) == 0:
        b.add(0, "#!/usr/bin/env python3")
    if draw(st.integers(0, 4)) == 0:
        b.add(0, "# -*- coding: utf-8 -*-")
    doc = draw(st.integers(0, 3))
    if doc == 1:
        b.add(0, f'"""Train a tiny model ({draw(st.sampled_from(NON_ASCII))})."""')
    elif doc == 2:
        b.add(0, '"""Train a tiny model.')
        b.add(0, "", raw=True)
        b.add(0, f"Non-ASCII text: {draw(st.sampled_from(NON_ASCII))}; tabs\tand trailing spaces   ", raw=True)
        b.add(0, '"""', raw=True)
    elif doc == 3:
        b.add(0, "r'''Raw docstring with a \\backslash.'''")
    if "top" in writes:
        first_import = {"import os": "import os", "import os as _os": "import os as _os", "both": "import os, sys"}[
            os_form
        ]
        b.add(0, first_import)
        if os_form == "both":
            b.add(0, "from os import environ")
        _writes(draw, b, 0, names, "top")
        names["os_form"] = "already"
    _imports(draw, b, names)
    _filler(draw, b, 0, names)
    if names["const"]:
        b.add(0, 'BF16_FLAG = "XLA_USE_BF16"  # the switch', WRITE)  # removed with the writes through it (BFM043)
    _writes(draw, b, 0, names, "after_imports")
    b.add(0, "")
    b.add(0, f"IN, OUT = 4, {draw(st.integers(2, 3))}{_trailing(draw)}")
    b.add(0, "BATCH = 8; N = 32; STEPS = 3")
    b.add(0, "")
    if names["cls"]:
        b.add(0, "")
        _model_class(draw, b, names)
        b.add(0, "")
    if "setup" in writes:  # the writes in a function main() calls first
        b.add(0, "")
        b.add(0, "def setup_env():")
        b.add(1, '"""Precision and runtime settings."""')
        _writes(draw, b, 1, names, "setup")
        b.add(0, "")
    names["evaluate"] = draw(st.integers(0, 4)) == 0
    if names["evaluate"]:  # the model reaches a function of the file through a parameter
        b.add(0, "")
        b.add(0, "def evaluate(net, batch):")
        b.add(1, '"""Mean output on one batch."""')
        b.add(1, "return net(batch).float().mean()", TOUCH)
        b.add(0, "")
    if layout == "main":
        b.add(0, "")
        b.add(0, ("def _mp_fn(index):" if names["spawn"] else "def main():") + _trailing(draw))
        if draw(st.booleans()):
            b.add(1, f'"""Entry point: {draw(st.sampled_from(NON_ASCII))}."""')
        _train(draw, b, 1, names)
        if draw(st.booleans()):
            b.add(1, "return 0")
        b.add(0, "")
        b.add(0, "")
        b.add(0, 'if __name__ == "__main__":' + _trailing(draw))
        _writes(draw, b, 1, names, "main_guard")
        b.add(1, "xmp.spawn(_mp_fn, args=())" if names["spawn"] else "main()")
    else:
        b.add(0, "")
        _train(draw, b, 0, names)
    if draw(st.integers(0, 3)) == 0:
        _filler(draw, b, 0, names)
        b.add(0, _comment(draw))

    # rendering
    indent = draw(st.sampled_from(["    ", "    ", "  ", "\t", "        "]))
    newline = draw(st.sampled_from(["\n", "\n", "\r\n", "mixed"]))
    final_newline = draw(st.integers(0, 5)) != 0
    texts, roles = [], []
    for line in b.lines:
        text = (indent * line.level + line.text) if line.text else ""
        if line.text and line.raw:
            text = indent * line.level + line.text
        if not line.text and not line.raw and draw(st.integers(0, 9)) == 0:
            text = draw(st.sampled_from([" ", "   ", "\t"]))  # whitespace-only blank line
        texts.append(text)
        roles.append(line.role)
    ends = []
    for _ in range(len(texts)):
        if newline == "mixed":
            ends.append(draw(st.sampled_from(["\n", "\r\n"])))
        else:
            ends.append(newline)
    if not final_newline:
        ends[-1] = ""
        if not texts[-1].strip():
            texts[-1] = "pass"  # a file cannot end in a bare indented blank without newline meaningfully
    source = "".join(t + e for t, e in zip(texts, ends))
    # a blank line directly above a removed write (in its leading trivia) may go with it
    droppable = set()
    for k, role in enumerate(roles):
        if role == WRITE:
            j = k - 1
            while j >= 0 and roles[j] in (KEEP, AMP) and (not texts[j].strip() or texts[j].strip().startswith("#")):
                if not texts[j].strip():
                    droppable.add(j)
                j -= 1
    keep = {
        mode: [
            k
            for k, role in enumerate(roles)
            if (role == KEEP or (role == AMP and mode != "amp")) and k not in droppable
        ]
        for mode in MODES
    }
    script = Script(source, keep, newline, names["notes"])
    return script


# -- running the codemod (cached: every test draws the same examples) ---------------------------------------------
@dataclass
class Outcome:
    result: MigrationResult | None = None
    parse_error: ParseError | None = None
    crash: str | None = None  # the traceback of any other exception


_CACHE: dict[tuple[str, str], Outcome] = {}


def migrate(source: str, mode: str) -> Outcome:
    key = (source, mode)
    if key not in _CACHE:
        if len(_CACHE) > 4000:
            _CACHE.clear()
        try:
            _CACHE[key] = Outcome(result=migrate_source(source, mode, "gen.py"))
        except ParseError as exc:
            _CACHE[key] = Outcome(parse_error=exc)
        except Exception:  # noqa: BLE001 - (d): reported with its traceback
            _CACHE[key] = Outcome(crash=traceback.format_exc())
    return _CACHE[key]


def compiles(source: str) -> str | None:
    """None when CPython compiles ``source``, else the error."""
    try:
        compile(source, "gen.py", "exec", dont_inherit=True)
    except (
        SyntaxError,
        ValueError,
        RecursionError,
        MemoryError,
    ) as exc:  # ValueError: NUL bytes; RecursionError: nested too deeply
        return f"{type(exc).__name__}: {exc}"
    return None


def _ok(source: str, mode: str):
    """The MigrationResult of a valid script (properties (a) and (d) are their own tests)."""
    outcome = migrate(source, mode)
    if outcome.result is None:
        pytest.skip("no result (see the (a)/(d) tests)")  # pragma: no cover - never in a passing run
    return outcome.result


# -- the properties, as functions (the campaign in /tmp calls them too) -------------------------------------------
def check_no_crash(source: str, mode: str) -> None:
    """(d) no exception other than ParseError."""
    outcome = migrate(source, mode)
    assert outcome.crash is None, (
        f"(d) migrate_source raised an exception other than ParseError in {mode} mode:\n{outcome.crash}"
    )


def check_compiles(source: str, mode: str) -> None:
    """(a) ParseError only for invalid input; otherwise the result compiles."""
    outcome = migrate(source, mode)
    if outcome.crash is not None:
        return  # (d)
    invalid = compiles(source)
    if outcome.parse_error is not None:
        if invalid is None and "which Python reads but libcst cannot" in str(outcome.parse_error):
            # the one kind of valid input libcst's tokenizer rejects (Instagram/LibCST#829): a
            # space before a tab in an indentation; said so, with the line, and nothing written
            assert re.search(r"^[ \t]* \t", source, re.M), outcome.parse_error
            return
        assert invalid is not None, f"(a) ParseError for a script CPython compiles ({mode}): {outcome.parse_error}"
        return
    assert outcome.result is not None  # no crash, no ParseError: a result
    error = compiles(outcome.result.code)
    assert error is None, (
        f"(a) the {mode} migration does not compile: {error}"
        + (f" (the input did not compile either: {invalid})" if invalid else " (the input compiles)")
        + f"\n--- output ---\n{outcome.result.code}"
    )


def check_idempotent(source: str, mode: str) -> None:
    """(b) migrating the output again changes nothing."""
    outcome = migrate(source, mode)
    if outcome.result is None:
        return
    code = outcome.result.code
    again = migrate(code, mode)
    assert again.crash is None, f"(b) the second {mode} migration raised:\n{again.crash}"
    assert again.parse_error is None, f"(b) the {mode} output does not parse: {again.parse_error}"
    assert again.result is not None
    if again.result.code != code:
        import difflib

        diff = "".join(difflib.unified_diff(split_lines(code), split_lines(again.result.code), "first", "second"))
        raise AssertionError(f"(b) not a fixed point in {mode} mode:\n{diff}")


def check_keeps_lines(script: Script, mode: str) -> None:
    """(c) every KEEP line survives byte for byte, in order (aligned with difflib, so one lost
    line is reported as itself, not as the next line a greedy match skipped)."""
    import difflib

    outcome = migrate(script.source, mode)
    if outcome.result is None:
        return
    old, new = split_lines(script.source), split_lines(outcome.result.code)
    keep = [old[k] for k in script.keep[mode]]
    matched = [False] * len(keep)
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, keep, new, autojunk=False).get_opcodes():
        if tag == "equal":
            matched[i1:i2] = [True] * (i2 - i1)
    lost = [(script.keep[mode][i], keep[i]) for i, ok in enumerate(matched) if not ok]
    if lost:
        k, line = lost[0]
        near = [repr(x) for x in new if x.strip() and x.strip() == line.strip()]
        raise AssertionError(
            f"(c) {mode}: line {k + 1} of the input, {line!r}, which the migration has no reason to touch, "
            f"is not in the output (in order, byte-identical); same text in the output: {near}; "
            f"{len(lost)} such line(s): {[n + 1 for n, _ in lost][:10]}\n--- output ---\n{outcome.result.code}"
        )


def check_newlines(script: Script, mode: str) -> None:
    """(c) a CRLF file stays CRLF (no bare \\n), an LF file gets no \\r."""
    outcome = migrate(script.source, mode)
    if outcome.result is None:
        return
    code = outcome.result.code
    if script.newline == "\r\n":
        bare = [k + 1 for k, line in enumerate(split_lines(code)) if line.endswith("\n") and not line.endswith("\r\n")]
        assert not bare, f"(c) {mode}: CRLF input, bare \\n at output lines {bare[:10]}:\n" + "".join(
            repr(split_lines(code)[k - 1]) + "\n" for k in bare[:5]
        )
    elif "\r" not in script.source:
        assert "\r" not in code, f"(c) {mode}: LF input, \\r in the output"


def effective_writes(source: str) -> set[str]:  # noqa: C901  (an oracle: one branch per statement kind)
    """The legacy variables ``source`` may switch on (XLA_USE_BF16/XLA_DOWNCAST_BF16 to a true
    string: a literal, ``str(1)``, or under a condition: ``"1" if c else "0"``,
    ``str(int(flag))``) through ``os.environ[...] =``, setdefault, update, putenv, under any os
    spelling, the name as a literal or a module constant; an independent reading with the ast
    module (not the codemod's). A write taken back later in its own block (``del``, ``pop``,
    ``unsetenv``, a ``"0"`` write) with only statements between that cannot use the device
    (imports, environment writes, assignments and ``print`` without calls, ``def``) never took
    effect, so it is not counted: property (f) wants it gone with nothing added."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    found = set()
    undone = _undone_statements(tree)
    constants = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }

    def environ_like(node) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
            isinstance(node, ast.Name) and "environ" in node.id.lower()
        )

    def may_be_on(value) -> bool:
        if isinstance(value, ast.Constant):
            return isinstance(value.value, str) and is_truthy(value.value)
        if isinstance(value, ast.IfExp):
            return may_be_on(value.body) or may_be_on(value.orelse)
        if (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id == "str"
            and len(value.args) == 1
        ):
            inner = value.args[0]
            if isinstance(inner, ast.Constant) and isinstance(inner.value, int) and not isinstance(inner.value, bool):
                return inner.value != 0
            return isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "int"
        return False

    def on(key, value) -> None:
        if isinstance(key, ast.Name):
            key = constants.get(key.id)
        elif isinstance(key, ast.Constant):
            key = key.value
        if isinstance(key, str) and key in EFFECTIVE and may_be_on(value):
            found.add(key)

    for node in ast.walk(tree):
        if id(node) in undone:
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and environ_like(target.value):
                    on(target.slice, node.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, owner = node.func.attr, node.func.value
            if name == "setdefault" and environ_like(owner) and len(node.args) == 2:
                on(node.args[0], node.args[1])
            elif name == "putenv" and len(node.args) == 2:
                on(node.args[0], node.args[1])
            elif name == "update" and environ_like(owner):
                for arg in node.args:
                    if isinstance(arg, ast.Dict):
                        for k, v in zip(arg.keys, arg.values):
                            on(k, v)
                for kw in node.keywords:
                    on(kw.arg, kw.value)
    return found


def _environ_like(node) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and "environ" in node.id.lower()
    )


def _undone_statements(tree) -> set[int]:  # noqa: C901  (an oracle: one branch per statement kind)
    """ids of the write statements (an ``Assign``, or the ``Call`` of an expression statement)
    of a legacy variable taken back later in their own block before anything could use the
    device (see :func:`effective_writes`)."""
    constants = {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }

    def name(key):
        if isinstance(key, ast.Name):
            return constants.get(key.id)
        return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None

    def writes(stmt):
        """(variable, form, value) of the writes of one statement; value None for an unset."""
        out: list[tuple[str | None, str, ast.expr | None]] = []
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Subscript) and _environ_like(target.value):
                    out.append((name(target.slice), "subscript", stmt.value))
        elif isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                if isinstance(target, ast.Subscript) and _environ_like(target.value):
                    out.append((name(target.slice), "del", None))
        elif (
            isinstance(stmt, ast.Expr)
            and isinstance(stmt.value, ast.Call)
            and isinstance(stmt.value.func, ast.Attribute)
        ):
            call, attr = stmt.value, stmt.value.func.attr
            owner = stmt.value.func.value
            if attr == "update" and _environ_like(owner):
                for arg in call.args:
                    if isinstance(arg, ast.Dict):
                        out += [(name(k), "update", v) for k, v in zip(arg.keys, arg.values)]
                out += [(kw.arg, "update", kw.value) for kw in call.keywords]
            elif (
                attr in ("setdefault", "putenv") and len(call.args) == 2 and (attr == "putenv" or _environ_like(owner))
            ):
                out.append((name(call.args[0]), attr, call.args[1]))
            elif attr == "pop" and _environ_like(owner) and call.args:
                out.append((name(call.args[0]), "pop", None))
            elif attr == "unsetenv" and len(call.args) == 1:
                out.append((name(call.args[0]), "unsetenv", None))
        return out

    def constant(value, truthy):
        return isinstance(value, ast.Constant) and isinstance(value.value, str) and is_truthy(value.value) == truthy

    def calls(node) -> bool:
        return any(isinstance(n, ast.Call) for n in ast.walk(node))

    def inert(stmt) -> bool:
        if writes(stmt) or isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Pass)):
            return True
        if isinstance(stmt, ast.FunctionDef):
            return not stmt.decorator_list
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete)):
            return not calls(stmt)
        if isinstance(stmt, ast.Expr):
            value = stmt.value
            if isinstance(value, ast.Constant):
                return True
            return (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id == "print"
                and not any(calls(a) for a in value.args)
            )
        return False

    def taken_back(body, index, variable, form) -> bool:
        for later in body[index + 1 :]:
            for other, kind, value in writes(later):
                if other != variable:
                    continue
                if (
                    kind == "unsetenv"
                    or (kind in ("del", "pop") and form != "putenv")
                    or (kind not in ("setdefault", "del", "pop") and constant(value, False))
                ):
                    return True
                if kind != "setdefault" and constant(value, True):
                    return False
            if not inert(later):
                return False
        return False

    found = set()
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for index, stmt in enumerate(body):
                for variable, form, value in writes(stmt):
                    if value is not None and variable in EFFECTIVE and taken_back(body, index, variable, form):
                        found.add(id(stmt.value) if isinstance(stmt, ast.Expr) else id(stmt))
    return found


REPLACEMENT = {
    "stochastic": re.compile(r"bfloat16"),
    "gpu-compatible": re.compile(r"bfloat16"),
    "amp": re.compile(r"torch\.autocast\("),
}


def check_switch_kept_or_replaced(source: str, mode: str) -> None:
    """(e) never a switch removed without its replacement."""
    outcome = migrate(source, mode)
    if outcome.result is None:
        return
    result = outcome.result
    removed = effective_writes(source) - effective_writes(result.code)
    if not removed:
        return
    pattern = REPLACEMENT[mode]
    added = len(pattern.findall(result.code)) > len(pattern.findall(source))
    unfixed = [d for d in result.diagnostics if not d.fixed]
    assert added or unfixed, (
        f"(e) {mode}: the effective write(s) of {sorted(removed)} are gone, no "
        f"{pattern.pattern} was added and every diagnostic "
        f"says fixed: {[d.format_text() for d in result.diagnostics]}\n--- output ---\n{result.code}"
    )


# -- the tests -------------------------------------------------------------------------------------------
def _valid(script: Script) -> None:
    error = compiles(script.source)
    assert error is None, f"generator bug: the generated script does not compile: {error}"


@pytest.mark.parametrize("mode", MODES)
@seed(SEED)
@SETTINGS
@given(script=scripts())
def test_a_valid_scripts_migrate_to_code_that_compiles(script, mode):
    _valid(script)
    outcome = migrate(script.source, mode)
    assert outcome.parse_error is None, f"(a) ParseError for a valid script: {outcome.parse_error}"
    check_compiles(script.source, mode)


@pytest.mark.parametrize("mode", MODES)
@seed(SEED)
@SETTINGS
@given(script=scripts())
def test_b_migration_is_idempotent(script, mode):
    _valid(script)
    check_idempotent(script.source, mode)


@pytest.mark.parametrize("mode", MODES)
@seed(SEED)
@SETTINGS
@given(script=scripts())
def test_c_untouched_lines_are_byte_identical(script, mode):
    _valid(script)
    check_keeps_lines(script, mode)


@pytest.mark.parametrize("mode", MODES)
@seed(SEED)
@SETTINGS
@given(script=scripts())
def test_c_newline_style_is_kept(script, mode):
    _valid(script)
    check_newlines(script, mode)


@pytest.mark.parametrize("mode", MODES)
@seed(SEED)
@SETTINGS
@given(script=scripts())
def test_d_no_exception_but_parse_error(script, mode):
    _valid(script)
    check_no_crash(script.source, mode)


@pytest.mark.parametrize("mode", MODES)
@seed(SEED)
@SETTINGS
@given(script=scripts())
def test_e_switch_never_removed_without_replacement(script, mode):
    _valid(script)
    check_switch_kept_or_replaced(script.source, mode)


# -- (f) no replacement where the switch was never on ------------------------------------------------------
# The inverse of (e): a write that never took effect (undone before the device was used, in a
# function nobody calls, after the training, after the device was first used) or that took effect
# only under a condition must not become an unconditional bf16 cast: the script trained in FP32
# (on that path), and the migrated one would silently compute in bf16.
DEAD = ("unset-after", "zero-after", "never-called", "lambda", "after-training", "late-call")
CONDITIONAL = ("called-if-flag", "early-branch", "and-expr")

TRAIN_FN = """
def train(args):
    device = xm.xla_device()
    model = nn.Linear(4, 2).to(device)
{late}    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(8, 4).to(device)
        y = torch.randn(8, 2).to(device)
        optimizer.zero_grad()
        out = model(x)
        loss = nn.functional.mse_loss(out, y)
        loss.backward()
        optimizer.step()
        xm.mark_step()
"""


@st.composite
def switch_not_in_force(draw) -> tuple[str, str]:
    """(form, script): a legacy write that never took effect (``DEAD``) or only under a flag
    (``CONDITIONAL``)."""
    form = draw(st.sampled_from(DEAD + CONDITIONAL))
    variable = draw(st.sampled_from(EFFECTIVE))
    q = _q(draw)
    spelling = draw(st.sampled_from(["subscript", "setdefault", "update", "putenv"]))
    write = {
        "subscript": f"os.environ[{q}{variable}{q}] = {q}1{q}",
        "setdefault": f"os.environ.setdefault({q}{variable}{q}, {q}1{q})",
        "update": f"os.environ.update({{{q}{variable}{q}: {q}1{q}}})",
        "putenv": f"os.putenv({q}{variable}{q}, {q}1{q})",
    }[spelling]
    if form == "unset-after" and spelling == "putenv":
        write = f"os.environ[{q}{variable}{q}] = {q}1{q}"
    head = "import argparse\nimport os\n\nimport torch\nimport torch.nn as nn\nimport torch_xla.core.xla_model as xm\n"
    parse = (
        "    parser = argparse.ArgumentParser()\n"
        "    parser.add_argument('--bf16', action='store_true')\n"
        "    args = parser.parse_args()\n"
    )
    train = TRAIN_FN.format(late="")
    if form == "unset-after":
        undo = draw(
            st.sampled_from(
                [
                    f"del os.environ[{q}{variable}{q}]",
                    f"os.environ.pop({q}{variable}{q}, None)",
                    f"os.unsetenv({q}{variable}{q})",
                ]
            )
        )
        source = head + f"{write}\n{undo}\n" + train + "\n\nif __name__ == '__main__':\n    train(None)\n"
    elif form == "zero-after":
        source = (
            head
            + f"{write}\nos.environ[{q}{variable}{q}] = {q}0{q}\n"
            + train
            + "\n\nif __name__ == '__main__':\n    train(None)\n"
        )
    elif form == "never-called":
        source = (
            head
            + f"\n\ndef enable_bf16():\n    {write}\n"
            + train
            + "\n\nif __name__ == '__main__':\n    train(None)\n"
        )
    elif form == "lambda":
        source = (
            head + "\nenable_bf16 = lambda: "
            f"{write if spelling != 'subscript' else f'os.environ.update({variable}={q}1{q})'}\n"
            "" + train + "\n\nif __name__ == '__main__':\n    train(None)\n"
        )
    elif form == "after-training":
        source = head + train + f"\n\nif __name__ == '__main__':\n    train(None)\n    {write}\n"
    elif form == "late-call":
        source = (
            head
            + f"\n\ndef configure():\n    {write}\n"
            + TRAIN_FN.format(late="    configure()  # too late: the device is in use\n")
            + "\n\nif __name__ == '__main__':\n    train(None)\n"
        )
    elif form == "called-if-flag":
        source = (
            head
            + f"\n\ndef setup():\n    {write}\n"
            + train
            + f"\n\ndef main():\n{parse}    if args.bf16:\n        setup()\n"
            "    train(args)\n\n\nif __name__ == '__main__':\n    main()\n"
        )
    elif form == "early-branch":
        source = (
            head + train + f"\n\ndef main():\n{parse}    if not args.bf16:\n        train(args)\n        return\n"
            f"    {write}\n    train(args)\n\n\nif __name__ == '__main__':\n    main()\n"
        )
    else:  # and-expr
        source = (
            head + train + f"\n\ndef main():\n{parse}    args.bf16 and "
            f"{write if spelling != 'subscript' else f'os.environ.update({variable}={q}1{q})'}\n"
            "    train(args)\n\n\nif __name__ == '__main__':\n    main()\n"
        )
    return form, source


_FLAG_GUARD = re.compile(r"\bif\b[^\n]*\bbf16\b|enabled=[^\n]*\bbf16\b")


def check_no_replacement_without_switch(form: str, source: str, mode: str) -> None:
    """(f) a write that was never in force adds no bf16 code; one in force only under a flag
    adds it only under that flag (or a diagnostic is left unfixed)."""
    outcome = migrate(source, mode)
    if outcome.result is None:
        return
    result = outcome.result
    pattern = REPLACEMENT[mode]
    added = len(pattern.findall(result.code)) > len(pattern.findall(source))
    unfixed = [d for d in result.diagnostics if not d.fixed]
    if not added or unfixed:
        return
    if form in CONDITIONAL:
        new_lines = set(split_lines(result.code)) - set(split_lines(source))
        if any(_FLAG_GUARD.search(line) for line in new_lines):
            return
        why = "took effect only under --bf16, but the bf16 code was added unconditionally"
    else:
        why = "never took effect (the script trained in FP32), but bf16 code was added"
    raise AssertionError(
        f"(f) {mode}, {form}: the legacy write {why}; diagnostics: "
        f"{[d.format_text() for d in result.diagnostics]}\n--- output ---\n{result.code}"
    )


@pytest.mark.parametrize("mode", MODES)
@seed(SEED + 2)
@SETTINGS
@given(case=switch_not_in_force())
def test_f_no_replacement_where_the_switch_was_not_in_force(case, mode):
    form, source = case
    assert compiles(source) is None, "generator bug"
    check_no_crash(source, mode)
    check_no_replacement_without_switch(form, source, mode)


# -- mutated scripts: (a) and (d) on possibly invalid input ---------------------------------------------------
@st.composite
def mutated_scripts(draw) -> str:
    """A generated script with a few random edits (characters or whole lines deleted,
    duplicated, swapped, or replaced by syntax-significant characters)."""
    source = draw(scripts()).source
    for _ in range(draw(st.integers(1, 3))):
        if not source:
            break
        kind = draw(st.integers(0, 4))
        at = draw(st.integers(0, len(source) - 1))
        if kind == 0:
            source = source[:at] + source[at + draw(st.integers(1, 4)) :]
        elif kind == 1:
            source = (
                source[:at]
                + draw(
                    st.sampled_from(
                        [
                            "(",
                            ")",
                            ":",
                            "\\",
                            '"',
                            "'",
                            "\t",
                            " ",
                            "\n",
                            "\r",
                            "#",
                            ",",
                            "=",
                            "\x0c",
                            "é",
                            "{",
                            "]",
                            "lambda",
                            "return ",
                            "yield ",
                            "await ",
                            "*",
                        ]
                    )
                )
                + source[at:]
            )
        elif kind == 2:
            lines = split_lines(source)
            k = draw(st.integers(0, len(lines) - 1))
            lines.insert(k, lines[k])
            source = "".join(lines)
        elif kind == 3:
            lines = split_lines(source)
            k = draw(st.integers(0, len(lines) - 1))
            del lines[k]
            source = "".join(lines)
        else:
            lines = split_lines(source)
            k = draw(st.integers(0, len(lines) - 1))
            lines[k] = lines[k].lstrip(" \t") if draw(st.booleans()) else "    " + lines[k]
            source = "".join(lines)
    return source


@pytest.mark.parametrize("mode", MODES)
@seed(SEED + 1)
@SETTINGS
@given(source=mutated_scripts())
def test_mutated_scripts_parse_error_or_compiling_result(source, mode):
    check_no_crash(source, mode)
    check_compiles(source, mode)
    if compiles(source) is None:
        check_idempotent(source, mode)
        check_switch_kept_or_replaced(source, mode)
