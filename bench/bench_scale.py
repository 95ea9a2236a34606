"""Scale benchmark: `migrate_source` time against file size, per file shape and mode.

A migration must stay linear in the size of the file (a 5,000-line module in under a second):
this generates training scripts of 1k, 5k and 20k lines (and one of 1 MB) in a few shapes,
each with the same legacy write, model and optimizer, and times one `migrate_source` call on
each, in-process (imports and rule loading done beforehand).

Run: python bench/bench_scale.py   (results are recorded by hand in bench/RESULTS.md)
     python bench/bench_scale.py --sizes 1000 5000 --shapes functions --modes amp --repeat 3
     python bench/bench_scale.py --sizes 5000 --no-megabyte --real   (with real modules)

``--growth`` times whole runs instead, each ``bf16-migrate --check`` in a new process (CPU of the
process and its workers, wall time, peak memory: ``os.wait4``): a file of many training sites
(:func:`training_sites`) of 1k, 5k, 20k and 80k lines, and a tree (:func:`make_tree`) of 1k, 5k,
20k and 50k files, each clean and with findings (3 legacy scripts planted in the tree), with
``grep -rlE`` over each tree; and what a clean and a legacy file import (``-X importtime``).

     python bench/bench_scale.py --growth [--repeat 3] [--lines 1000 5000] [--files 1000 5000]
                                 [--before DIR] [--keep DIR]

``--clean-file`` times the pre-commit case: ``bf16-migrate --check FILE`` on one file that names no
legacy variable (the standard library's ``argparse.py`` unless ``--target`` names another), each
in a new process, this checkout and ``--before DIR`` alternating, ``--repeat`` times (medians of
wall and CPU), once as this environment runs Python (``PYTHONDONTWRITEBYTECODE=1``: every module
of the package compiled anew) and once with each version's bytecode cached, as an installed copy
runs (``PYTHONPYCACHEPREFIX``: nothing written into the source trees); then what the package's
modules cost to import (``-X importtime``, the sum of their own times, median of 5 runs).

     python bench/bench_scale.py --clean-file --before /path/to/other/checkout [--repeat 15] [--target FILE]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bf16_migrate.python import migrate_source
from bf16_migrate.rules import MODES, variable_names

SIZES = (1_000, 5_000, 20_000)
MEGABYTE = 1_000_000

HEADER = '''"""A generated training script for bench/bench_scale.py."""

import os

import torch
import torch.nn as nn
import torch_xla.core.xla_model as xm

os.environ["XLA_USE_BF16"] = "1"

'''

# the part every shape shares: a model, an optimizer built from its parameters, a loss
# accumulator and a training loop (what the planner looks for in every mode)
TRAINING = """

def make_data(n):
    xs = torch.randn(n, 16)
    ys = torch.randn(n, 4)
    return torch.utils.data.TensorDataset(xs, ys)


def train(steps=10):
    device = xm.xla_device()
    model = torch.nn.Linear(16, 4).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    loader = torch.utils.data.DataLoader(make_data(8 * steps), batch_size=8)
    total = torch.zeros(1, device=device)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        out = model(x)
        loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
        total += loss.detach()
        xm.mark_step()
{evaluate}    return total


if __name__ == "__main__":
    train()
"""


def _functions(i: int) -> str:
    """Small module-level functions that call each other."""
    previous = f"helper_{i - 1}(c, b)" if i else "c"
    return (
        f"def helper_{i}(a, b=2):\n"
        f"    c = a * {i} + b\n"
        f"    if c > {i}:\n"
        f"        return c - 1\n"
        f"    return {previous}\n\n\n"
    )


def _long_function_body(i: int) -> str:
    """Statements of one long function (the header is added once)."""
    return (
        (
            f"    v{i} = v{i - 1} + {i} if {i} else 0\n"
            f"    if v{i} % 3 == 0:\n"
            f"        v{i} = torch.ones(2) * v{i}\n"
            f"    items.append(v{i})\n"
        )
        if i
        else "    v0 = 0\n"
    )


def _model_calls_body(i: int) -> str:
    """Statements of one long evaluation function that calls the model again and again
    (each call's loss is looked for in the rest of the function)."""
    return f"    x{i} = batches[{i}]\n    out{i} = model(x{i})\n    scores.append(out{i}.sum())\n"


def _classes(i: int) -> str:
    """Methods of long classes: a new class every 50 methods."""
    head = ""
    if i % 50 == 0:
        head = (
            f"class Block{i // 50}(nn.Module):\n"
            f"    def __init__(self):\n"
            f"        super().__init__()\n"
            f"        self.lin = nn.Linear(4, 4)\n"
            f"        self.scale = {i}\n\n"
        )
    tail = "\n" if i % 50 == 49 else ""
    return (
        head
        + (
            f"    def step_{i}(self, x):\n"
            f"        y = self.lin(x) * self.scale\n"
            f"        return self.step_{i - 1}(y) if {i % 50} else y\n\n"
        )
        + tail
    )


def _expression_chain(i: int) -> str:
    """``x = (a + a + ...)`` with 300 terms over 30 lines: a 300-deep BinaryOperation."""
    rows = ["    " + " + ".join(["a"] * 10) for _ in range(30)]
    return f"def chain_{i}(a):\n    x = (\n" + " +\n".join(rows) + "\n    )\n    return x\n\n\n"


def _strings(i: int) -> str:
    """String literals: a documented function, a table of strings, an f-string; every tenth
    block names the legacy variable in help text (reported, never rewritten), every twentieth
    reads it."""
    help_text = ""
    if i % 10 == 0:
        help_text = f'    parser.add_argument("--opt{i}", help="set XLA_USE_BF16=1 for option {i}")\n'
    if i % 20 == 5:  # a read of the variable (replaced by a constant in the bf16 modes)
        help_text = '    if os.environ.get("XLA_USE_BF16") == "1":\n        name = name.upper()\n'
    return (
        f"def describe_{i}(parser, name):\n"
        f'    """Describe item {i}: a docstring of a few words."""\n'
        f'    table = {{"a": "alpha {i}", "b": "beta {i}", "c": "gamma {i}"}}\n'
        f"{help_text}"
        f"    return f\"{{name}}: {{table['a']}} / item {i}\"\n\n\n"
    )


SITE_SCRIPT = Path(__file__).resolve().parent.parent / "fixtures" / "tiny_transformer" / "train.py"
SITE_NAMES = ("VOCAB_SIZE", "SEQ_LEN", "MARKER_TOKEN", "TinyEncoderClassifier", "build_dataset", "parse_args", "main")
"""The names each copy of :data:`SITE_SCRIPT` gets a suffix on (its constants, classes, functions)."""


def training_site(i: int, legacy: bool = True) -> str:
    """The i-th copy of a whole 108-line legacy training script (the tiny_transformer fixture: a
    legacy write, a model, an optimizer, a loop, ``if __name__ == "__main__"``) with its names
    changed (``main_3``): a file of many training sites, as a script of experiments or a notebook
    export is, where a pass per site over the whole file costs sites x lines. Not ``legacy``:
    the same script setting another variable (``TRAIN_USE_FAST`` for each legacy one), a file
    that names none."""
    pattern = re.compile(r"\b(" + "|".join(SITE_NAMES) + r")\b")
    text = pattern.sub(lambda found: f"{found[1]}_{i}", SITE_SCRIPT.read_text()) + "\n\n"
    for name in () if legacy else variable_names():
        text = text.replace(name, "TRAIN_USE_FAST")
    return text


def training_sites(lines: int, legacy: bool = True) -> str:
    """Copies of :func:`training_site` up to at least ``lines`` lines (about 110 lines a copy)."""
    parts: list[str] = []
    count = 0
    while count < lines:
        parts.append(training_site(len(parts), legacy))
        count += parts[-1].count("\n")
    return "".join(parts)


def _mixed(i: int) -> str:
    """The other shapes in turn (a whole class of 50 methods for the class shape)."""
    kind = i % 4
    if kind == 1:
        return "".join(_classes(50 * i + k) for k in range(50))
    return {0: _functions, 2: _strings, 3: _expression_chain}[kind](i)


def make_tree(root: Path, files: int, planted: int = 0, per_directory: int = 100) -> Path:
    """A tree of ``files`` files under ``root`` (``per_directory`` in each of ``pkg_<k>/``): small
    modules of a project (:func:`_functions` blocks, about 1.5 KB, nine in ten ``.py``, the rest
    a shell script, a YAML file and a README in turn), none naming a legacy variable; then
    ``planted`` legacy training scripts (:func:`training_site`), each in a directory of its own
    (``planted_<k>/train.py``, counted among ``files``). Returns ``root``."""
    clean = files - planted
    for k in range(clean):
        directory = root / f"pkg_{k // per_directory:04d}"
        if k % per_directory == 0:
            directory.mkdir(parents=True, exist_ok=True)
        kind = k % 30
        if kind == 10:
            (directory / f"run_{k}.sh").write_text(f"#!/bin/bash\nset -e\npython module_{k - 1}.py --steps {k}\n")
        elif kind == 20:
            (directory / f"config_{k}.yaml").write_text(f"name: job-{k}\nsteps: {k}\nlr: 0.1\n")
        elif kind == 29:
            (directory / f"README_{k}.md").write_text(f"# Module {k}\n\nRun `python module_{k - 1}.py`.\n")
        else:
            body = "".join(_functions(k * 10 + j) for j in range(10))
            (directory / f"module_{k}.py").write_text(f'"""Module {k} of a generated project."""\n\n' + body)
    for k in range(planted):
        (root / f"planted_{k}").mkdir(parents=True, exist_ok=True)
        (root / f"planted_{k}" / "train.py").write_text(training_site(k))
    return root


SHAPES: dict[str, Callable[[int], str]] = {
    "functions": _functions,
    "long-function": _long_function_body,
    "model-calls": _model_calls_body,
    "classes": _classes,
    "expression-chain": _expression_chain,
    "strings": _strings,
    "mixed": _mixed,
}


def generate(shape: str, lines: int | None = None, size: int | None = None) -> str:
    """A script of the ``shape`` with at least ``lines`` lines (or ``size`` characters)."""
    block = SHAPES[shape]
    head, tail = _ENCLOSING.get(shape, ("", ""))
    parts = [HEADER, head]
    length, count, i = len(HEADER), HEADER.count("\n"), 0
    while (lines is not None and count < lines) or (size is not None and length < size):
        text = block(i)
        parts.append(text)
        length, count, i = length + len(text), count + text.count("\n"), i + 1
    parts.append(tail)
    parts.append(TRAINING.format(evaluate="    evaluate(model, [x])\n" if shape == "model-calls" else ""))
    return "".join(parts)


# the function around the statements of the one-function shapes
_ENCLOSING = {
    "long-function": ("def long_function():\n    items = []\n", "    return items\n\n"),
    "model-calls": ("def evaluate(model, batches):\n    scores = []\n", "    return scores\n\n"),
}


def inputs(sizes=SIZES, shapes=tuple(SHAPES), megabyte: bool = True) -> list[tuple[str, str]]:
    """(label, source) of every generated input: each shape at each size, then a 1 MB mixed file."""
    out = [(f"{shape}-{n}", generate(shape, lines=n)) for shape in shapes for n in sizes]
    if megabyte:
        out.append(("mixed-1MB", generate("mixed", size=MEGABYTE)))
    return out


REAL_MODULES = ("_pydecimal.py", "typing.py", "inspect.py", "tarfile.py", "argparse.py")
"""Large modules of the standard library of the Python running this script: real code, not
generated (docstrings, comments, classes, long functions), each given a legacy write."""


def real_inputs(names=REAL_MODULES) -> list[tuple[str, str]]:
    """(label, source) of each standard-library module in ``names`` with ``import os`` and
    ``os.environ["XLA_USE_BF16"] = "1"`` put in front (no model in it: the codemod reads the
    whole file, plans, and reports that it finds none to cast)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    head = 'import os\nos.environ["XLA_USE_BF16"] = "1"\n'
    return [
        (f"real:{name}", head + (stdlib / name).read_text(encoding="utf-8"))
        for name in names
        if (stdlib / name).is_file()
    ]


def seconds(source: str, mode: str, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of one `migrate_source` call (CPU: this process, all its
    threads; on a shared machine the wall time also counts the time others had the cores)."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        migrate_source(source, mode, "train.py")
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


GROWTH_LINES = (1_000, 5_000, 20_000, 80_000)
GROWTH_FILES = (1_000, 5_000, 20_000, 50_000)


def cli(source: Path | None = None) -> list[str]:
    """The bf16-migrate command line, of this checkout or of the source tree ``source``
    (``-P``: the directory it runs in, a generated tree, shadows nothing)."""
    where = str(source or Path(__file__).resolve().parent.parent)
    return [
        sys.executable,
        "-P",
        "-c",
        f"import sys; sys.path.insert(0, {where!r}); from bf16_migrate.cli import main; main()",
    ]


def whole_run(
    cmd: list[str], cwd: Path, timeout: float = 3600, env: dict[str, str] | None = None
) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds of the process and the children it waited for, its peak
    resident memory in MiB, exit code) of ``cmd`` run once in ``cwd`` (in ``env``, by default
    this process's environment), its output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def medians(cmd: list[str], cwd: Path, repeat: int, warmup: int = 1) -> tuple[float, float, float, int]:
    """:func:`whole_run` ``repeat`` times after ``warmup`` untimed runs: the median of each figure."""
    for _ in range(warmup):
        whole_run(cmd, cwd)
    runs = [whole_run(cmd, cwd) for _ in range(repeat)]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        statistics.median(r[2] for r in runs),
        runs[-1][3],
    )


def imports_of(cmd: list[str], cwd: Path) -> dict[str, float]:
    """The cumulative import milliseconds of libcst and libcst.matchers in one run of ``cmd``
    (``python -X importtime``); a module not imported is absent."""
    proc = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=cwd, capture_output=True, text=True)
    found: dict[str, float] = {}
    for line in proc.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] in ("libcst", "libcst.matchers"):
            found[parts[2]] = int(parts[1]) / 1000
    return found


def growth(args: argparse.Namespace) -> None:
    """The ``--growth`` tables (see the module docstring)."""

    work = args.keep or Path(tempfile.mkdtemp(prefix="bf16-growth-"))
    versions = {"now": None, **({"before": args.before} if args.before else {})}
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores, Python {sys.version.split()[0]}; load average at the start {load}\n")
    print("| workload | size | state | version | wall s | CPU s | peak MiB | exit |")
    print("|---|---:|---|---|---:|---:|---:|---:|")
    try:
        for lines in args.lines:
            for legacy in (False, True):
                target = work / "files" / f"{'legacy' if legacy else 'clean'}_{lines}" / "train.py"
                if not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(training_sites(lines, legacy))
                count = target.read_text().count("\n")
                for name, source in versions.items():
                    wall, cpu, peak, code = medians(
                        [*cli(source), "--check", "-q", "train.py"], target.parent, args.repeat, args.warmup
                    )
                    state = "with findings" if legacy else "clean"
                    print(
                        f"| a file of training sites | {count:,} lines | {state} | {name} | {wall:.2f} | {cpu:.2f} | "
                        f"{peak:.0f} | {code} |",
                        flush=True,
                    )
        grep = ["grep", "-rlE", "|".join(variable_names()), "."]
        for files in args.files:
            for planted in (0, 3):
                root = work / "trees" / f"{files}_{planted}"
                if not root.exists():
                    make_tree(root, files, planted)
                state = f"{planted} legacy scripts" if planted else "clean"
                wall, cpu, peak, code = medians(grep, root, args.repeat, args.warmup)
                print(
                    f"| a tree (grep -rlE) | {files:,} files | {state} | grep | "
                    f"{wall:.2f} | {cpu:.2f} | {peak:.0f} | {code} |"
                )
                for name, source in versions.items():
                    wall, cpu, peak, code = medians(
                        [*cli(source), "--check", "-q", "."], root, args.repeat, args.warmup
                    )
                    print(
                        f"| a tree | {files:,} files | {state} | {name} | {wall:.2f} "
                        f"| {cpu:.2f} | {peak:.0f} | {code} |",
                        flush=True,
                    )
        print("\n| what a run imports (`-X importtime`, cumulative) | version | libcst | libcst.matchers |")
        print("|---|---|---:|---:|")
        for legacy in (False, True):
            target = work / "files" / f"{'legacy' if legacy else 'clean'}_imports" / "train.py"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(training_site(0, legacy))
            for name, source in versions.items():
                found = imports_of([*cli(source), "--check", "-q", "train.py"], target.parent)
                shown = [f"{found[m]:.0f} ms" if m in found else "not imported" for m in ("libcst", "libcst.matchers")]
                what = "a 108-line legacy script" if legacy else "the same script, clean"
                print(f"| {what} | {name} | {shown[0]} | {shown[1]} |")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


def package_import_ms(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    """The milliseconds one run of ``cmd`` spends importing the package's own modules (``python
    -X importtime``, the sum of the self times of ``bf16_migrate`` and its submodules)."""
    proc = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], cwd=cwd, capture_output=True, text=True, env=env)
    total = 0
    for line in proc.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2].split(".")[0] == "bf16_migrate":
            total += int(parts[0].rsplit(" ", 1)[-1])
    return total / 1000


def clean_file(args: argparse.Namespace) -> None:
    """The ``--clean-file`` table (see the module docstring)."""
    target = (args.target or Path(argparse.__file__)).resolve()
    versions = {"now": None, **({"before": args.before} if args.before else {})}
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores, Python {sys.version.split()[0]}; load average at the start {load}")
    print(f"`bf16-migrate --check {target.name}` in {target.parent}, {args.repeat} runs of each, alternating\n")
    print("| bytecode | version | wall s (median) | CPU s (median) | CPU s (min) | package imports ms | exit |")
    print("|---|---|---:|---:|---:|---:|---:|")
    command = {name: [*cli(source), "--check", target.name] for name, source in versions.items()}
    with tempfile.TemporaryDirectory(prefix="bf16-pycache-") as caches:
        for cached in (False, True):
            envs: dict[str, dict[str, str]] = {}
            for name in versions:
                env = dict(os.environ)
                if cached:
                    env.pop("PYTHONDONTWRITEBYTECODE", None)
                    env["PYTHONPYCACHEPREFIX"] = str(Path(caches) / name)
                envs[name] = env
                whole_run(command[name], target.parent, env=env)  # untimed: fills the cache, warms the files
            runs: dict[str, list[tuple[float, float, float, int]]] = {name: [] for name in versions}
            for i in range(args.repeat):
                for name in versions if i % 2 == 0 else reversed(versions):
                    runs[name].append(whole_run(command[name], target.parent, env=envs[name]))
            for name, done in runs.items():
                imports = statistics.median(
                    package_import_ms(command[name], target.parent, envs[name]) for _ in range(5)
                )
                print(
                    f"| {'cached' if cached else 'none (compiled each run)'} | {name} | "
                    f"{statistics.median(r[0] for r in done):.3f} | {statistics.median(r[1] for r in done):.3f} | "
                    f"{min(r[1] for r in done):.3f} | {imports:.0f} | {done[-1][3]} |",
                    flush=True,
                )
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\nload average at the end {load}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    parser.add_argument("--no-megabyte", action="store_true", help="skip the 1 MB file")
    parser.add_argument("--real", action="store_true", help="also time large standard-library modules (REAL_MODULES)")
    parser.add_argument("--repeat", type=int, default=1, help="calls per cell (median)")
    parser.add_argument(
        "--budget",
        type=float,
        default=600,
        help="skip a file when the last size of its shape and mode, scaled "
        "linearly, says it would take longer (seconds)",
    )
    parser.add_argument("--growth", action="store_true", help="whole runs in new processes (see the docstring)")
    parser.add_argument("--clean-file", action="store_true", help="the pre-commit case (see the docstring)")
    parser.add_argument(
        "--target", type=Path, help="--clean-file: the file (default: the standard library's argparse.py)"
    )
    parser.add_argument("--lines", type=int, nargs="*", default=list(GROWTH_LINES), help="--growth: file sizes")
    parser.add_argument("--files", type=int, nargs="*", default=list(GROWTH_FILES), help="--growth: tree sizes")
    parser.add_argument(
        "--before", type=Path, help="--growth, --clean-file: a source tree of another version, timed too"
    )
    parser.add_argument("--keep", type=Path, help="--growth: build the inputs here and keep them")
    parser.add_argument("--warmup", type=int, default=1, help="--growth: untimed runs before each figure")
    args = parser.parse_args()
    if args.growth:
        growth(args)
        return
    if args.clean_file:
        clean_file(args)
        return
    migrate_source(generate("functions", lines=50), "stochastic", "train.py")  # warm caches
    print("| shape | lines | bytes | mode | seconds | CPU seconds | s / 1k lines |")
    print("|---|---:|---:|---|---:|---:|---:|")
    last: dict[tuple[str, str], tuple[int, float]] = {}  # (shape, mode) -> (lines, seconds)
    for label, source in inputs(args.sizes, args.shapes, not args.no_megabyte) + (real_inputs() if args.real else []):
        shape = label if label.startswith("real:") else label.rsplit("-", 1)[0]
        n_lines, n_bytes = source.count("\n"), len(source.encode())
        for mode in args.modes:
            before = last.get((shape, mode))
            expected = before[1] * n_lines / before[0] if before is not None else 0.0
            if expected > args.budget:
                print(
                    f"| {shape} | {n_lines:,} | {n_bytes:,} | {mode} | not run (over {expected:.0f} s) | | |",
                    flush=True,
                )
                continue
            wall, cpu = seconds(source, mode, args.repeat)
            last[shape, mode] = (n_lines, wall)
            print(
                f"| {shape} | {n_lines:,} | {n_bytes:,} | {mode} | {wall:.2f} | "
                f"{cpu:.2f} | {wall / n_lines * 1000:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
