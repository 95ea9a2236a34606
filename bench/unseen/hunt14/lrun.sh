#!/bin/bash
# usage: lrun.sh LABEL DIR SCRIPT [env K=V...] [-- args]: the legacy run (switch as it stands), under the XLA lock
# output -> verify_logs/LABEL.legacy.txt
LABEL=$1; D=$2; S=$3; shift 3
ENVS=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do ENVS+=("$1"); shift; done; [ "$1" == "--" ] && shift
L=/work/wt/hunt14/bench/unseen/hunt14/verify_logs
cd /work/wt/hunt14/bench/unseen/hunt14/$D
T=$(mktemp -d); cp -r . $T/; cd $T
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU "${ENVS[@]}" timeout 600 /work/main/.venv/bin/python $S "$@" > $L/$LABEL.legacy.txt 2>&1
echo "exit $?" >> $L/$LABEL.legacy.txt
echo "$LABEL legacy: $(tail -3 $L/$LABEL.legacy.txt | tr '\n' ' ')"
