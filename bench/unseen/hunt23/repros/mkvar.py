"""mkvar.py BASE OUT OLD NEW [OLD NEW ...]: OUT = BASE with each OLD (exactly one occurrence) replaced by NEW."""
import sys
from pathlib import Path

base, out, pairs = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
text = base.read_text()
for old, new in zip(pairs[::2], pairs[1::2]):
    n = text.count(old)
    assert n == 1, (old, n)
    text = text.replace(old, new)
out.write_text(text)
print(out, "written")
