"""Flatten a notebook's code cells to a script for the stub run: `%env K=V` becomes os.environ[K] = V."""
import json
import sys

nb = json.load(open(sys.argv[1]))
print("import os")
for c in nb["cells"]:
    if c["cell_type"] != "code":
        continue
    for line in "".join(c["source"]).splitlines():
        if line.startswith("%env "):
            k, v = line[5:].split("=", 1)
            print(f"os.environ[{k.strip()!r}] = {v.strip()!r}")
        elif line.startswith(("%", "!")):
            print("# " + line)
        else:
            print(line)
