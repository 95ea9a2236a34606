"""The unseen benchmark: bf16-migrate on training scripts it was not developed against, as a user runs it.

For each case of ``cases.toml`` and each mode, the case is copied into a fresh git repository (one
commit: the legacy tree), then, as docs/usage.md and docs/verify.md tell a user to:

1. ``bf16-migrate . --mode M`` in the case directory (the rewrite, in place; text output);
2. ``bf16-migrate verify SCRIPT --mode M --steps N --against HEAD --json FILE`` (the proof of what
   was written: the legacy side comes from the commit, with its launchers' settings). A notebook
   cannot be run by verify: its code cells are exported to ``NAME.py`` (IPython magics dropped,
   as a user would after ``jupyter nbconvert --to script``), the legacy export is committed on
   top of the legacy tree, the migrated export is written over it, and the ``--legacy-env`` of
   ``verify_env`` stands for the ``%env`` line verify does not read.
3. **to the end** (cases with ``end`` commands in cases.toml): the rewritten tree, as the rewrite left
   it, runs its ``end`` commands to completion (each in its own process, on the XLA CPU device, with
   the carrier's ``launch_env`` only if the rewritten carrier still names the variable), and so do,
   once per case, the legacy tree with the switch in force and an FP32 reference (the legacy tree with
   every legacy variable removed and writes of them dropped). The files each run writes (metrics JSON,
   arrays, checkpoints, CSV) are read back (outputs.py) and compared with the legacy run's (amp: the
   FP32 reference's, as verify does): names, shapes and dtypes exactly (under the switch what left
   the device was float32); stochastic: bf16 numbers in every float32 array where the legacy run's
   file holds only bf16 numbers (outputs.speaks_bf16: an f32 island leaves float32 numbers); values
   within bf16 noise, or within the drift the other run (the *control*) shows for that file
   (DRIFT_FACTOR); a command that raises where the comparison run did not is a failure, shown with
   its last traceback line. When the control passes as the migrated run must, the outputs cannot
   tell the precisions apart, and the verdict says so.

Everything the tool says is recorded in ``results/LABEL/`` (one JSON per case and mode, the
rewrite's output, its diff, the verify report and JSON): exit codes, findings, "N left to do
by hand", the verdict and its parts, wall times. Whether the migration is *correct* is judged by
a person reading the diff against ``EXPECTED.md``; those judgments live in ``judgments.toml``,
keyed by the diff's hash, so a re-measurement whose diff changed shows "not judged" until someone
reads it. ``table`` writes the table for LABEL into ``RESULTS.md`` (between markers; other
labels' tables are never touched).

XLA work (verify, the by-hand legacy runs) holds ``/tmp/bfm-xla.lock`` (``flock(2)``, the lock
``flock(1)`` takes), so at most one runs on the machine at a time; wall times are measured
inside the lock.

One command measures and writes the table (from the repository root, with the venv that has the
``xla`` extra; the label defaults to ``at-<commit>`` of the checkout measured)::

    PYTHONPATH=$PWD /work/main/.venv/bin/python bench/unseen/run.py measure --modes stochastic

The tool measured is the checkout given with PYTHONPATH (its first entry holding ``bf16_migrate/``; else
``--tool DIR`` before the command; else this checkout): the rewrite and verify run with it first on their
path, and its commit (``+dirty`` with uncommitted changes to bf16_migrate/ or rules/) names the
measurement. The cases, judgments and results are always this checkout's ``bench/unseen/``. So the "after"
of the five newest cases, on another checkout, is (see EXPECTED.md, "Measuring after")::

    PYTHONPATH=/work/main /work/main/.venv/bin/python bench/unseen/run.py after --label after-NAME

It has not yet run to the end on this machine. Estimate from the by-hand legacy runs (12 steps: most cases
15-30 s, the LSTM 100 s, the ViT 275 s at 32x32 and more than 8 min at 16x16 on shared cores) and verify's
2-3 runs per case: about 25-35 minutes for one mode with the lock free, most of it the ViT and the LSTM
(``--cases`` without vit_k8s: about 12 minutes). The lock is taken once for the run
(the lock waits are recorded apart). Other commands::

    ... run.py measure --label main-4389669 [--cases A B] [--modes M ...]  # a named measurement
    ... run.py table --label main-4389669                                 # rewrite LABEL's table only
    ... run.py legacy [--cases A B]                  # each case's legacy run by hand, under its switch
    ... run.py measure --end-only | --no-end ...     # the to-the-end check without verify / verify only
    ... run.py end [--cases A B] [--migrated DIR]    # legacy and FP32 runs to the end; DIR/CASE judged
    ... run.py end --hand [--modes M ...]            # hand/M/CASE.patch applied to each case, judged

Nothing here is collected by pytest (pyproject.toml's ``testpaths`` is ``tests``, and no file here
is named ``test_*``): it is a benchmark, not CI.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import tomllib

import outputs  # this directory's module (first on sys.path when run.py is run as a script)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent  # this checkout: the cases, results and judgments are its bench/unseen/
LOCK = Path("/tmp/bfm-xla.lock")
MODES = ("stochastic", "gpu-compatible", "amp")
TOOL = str(Path(sys.executable).with_name("bf16-migrate"))
GIT = ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench", "-c", "commit.gpgsign=false"]

FINDING = re.compile(
    r"^(?P<path>\S+?):(?P<line>\d+):(?P<col>\d+): (?P<code>BFM\d+) (?P<message>.*?)(?P<fixed> \[fixed\])?$"
)
SUMMARY = re.compile(r"(\d+) file\(s\) changed, (\d+) finding\(s\) fixed, (\d+) left to do by hand")


def load_cases() -> dict[str, dict[str, Any]]:
    """The cases of cases.toml, in file order."""
    with open(HERE / "cases.toml", "rb") as f:
        return tomllib.load(f)


@contextlib.contextmanager
def xla_lock() -> Iterator[float]:
    """Hold the machine-wide XLA lock; yields the seconds spent waiting for it."""
    start = time.perf_counter()
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield time.perf_counter() - start
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def checkout_on_path(pythonpath: str | None) -> Path | None:
    """The first directory of PYTHONPATH (a PYTHONPATH value) that holds a ``bf16_migrate`` package, resolved;
    None when none does."""
    for entry in (pythonpath or "").split(os.pathsep):
        if entry and (Path(entry) / "bf16_migrate" / "__init__.py").is_file():
            return Path(entry).resolve()
    return None


# The checkout whose bf16_migrate is measured (rewrite and verify run with it first on their path): --tool
# DIR, else the checkout given with PYTHONPATH (`PYTHONPATH=/work/main ... run.py after`), else this one.
# The venv's console script only starts the tool: it imports bf16_migrate from that path.
TOOL_ROOT = checkout_on_path(os.environ.get("PYTHONPATH")) or ROOT


def tool_env() -> dict[str, str]:
    """The environment the tool runs in: the measured checkout (TOOL_ROOT) first on the path, the XLA CPU
    device."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "NEURON_"))}
    env["PYTHONPATH"] = str(TOOL_ROOT)
    env["PJRT_DEVICE"] = "CPU"
    env.pop("NO_COLOR", None)
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 1800) -> dict[str, Any]:
    """Run CMD; its exit code, output and wall time."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return {
        "argv": cmd,
        "exit": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
        "wall_s": round(time.perf_counter() - start, 1),
    }


def git(cwd: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def export_notebook(notebook: Path, script: Path) -> None:
    """Write the code cells of NOTEBOOK to SCRIPT, one after the other, without IPython magics
    (``%``/``!`` lines): what runs when the kernel runs the notebook top to bottom."""
    nb = nbformat.read(notebook, as_version=4)
    blocks = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            lines = [line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))]
            blocks.append("\n".join(lines))
    script.write_text("\n\n".join(blocks) + "\n")


def parse_rewrite(out: str) -> dict[str, Any]:
    """Findings and the summary's counts from the rewrite's text output."""
    findings = []
    for line in out.splitlines():
        m = FINDING.match(line)
        if m:
            findings.append(
                {
                    "path": m["path"],
                    "line": int(m["line"]),
                    "code": m["code"],
                    "fixed": bool(m["fixed"]),
                    "message": m["message"],
                }
            )
    summary = SUMMARY.search(out)
    counts = [int(g) for g in summary.groups()] if summary else [None, None, None]
    return {"findings": findings, "files_changed": counts[0], "fixed": counts[1], "left_by_hand": counts[2]}


def verify_summary(doc: dict[str, Any] | None) -> dict[str, Any]:
    """The verdict, its parts and the run errors from verify's --json document."""
    if not doc:
        return {"passed": None, "parts": [], "error": None}
    if "error" in doc and doc.get("error"):
        err = doc["error"]
        return {"passed": False, "parts": [], "error": f"{err.get('run')}: {err.get('message')}"}
    parts = [{"name": p["name"], "status": p["status"], "detail": p["detail"]} for p in doc.get("parts", [])]
    return {"passed": doc.get("passed"), "parts": parts, "error": None, "notes": doc.get("notes", [])}


def measure_one(  # noqa: C901
    name: str,
    case: dict[str, Any],
    mode: str,
    steps: int,
    out_dir: Path,
    lock_each: bool,
    verify_it: bool = True,
    ends: EndRuns | None = None,
) -> dict[str, Any]:
    """Copy CASE into a git repository, rewrite it in MODE, verify the result (unless not VERIFY_IT),
    and (given ENDS, the case's legacy and FP32 runs to the end) run the rewritten tree to its end and
    compare its host outputs; the record. LOCK_EACH: take the XLA lock for each XLA job (else the
    caller holds it)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"bfm-unseen-{name}-"))
    try:
        work = tmp / name
        shutil.copytree(HERE / name, work, ignore=shutil.ignore_patterns("__pycache__"))
        env = tool_env()
        for argv in case.get("setup", []):  # files the user's tree has, the case does not ship (a checkpoint)
            res = run([sys.executable, *argv], work, script_env([]), timeout=END_TIMEOUT)
            if res["exit"] != 0:
                raise SystemExit(f"{name}: setup {' '.join(argv)} failed: {last_error_line(res['stderr'])}")
        git(work, "init", "-q")
        git(work, "add", "-A")
        git(work, "commit", "-qm", "legacy")
        rewrite = run([TOOL, ".", "--mode", mode], work, env)
        rewrite.update(parse_rewrite(rewrite["stdout"] + rewrite["stderr"]))
        diff = git(work, "diff")
        changed = git(work, "diff", "--name-only").split()
        (out_dir / f"{name}.{mode}.diff").write_text(diff)
        (out_dir / f"{name}.{mode}.rewrite.txt").write_text(rewrite["stdout"] + rewrite["stderr"])
        migrated_end = None
        if ends is not None:  # the rewritten tree as it is now, before verify runs anything in it
            migrated_end = tmp / "end-migrated"
            prepare_end_tree(work, migrated_end, case)
        if not verify_it:
            record = record_of(name, mode, steps, diff, changed, rewrite, NOT_VERIFIED)
            if ends is not None and migrated_end is not None:
                record["end"] = ends.judge(mode, migrated_end, lock_each)
            return record
        target, against = case["script"], "HEAD"
        if target.endswith(".ipynb"):
            target, against = export_for_verify(work, target)
        vjson = tmp / "verify.json"
        cmd = [TOOL, "verify", target, "--mode", mode, "--steps", str(steps), "--against", against]
        cmd += ["--json", str(vjson)]
        for setting in case.get("verify_env", []):
            cmd += ["--legacy-env", setting]
        with xla_lock() if lock_each else contextlib.nullcontext(0.0) as waited:
            verify = run(cmd, work, env)
        verify["lock_wait_s"] = round(waited, 1)
        doc = json.loads(vjson.read_text()) if vjson.exists() else None
        if doc is not None:
            shutil.copy(vjson, out_dir / f"{name}.{mode}.verify.json")
        (out_dir / f"{name}.{mode}.verify.txt").write_text(verify["stdout"] + verify["stderr"])
        verify.update(verify_summary(doc))
        verify["argv"] = [a if a != str(vjson) else "verify.json" for a in verify["argv"]]
        verify.pop("stdout")
        verify.pop("stderr")
        record = record_of(name, mode, steps, diff, changed, rewrite, verify)
        if ends is not None and migrated_end is not None:
            record["end"] = ends.judge(mode, migrated_end, lock_each)
        return record
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


NOT_VERIFIED: dict[str, Any] = {
    "exit": None,
    "passed": None,
    "parts": [],
    "error": None,
    "wall_s": 0.0,
    "lock_wait_s": 0.0,
}


def record_of(
    name: str, mode: str, steps: int, diff: str, changed: list[str], rewrite: dict[str, Any], verify: dict[str, Any]
) -> dict[str, Any]:
    rewrite = {k: v for k, v in rewrite.items() if k not in ("stdout", "stderr")}
    return {
        "case": name,
        "mode": mode,
        "steps": steps,
        "diff_sha": hashlib.sha256(diff.encode()).hexdigest()[:12],
        "changed": changed,
        "rewrite": rewrite,
        "verify": verify,
    }


def export_for_verify(work: Path, notebook: str) -> tuple[str, str]:
    """Commit the legacy notebook's export on top of the legacy tree and write the migrated
    notebook's export over it; the script to verify and the revision to verify against."""
    script = str(Path(notebook).with_suffix(".py"))
    git(work, "stash", "-q", "--include-untracked")
    try:
        export_notebook(work / notebook, work / script)
        git(work, "add", script)
        git(work, "commit", "-qm", "legacy notebook, exported")
    finally:
        git(work, "checkout", "-q", "--", ".")
        git(work, "stash", "pop", "-q")
    export_notebook(work / notebook, work / script)
    return script, "HEAD"


def cmd_measure(args: argparse.Namespace) -> int:  # noqa: C901
    cases = load_cases()
    names = args.cases or list(cases)
    sha = tool_commit()
    label = args.label or f"at-{sha[:7]}"
    out_dir = HERE / "results" / label
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    verify_it = not (args.no_verify or args.end_only)
    end_it = not (args.no_verify or args.no_end)
    info = {
        "tool_commit": sha,
        "tool_checkout": str(TOOL_ROOT),
        "argv": ["bench/unseen/run.py", *sys.argv[1:]],
        "cases": names,
        "modes": list(args.modes or MODES),
        "steps": args.steps,
        "wall_s": 0.0,
        "lock_wait_s": 0.0,
        "finished": None,  # stays None in the file of a run that was stopped
    }
    if args.append and (out_dir / "run.json").exists():  # more cases or modes for a measurement made
        info = appended(json.loads((out_dir / "run.json").read_text()), info)
    # by default the lock is taken once for every XLA job of the run: one wait in the queue, not one per
    # verify (a run of thirty verifies would otherwise wait behind every other job thirty times)
    once = not args.lock_each and (verify_it or end_it)
    with xla_lock() if once else contextlib.nullcontext(0.0) as waited:
        info["lock_wait_s"] = round(waited, 1)
        for name in names:
            ends = EndRuns(name, cases[name], out_dir) if end_it and cases[name].get("end") else None
            try:
                for mode in args.modes or MODES:
                    record = measure_one(
                        name, cases[name], mode, args.steps, out_dir, args.lock_each, verify_it=verify_it, ends=ends
                    )
                    record["tool_commit"] = sha
                    waits = record["verify"]["lock_wait_s"] + record.get("end", {}).get("lock_wait_s", 0.0)
                    info["lock_wait_s"] = round(info["lock_wait_s"] + waits, 1)
                    info["wall_s"] = round(time.perf_counter() - start, 1)
                    (out_dir / f"{name}.{mode}.json").write_text(json.dumps(record, indent=1) + "\n")
                    (out_dir / "run.json").write_text(json.dumps(info, indent=1) + "\n")
                    rw, vf = record["rewrite"], record["verify"]
                    failed = [p["name"] for p in vf["parts"] if p["status"] != "PASS"]
                    print(
                        f"{name:22} {mode:15} rewrite exit {rw['exit']} "
                        f"({rw['fixed']} fixed, {rw['left_by_hand']} left)"
                        f" verify exit {vf['exit']} {'PASS' if vf['passed'] else 'not PASS'} {failed or ''} "
                        f"{rw['wall_s']}s/{vf['wall_s']}s"
                        + (f"; to the end: {end_cell(record['end'])}" if "end" in record else ""),
                        flush=True,
                    )
            finally:
                if ends is not None:
                    info["lock_wait_s"] = round(info["lock_wait_s"] + ends.lock_wait_s, 1)
                    ends.close()
    info["wall_s"] = round(time.perf_counter() - start, 1)
    info["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    (out_dir / "run.json").write_text(json.dumps(info, indent=1) + "\n")
    print(f"{info['wall_s']:.0f} s in all, {info['lock_wait_s']:.0f} s of it waiting for the XLA lock", flush=True)
    return write_table(label)


def appended(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """NEW's run information with OLD's (an earlier run of the same label) kept: their cases and modes
    together, OLD's command, cases, modes and times under "earlier". Raises SystemExit when the two runs
    measured different tools (a label is one tool's measurement; commits that change only bench/ agree)."""
    if "+dirty" in old["tool_commit"] + new["tool_commit"]:
        raise SystemExit("--append: a measurement of uncommitted changes to the tool cannot be added to, or added")
    trees = tool_tree(old["tool_commit"]), tool_tree(new["tool_commit"])
    if not all(trees) or trees[0] != trees[1]:
        raise SystemExit(
            f"--append: the label measured the tool of {old['tool_commit'][:7]}, this checkout's differs "
            "(bf16_migrate/ or rules/)"
        )
    order = list(load_cases())
    merged = dict(new)
    merged["cases"] = sorted(set(old["cases"]) | set(new["cases"]), key=order.index)
    merged["modes"] = [m for m in MODES if m in old["modes"] or m in new["modes"]]
    keep = ("argv", "cases", "modes", "wall_s", "lock_wait_s", "finished")
    merged["earlier"] = [*old.get("earlier", []), {k: old[k] for k in keep}]
    return merged


def tool_tree(commit: str) -> str:
    """The git tree ids of COMMIT's bf16_migrate/ and rules/ (the tool measured), space-separated (read in
    the measured checkout's repository, else in this one's)."""
    revs = [f"{commit}:bf16_migrate", f"{commit}:rules"]
    for cwd in (TOOL_ROOT, ROOT):
        res = subprocess.run(["git", "rev-parse", *revs], cwd=cwd, capture_output=True, text=True)
        if res.returncode == 0:
            return res.stdout.strip()
    return ""


def tool_commit() -> str:
    """The commit of the checkout whose bf16_migrate is measured (TOOL_ROOT), with "+dirty" when its
    bf16_migrate/ or rules/ differ from that commit (uncommitted changes are measured too)."""
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=TOOL_ROOT, capture_output=True, text=True).stdout.strip()
    if not sha:
        raise SystemExit(f"{TOOL_ROOT}: not a git checkout (the measured tool must be one: its commit is recorded)")
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "bf16_migrate", "rules"], cwd=TOOL_ROOT, capture_output=True, text=True
    ).stdout.strip()
    return sha + ("+dirty" if dirty else "")


def cmd_legacy(args: argparse.Namespace) -> int:
    """Run each case's legacy script by hand, under its switch, on the XLA CPU device."""
    cases = load_cases()
    rows = []
    with xla_lock():  # once for all: ten short runs, not ten waits in the queue
        for name in args.cases or list(cases):
            rows.append(legacy_one(name, cases[name], args.steps))
    out = HERE / "results" / "legacy-runs.json"
    out.parent.mkdir(exist_ok=True)
    # the cases not run this time keep their last record (each record carries its steps and date)
    kept = json.loads(out.read_text())["runs"] if out.exists() else []
    ran = {row["case"] for row in rows}
    rows = [r for r in kept if r["case"] not in ran] + rows
    rows.sort(key=lambda r: list(cases).index(r["case"]) if r["case"] in cases else len(cases))
    out.write_text(json.dumps({"runs": rows}, indent=1) + "\n")
    return 0


def legacy_one(name: str, case: dict[str, Any], steps: int) -> dict[str, Any]:
    """One case's legacy script, by hand, under the setting its carrier puts in force."""
    with tempfile.TemporaryDirectory(prefix=f"bfm-unseen-legacy-{name}-") as tmp:
        work = Path(tmp) / name
        shutil.copytree(HERE / name, work, ignore=shutil.ignore_patterns("__pycache__"))
        script = case["script"]
        if script.endswith(".ipynb"):
            export_notebook(work / script, work / Path(script).with_suffix(".py"))
            script = str(Path(script).with_suffix(".py"))
        env = tool_env()
        env.pop("PYTHONPATH")
        env.update(dict(s.split("=", 1) for s in case.get("launch_env", [])))
        script_path = work / script
        res = run([sys.executable, script_path.name, "--steps", str(steps)], script_path.parent, env)
    tail = [line for line in (res["stdout"] + res["stderr"]).splitlines() if line.strip()][-2:]
    print(f"{name:22} exit {res['exit']} {res['wall_s']:6.1f} s  {' | '.join(tail)[:160]}", flush=True)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return {"case": name, "steps": steps, "when": when, "exit": res["exit"], "wall_s": res["wall_s"], "tail": tail}


# ---------------------------------------------------------------------------------------------------------
# "To the end": the legacy script (switch in force) and the rewritten one each run to completion in their
# own process, and their host outputs (the files each writes) are compared: outputs.py reads them back.

LEGACY_VARIABLES = ("XLA_USE_BF16", "XLA_DOWNCAST_BF16", "XLA_USE_FP16", "XLA_DOWNCAST_FP16")
END_TIMEOUT = 600.0

# The FP32 reference is the legacy tree run without the legacy variables. A script that sets one itself
# (os.environ[...] = "1" before torch_xla reads it) would put it back, so a sitecustomize on the
# reference's PYTHONPATH drops every write of them (os.environ item writes, setdefault and update go
# through _Environ.__setitem__; os.putenv directly), in the script and in processes it starts.
FP32_GUARD = """import os
_DROP = set(os.environ.get("BFM_BENCH_DROP", "").split(",")) - {""}
for _k in _DROP:
    os.environ.pop(_k, None)
_setitem, _putenv = os._Environ.__setitem__, os.putenv
def _guarded_setitem(self, key, value):
    if key not in _DROP:
        _setitem(self, key, value)
def _guarded_putenv(key, value):
    if key not in _DROP:
        _putenv(key, value)
os._Environ.__setitem__ = _guarded_setitem
os.putenv = _guarded_putenv
"""


def prepare_end_tree(src: Path, dest: Path, case: dict[str, Any]) -> None:
    """A copy of the case tree SRC at DEST to run to its end (a notebook's code cells exported beside it)."""
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    if case["script"].endswith(".ipynb"):
        export_notebook(dest / case["script"], dest / Path(case["script"]).with_suffix(".py"))


# Every run to the end (legacy, FP32 reference, migrated) runs with XLA's excess precision off: by default
# XLA may drop a bf16 rounding that a later convert to f32 in the same graph undoes, and a migrated
# `(x / n).float()` then leaves f32 numbers where the program (and the legacy run) computed bf16 ones.
# Measured on the XLA CPU device (torch-xla 2.9): `(s / 1536).float().cpu()` of a bf16 `s`, 30 of 64 values
# bf16 numbers by default, 64 of 64 with the flag off; a softmax's `.float()`, 0 and 64 of 64.
XLA_FLAGS_END = "--xla_allow_excess_precision=false"


def script_env(settings: list[str], extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a case's script runs in: the XLA CPU device, XLA_FLAGS_END, SETTINGS ("K=V") in
    force."""
    env = tool_env()
    env.pop("PYTHONPATH")
    env["XLA_FLAGS"] = " ".join(f for f in (os.environ.get("XLA_FLAGS", ""), XLA_FLAGS_END) if f)
    env.update(dict(s.split("=", 1) for s in settings))
    env.update(extra or {})
    return env


def carrier_keeps(tree: Path, case: dict[str, Any]) -> list[str]:
    """The case's launch settings its carrier (case["carrier"]) still makes in TREE after the rewrite: those
    whose variable is still named on a line that is not a comment (a notebook: in its code cells)."""
    settings, carrier = case.get("launch_env", []), case.get("carrier")
    if not settings or not carrier or not (tree / carrier).exists():
        return []
    if carrier.endswith(".ipynb"):
        nb = nbformat.read(tree / carrier, as_version=4)
        lines = [ln for c in nb.cells if c.cell_type == "code" for ln in c.source.splitlines()]
    else:
        lines = (tree / carrier).read_text().splitlines()
    live = [ln for ln in lines if not ln.lstrip().startswith("#")]
    return [s for s in settings if any(re.search(rf"\b{s.split('=', 1)[0]}\b", ln) for ln in live)]


def last_error_line(text: str) -> str:
    """The exception line of the last traceback in TEXT, else its last non-empty line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", ln)]
    return (errors or lines or [""])[-1][:300]


def end_run(tree: Path, case: dict[str, Any], env: dict[str, str], lock_each: bool) -> dict[str, Any]:
    """Run the case's `end` commands in TREE one after the other (stopping at the first that fails); what
    they wrote. LOCK_EACH: take the XLA lock for the commands (else the caller holds it)."""
    before = outputs.snapshot(tree)
    commands: list[dict[str, Any]] = []
    with xla_lock() if lock_each else contextlib.nullcontext(0.0) as waited:
        for argv in case["end"]:
            script = str(Path(argv[0]).with_suffix(".py")) if argv[0].endswith(".ipynb") else argv[0]
            cmd = [sys.executable, script, *argv[1:]]
            try:
                res = run(cmd, tree, env, timeout=END_TIMEOUT)
            except subprocess.TimeoutExpired:
                commands.append({"argv": argv, "exit": "timeout", "wall_s": END_TIMEOUT, "error": "timed out"})
                break
            entry = {"argv": argv, "exit": res["exit"], "wall_s": res["wall_s"]}
            if res["exit"] != 0:
                entry["error"] = last_error_line(res["stderr"] or res["stdout"])
            commands.append(entry)
            if res["exit"] != 0:
                break
    failed = next((c for c in commands if c["exit"] != 0), None)
    return {
        "commands": commands,
        "ok": failed is None,
        "error": f"{failed['argv'][0]}: {failed['error']}" if failed else None,
        "outputs": outputs.written(before, outputs.snapshot(tree)),
        "wall_s": round(sum(c["wall_s"] for c in commands), 1),
        "lock_wait_s": round(waited, 1),
    }


# How far a run may drift from its comparison run by the end, file by file, as a multiple of the control's
# distance (the FP32 reference from the legacy run; amp: the legacy run from the FP32 reference). The median
# relative difference: verify's drift factors (docs/verify.md, "matches": stochastic and gpu-compatible
# within 2 x the precision gap, amp within 1 x). A bf16 migration cannot follow the legacy run bit for bit
# through many updates: the switch rounded the Python numbers of the update to bf16 (SGD's momentum 0.9
# became 0.8984375, an EMA's decay too), the explicit-bf16 graph computes them in f32 and rounds the result
# (docs/verify.md, "opmath"). The share of far values: 2 x the control's in every mode, since it measures
# whether two trajectories parted, not by how much: eval_numpy_cnn's val_probs.npy, after 24 SGD steps that
# part at step 7, has 42 of 512 values far between FP32 and legacy, 51 between the stochastic hand migration
# and legacy, 56 between the amp one and FP32, while the medians keep their order (1.2e-4, 6.3e-6, 8.9e-5).
DRIFT_FACTOR = {"stochastic": 2.0, "gpu-compatible": 2.0, "amp": 1.0}
FAR_DRIFT_FACTOR = 2.0


def drift_limits(control: dict[str, Any] | None, mode: str) -> dict[str, tuple[float, float]]:
    """Per output file, the median relative difference and the share of far values a run in MODE may show
    (DRIFT_FACTOR and FAR_DRIFT_FACTOR x the CONTROL comparison's; files whose control comparison has problems
    or infinite differences give none)."""
    out: dict[str, tuple[float, float]] = {}
    for f in (control or {}).get("files", []):
        if f["problems"] or not f["values"] or not isinstance(f["median_rel"], float | int):
            continue
        out[f["path"]] = (DRIFT_FACTOR[mode] * f["median_rel"], FAR_DRIFT_FACTOR * f["far"] / f["values"])
    return out


def compare_runs(
    ours: Path,
    our_run: dict[str, Any],
    theirs: Path,
    their_run: dict[str, Any],
    ignore: tuple[str, ...] = (),
    bf16_contract: bool = False,
    drift: dict[str, tuple[float, float]] | None = None,
    host: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Every output file of either run, OURS read against THEIRS (leaves matching IGNORE left out); the
    files' comparisons and the verdicts on their structure, their precision (BF16_CONTRACT: THEIRS is the
    legacy run, and OURS must hold bf16 numbers where it does: outputs.speaks_bf16; leaves matching HOST are
    host computations, not asked) and their values (within bf16 noise, or within DRIFT[path], median and far
    share, where that is wider)."""
    files = []
    for path in sorted(set(our_run["outputs"]) | set(their_run["outputs"])):
        if path not in their_run["outputs"]:
            files.append(outputs.FileComparison(path, problems=["written, the comparison run did not write it"]))
            continue
        if path not in our_run["outputs"]:
            files.append(outputs.FileComparison(path, problems=["not written"]))
            continue
        try:
            theirs_leaves = outputs.read_leaves(theirs / path)
        except Exception as exc:  # a file the comparison run wrote that cannot be read: say so, compare nothing
            files.append(outputs.FileComparison(path, problems=[f"comparison run's file unreadable: {exc}"[:200]]))
            continue
        try:
            ours_leaves = outputs.read_leaves(ours / path)
        except Exception as exc:
            files.append(outputs.FileComparison(path, problems=[f"unreadable: {exc}"[:200]]))
            continue
        fc = outputs.compare_file(path, ours_leaves, theirs_leaves, ignore, bf16_contract=bf16_contract, host=host)
        if drift and path in drift:
            fc.limits = (max(fc.limits[0], drift[path][0]), max(fc.limits[1], drift[path][1]))
        files.append(fc)
    far = [f for f in files if not f.within_tolerance()]
    noisy = [f for f in files if f.values and f not in far and f.limits != outputs.FileComparison("").limits]
    noisy = [f for f in noisy if f.median_rel > outputs.TOL_MEDIAN or f.far_share() > outputs.TOL_FAR_SHARE]
    return {
        "files": [f.as_dict() for f in files],
        "structure_ok": not any(f.problems for f in files),
        "precision_ok": not any(f.not_bf16 for f in files),
        "values_ok": not far,
        "beyond_tolerance": [f.path for f in far],
        "within_drift": [f.path for f in noisy],  # beyond bf16 noise, within the drift allowed
    }


class EndRuns:
    """A case's legacy and FP32 reference runs to the end, made once for all modes (lazily, under the
    lock as the caller says), and each mode's rewritten tree judged against them."""

    def __init__(self, name: str, case: dict[str, Any], out_dir: Path):
        self.name, self.case, self.out_dir = name, case, out_dir
        self.tmp = Path(tempfile.mkdtemp(prefix=f"bfm-unseen-end-{name}-"))
        self.runs: dict[str, dict[str, Any]] = {}
        self.controls: dict[str, dict[str, Any]] = {}
        self.lock_wait_s = 0.0

    def reference(self, kind: str, lock_each: bool) -> dict[str, Any]:
        """The "legacy" run (the switch in force: the script's own writes, the carrier's launch_env) or the
        "fp32" one (every legacy variable removed, writes of them dropped), run once."""
        if kind not in self.runs:
            tree = self.tmp / kind
            prepare_end_tree(HERE / self.name, tree, self.case)
            if kind == "legacy":
                env = script_env(self.case.get("launch_env", []))
            else:
                guard = self.tmp / "fp32-guard"
                guard.mkdir(exist_ok=True)
                (guard / "sitecustomize.py").write_text(FP32_GUARD)
                env = script_env([], {"PYTHONPATH": str(guard), "BFM_BENCH_DROP": ",".join(LEGACY_VARIABLES)})
            self.runs[kind] = end_run(tree, self.case, env, lock_each)
            self.lock_wait_s += self.runs[kind]["lock_wait_s"]
        return self.runs[kind]

    def judge(self, mode: str, tree: Path, lock_each: bool) -> dict[str, Any]:
        """Run the rewritten TREE (MODE) to its end and compare it with the comparison run (the legacy run;
        amp: the FP32 reference, as verify does), the control (the other one) compared alike. The verdict
        asks, in this order: the run finished; each file's structure is the comparison run's; (stochastic)
        its float32 arrays hold bf16 numbers where the legacy run's do (what left the device under the
        switch, outputs.speaks_bf16); its values are within bf16 noise, or within the drift the control
        shows times DRIFT_FACTOR (gpu-compatible: no bf16-number part, its FP32 master weights and
        optimizer state may reach a checkpoint as float32 numbers)."""
        against, control = ("fp32", "legacy") if mode == "amp" else ("legacy", "fp32")
        contract = mode == "stochastic"
        kept = carrier_keeps(tree, self.case)
        ours = end_run(tree, self.case, script_env(kept), lock_each)
        theirs = self.reference(against, lock_each)
        self.reference(control, lock_each)
        record: dict[str, Any] = {"run": ours, "against": against, "carrier_kept": kept, "lock_wait_s": 0.0}
        record["lock_wait_s"] = ours["lock_wait_s"]
        if not theirs["ok"]:
            record.update(verdict="n/a", reason=f"the {against} run failed: {theirs['error']}")
            return record
        if not ours["ok"]:
            record.update(verdict="FAIL", reason=f"raised: {ours['error']}")
            return record
        ignore = tuple(self.case.get("end_ignore", []))
        ctrl = self.control(control, against, ignore)
        record["comparison"] = compare_runs(
            tree,
            ours,
            self.tmp / against,
            theirs,
            ignore,
            bf16_contract=contract,
            drift=drift_limits(ctrl, mode),
            host=tuple(self.case.get("end_host", [])),
        )
        # the control tells the precisions apart when its values are beyond bf16 noise or (against the legacy
        # run, where this mode is held to it) its arrays are not bf16 numbers
        told_apart = None if ctrl is None else not ctrl["values_ok"] or (contract and not ctrl["precision_ok"])
        record["control"] = {
            "run": control,
            "values_ok": ctrl["values_ok"] if ctrl else None,
            "precision_ok": ctrl["precision_ok"] if ctrl else None,
            "told_apart": told_apart,
        }
        record.update(end_verdict(record["comparison"], mode, control, told_apart))
        return record

    def control(self, control: str, against: str, ignore: tuple[str, ...]) -> dict[str, Any] | None:
        """The CONTROL run's outputs compared with the AGAINST run's (bf16 numbers asked when AGAINST is the
        legacy run), once; None when the control run failed."""
        if control not in self.controls and self.runs[control]["ok"]:
            self.controls[control] = compare_runs(
                self.tmp / control,
                self.runs[control],
                self.tmp / against,
                self.runs[against],
                ignore,
                bf16_contract=against == "legacy",
                host=tuple(self.case.get("end_host", [])),
            )
        return self.controls.get(control)

    def close(self) -> None:
        """Write CASE.end.json (the reference runs and the controls' comparisons); remove the trees."""
        doc = {"case": self.name, "runs": self.runs, "controls": self.controls}
        (self.out_dir / f"{self.name}.end.json").write_text(json.dumps(doc, indent=1) + "\n")
        shutil.rmtree(self.tmp, ignore_errors=True)


def end_verdict(cmp: dict[str, Any], mode: str, control: str, told_apart: bool | None) -> dict[str, str]:
    """The verdict and its reason for a run's comparison CMP (compare_runs) in MODE."""
    if not cmp["structure_ok"]:
        first = next(f for f in cmp["files"] if f["problems"])
        return {"verdict": "FAIL", "reason": f"{first['path']}: {'; '.join(first['problems'][:2])}"}
    if not cmp["precision_ok"]:
        first = next(f for f in cmp["files"] if f["not_bf16"])
        return {
            "verdict": "FAIL",
            "reason": f"{first['path']}: {'; '.join(first['not_bf16'][:2])} where the legacy run's are "
            "(computed in f32 on the device)",
        }
    if not cmp["values_ok"]:
        worst = next(f for f in cmp["files"] if f["path"] == cmp["beyond_tolerance"][0])
        median, share = worst["limits"]
        return {
            "verdict": "FAIL",
            "reason": f"{worst['path']}: median rel. diff {worst['median_rel']} (limit {median}), "
            f"{worst['far']} of {worst['values']} values beyond {outputs.TOL_FAR:.3g} (limit {share:.3g} of them)",
        }
    reason = f"{len(cmp['files'])} file(s) within bf16 noise"
    if cmp["within_drift"]:
        reason = (
            f"{len(cmp['files']) - len(cmp['within_drift'])} file(s) within bf16 noise, "
            f"{', '.join(cmp['within_drift'])} within the {control} control's drift (median x {DRIFT_FACTOR[mode]:g}, "
            f"far values x {FAR_DRIFT_FACTOR:g})"
        )
    if mode == "stochastic":
        reason += ", bf16 numbers where the legacy run's are"
    if told_apart is False:
        reason += f" (the {control} control passes too: these outputs do not tell the precisions apart)"
    return {"verdict": "PASS", "reason": reason}


def end_cell(end: dict[str, Any] | None) -> str:
    """The table's "to the end" cell for a mode's end record."""
    if not end:
        return "-"
    return f"{end['verdict']}: {end['reason']}".replace("|", "/")[:160]


def hand_migrated(name: str, mode: str, dest: Path) -> bool:
    """Write the case NAME with its hand migration for MODE (``hand/MODE/NAME.patch``, applied with
    ``git apply``) to DEST/NAME; False when there is no such patch. Raises CalledProcessError when
    the patch does not apply (the case changed since the patch was written)."""
    patch = HERE / "hand" / mode / f"{name}.patch"
    if not patch.exists():
        return False
    shutil.copytree(HERE / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "apply", str(patch)], cwd=dest / name, check=True, capture_output=True, text=True)
    return True


def cmd_end(args: argparse.Namespace) -> int:
    """Each case's legacy and FP32 runs to the end, the FP32 control against the legacy run; with
    --migrated DIR, the tree DIR/CASE of each case (a hand migration, say) judged as `measure` judges a
    rewrite in each of --modes; with --hand, the case with hand/MODE/CASE.patch applied, judged alike. The
    XLA lock is taken for one case at a time (its reference runs and its judged trees)."""
    cases = load_cases()
    names = args.cases or [n for n in cases if cases[n].get("end")]
    out_dir = HERE / "results" / args.label
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        if not cases[name].get("end"):
            raise SystemExit(f"cases.toml: [{name}] has no `end` commands")
        ends = EndRuns(name, cases[name], out_dir)
        try:
            with xla_lock() as waited:
                print(f"{name:22} XLA lock after {waited:.0f} s", flush=True)
                for mode in args.modes:
                    end_judge_tree(args, name, mode, ends, out_dir)
                for kind in ("legacy", "fp32"):
                    r = ends.reference(kind, lock_each=False)
                    print(
                        f"{name:22} {kind:15} {'ok' if r['ok'] else r['error']} {r['wall_s']} s, "
                        f"{len(r['outputs'])} file(s)",
                        flush=True,
                    )
            if ends.runs["legacy"]["ok"] and ends.runs["fp32"]["ok"]:
                ctrl = ends.control("fp32", "legacy", tuple(cases[name].get("end_ignore", [])))
                assert ctrl is not None  # the fp32 run is ok
                for f in ctrl["files"]:
                    print(
                        f"{'':22} fp32 vs legacy  {f['path']}: median {f['median_rel']} max {f['max_rel']} "
                        f"far {f['far']}/{f['values']} {f['problems'] or ''}{f['not_bf16'] or ''}",
                        flush=True,
                    )
        finally:
            ends.close()
    return 0


def end_judge_tree(args: argparse.Namespace, name: str, mode: str, ends: EndRuns, out_dir: Path) -> None:
    """Judge the case NAME's migrated tree for MODE (--migrated DIR/NAME, or the hand migration) to the end
    against ENDS' reference runs; its record to OUT_DIR/NAME.MODE.{hand,migrated}.json."""
    case = load_cases()[name]
    with tempfile.TemporaryDirectory(prefix=f"bfm-unseen-hand-{name}-") as tmp:
        src = Path(args.migrated) / name if args.migrated else Path(tmp) / "src" / name
        if args.hand and not hand_migrated(name, mode, Path(tmp) / "src"):
            print(f"{name:22} {mode:15} no hand/{mode}/{name}.patch", flush=True)
        elif src.is_dir():
            tree = Path(tmp) / name
            prepare_end_tree(src, tree, case)
            record = ends.judge(mode, tree, lock_each=False)
            kind = "hand" if args.hand else "migrated"
            (out_dir / f"{name}.{mode}.{kind}.json").write_text(json.dumps(record, indent=1) + "\n")
            print(f"{name:22} {mode:15} {kind}: {end_cell(record)}", flush=True)


JUDGMENTS = ("correct", "reported-and-kept", "wrong")


def load_judgments() -> dict[tuple[str, str, str], dict[str, Any]]:
    """judgments.toml: (case, mode, diff hash) -> {migration, why}; migration is one of JUDGMENTS."""
    path = HERE / "judgments.toml"
    if not path.exists():
        return {}
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = {}
    for j in data.get("judgment", []):
        if j["migration"] not in JUDGMENTS:
            raise SystemExit(f"{path}: {j['case']}/{j['mode']}: migration {j['migration']!r} is not one of {JUDGMENTS}")
        out[(j["case"], j["mode"], j["diff_sha"])] = j
    return out


def right_verdict(migration: str | None, record: dict[str, Any]) -> str:
    """Whether verify's outcome is the right one for a migration judged MIGRATION."""
    vf = record["verify"]
    if migration is None:
        return "?"
    if vf["exit"] is None:
        return "not verified"
    if migration == "reported-and-kept":
        return "n/a" if vf["exit"] == 2 else ("no (PASS without a migration)" if vf["passed"] else "n/a")
    if migration == "correct":
        return "yes" if vf["passed"] else "no (false FAIL)"
    return "no (false PASS)" if vf["passed"] else "yes"


def verdict_cell(vf: dict[str, Any]) -> str:
    if vf["exit"] is None:
        return "not run (--no-verify)"
    if vf["exit"] == 2:
        return "exit 2: " + (vf.get("error") or "could not be made").replace("|", "/")[:90]
    if vf["passed"]:
        return "PASS"
    bad = [f"{p['name']} {p['status']}" for p in vf["parts"] if p["status"] != "PASS"]
    return "FAIL (" + ", ".join(bad) + ")"


def cmd_table(args: argparse.Namespace) -> int:
    return write_table(args.label)


def write_table(label: str) -> int:
    """LABEL's table (from results/LABEL/ and judgments.toml) into RESULTS.md, between its markers."""
    cases = load_cases()
    judgments = load_judgments()
    out_dir = HERE / "results" / label
    info_path = out_dir / "run.json"
    info = json.loads(info_path.read_text()) if info_path.exists() else {}
    # the "to the end" column only in the tables of measurements that made the check (older ones unchanged)
    with_end = any("end" in json.loads(p.read_text()) for p in out_dir.glob("*.*.json") if p.stem.count(".") == 1)
    lines = []
    if info:
        runs = [*info.get("earlier", []), info]  # a label measured in more than one run (--append)
        lines += [
            f"bf16_migrate at `{info['tool_commit']}`, {info['steps']} steps, "
            + (f"finished {info['finished']}" if info["finished"] else "**stopped before the end**")
            + f"; {sum(r['wall_s'] for r in runs):.0f} s in all "
            + f"({sum(r['lock_wait_s'] for r in runs):.0f} s of it waiting for the XLA lock)"
            + (f", in {len(runs)} runs:" if len(runs) > 1 else "."),
            "",
            *(f"    PYTHONPATH=$PWD /work/main/.venv/bin/python {' '.join(r['argv'])}" for r in runs),
            "",
        ]
    lines += [
        "| case | mode | rewrite exit | fixed / left by hand | migration (judged) | verify exit | verdict "
        "| right verdict? | rewrite s | verify s |" + (" to the end |" if with_end else ""),
        "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if with_end else ""),
    ]
    tally: dict[str, int] = {}
    good: dict[str, int] = {}
    judged_correct: dict[str, int] = {}
    verified: dict[str, int] = {}
    for name in cases:
        for mode in MODES:
            path = out_dir / f"{name}.{mode}.json"
            if not path.exists():
                if name in info.get("cases", ()) and mode in info.get("modes", ()):
                    lines.append(f"| {name} | {mode} | not measured (the run stopped before it) |||||||| ")
                    tally["not measured"] = tally.get("not measured", 0) + 1
                continue
            rec = json.loads(path.read_text())
            j = judgments.get((name, mode, rec["diff_sha"]))
            migration = j["migration"] if j else None
            right = right_verdict(migration, rec)
            tally[migration or "not judged"] = tally.get(migration or "not judged", 0) + 1
            tally["verdict " + right] = tally.get("verdict " + right, 0) + 1
            good.setdefault(mode, 0)
            judged_correct[mode] = judged_correct.get(mode, 0) + (migration == "correct")
            verified[mode] = verified.get(mode, 0) + (rec["verify"]["exit"] is not None)
            if migration == "correct" and rec["verify"]["passed"] and end_passed(rec) is not False:
                good[mode] += 1
            rw, vf = rec["rewrite"], rec["verify"]
            lines.append(
                f"| {name} | {mode} | {rw['exit']} | {rw['fixed']} / {rw['left_by_hand']} "
                f"| {migration or 'not judged (diff ' + rec['diff_sha'] + ')'} | {vf['exit']} | {verdict_cell(vf)} "
                f"| {right} | {rw['wall_s']} | {vf['wall_s']} |"
                + (f" {end_cell(rec.get('end'))} |" if with_end else "")
            )
    lines.append("")
    for mode, n in good.items():
        measured = sum(1 for name in cases if (out_dir / f"{name}.{mode}.json").exists())
        total = len(info["cases"]) if mode in info.get("modes", ()) else measured
        lines.append(
            f"**{mode}: {n} of {total} end with a correct migration and a PASS** "
            + ("(verify's, and the to-the-end check's where it was made) " if with_end else "")
            + f"({judged_correct[mode]} rewrites judged correct, {verified[mode]} verified)."
        )
    lines.append("Totals: " + ", ".join(f"{k}: {v}" for k, v in sorted(tally.items())))
    table = "\n".join(lines)
    put_block(label, f"Measurement `{label}`", table)
    print(table)
    return 0


def end_passed(rec: dict[str, Any]) -> bool | None:
    """Whether the record's to-the-end check passed; None where it was not made."""
    end = rec.get("end")
    return None if not end else end["verdict"] == "PASS"


def put_block(key: str, title: str, table: str) -> None:
    """TABLE into RESULTS.md between the markers of KEY (replaced where they are; else appended under a
    heading TITLE)."""
    results = HERE / "RESULTS.md"
    text = results.read_text() if results.exists() else "# Unseen benchmark: results\n"
    start, end = f"<!-- table:{key} -->", f"<!-- /table:{key} -->"
    block = f"{start}\n{table}\n{end}"
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + f"\n\n## {title}\n\n{block}\n"
    results.write_text(text)


# ---------------------------------------------------------------------------------------------------------
# "After": the cases and modes of one or more earlier ("before") measurements measured again on the checkout
# at hand, and the two side by side.

BEFORE = ("before-671f22a", "before-671f22a-more")


def cmd_after(args: argparse.Namespace) -> int:
    """Measure the cases and modes the BEFORE labels measured (their steps; --cases: some of them), as label
    after-<commit> of the measured checkout, then write the before/after comparison into RESULTS.md."""
    missing = [b for b in args.before if not (HERE / "results" / b / "run.json").exists()]
    if missing:  # a before label not measured (the extra modes, say): left out, said
        print(f"no measurement {', '.join(missing)}: left out", flush=True)
    args.before = [b for b in args.before if b not in missing]
    if not args.before:
        raise SystemExit("no before measurement to measure again")
    infos = [json.loads((HERE / "results" / b / "run.json").read_text()) for b in args.before]
    order = list(load_cases())
    cases = sorted({c for i in infos for c in i["cases"]}, key=order.index)
    unknown = sorted(set(args.cases or ()) - set(cases))
    if unknown:
        raise SystemExit(f"--cases: {', '.join(unknown)} not measured by {', '.join(args.before)}")
    cases = [c for c in cases if not args.cases or c in args.cases]
    modes = [m for m in MODES if any(m in i["modes"] for i in infos)]
    label = args.label or f"after-{tool_commit()[:7]}"
    measure = argparse.Namespace(
        label=label, cases=cases, modes=args.modes or modes, steps=infos[0]["steps"], lock_each=args.lock_each,
        no_verify=args.no_verify, no_end=False, end_only=False, append=False,
    )  # fmt: skip
    cmd_measure(measure)
    return write_comparison(args.before, label)


def cmd_compare(args: argparse.Namespace) -> int:
    return write_comparison([b for b in args.before if (HERE / "results" / b).is_dir()], args.after)


def outcome_cells(rec: dict[str, Any] | None, judgments: dict[tuple[str, str, str], dict[str, Any]]) -> list[str]:
    """A record's rewrite, judgment, verify and to-the-end cells for the comparison ("-": not measured)."""
    if rec is None:
        return ["-", "-", "-", "-"]
    rw, vf = rec["rewrite"], rec["verify"]
    j = judgments.get((rec["case"], rec["mode"], rec["diff_sha"]))
    end = rec.get("end")
    return [
        f"exit {rw['exit']}, {rw['fixed']} / {rw['left_by_hand']}",
        j["migration"] if j else f"not judged ({rec['diff_sha']})",
        short_verdict(vf),
        f"{end['verdict']}: {end['reason']}".replace("|", "/")[:70] if end else "-",
    ]


def short_verdict(vf: dict[str, Any]) -> str:
    """verify's outcome in a few words: a run that raised by its exception line."""
    raised = re.search(r"^(\w+): .*?exited with code \d+: (.*)$", vf.get("error") or "")
    if vf["exit"] == 2 and raised:
        return f"exit 2, the {raised[1]} run raised {raised[2]}".replace("|", "/")[:80]
    return verdict_cell(vf)[:80]


def write_comparison(before: list[str], after: str) -> int:
    """The before/after table (each case and mode of either side: its rewrite, judgment, verify and
    to-the-end check) into RESULTS.md, between the markers "before-vs-after"."""
    judgments = load_judgments()
    dirs = [HERE / "results" / b for b in before]
    after_dir = HERE / "results" / after
    commits = []
    for d in [*dirs, after_dir]:
        info = json.loads((d / "run.json").read_text()) if (d / "run.json").exists() else {}
        commits.append(f"`{d.name}` at {info.get('tool_commit', '?')[:7]}")
    lines = [
        "Before: " + ", ".join(commits[:-1]) + "; after: " + commits[-1] + ". Each side: the rewrite "
        "(exit, fixed / left by hand), the judged migration, verify, the to-the-end check.",
        "",
        "| case | mode | before: rewrite | judged | verify | to the end | after: rewrite | judged | verify "
        "| to the end |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    good = {"before": 0, "after": 0}
    for name in load_cases():
        for mode in MODES:
            paths = [d / f"{name}.{mode}.json" for d in dirs if (d / f"{name}.{mode}.json").exists()]
            b = json.loads(paths[-1].read_text()) if paths else None
            a_path = after_dir / f"{name}.{mode}.json"
            a = json.loads(a_path.read_text()) if a_path.exists() else None
            if b is None and a is None:
                continue
            for side, rec in (("before", b), ("after", a)):
                if rec is None:
                    continue
                j = judgments.get((name, mode, rec["diff_sha"]))
                if j and j["migration"] == "correct" and rec["verify"]["passed"] and end_passed(rec) is not False:
                    good[side] += 1
            cells = outcome_cells(b, judgments) + outcome_cells(a, judgments)
            lines.append(f"| {name} | {mode} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Correct, verify PASS and (where checked) the run to the end PASS: before {good['before']}, "
        f"after {good['after']}.",
    ]
    table = "\n".join(lines)
    put_block("before-vs-after", "Before and after", table)
    print(table)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tool", help="the checkout whose bf16_migrate to measure (default: the one on PYTHONPATH, else this one)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("measure", help="rewrite and verify every case in every mode, then write the table")
    p.add_argument("--label", help="name of this measurement (default: at-<commit of this checkout>)")
    p.add_argument("--cases", nargs="*")
    p.add_argument("--modes", nargs="*", choices=MODES)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument(
        "--lock-each", action="store_true", help="take the XLA lock for each verify (default: once for the run)"
    )
    p.add_argument("--no-verify", action="store_true", help="the rewrites only (no XLA, no lock)")
    p.add_argument("--no-end", action="store_true", help="no to-the-end check (verify only)")
    p.add_argument("--end-only", action="store_true", help="the to-the-end check without verify")
    p.add_argument("--append", action="store_true", help="add to the label's measurement (more cases or modes)")
    p.set_defaults(func=cmd_measure)
    p = sub.add_parser("end", help="the legacy and FP32 runs to the end (and a given migrated tree, judged)")
    p.add_argument("--cases", nargs="*")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--migrated", help="a directory of migrated copies of the cases (DIR/CASE) to judge")
    which.add_argument("--hand", action="store_true", help="judge each case's hand migration, hand/MODE/CASE.patch")
    p.add_argument("--modes", "--mode", nargs="+", choices=MODES, default=["stochastic"])
    p.add_argument("--label", default="end-runs")
    p.set_defaults(func=cmd_end)
    p = sub.add_parser("after", help="measure again what the before labels measured, then compare")
    p.add_argument("--before", nargs="+", default=list(BEFORE), help=f"the before labels (default: {BEFORE})")
    p.add_argument("--label", help="name of the after measurement (default: after-<commit of the measured tool>)")
    p.add_argument("--cases", nargs="*", help="default: the cases the before labels measured")
    p.add_argument("--modes", nargs="*", choices=MODES, help="default: the modes the before labels measured")
    p.add_argument("--lock-each", action="store_true", help="take the XLA lock for each XLA job")
    p.add_argument("--no-verify", action="store_true", help="the rewrites only (no XLA, no lock)")
    p.set_defaults(func=cmd_after)
    p = sub.add_parser("compare", help="write the before/after table of measurements made")
    p.add_argument("--before", nargs="+", default=list(BEFORE))
    p.add_argument("--after", required=True)
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("legacy", help="run each legacy script by hand under its switch")
    p.add_argument("--cases", nargs="*")
    p.add_argument("--steps", type=int, default=12)
    p.set_defaults(func=cmd_legacy)
    p = sub.add_parser("table", help="write LABEL's table into RESULTS.md")
    p.add_argument("--label", required=True)
    p.set_defaults(func=cmd_table)
    args = parser.parse_args()
    if args.tool:
        global TOOL_ROOT
        TOOL_ROOT = Path(args.tool).resolve()
        if not (TOOL_ROOT / "bf16_migrate" / "__init__.py").is_file():
            raise SystemExit(f"--tool {args.tool}: no bf16_migrate package there")
    if args.func in (cmd_measure, cmd_after):
        print(f"measuring bf16_migrate of {TOOL_ROOT} at {tool_commit()[:12]}", flush=True)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
