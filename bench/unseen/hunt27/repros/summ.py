"""summ.py LOG...: one line per verify log: label, verdict, failing parts, the lines its findings name."""
import re
import sys
from pathlib import Path

for p in map(Path, sys.argv[1:]):
    t = p.read_text()
    v = re.search(r"^VERDICT: (\w+)", t, re.M)
    fails = [m.group(1) for m in re.finditer(r"^(runs|trains|precision|matches|graph|trace)\s+FAIL", t, re.M)]
    lines = re.findall(r"^\s+\S*?([\w.]+\.py:\d+):\d+: (BFM\d+)", t, re.M)
    err = "" if v else (t.strip().splitlines() or ["(empty)"])[-2:]
    print(f"{p.name.replace('.txt', ''):40s} {v.group(1) if v else 'NONE':5s} {','.join(fails) or '-':28s} "
          f"{' '.join(f'{b}@{a}' for a, b in lines) or '-'} {err}")
