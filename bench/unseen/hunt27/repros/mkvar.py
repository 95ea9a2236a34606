"""mkvar.py BASE OUT OLD NEW [OLD NEW ...]: OUT = BASE with each OLD (exactly once in it) replaced by NEW."""
import sys
from pathlib import Path

base, out, *pairs = sys.argv[1:]
s = Path(base).read_text()
for old, new in zip(pairs[::2], pairs[1::2]):
    assert s.count(old) == 1, (old, s.count(old))
    s = s.replace(old, new)
Path(out).write_text(s)
print(out)
