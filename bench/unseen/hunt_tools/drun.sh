#!/bin/bash
# usage: HUNT/drun.sh LABEL PATH [extra options]: --diff in the 3 modes -> HUNT/verify_logs/LABEL.MODE.diff/.stderr,
# with the package of the checkout HUNT lies in (a hunt's worktree). One copy for every hunt (each hunt's drun.sh
# is a link here).
LABEL=$1; P=$2; shift 2
H=$(cd "$(dirname "$0")" && pwd); ROOT=$(git -C "$H" rev-parse --show-toplevel); PY=${PYTHON:-/work/main/.venv/bin/python}
cd "$ROOT"
L=${H#"$ROOT"/}/verify_logs
for m in stochastic gpu-compatible amp; do
  PYTHONPATH=$ROOT "$PY" -m bf16_migrate "$P" --mode $m --diff "$@" > $L/$LABEL.$m.diff 2> $L/$LABEL.$m.stderr
  echo "== $m rc=$?"; grep -E "^[^ ].*BFM" $L/$LABEL.$m.stderr
done
