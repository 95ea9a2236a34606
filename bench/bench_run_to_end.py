"""What tests/test_run_to_end.py costs, and how far each migration's host outputs are from the legacy run's.

For every case of tests/test_run_to_end.py (or those named): the legacy run once, then the migration
in each mode (its goldens), each run to its end on the XLA CPU device in its own processes, with the
test's arguments. Records each run's wall time, whether it raised what the legacy run did not, and the
largest relative difference of each host output from the legacy run's (tests/run_outputs.py,
``worst``). Prints a table and writes ``bench/results/run_to_end.json``.

Usage (every process that runs torch-xla holds the machine's lock)::

    flock /tmp/bfm-xla.lock env PYTHONPATH=$PWD python bench/bench_run_to_end.py [CASE ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from bf16_migrate.rules import MODES  # noqa: E402

from run_outputs import REFERENCE, migrated, prepare, run, worst  # noqa: E402
from test_run_to_end import CASES, TOLERANCE, _ci_mode, baseline, check  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="cases (fixtures/ paths) to run; default: all")
    parser.add_argument("--json", default=str(ROOT / "bench" / "results" / "run_to_end.json"))
    args = parser.parse_args()
    chosen = [c for c in CASES if not args.cases or c.case in args.cases]
    results = []
    with tempfile.TemporaryDirectory(prefix="run-to-end-") as tmp:
        for k, case in enumerate(CASES):
            if case not in chosen:
                continue
            legacy = run(case, prepare(case, Path(tmp) / case.name / "legacy", None), case.legacy_env)
            row: dict[str, Any] = {
                "case": case.case,
                "legacy_seconds": round(legacy.seconds, 1),
                "legacy_failed": legacy.failed,
            }
            ci = _ci_mode(case, k)
            references: dict = {}
            for mode in MODES:
                if not migrated(case, mode):
                    continue
                done = run(case, prepare(case, Path(tmp) / case.name / mode, mode), {}, mode)
                kind = baseline(mode)
                reference = None
                if case.outputs and done.failed is None and not legacy.failed:
                    if REFERENCE not in references:
                        where = Path(tmp) / case.name / REFERENCE
                        references[REFERENCE] = run(case, prepare(case, where, REFERENCE), {})
                    reference = references[REFERENCE]
                base = reference if kind == REFERENCE else None
                problems = check(case, mode, legacy, done, base, reference)
                compared = base or legacy
                if reference is not None and "gap" not in row:
                    row["gap"] = worst(legacy.out, reference.out, case) if not reference.failed else None
                row[mode] = {
                    "seconds": round(done.seconds, 1),
                    "failed": done.failed,
                    "ci": ci is None or ci == mode,
                    "baseline": kind or "legacy",
                    "worst": {}
                    if legacy.failed or done.failed or compared.failed
                    else worst(compared.out, done.out, case),
                    "pass": not problems,
                    "problems": problems[:3],
                }
                print(case.case, mode, json.dumps(row[mode]), flush=True)
            results.append(row)
    Path(args.json).write_text(
        json.dumps({"tolerance": {m: vars(t) for m, t in TOLERANCE.items()}, "runs": results}, indent=1)
    )
    print()
    print("| case | legacy s | precision gap | " + " | ".join(f"{m} s (worst difference)" for m in MODES) + " |")
    print("|---|---|---|" + "---|" * len(MODES))
    for row in results:
        cells = []
        for mode in MODES:
            r = row.get(mode)
            if r is None:
                cells.append("(switch kept)")
                continue
            diff = ", ".join(f"{k} {v:.2g}" for k, v in r["worst"].items()) or "-"
            mark = "" if r["pass"] else " FAIL"
            cells.append(f"{r['seconds']}{'*' if r['ci'] else ''} ({diff}){mark}")
        gap = ", ".join(f"{k} {v:.2g}" for k, v in (row.get("gap") or {}).items()) or "-"
        legacy_cell = f"{row['legacy_seconds']}{' raised ' + row['legacy_failed'] if row['legacy_failed'] else ''}"
        print(f"| {row['case']} | {legacy_cell} | {gap} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
