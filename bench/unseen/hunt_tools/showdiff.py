"""Print a --diff without the helper functions bf16-migrate adds (their hunks are named only)."""

import re
import sys

HELPERS = (
    "def floating_to_bf16",
    "def host_float32",
    "def float64_to_float32",
    "def with_fp32",
    "def clip_grad_norm_fp32_",
    "def bf16_on_xla",
    "def downcast_bf16",
)

for f in sys.argv[1:]:
    print("=====", f)
    with open(f) as diff:
        text = diff.read()
    for h in re.split(r"(?m)^(?=@@|--- )", text):
        if any(k in h for k in HELPERS):
            print(h.splitlines()[0], "[bf16-migrate helpers]")
            continue
        print(h, end="")
