#!/bin/bash
# usage: HUNT/lrun.sh LABEL DIR SCRIPT [env K=V...] [-- args]: the legacy run (switch as it stands) of HUNT/DIR/SCRIPT
# in a copy of DIR, under the XLA lock; output -> HUNT/verify_logs/LABEL.legacy.txt. One copy for every hunt (links).
LABEL=$1; D=$2; S=$3; shift 3
ENVS=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do ENVS+=("$1"); shift; done; [ "$1" == "--" ] && shift
H=$(cd "$(dirname "$0")" && pwd); PY=${PYTHON:-/work/main/.venv/bin/python}
L=$H/verify_logs
cd "$H/$D"
T=$(mktemp -d); cp -r . $T/; cd $T
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU "${ENVS[@]}" timeout 600 "$PY" $S "$@" > $L/$LABEL.legacy.txt 2>&1
echo "exit $?" >> $L/$LABEL.legacy.txt
echo "$LABEL legacy: $(tail -3 $L/$LABEL.legacy.txt | tr '\n' ' ')"
