#!/bin/bash
# usage: lrun.sh LABEL DIR SCRIPT [env K=V...] [-- args]: the legacy run (switch as it stands), under the XLA lock
# output -> verify_logs/LABEL.legacy.txt
LABEL=$1; D=$2; S=$3; shift 3
L=/work/wt/hunt11/bench/unseen/hunt11/verify_logs
cd /work/wt/hunt11/bench/unseen/hunt11/$D
T=$(mktemp -d); cp -r . $T/; cd $T
flock /tmp/bfm-xla.lock env PJRT_DEVICE=CPU "$@" timeout 600 /work/main/.venv/bin/python $S > $L/$LABEL.legacy.txt 2>&1
echo "exit $?" >> $L/$LABEL.legacy.txt
echo "$LABEL legacy: $(tail -3 $L/$LABEL.legacy.txt | tr '\n' ' ')"
