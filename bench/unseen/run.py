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

It has not yet run to the end on this machine. Estimate from the by-hand legacy runs (12 steps: most cases
15-30 s, the LSTM 100 s, the ViT 275 s at 32x32 and more than 8 min at 16x16 on shared cores) and verify's
2-3 runs per case: about 25-35 minutes for one mode with the lock free, most of it the ViT and the LSTM
(``--cases`` without vit_k8s: about 12 minutes). The lock is taken once for the run
(the lock waits are recorded apart). Other commands::

    ... run.py measure --label main-4389669 [--cases A B] [--modes M ...]  # a named measurement
    ... run.py table --label main-4389669                                 # rewrite LABEL's table only
    ... run.py legacy [--cases A B]                  # each case's legacy run by hand, under its switch

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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
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


def tool_env() -> dict[str, str]:
    """The environment the tool runs in: this checkout first on the path, the XLA CPU device."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "NEURON_"))}
    env["PYTHONPATH"] = str(ROOT)
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


def measure_one(
    name: str, case: dict[str, Any], mode: str, steps: int, out_dir: Path, lock_each: bool, verify_it: bool = True
) -> dict[str, Any]:
    """Copy CASE into a git repository, rewrite it in MODE, verify the result (unless not VERIFY_IT);
    the record. LOCK_EACH: take the XLA lock for this verify (else the caller holds it)."""
    tmp = Path(tempfile.mkdtemp(prefix=f"bfm-unseen-{name}-"))
    try:
        work = tmp / name
        shutil.copytree(HERE / name, work, ignore=shutil.ignore_patterns("__pycache__"))
        git(work, "init", "-q")
        git(work, "add", "-A")
        git(work, "commit", "-qm", "legacy")
        env = tool_env()
        rewrite = run([TOOL, ".", "--mode", mode], work, env)
        rewrite.update(parse_rewrite(rewrite["stdout"] + rewrite["stderr"]))
        diff = git(work, "diff")
        changed = git(work, "diff", "--name-only").split()
        (out_dir / f"{name}.{mode}.diff").write_text(diff)
        (out_dir / f"{name}.{mode}.rewrite.txt").write_text(rewrite["stdout"] + rewrite["stderr"])
        if not verify_it:
            return record_of(name, mode, steps, diff, changed, rewrite, NOT_VERIFIED)
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
        return record_of(name, mode, steps, diff, changed, rewrite, verify)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


NOT_VERIFIED = {"exit": None, "passed": None, "parts": [], "error": None, "wall_s": 0.0, "lock_wait_s": 0.0}


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


def cmd_measure(args: argparse.Namespace) -> int:
    cases = load_cases()
    names = args.cases or list(cases)
    sha = tool_commit()
    label = args.label or f"at-{sha[:7]}"
    out_dir = HERE / "results" / label
    out_dir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    info = {
        "tool_commit": sha,
        "argv": ["bench/unseen/run.py", *sys.argv[1:]],
        "cases": names,
        "modes": list(args.modes or MODES),
        "steps": args.steps,
        "wall_s": 0.0,
        "lock_wait_s": 0.0,
        "finished": None,  # stays None in the file of a run that was stopped
    }
    # by default the lock is taken once for every verify of the run: one wait in the queue, not one per
    # verify (a run of thirty verifies would otherwise wait behind every other job thirty times)
    with contextlib.nullcontext(0.0) if args.lock_each or args.no_verify else xla_lock() as waited:
        info["lock_wait_s"] = round(waited, 1)
        for name in names:
            for mode in args.modes or MODES:
                record = measure_one(
                    name, cases[name], mode, args.steps, out_dir, args.lock_each, verify_it=not args.no_verify
                )
                record["tool_commit"] = sha
                info["lock_wait_s"] = round(info["lock_wait_s"] + record["verify"]["lock_wait_s"], 1)
                info["wall_s"] = round(time.perf_counter() - start, 1)
                (out_dir / f"{name}.{mode}.json").write_text(json.dumps(record, indent=1) + "\n")
                (out_dir / "run.json").write_text(json.dumps(info, indent=1) + "\n")
                rw, vf = record["rewrite"], record["verify"]
                failed = [p["name"] for p in vf["parts"] if p["status"] != "PASS"]
                print(
                    f"{name:22} {mode:15} rewrite exit {rw['exit']} ({rw['fixed']} fixed, {rw['left_by_hand']} left)"
                    f" verify exit {vf['exit']} {'PASS' if vf['passed'] else 'not PASS'} {failed or ''} "
                    f"{rw['wall_s']}s/{vf['wall_s']}s",
                    flush=True,
                )
    info["wall_s"] = round(time.perf_counter() - start, 1)
    info["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    (out_dir / "run.json").write_text(json.dumps(info, indent=1) + "\n")
    print(f"{info['wall_s']:.0f} s in all, {info['lock_wait_s']:.0f} s of it waiting for the XLA lock", flush=True)
    return write_table(label)


def tool_commit() -> str:
    """The commit of the checkout whose bf16_migrate is measured (ROOT, first on the tool's path)."""
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()


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
    lines = []
    if info:
        lines += [
            f"bf16_migrate at `{info['tool_commit']}`, {info['steps']} steps, "
            + (f"finished {info['finished']}" if info["finished"] else "**stopped before the end**")
            + f"; {info['wall_s']:.0f} s in all ({info['lock_wait_s']:.0f} s of it waiting for the XLA lock).",
            "",
            f"    PYTHONPATH=$PWD /work/main/.venv/bin/python {' '.join(info['argv'])}",
            "",
        ]
    lines += [
        "| case | mode | rewrite exit | fixed / left by hand | migration (judged) | verify exit | verdict "
        "| right verdict? | rewrite s | verify s |",
        "|---|---|---|---|---|---|---|---|---|---|",
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
            if migration == "correct" and rec["verify"]["passed"]:
                good[mode] += 1
            rw, vf = rec["rewrite"], rec["verify"]
            lines.append(
                f"| {name} | {mode} | {rw['exit']} | {rw['fixed']} / {rw['left_by_hand']} "
                f"| {migration or 'not judged (diff ' + rec['diff_sha'] + ')'} | {vf['exit']} | {verdict_cell(vf)} "
                f"| {right} | {rw['wall_s']} | {vf['wall_s']} |"
            )
    lines.append("")
    for mode, n in good.items():
        measured = sum(1 for name in cases if (out_dir / f"{name}.{mode}.json").exists())
        total = len(info["cases"]) if mode in info.get("modes", ()) else measured
        lines.append(
            f"**{mode}: {n} of {total} end with a correct migration and a PASS** "
            f"({judged_correct[mode]} rewrites judged correct, {verified[mode]} verified)."
        )
    lines.append("Totals: " + ", ".join(f"{k}: {v}" for k, v in sorted(tally.items())))
    table = "\n".join(lines)
    results = HERE / "RESULTS.md"
    text = results.read_text() if results.exists() else "# Unseen benchmark: results\n"
    start, end = f"<!-- table:{label} -->", f"<!-- /table:{label} -->"
    block = f"{start}\n{table}\n{end}"
    if start in text and end in text:
        text = text[: text.index(start)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + f"\n\n## Measurement `{label}`\n\n{block}\n"
    results.write_text(text)
    print(table)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    p.set_defaults(func=cmd_measure)
    p = sub.add_parser("legacy", help="run each legacy script by hand under its switch")
    p.add_argument("--cases", nargs="*")
    p.add_argument("--steps", type=int, default=12)
    p.set_defaults(func=cmd_legacy)
    p = sub.add_parser("table", help="write LABEL's table into RESULTS.md")
    p.add_argument("--label", required=True)
    p.set_defaults(func=cmd_table)
    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
