"""What verify's dtype trace costs, and that it changes nothing the verdict reads: paired verifies.

For each fixture and repetition, two verifies of the same script one right after the other, in an
order that alternates between repetitions (so that a slower machine state is not always charged to
one side): ``verify_script(..., trace=False)`` (today's verify) and ``verify_script(...)`` (the
trace on, the legacy and migrated runs going on to the script's end, ``--trace-time`` 120 s). Each
verify holds the machine-wide XLA lock (``--lock``) while it runs. Recorded per pair: the wall
time of each verify and their ratio; and, per run (legacy, migrated), whether the losses, the
step graph's hash, and the XLA compile and execution counts at the recorded steps are equal
without and with the trace (the trace adds no sync, graph or compilation), and the torch calls
the trace looked at. Results go to ``bench/results/trace_cost.json``; a Markdown table to stdout.

Usage::

    python bench/bench_trace.py [--steps 20] [--repeat 2] [--mode stochastic] [CASE ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from calibrate import xla_lock  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "trace_cost.json"
CASES = ["mlp_regression", "cnn_trainer", "tiny_transformer", "resume_checkpoint"]


def _verify(script: Path, steps: int, mode: str, trace: bool, lock: str | None) -> dict:
    from bf16_migrate.verify import verify_script

    with xla_lock(lock):
        started = time.monotonic()
        report = verify_script(script, mode=mode, steps=steps, trace=trace)
        wall = time.monotonic() - started
    runs = {}
    for name in ("legacy", "migrated"):
        run = report.runs[name]
        runs[name] = {
            "losses": run.losses,
            "graph_hash": run.graph.graph_hash if run.graph is not None else None,
            "compile_count": run.compile_count,
            "execute_count": run.execute_count,
            "wall_s": run.wall_time_s,
            "trace_calls": run.trace.calls if run.trace is not None else None,
            "trace_end": run.trace.end.value if run.trace is not None else None,
        }
    return {
        "wall_s": round(wall, 2),
        "verdict": report.verdict.status,
        "runs": runs,
        "findings": [f.diagnostic.code for f in report.trace_findings if f.counts],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="*", default=CASES)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--mode", default="stochastic")
    parser.add_argument("--lock", default="/tmp/bfm-xla.lock")
    args = parser.parse_args()
    pairs = []
    for case in args.cases:
        script = ROOT / "fixtures" / case / "train.py"
        for rep in range(args.repeat):
            order = (False, True) if rep % 2 == 0 else (True, False)
            done = {}
            for trace in order:
                done[trace] = _verify(script, args.steps, args.mode, trace, args.lock or None)
                print(
                    f"{case} rep {rep + 1} trace={trace}: {done[trace]['wall_s']} s {done[trace]['verdict']}",
                    file=sys.stderr,
                    flush=True,
                )
            same = {
                name: {
                    key: done[False]["runs"][name][key] == done[True]["runs"][name][key]
                    for key in ("losses", "graph_hash", "compile_count", "execute_count")
                }
                for name in ("legacy", "migrated")
            }
            pairs.append(
                {
                    "case": case,
                    "rep": rep + 1,
                    "mode": args.mode,
                    "without": done[False],
                    "with": done[True],
                    "ratio": round(done[True]["wall_s"] / done[False]["wall_s"], 3),
                    "same": same,
                }
            )
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps(pairs, indent=1) + "\n")
    lines = [
        "| fixture | pairs | verify without the trace (median) | with it (median) | ratio (median) | same losses, "
        "step graph, compile and execute counts | torch calls traced (migrated) |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    for case in args.cases:
        mine = [p for p in pairs if p["case"] == case]
        alike = all(all(all(v.values()) for v in p["same"].values()) for p in mine)
        lines.append(
            f"| {case} | {len(mine)} | {statistics.median(p['without']['wall_s'] for p in mine):.1f} s | "
            f"{statistics.median(p['with']['wall_s'] for p in mine):.1f} s | "
            f"{statistics.median(p['ratio'] for p in mine):.2f} | {'yes' if alike else 'NO'} | "
            f"{mine[-1]['with']['runs']['migrated']['trace_calls']} |"
        )
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
