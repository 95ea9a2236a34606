"""Verify every fixture of fixtures/wrappers/ in every mode it migrates, on the XLA CPU device.

CI verifies one mode per fixture (tests/test_wrappers.py); this covers the rest and prints one
Markdown table row per run: the verdict, each part's status, the XLA compilations of the legacy and
migrated runs, the migrated run's bf16 matmuls in its step graph, the verify's wall seconds. Figures
are recorded in bench/RESULTS.md ("Wrappers", once run). Hold the machine's XLA lock while it runs:

    flock /tmp/bfm-xla.lock python bench/bench_wrappers.py [--steps 12]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bf16_migrate.python import migrate_source  # noqa: E402
from bf16_migrate.rules import MODES  # noqa: E402
from bf16_migrate.verify import RunError, report_dict, verify_script  # noqa: E402

WRAPPERS = ROOT / "fixtures" / "wrappers"
SCRIPTS = {
    "compiled_model": "train.py",
    "ddp_dtype_log": "train.py",
    "fsdp_mlp": "train.py",
    "fsdp_cnn": "train.py",
    "test_named_script": "test_train_regressor.py",
}


def launcher_setting(case: str) -> dict[str, str]:
    """The case's ``launcher_setting.txt`` (``KEY=VALUE``, what its job spec sets), or nothing."""
    path = WRAPPERS / case / "launcher_setting.txt"
    if not path.is_file():
        return {}
    key, value = path.read_text().strip().split("=", 1)
    return {key: value}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--only", nargs="*", default=[], metavar="CASE:MODE", help="verify only these runs")
    args = parser.parse_args()
    only = {tuple(run.split(":", 1)) for run in args.only}
    columns = ["fixture", "mode", "verdict", "runs / trains / precision / matches / graph"]
    columns += ["compiles legacy, migrated", "bf16 matmuls", "seconds"]
    print("| " + " | ".join(columns) + " |")
    print("|---|---|---|---|---|---|---|")
    for case, name in SCRIPTS.items():
        script, env = WRAPPERS / case / name, launcher_setting(case)
        for mode in MODES:
            if only and (case, mode) not in only:
                continue
            source = script.read_text()
            if migrate_source(source, mode, str(script), launched_with=env or None).code == source:
                print(f"| {case} | {mode} | switch kept (not verified) | | | | |", flush=True)
                continue
            start = time.monotonic()
            try:
                report = verify_script(script, mode, args.steps, legacy_env=env, env={**os.environ})
            except RunError as exc:
                print(f"| {case} | {mode} | ERROR {str(exc).splitlines()[0][:80]} | | | | |", flush=True)
                continue
            parts = " / ".join(p.status for p in report.parts)
            legacy, migrated = report.runs.get("legacy"), report.runs["migrated"]
            graph = migrated.graph
            matmuls = f"{graph.matmuls_bf16}/{graph.matmuls}" if graph is not None else "-"
            compiles = f"{legacy.compile_count if legacy else '-'}, {migrated.compile_count}"
            verdict = "PASS" if report.passed else "FAIL"
            seconds = time.monotonic() - start
            print(f"| {case} | {mode} | {verdict} | {parts} | {compiles} | {matmuls} | {seconds:.0f} |", flush=True)
            out = Path(tempfile.gettempdir()) / f"bench-wrappers-{case}-{mode}.json"
            out.write_text(json.dumps(report_dict(report), indent=1, default=str))


if __name__ == "__main__":
    main()
