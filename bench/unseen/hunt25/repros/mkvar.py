"""mkvar.py BASE OUT OLD NEW [OLD NEW ...]: OUT = BASE with each OLD (exactly once in the text) replaced by NEW."""
import sys
from pathlib import Path

base, out, pairs = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
text = base.read_text()
for old, new in zip(pairs[::2], pairs[1::2]):
    assert text.count(old) == 1, (old, text.count(old))
    text = text.replace(old, new)
Path(out).write_text(text)
