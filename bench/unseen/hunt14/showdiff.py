"""Print a --diff without the helper functions bf16-migrate adds (their hunks are named only)."""
import re
import sys

for f in sys.argv[1:]:
    print("=====", f)
    for h in re.split(r"(?m)^(?=@@|--- )", open(f).read()):
        if any(k in h for k in ("def floating_to_bf16", "def host_float32", "def float64_to_float32", "def with_fp32", "def clip_grad_norm_fp32_")):
            print(h.splitlines()[0], "[bf16-migrate helpers]")
            continue
        print(h, end="")
