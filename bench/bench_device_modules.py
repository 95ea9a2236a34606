"""Every fixture of fixtures/device_modules/ run to its end on the XLA CPU device: the legacy run,
the FP32 reference run, the migration in every mode (the goldens) and the negative control (the
stochastic migration with the module's own cast taken out: what the codemod wrote before every
module on the device was migrated), each under the forward-hook probe (tests/device_probe.py).

Prints, per case, the dtypes each module's forward ran in, and per figure the script prints (its
evaluation metrics, its training losses) the legacy and reference values, their precision gap and
each run's relative difference from its baseline (the legacy run; amp: the reference), with the
ratio to the gap; writes them to bench/results/device_modules.json. The figures are recorded in
bench/RESULTS.md ("Every module on the device"). Hold the machine's XLA lock while it runs:

    flock /tmp/bfm-xla.lock python bench/bench_device_modules.py [CASE ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bf16_migrate.python import migrate_source  # noqa: E402
from bf16_migrate.rules import MODES, mode_named, variable_names  # noqa: E402

import device_runs  # noqa: E402  (tests/ is not a package)

CAST_OF = {
    "inference_only": "model",
    "ema_deepcopy": "ema_model",
    "averaged_model": "ema_model",
    "distill_teacher": "teacher",
    "eval_copy": "best_model",
    "frozen_backbone": "backbone",
}


def _dtypes(record: dict) -> str:
    return "; ".join(
        f"{name} {'/'.join(d.replace('torch.', '') for d in call['params'])}"
        + (" autocast" if call["autocast"] else "")
        for name, call in sorted(record.items())
    )


def measure(case: str, work: Path) -> dict:
    path = device_runs.script(case)
    legacy = variable_names()
    source = path.read_text()
    texts = {"legacy": source, "reference": migrate_source(source, "reference", path.name).code}
    for mode in MODES:
        texts[mode] = (path.parent / "expected" / mode / path.name).read_text()
    cast = f"    {CAST_OF[case]}.to(torch.bfloat16)\n"
    if cast in texts[MODES[0]]:
        texts["control"] = texts[MODES[0]].replace(cast, "", 1)
    runs = {}
    for name, text in texts.items():
        where = work / case / name
        where.mkdir(parents=True)
        (where / path.name).write_text(text)
        runs[name] = device_runs.run(where / path.name, where, name, legacy)
        print(f"  {name}: {'ran' if runs[name].failed is None else 'FAILED'}; {_dtypes(runs[name].record)}")
    result: dict = {"dtypes": {n: r.record for n, r in runs.items()}, "failed": {}, "figures": []}
    for name, r in runs.items():
        if r.failed is not None:
            result["failed"][name] = r.failed.strip().splitlines()[-1]
    if runs["legacy"].failed or runs["reference"].failed:
        return result
    gaps = {k: g for k, _, _, g in device_runs.relative(runs["legacy"].figures, runs["reference"].figures)}
    rows: dict[str, dict] = {
        k: {"legacy": v, "gap": gaps[k], "reference": dict(runs["reference"].figures)[k]}
        for k, v in runs["legacy"].figures
    }
    for name in [*MODES, "control"]:
        if name not in runs or runs[name].failed:
            continue
        base = "reference" if name in MODES and mode_named(name).verify.get("baseline") == "reference" else "legacy"
        for key, value, _, amount in device_runs.relative(runs[name].figures, runs[base].figures):
            rows[key][name] = {"value": value, "relative": amount, "baseline": base}
    result["figures"] = [{"figure": k, **v} for k, v in rows.items()]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("cases", nargs="*", default=sorted(CAST_OF))
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "device_modules.json")
    parser.add_argument("--table", action="store_true", help="print the tables of --out, running nothing")
    args = parser.parse_args()
    results = json.loads(args.out.read_text()) if args.out.is_file() else {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in [] if args.table else args.cases:
            print(case)
            results[case] = measure(case, Path(tmp))
            args.out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print("\n| case | figure | legacy | gap | " + " | ".join([*MODES, "control"]) + " |")
    print("|---|---|---|---|" + "---|" * (len(MODES) + 1))
    for case in args.cases:
        rows = results[case]["figures"]
        legacy = [(r["figure"], r["legacy"]) for r in rows]
        gaps = {k: g for k, _, _, g in device_runs.relative(legacy, [(r["figure"], r["reference"]) for r in rows])}
        amounts = {}
        for name in [*MODES, "control"]:
            if all(name in r for r in rows):
                base = rows[0][name]["baseline"]
                amounts[name] = {
                    k: a
                    for k, _, _, a in device_runs.relative(
                        [(r["figure"], r[name]["value"]) for r in rows], [(r["figure"], r[base]) for r in rows]
                    )
                }
        for row in rows:
            cells = []
            for name in [*MODES, "control"]:
                if name not in amounts:
                    cells.append("failed" if name in results[case]["failed"] else "-")
                    continue
                amount, gap = amounts[name][row["figure"]], gaps[row["figure"]]
                cells.append(f"{amount:.4f}" + (f" ({amount / gap:.2f}x)" if gap else ""))
            figure = row["figure"].replace("|", "/")
            print(f"| {case} | {figure} | {row['legacy']} | {gaps[row['figure']]:.4f} | " + " | ".join(cells) + " |")
    print("\n| case | " + " | ".join([*MODES, "control"]) + " |")
    print("|---|" + "---|" * (len(MODES) + 1))
    for case in args.cases:
        print(f"| {case} | " + " | ".join(_held(results[case], name) for name in [*MODES, "control"]) + " |")


def _held(result: dict, name: str) -> str:
    """How a run fares against tests/test_device_modules.py's checks: its modules' dtypes (every
    module bf16, amp: under autocast) and its output figures (:func:`device_runs.beyond`)."""
    if name in result["failed"]:
        return f"raised ({result['failed'][name][:60]})"
    record = result["dtypes"].get(name)
    if record is None:
        return "-"
    mode = MODES[0] if name == "control" else name
    if mode_named(mode).casts_model:
        f32 = sorted(n for n, call in record.items() if call["params"] != ["torch.bfloat16"])
    else:
        f32 = sorted(n for n, call in record.items() if not call["autocast"])
    rows = result["figures"]
    legacy = [(r["figure"], r["legacy"]) for r in rows]
    reference = [(r["figure"], r["reference"]) for r in rows]
    verify = mode_named(mode).verify
    bases = [reference if verify.get("baseline") == "reference" else legacy]
    if verify.get("drift_band"):
        bases.append(reference)
    migrated = [(r["figure"], r[name]["value"]) for r in rows]
    far = device_runs.beyond(migrated, bases, legacy, reference)
    dtypes = f"f32 on the device: {', '.join(f32)}" if f32 else "dtypes held"
    return f"{dtypes}; " + (f"{len(far)} output(s) off" if far else "outputs held")


if __name__ == "__main__":
    main()
