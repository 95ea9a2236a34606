"""usage: python mkvar.py SRC DST OLD NEW [OLD NEW ...]: DST = SRC with each OLD (exactly once) replaced by NEW."""
import sys

src, dst, *pairs = sys.argv[1:]
text = open(src).read()
for old, new in zip(pairs[::2], pairs[1::2]):
    assert text.count(old) == 1, (old, text.count(old))
    text = text.replace(old, new)
open(dst, "w").write(text)
