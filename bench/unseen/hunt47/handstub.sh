#!/bin/bash
# usage: ./handstub.sh TEXT CASE ENTRY: hand/TEXT run as CASE's ENTRY (a copy of cases/CASE under /tmp/hunt47hs) with
# the stub torch_xla on the CPU, STEPS=3 -> verify_logs/hand.TEXT.stub.txt
TEXT=$1; CASE=$2; ENTRY=$3
H=$(cd "$(dirname "$0")" && pwd); PY=${PYTHON:-/work/main/.venv/bin/python}
T=/tmp/hunt47hs/$TEXT; rm -rf "$T"; mkdir -p "$(dirname "$T")"; cp -r "$H/cases/$CASE" "$T"; cp "$H/hand/$TEXT" "$T/$ENTRY"
O=$H/verify_logs/hand.$TEXT.stub.txt
(cd "$T" && STEPS=3 PYTHONPATH=$H/repros/stub timeout 300 "$PY" "$ENTRY" 2>&1 | grep -v -i warn | tail -4) > "$O"
echo "== $TEXT"; cat "$O"
