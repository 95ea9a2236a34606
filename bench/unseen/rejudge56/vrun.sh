#!/bin/bash
# vrun.sh LABEL SRC_DIR SCRIPT MODE [verify opts]: verify SCRIPT on a fresh copy of SRC_DIR under the lock, --steps 6
LABEL=$1; SRC=$2; SCRIPT=$3; MODE=$4; shift 4
T=/tmp/rj56v/$LABEL.$MODE; rm -rf "$T"; mkdir -p "$T"; cp -r "$SRC"/. "$T"/
O=/work/wt/rejudge56/bench/unseen/rejudge56/verify_logs/$LABEL.$MODE.verify.txt
(cd "$T" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PYTHONPATH=/work/wt/rejudge56 timeout 900 /work/main/.venv/bin/python -m bf16_migrate verify "$SCRIPT" --mode "$MODE" --steps 6 "$@" > "$O" 2>&1; echo "exit $?" >> "$O")
echo "== $LABEL.$MODE"; grep -E "VERDICT|^exit" "$O" | head -4
