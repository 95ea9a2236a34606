#!/bin/bash
# usage: probes/compiles.sh LABEL DIR ENTRY [ENV=VAL...]: run DIR/ENTRY (STEPS=7) on the XLA CPU device under the lock
# with PT_XLA_DEBUG_LEVEL=2 (each compilation's cause and Python frame) -> verify_logs/probe.LABEL.compiles.txt
LABEL=$1; D=$2; E=$3; shift 3
H=$(cd "$(dirname "$0")/.." && pwd); PY=${PYTHON:-/work/main/.venv/bin/python}
O=$H/verify_logs/probe.$LABEL.compiles.txt
(cd "$D" && flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU PT_XLA_DEBUG_LEVEL=2 STEPS=${PSTEPS:-7} "$@" timeout 900 "$PY" "$E" > "$O" 2>&1; echo "exit $?" >> "$O")
grep -c "Compilation Analysis" "$O"
