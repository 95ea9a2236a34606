"""Re-parse every file a migrate run changed (/tmp/hunt51/run/*): .py ast, .yaml/.yml yaml, .json/.ipynb json, .sh bash -n;
and list removed lines of the --diff logs that name no legacy variable (candidates for mangled bytes)."""
import ast
import json
import pathlib
import re
import subprocess

import yaml

RUN = pathlib.Path("/tmp/hunt51/run")
LOGS = pathlib.Path(__file__).resolve().parent.parent / "logs"
bad = 0
checked = 0
for d in sorted(RUN.iterdir()):
    out = subprocess.run(["git", "-C", str(d), "diff", "--name-only", "HEAD~1"], capture_output=True, text=True)
    if out.returncode:
        continue
    for name in out.stdout.split():
        p = d / name
        if not p.exists():
            print("DELETED", d.name, name)
            continue
        checked += 1
        try:
            if p.suffix == ".py":
                ast.parse(p.read_text())
            elif p.suffix in (".yaml", ".yml"):
                list(yaml.safe_load_all(p.read_text()))
            elif p.suffix in (".json", ".ipynb"):
                json.loads(p.read_text())
            elif p.suffix == ".sh":
                r = subprocess.run(["bash", "-n", str(p)], capture_output=True, text=True)
                if r.returncode:
                    raise SyntaxError(r.stderr)
        except Exception as e:  # noqa: BLE001
            bad += 1
            print("PARSE FAIL", d.name, name, str(e)[:200])
print(f"changed files checked: {checked}, parse failures: {bad}")
legacy = re.compile(r"XLA_(USE|DOWNCAST)_(BF|FP|F)16|XLA_USE_B16|torch\.double|\.double\(\)|float64|^-\s*$")
for f in sorted(LOGS.glob("*.diff")):
    for line in f.read_text().splitlines():
        if line.startswith("-") and not line.startswith("---") and not legacy.search(line):
            print("REMOVED-LINE", f.name, line[:160])
