"""Summarise part-2 logs: per tree and mode, the files changed, the findings by code, idempotence, re-parse."""
import collections
import pathlib
import re

L = pathlib.Path(__file__).resolve().parent.parent / "logs"
names = [line.split()[0] for line in (L / "trees.txt").read_text().splitlines()]
for name in names:
    for mode in ("stochastic", "gpu-compatible", "amp"):
        rc = L / f"{name}.{mode}.rc"
        if not rc.exists():
            print(f"{name} {mode}: not run yet")
            continue
        rct = rc.read_text()
        diff = (L / f"{name}.{mode}.diff").read_text()
        err = (L / f"{name}.{mode}.stderr").read_text()
        files = re.findall(r"^\+\+\+ b/(.*)$", diff, re.M)
        codes = collections.Counter(re.findall(r": (BFM\d+) ", err))
        second = re.search(r"second-run changed lines: (\d+)", rct)
        bad = [x for x in rct.splitlines() if "REPARSE" in x or "INTERNAL" in x]
        summ = [x for x in err.splitlines() if x.startswith("bf16-migrate:")]
        print(f"{name} {mode}: changed {len(files)} {files[:6]} second={second.group(1) if second else '?'} "
              f"bad={bad} codes={dict(codes)}")
        if "internal error" in err.lower() or "Traceback" in err:
            print("   !!! internal error / traceback")
        print("   " + (summ[0][:300] if summ else "(no summary line)"))
