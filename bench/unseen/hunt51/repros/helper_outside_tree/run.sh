#!/bin/bash
# The tree given to the tool holds repro.py only; helper_dir/ is put on PYTHONPATH at run time.
H=/work/wt/hunt51/bench/unseen/hunt51; T=/tmp/hunt51/rp/helper_outside_tree.$1
rm -rf "$T"; mkdir -p "$T"; cp "$H/repros/helper_outside_tree/repro.py" "$T/"
(cd "$T" && PYTHONPATH=/work/wt/hunt51 /work/main/.venv/bin/python -m bf16_migrate migrate . --mode "$1" 2>&1 | cut -c1-300)
(cd "$T" && PYTHONPATH=$H/../hunt_tools/stub:$H/repros/helper_outside_tree/helper_dir STEPS=3 \
  /work/main/.venv/bin/python repro.py --mix 2>&1 | grep -v -i warn | tail -3)
