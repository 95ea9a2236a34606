"""`verify --fix` on shapes the static rewrite missed: does the run name their line, and repair it?

The scripts in ``bench/trace_shapes/`` are our own, one per shape the rewrite did not see (a NumPy
evaluation loop, an inference script without an optimizer, an EMA deep copy made before the
model cast, a position table a helper returns). Each is copied into a temporary directory and:

* when the codemod migrates it (``migrate_source`` changes it), verified on the fly as
  ``bf16-migrate verify SCRIPT --fix`` does (:func:`bf16_migrate.verify.fix.verify_and_fix`),
  then written through the rewrite with the repairs (``migrate_paths(..., repairs=...)``);
* when the codemod keeps the switch (it refuses the shape: no optimizer, a table it cannot
  follow), the migration a user makes by hand without the tool is verified instead: the
  variable deleted, nothing added (the codemod's FP32-reference rewrite), committed in a git
  repository over the legacy commit, as ``verify SCRIPT --against HEAD~1 --fix`` does.

Recorded per shape: what the codemod did, the trace's findings before any repair (code and line
of the user's file), the repairs applied per round, why the loop stopped, the final verdict (or
the error of a run that could not be made: an inference script makes no optimizer step, so the
verdict's parts cannot be judged, but its trace still names the lines), and what is left. Results
go to ``bench/results/trace_fix.json``; the Markdown table to stdout. Each verify holds the XLA
lock (``--lock``).

Usage::

    python bench/bench_trace_fix.py [--steps 10] [SHAPE ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from calibrate import xla_lock  # noqa: E402

SHAPES = ROOT / "bench" / "trace_shapes"
RESULTS = ROOT / "bench" / "results" / "trace_fix.json"


def _findings(findings) -> list[str]:
    return [f"{f.diagnostic.code}:{f.diagnostic.line}" for f in findings if f.counts]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def run_shape(name: str, steps: int, lock: str | None, mode: str = "stochastic") -> dict:
    from bf16_migrate.project import migrate_paths
    from bf16_migrate.python import migrate_source
    from bf16_migrate.verify import RunError, verify_script
    from bf16_migrate.verify.fix import verify_and_fix
    from bf16_migrate.verify.gitrev import Checkout

    source_dir = SHAPES / name
    script_name = next(p.name for p in source_dir.glob("*.py"))
    entry: dict = {"shape": name, "script": script_name}
    with tempfile.TemporaryDirectory(prefix="bfm-trace-fix-") as tmp:
        work = Path(tmp) / name
        shutil.copytree(source_dir, work)
        script = work / script_name
        legacy = script.read_text()
        migrated = migrate_source(legacy, mode, str(script)).code
        entry["codemod"] = "migrates it" if migrated != legacy else "keeps the switch (refuses the shape)"
        kwargs: dict[str, Any] = dict(mode=mode, steps=steps, timeout=600)
        checkout = None
        try:
            with xla_lock(lock):
                if migrated == legacy:
                    # what a user does by hand without the tool: delete the variable, add nothing
                    _git(work, "init", "-q")
                    _git(work, "add", ".")
                    _git(work, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "legacy")
                    script.write_text(migrate_source(legacy, "reference", str(script)).code)
                    checkout = Checkout(work, "HEAD").__enter__()
                    kwargs.update(checkout=checkout)
                    entry["verified"] = "the variable deleted by hand (verify --against HEAD --fix)"
                else:
                    entry["verified"] = "the codemod's migration (verify --fix)"
                fixed = verify_and_fix(script, verify=verify_script, **kwargs)
            entry["before"] = _findings(fixed.first)
            entry["rounds"] = [
                {
                    "applied": [s.kind.value for s in r.applied],
                    "left": [why for _s, why in r.left],
                    "verdict": r.verdict,
                }
                for r in fixed.rounds
            ]
            entry["stopped"] = fixed.stopped
            entry["verdict"] = fixed.report.verdict.status if fixed.report is not None else "ERROR"
            if fixed.error is not None:
                entry["error"] = fixed.error.message
            entry["left"] = _findings(fixed.findings)
            if fixed.applied:
                outcome = migrate_paths([script], mode, write=True, legacy_env=None, repairs=fixed.applied)
                entry["written"] = [str(p.relative_to(work)) for p in outcome.changed]
                entry["errors"] = outcome.errors
                entry["diff"] = subprocess.run(
                    ["diff", "-u", str(source_dir / script_name), str(script)], capture_output=True, text=True
                ).stdout
        except RunError as exc:
            entry["verdict"] = "ERROR"
            entry["error"] = exc.message
            entry["before"] = _findings(exc.findings)
            entry["left"] = entry["before"]
        finally:
            if checkout is not None:
                checkout.__exit__(None, None, None)
    return entry


def table(entries: list[dict]) -> str:
    lines = [
        "| shape | main's codemod | verified | trace before --fix (code:line) | repairs (per round) | after --fix |",
        "|---|---|---|---|---|---|",
    ]
    for e in entries:
        rounds = "; ".join(", ".join(r["applied"]) or "none" for r in e.get("rounds", [])) or "-"
        after = e["verdict"] + (f": {e['error'][:80]}" if e.get("error") else "")
        if e.get("left"):
            after += f", left {', '.join(e['left'])}"
        lines.append(
            f"| {e['shape']} | {e['codemod']} | {e['verified']} | {', '.join(e['before']) or 'none'} | {rounds} | "
            f"{after} |"
        )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("shapes", nargs="*", default=sorted(p.name for p in SHAPES.iterdir() if p.is_dir()))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--lock", default="/tmp/bfm-xla.lock")
    args = parser.parse_args()
    entries = []
    for name in args.shapes:
        entries.append(run_shape(name, args.steps, args.lock or None))
        print(f"{name}: {entries[-1]['verdict']}", file=sys.stderr, flush=True)
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(entries, indent=1) + "\n")
    sys.stdout.write(table(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main())
