#!/bin/bash
# usage: bench/unseen/diff_against.sh BEFORE_CHECKOUT [OUT]: the rewrite (`--diff`) of every unseen case
# (the named cases and hunt6..hunt12's; hunt13's too when present) by the package of BEFORE_CHECKOUT (another
# worktree) and by this checkout, in the 3 modes; prints the cases whose output changed (OUT/NAME.old|.new keep
# both outputs). A static regression check before verifying anything on the device.
BEFORE=$1; OUT=${2:-/tmp/unseen_diffs}; HERE=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PYTHON:-$HERE/.venv/bin/python}
rm -rf "$OUT"; mkdir -p "$OUT"
cd "$HERE/bench/unseen"
for d in $(ls -d */ hunt*/*/ | grep -v "verify_logs\|repros\|results\|^hunt[0-9]*/$"); do
  for m in stochastic gpu-compatible amp; do
    n=$(echo "$d$m" | tr '/' '_')
    PYTHONPATH=$BEFORE "$PY" -m bf16_migrate "$d" --mode $m --diff > "$OUT/$n.old" 2>&1
    PYTHONPATH=$HERE "$PY" -m bf16_migrate "$d" --mode $m --diff > "$OUT/$n.new" 2>&1
    cmp -s "$OUT/$n.old" "$OUT/$n.new" || echo "CHANGED $d $m"
  done
done
