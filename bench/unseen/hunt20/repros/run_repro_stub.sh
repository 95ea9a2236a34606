#!/bin/bash
# repros/run_repro_stub.sh DIR MODE -> migrated copy of DIR/repro.py run under the stub; output to verify_logs/repro.NAME.MODE.txt
D=$1; M=$2; N=$(basename $D); H=/work/wt/hunt20/bench/unseen/hunt20; O=$H/verify_logs/repro.$N.$M.txt
T=/tmp/h20rr/$N.$M; rm -rf $T; mkdir -p $T; cp -r $D/. $T/
{ echo "== bf16-migrate repro.py --mode $M (copy in $T)"
  (cd $T && PYTHONPATH=/work/wt/hunt20 /work/main/.venv/bin/python -m bf16_migrate migrate . --mode $M 2>&1 | grep -v "^    \[" | cut -c1-400)
  (cd $D && diff repro.py $T/repro.py | grep '^[<>] ' | grep -v "^> \(def \|    \|\s*\"\)")
  echo "== run migrated copy (stub torch_xla, CPU)"
  (cd $T && PYTHONPATH=$H/repros/stub:$T timeout 120 /work/main/.venv/bin/python repro.py 2>&1 | grep -v -i warn | grep -E "Error|^[-0-9.e]+$|legacy switch|dtype|^torch" | tail -2)
} > $O 2>&1; echo "--- $N $M"; cat $O
