"""Toolchain benchmark: bf16-migrate where pre-commit and CI run it, against grep in the same run.

1. ``bf16-migrate . --check`` over a tree of real Python: a copy of the standard library of the
   Python running this script (its ``site-packages`` too: ~34,000 files, ~13,000 of them Python)
   under ``lib/``,
   once clean and once with 3 legacy training scripts planted in their own directories, against
   ``grep -rlE 'XLA_DOWNCAST_BF16|XLA_DOWNCAST_FP16|XLA_USE_BF16|XLA_USE_FP16'`` (the names of
   ``rules/XLA_*.toml``) over the same tree. Directory names the walk skips (``site-packages``,
   ``venv``, ``build``, ``dist``, hidden ones) get a ``_`` appended in the copy, so both tools
   read the same files. Warm cache: one untimed run of each first.
   A third state moves the 3 scripts to the directory of the file in the middle of the
   walk's order, where the two processes that read the files (one from each end of the
   list) reach them last.
2. One clean file, as pre-commit passes it: ``bf16-migrate --check FILE`` in a new process.
3. A 100-line legacy file (``fixtures/mlp_regression/train.py``): ``migrate_source`` in-process
   (libcst imported beforehand), per mode, and ``bf16-migrate FILE --check`` in a new process.
4. 12 legacy scripts (4 fixtures, 3 copies), each started by a ``run.sh`` that exports
   ``XLA_USE_BF16=1``: ``--check .``, where the migrations themselves are the work (made in
   worker processes: ``bf16_migrate/migrations.py``).
5. pre-commit's choice: ``--check`` on one changed file of that tree (``pass_filenames``) against
   ``--check .`` (``pass_filenames: false``).

Every figure is the median wall time of ``--repeat`` runs (``time.perf_counter`` around
``subprocess.run``). With ``--before DIR`` (a source tree of another version, e.g.
``git archive HEAD | tar -x -C DIR``), the command-line figures are taken for it too, in the
same run.

Run: python bench/bench_toolchain.py [--repeat 7] [--before /tmp/bfm_head] [--keep DIR]
(results are recorded by hand in bench/RESULTS.md)
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from bf16_migrate.rules import MODES, variable_names

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
PATTERN = "|".join(variable_names())
SKIPPED = {"__pycache__", "node_modules", "site-packages", "venv", ".venv", "build", "dist"}
PLANTED = {"planted_a": "mlp_regression", "planted_b": "cnn_trainer", "planted_c": "tiny_transformer"}


def copy_stdlib(target: Path) -> int:
    """Copy the standard library (without bytecode) into ``target``, renaming the directories
    the walk skips; returns the number of files."""
    source = Path(sysconfig.get_paths()["stdlib"])
    count = 0
    for dirpath, dirnames, filenames in os.walk(source):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        rel = Path(dirpath).relative_to(source)
        out = target.joinpath(*(_rename(part) for part in rel.parts))
        out.mkdir(parents=True, exist_ok=True)
        for name in filenames:
            path = Path(dirpath) / name
            if name.endswith(".pyc") or path.is_symlink() or not path.is_file():
                continue
            shutil.copyfile(path, out / _rename(name))
            count += 1
    return count


def _rename(name: str) -> str:
    return name + "_" if name in SKIPPED or name.startswith(".") or name.endswith(".egg-info") else name


def plant(where: Path) -> None:
    """The three legacy scripts, each in its own directory under ``where``."""
    for directory, fixture in PLANTED.items():
        (where / directory).mkdir(exist_ok=True)
        shutil.copyfile(FIXTURES / fixture / "train.py", where / directory / "train.py")


def middle_directory(tree: Path) -> Path:
    """The directory of the file in the middle of the walk's order: scripts planted there are
    the last ones the two reading processes reach (one reads the list from its front, the
    other from its back: ``bf16_migrate/prefilter_fork.py``)."""
    from bf16_migrate.scan import _files

    names = list(_files(tree))
    return Path(names[len(names) // 2]).parent


def timed(cmd: list[str], cwd: Path, repeat: int, env: dict | None = None) -> tuple[float, int]:
    """Median wall seconds of ``cmd`` over ``repeat`` runs (after one untimed run), and its exit code."""
    code = subprocess.run(cmd, cwd=cwd, capture_output=True, env=env).returncode
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, capture_output=True, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times), code


def cli(source: Path | None) -> list[str]:
    """The bf16-migrate command line, of this tree or of the source tree ``source``."""
    if source is None:
        return [sys.executable, "-P", "-c", "from bf16_migrate.cli import main; main()"]
    # -P: the current directory (a copy of the standard library) must not shadow the real one
    return [
        sys.executable,
        "-P",
        "-c",
        f"import sys; sys.path.insert(0, {str(source)!r}); from bf16_migrate.cli import main; main()",
    ]


def machine() -> str:
    try:
        model = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor() or "unknown CPU"
    from importlib.metadata import version

    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}, Python "
        f"{platform.python_version()}, libcst {version('libcst')}; load average {load}"
    )


def main() -> None:  # noqa: C901  (the measurements in the order of the table's rows)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--before", type=Path, help="a source tree of another version, timed in the same run")
    parser.add_argument("--keep", type=Path, help="build the tree here and keep it (default: a temporary directory)")
    args = parser.parse_args()
    versions = {"this tree": None, **({f"before ({args.before})": args.before} if args.before else {})}
    work = args.keep or Path(tempfile.mkdtemp(prefix="bf16-bench-"))
    tree = work / "stdlib"
    try:
        if not tree.exists():
            # under lib/: the tree's root is not a directory the planted scripts import from
            # (at the root, their `import argparse` would be the tree's argparse.py, a module
            # of the tree migrated with them)
            files = copy_stdlib(tree / "lib")
        else:
            files = sum(1 for _ in tree.rglob("*") if _.is_file())
        print(f"machine: {machine()}")
        print(f"tree: {files} files ({sum(1 for _ in tree.rglob('*.py'))} .py) from {sysconfig.get_paths()['stdlib']}")
        for directory in PLANTED:  # planted at the root by an earlier version of this script
            shutil.rmtree(tree / directory, ignore_errors=True)
        mid = tree
        grep = ["grep", "-rlE", PATTERN, "."]
        rows: list[tuple[str, float, float | None]] = []
        for state in ("clean", "3 planted", "3 planted mid-tree"):
            if state == "3 planted":
                plant(tree)
            elif state == "3 planted mid-tree":
                for directory in PLANTED:
                    shutil.rmtree(tree / directory)
                mid = middle_directory(tree)
                plant(mid)
            base, _ = timed(grep, tree, args.repeat)
            rows.append((f"grep -rlE, {state}", base, None))
            for name, source in versions.items():
                took, code = timed([*cli(source), ".", "--check", "-q"], tree, args.repeat)
                rows.append((f"bf16-migrate . --check, {state} ({name}, exit {code})", took, took / base))
        clean = work / "clean.py"
        clean.write_bytes((tree / "lib" / "argparse.py").read_bytes())
        for name, source in versions.items():
            took, code = timed([*cli(source), "--check", "-q", str(clean)], work, args.repeat)
            rows.append((f"one clean file (argparse.py), new process ({name}, exit {code})", took, None))
            took, code = timed([*cli(source), "--check", "-q", "lib/argparse.py"], tree, args.repeat)
            rows.append((f"pre-commit, one changed file of the tree ({name}, exit {code})", took, None))
        many = work / "many"
        for copy in range(3):  # 12 legacy scripts, each with a launcher: the migrations are the work
            for fixture in (*PLANTED.values(), "resume_checkpoint"):
                target = many / f"{fixture}_{copy}"
                if not target.exists():
                    shutil.copytree(FIXTURES / fixture, target, ignore=shutil.ignore_patterns("expected"))
                    (target / "run.sh").write_text('#!/bin/bash\nexport XLA_USE_BF16=1\npython train.py "$@"\n')
        for name, source in versions.items():
            took, code = timed([*cli(source), ".", "--check", "-q"], many, args.repeat)
            rows.append((f"12 legacy scripts with their launchers, `--check .` ({name}, exit {code})", took, None))
        legacy = work / "legacy" / "train.py"
        legacy.parent.mkdir(exist_ok=True)
        shutil.copyfile(FIXTURES / "mlp_regression" / "train.py", legacy)
        for name, source in versions.items():
            took, code = timed([*cli(source), "--check", "-q", "train.py"], legacy.parent, args.repeat)
            rows.append(
                (f"100-line legacy file, `bf16-migrate FILE --check`, new process ({name}, exit {code})", took, None)
            )
        from bf16_migrate.python import migrate_source

        text = legacy.read_text()
        for mode in MODES:
            migrate_source(text, mode, "train.py")
            times = []
            for _ in range(max(args.repeat, 10)):
                start = time.perf_counter()
                migrate_source(text, mode, "train.py")
                times.append(time.perf_counter() - start)
            rows.append(
                (
                    f"100-line legacy file ({len(text.splitlines())} lines), migrate_source in-process, {mode}",
                    statistics.median(times),
                    None,
                )
            )
        for directory in PLANTED:  # the tree is left clean for the next run (--keep)
            shutil.rmtree(mid / directory, ignore_errors=True)
        print()
        print("| what | median wall | vs grep |")
        print("|---|---|---|")
        for what, seconds, ratio in rows:
            shown = f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"
            print(f"| {what} | {shown} | {f'{ratio:.2f}x' if ratio else ''} |")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
